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

/// Every event of a stream until it ends (it buffers what came meanwhile),
/// or what came within `seconds` if it does not end.
private func collect<Event: Sendable>(_ stream: AsyncStream<Event>, seconds: Double = 3) async -> (events: [Event], ended: Bool) {
    await withTaskGroup(of: ([Event], Bool)?.self) { group in
        group.addTask {
            var events: [Event] = []
            for await event in stream { events.append(event) }
            return (events, true)
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first.map { ($0.0, $0.1) } ?? ([], false)
    }
}

@Suite("The lifecycle an embedder sees", .serialized)
struct LifecycleTests {
    /// A titled stream, paused and resumed, a receiver that leaves and
    /// another that joins, periodic statistics and network estimates, then a
    /// finish with the host's error that the receiver is told: all as
    /// `AsyncSequence`s of events.
    @Test func aStreamFromStartToAnErrorTheReceiverIsTold() async throws {
        let secret = "lifecycle"
        var receiving = headlessReceiver(secret)
        let first = try ScreenReceiver(configuration: receiving)
        let firstEvents = first.events
        first.start()

        var sending = pushingSender(secret, port: first.port, width: 320, height: 180)
        sending.title = "Quarterly review"
        sending.statisticsInterval = .milliseconds(500)
        let sender = try ScreenSender(configuration: sending)
        #expect(sender.setup.title == "Quarterly review")
        let senderEvents = sender.events
        sender.start()
        let pusher = Pusher(sender, width: 320, height: 180)
        try await Task.sleep(for: .seconds(1.5))
        sender.pause()
        try await Task.sleep(for: .seconds(0.4))
        sender.resume()
        try await Task.sleep(for: .seconds(0.6))
        first.stop()
        let (heardEvents, firstEnded) = await collect(firstEvents)
        #expect(firstEnded, "the first receiver's events end with it")
        try await Task.sleep(for: .seconds(0.3))

        receiving.port = sending.port
        let second = try ScreenReceiver(configuration: receiving)
        let secondEvents = second.events
        let pictured = Atomic<Bool>(false)
        second.start { event in if case .firstFrame = event { pictured.store(true, ordering: .relaxed) } }
        let deadline = Date().addingTimeInterval(8)
        while Date() < deadline, !pictured.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(50)) }
        sender.finish(error: "the game crashed")
        pusher.stop()
        let (sentEvents, senderEnded) = await collect(senderEvents)
        #expect(senderEnded, "the sender's events end with .finished")
        try await Task.sleep(for: .seconds(0.3))
        second.stop()
        let (toldEvents, _) = await collect(secondEvents)

        let sent = sentEvents.map { "\($0)" }
        func count(_ prefix: String) -> Int { sent.filter { $0.hasPrefix(prefix) }.count }
        #expect(count("started") == 1 && sent.first?.contains("Quarterly review") == true, "\(sent.first ?? "")")
        #expect(count("connected") == 2, "two sessions: \(sent)")
        #expect(count("receiverJoined") == 2 && count("receiverLeft") == 1, "\(sent)")
        #expect(sent.contains { $0.hasPrefix("receiverLeft") && $0.contains("said goodbye") }, "\(sent)")
        #expect(count("paused") == 1 && count("resumed") == 1)
        #expect(count("networkEstimate") >= 1, "\(sent)")
        #expect(count("statistics") >= 4, "\(count("statistics")) statistics events")
        guard case .finished(.host(let why)) = sentEvents.last else {
            Issue.record("the last event: \(sent.last ?? "none")")
            return
        }
        #expect(why == "the game crashed")
        #expect(sender.error.map { "\($0)" } == "the game crashed")
        // A stream asked for after the end ends at once.
        #expect(await collect(sender.events, seconds: 1).ended)

        let heard = heardEvents.map { "\($0)" }
        #expect(heard.contains("senderTitled(\"Quarterly review\")"), "\(heard)")
        #expect(heard.contains("senderPaused") && heard.contains("senderResumed"), "\(heard)")
        let told = toldEvents.map { "\($0)" }
        #expect(told.contains("senderTitled(\"Quarterly review\")"), "\(told)")
        #expect(told.contains("senderLeft(reason: Optional(\"error: the game crashed\"))"), "\(told)")
    }
}
