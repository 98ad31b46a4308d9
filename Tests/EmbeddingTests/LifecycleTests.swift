import Foundation
import ShareReceiver
import ShareSender
import Synchronization
import TestSupport
import Testing

/// Pushes one picture 30 times a second on a thread of its own until stopped.
private final class Pusher: Sendable {
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)

    init(_ sender: ScreenSender, width: Int, height: Int) {
        let picture = frame(width: width, height: height, bar: width / 2)
        Thread.detachNewThread { [self] in
            while running.load(ordering: .relaxed) {
                _ = picture.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: width * 4), width: width, height: height) }
                Thread.sleep(forTimeInterval: 1.0 / 30)
            }
            done.signal()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        done.wait()
    }
}

/// Collects an event stream on a task of its own.
private final class Collected<Event: Sendable>: Sendable {
    let events = Mutex<[Event]>([])
    private let ended = DispatchSemaphore(value: 0)

    init(_ stream: AsyncStream<Event>) {
        Task.detached { [self] in
            for await event in stream { events.withLock { $0.append(event) } }
            ended.signal()
        }
    }

    var all: [Event] { events.withLock { $0 } }

    /// Whether the stream ended within `seconds`.
    func waitForEnd(seconds: Double) -> Bool { ended.wait(timeout: .now() + seconds) == .success }
}

@Suite("The lifecycle an embedder sees", .serialized)
struct LifecycleTests {
    /// A titled stream, paused and resumed, a receiver that leaves and
    /// another that joins, periodic statistics and network estimates, then a
    /// finish with the host's error that the receiver is told: all as
    /// `AsyncSequence`s of events.
    @Test func aStreamFromStartToAnErrorTheReceiverIsTold() throws {
        let secret = Array("lifecycle".utf8)
        var receiving = ReceiverConfiguration(keying: .handshake(.preSharedKey(secret), store: nil))
        receiving.port = 0
        receiving.showWindow = false
        receiving.playAudio = false
        let first = try ScreenReceiver(configuration: receiving)
        let firstEvents = Collected(first.events)
        first.start()

        var sending = SenderConfiguration(host: "127.0.0.1", keying: .handshake(.preSharedKey(secret), store: nil))
        sending.port = first.port
        sending.video = .pushed(VideoSize(width: 320, height: 180))
        sending.title = "Quarterly review"
        sending.statisticsInterval = .milliseconds(250)
        let sender = try ScreenSender(configuration: sending)
        #expect(sender.setup.title == "Quarterly review")
        let senderEvents = Collected(sender.events)
        sender.start()
        let pusher = Pusher(sender, width: 320, height: 180)
        Thread.sleep(forTimeInterval: 1.5)
        sender.pause()
        Thread.sleep(forTimeInterval: 0.4)
        sender.resume()
        Thread.sleep(forTimeInterval: 0.6)
        first.stop()
        #expect(firstEvents.waitForEnd(seconds: 2), "the first receiver's events end with it")
        Thread.sleep(forTimeInterval: 0.3)

        receiving.port = sending.port
        let second = try ScreenReceiver(configuration: receiving)
        let secondEvents = Collected(second.events)
        second.start()
        defer { second.stop() }
        let deadline = Date().addingTimeInterval(8)
        while Date() < deadline, !secondEvents.all.contains(where: { if case .firstFrame = $0 { true } else { false } }) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        sender.finish(error: "the game crashed")
        pusher.stop()
        #expect(senderEvents.waitForEnd(seconds: 2), "the sender's events end with .finished")
        Thread.sleep(forTimeInterval: 0.3)

        let sent = senderEvents.all.map { "\($0)" }
        func count(_ prefix: String) -> Int { sent.filter { $0.hasPrefix(prefix) }.count }
        #expect(count("started") == 1 && sent.first?.contains("Quarterly review") == true, "\(sent.first ?? "")")
        #expect(count("connected") == 2, "two sessions: \(sent)")
        #expect(count("receiverJoined") == 2 && count("receiverLeft") == 1, "\(sent)")
        #expect(sent.contains { $0.hasPrefix("receiverLeft") && $0.contains("said goodbye") }, "\(sent)")
        #expect(count("paused") == 1 && count("resumed") == 1)
        #expect(count("networkEstimate") >= 1, "\(sent)")
        #expect(count("statistics") >= 8, "\(count("statistics")) statistics events")
        guard case .finished(.host(let why)) = senderEvents.all.last else {
            Issue.record("the last event: \(sent.last ?? "none")")
            return
        }
        #expect(why == "the game crashed")
        #expect(sender.error.map { "\($0)" } == "the game crashed")
        // A stream asked for after the end ends at once.
        #expect(Collected(sender.events).waitForEnd(seconds: 1))

        let heard = firstEvents.all.map { "\($0)" }
        #expect(heard.contains("senderTitled(\"Quarterly review\")"), "\(heard)")
        #expect(heard.contains("senderPaused") && heard.contains("senderResumed"), "\(heard)")
        let told = secondEvents.all.map { "\($0)" }
        #expect(told.contains("senderTitled(\"Quarterly review\")"), "\(told)")
        #expect(told.contains("senderLeft(reason: Optional(\"error: the game crashed\"))"), "\(told)")
    }
}
