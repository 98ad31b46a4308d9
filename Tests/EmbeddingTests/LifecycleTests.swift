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

/// Events as a handler hears them, in order.
private final class Heard<Event: Sendable>: Sendable {
    private let events = Mutex<[Event]>([])
    func add(_ event: Event) { events.withLock { $0.append(event) } }
    var all: [Event] { events.withLock { $0 } }
    /// Each event's case name ("started", "receiverLeft"…).
    var names: [String] { all.map { String("\($0)".prefix { $0 != "(" }) } }
    func waitFor(_ name: String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if names.contains(name) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return false
    }
}

/// Every event of a stream until it ends (it buffers what came meanwhile).
private func collect<Event: Sendable>(_ stream: AsyncStream<Event>) async -> [Event] {
    var events: [Event] = []
    for await event in stream { events.append(event) }
    return events
}

@Suite("The lifecycle an embedder sees", .serialized, .busy)
struct LifecycleTests {
    /// A titled stream, paused and resumed, a receiver that leaves and
    /// another that joins, periodic statistics and network estimates, then a
    /// finish with the host's error that the receiver is told.
    @Test func aStreamFromStartToAnErrorTheReceiverIsTold() throws {
        let secret = "lifecycle"
        var receiving = headlessReceiver(secret)
        let first = try ScreenReceiver(configuration: receiving)
        let heard = Heard<ReceiverEvent>()
        first.start { heard.add($0) }

        var sending = pushingSender(secret, port: first.port, width: 320, height: 180)
        sending.title = "Quarterly review"
        sending.statisticsInterval = .milliseconds(250)
        let sender = try ScreenSender(configuration: sending)
        #expect(sender.setup.title == "Quarterly review")
        let sent = Heard<SenderEvent>()
        sender.start { sent.add($0) }
        let pusher = Pusher(sender, width: 320, height: 180)
        #expect(sent.waitFor("receiverJoined", seconds: 5))
        Thread.sleep(forTimeInterval: 1)
        sender.pause()
        #expect(heard.waitFor("senderPaused", seconds: 3))
        sender.resume()
        #expect(heard.waitFor("senderResumed", seconds: 3))
        Thread.sleep(forTimeInterval: 0.5)
        first.stop()
        #expect(sent.waitFor("receiverLeft", seconds: 3))

        receiving.port = sending.port
        let second = try ScreenReceiver(configuration: receiving)
        let told = Heard<ReceiverEvent>()
        second.start { told.add($0) }
        defer { second.stop() }
        #expect(told.waitFor("firstFrame", seconds: 10), "\(told.names)")
        sender.finish(error: "the game crashed")
        pusher.stop()
        #expect(told.waitFor("senderLeft", seconds: 3))

        let names = sent.names
        func count(_ name: String) -> Int { names.filter { $0 == name }.count }
        #expect(names.first == "started" && "\(sent.all[0])".contains("Quarterly review"), "\(names)")
        #expect(count("connected") == 2, "two sessions: \(names)")
        #expect(count("receiverJoined") == 2 && count("receiverLeft") == 1, "\(names)")
        #expect(sent.all.contains { if case .receiverLeft(let why) = $0 { why.contains("said goodbye") } else { false } })
        #expect(count("paused") == 1 && count("resumed") == 1, "\(names)")
        #expect(count("networkEstimate") >= 1, "\(names)")
        #expect(count("statistics") >= 4, "\(count("statistics")) statistics events")
        guard case .finished(.host(let why)) = sent.all.last else {
            Issue.record("the last event: \(names.last ?? "none")")
            return
        }
        #expect(why == "the game crashed")
        #expect(sender.error.map { "\($0)" } == "the game crashed")

        #expect(heard.all.contains { if case .senderTitled("Quarterly review") = $0 { true } else { false } }, "\(heard.names)")
        #expect(heard.names.last == "finished")
        #expect(told.all.contains { if case .senderTitled("Quarterly review") = $0 { true } else { false } }, "\(told.names)")
        #expect(told.all.contains { if case .senderLeft(reason: "error: the game crashed") = $0 { true } else { false } },
                "\(told.names)")
    }

    /// The same events as `AsyncSequence`s: each stream made before the
    /// start holds every event the handler heard, in order, and ends after
    /// `.finished`; a stream asked for after the end ends at once.
    @Test func eventsAreAlsoAsyncSequences() async throws {
        let secret = "streams"
        let receiver = try ScreenReceiver(configuration: headlessReceiver(secret))
        let receiverStream = receiver.events
        let heard = Heard<ReceiverEvent>()
        receiver.start { heard.add($0) }
        let sender = try ScreenSender(configuration: pushingSender(secret, port: receiver.port, width: 320, height: 180))
        let senderStream = sender.events
        let sent = Heard<SenderEvent>()
        sender.start { sent.add($0) }
        let pusher = Pusher(sender, width: 320, height: 180)
        #expect(heard.waitFor("firstFrame", seconds: 10))
        sender.pause()
        #expect(heard.waitFor("senderPaused", seconds: 3))
        sender.stop()
        pusher.stop()
        receiver.stop()
        let streamed = await collect(senderStream).map { String("\($0)".prefix { $0 != "(" }) }
        #expect(streamed == sent.names && streamed.last == "finished", "\(streamed) / \(sent.names)")
        let received = await collect(receiverStream).map { String("\($0)".prefix { $0 != "(" }) }
        #expect(received == heard.names && received.last == "finished", "\(received) / \(heard.names)")
        #expect(await collect(sender.events).isEmpty)
        #expect(await collect(receiver.events).isEmpty)
    }
}
