import Dispatch
import Foundation
import ShareReceiver
import ShareSender
import ShareSRTP
import ShareX11Capture
import ShareSync
import Synchronization
import TestSupport
import Testing

/// Runs `body` on another thread; false if it has not returned after `seconds`
/// (a deadlocked body stays blocked, but the test goes on and fails).
func returnsWithin(_ seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        body()
        done.signal()
    }
    return done.wait(timeout: .now() + seconds) == .success
}

/// A flag set on one thread and read on another.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// A host may call `stop()` from its own event handler, which runs on one of
/// the library's threads: it must not wait for itself.
@Suite("Library lifecycle from event handlers", .serialized, .busy)
struct LifecycleTests {
    @Test func theSenderCanBeStoppedFromItsFinishedHandler() throws {
        let display = try VirtualDisplay(width: 320, height: 240)
        let sender = try ScreenSender(configuration: testSenderConfiguration(display: display))
        let stoppedInHandler = Flag()
        sender.start { [weak sender] event in
            if case .finished = event {
                sender?.stop()
                stoppedInHandler.set()
            }
        }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(returnsWithin(5) { sender.stop() }, "stop() returned")
        let handlerReturned = stoppedInHandler.isSet
        #expect(handlerReturned, "the handler's own stop() returned")
    }

    @Test func theReceiverCanBeStoppedFromItsFinishedHandler() throws {
        var configuration = ReceiverConfiguration(keying: .random(profile: .aes128CmHmacSha1_80))
        configuration.port = 0
        configuration.showWindow = false
        configuration.playAudio = false
        let receiver = try ScreenReceiver(configuration: configuration)
        let stoppedInHandler = Flag()
        receiver.start { [weak receiver] event in
            if case .finished = event {
                receiver?.stop()
                stoppedInHandler.set()
            }
        }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(returnsWithin(5) { receiver.stop() }, "stop() returned")
        let handlerReturned = stoppedInHandler.isSet
        #expect(handlerReturned, "the handler's own stop() returned")
    }
}

/// The display going away while the capture thread sleeps on it for damage
/// ends the sender with a capture error, promptly: the broken connection
/// counts as a change, so the next grab reports it.
@Suite("Sender when its display goes away", .serialized, .busy)
struct DisplayGoneTests {
    @Test func theSenderEndsWhenItsXServerDies() throws {
        let display = try VirtualDisplay(width: 320, height: 240)
        let sender = try ScreenSender(configuration: testSenderConfiguration(display: display))
        let ended = Locked<(at: Date, error: String)?>(nil)
        sender.start { event in
            if case .finished(let error) = event {
                ended.withLock { $0 = (Date(), error.map { "\($0)" } ?? "none") }
            }
        }
        defer { sender.stop() }
        Thread.sleep(forTimeInterval: 0.3)  // a still screen: the thread waits for damage
        let killed = Date()
        display.stop()
        let deadline = Date().addingTimeInterval(5)
        while ended.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
        let end = ended.withLock { $0 }
        #expect(end != nil, "the sender ended")
        if let end {
            #expect(end.at.timeIntervalSince(killed) < 0.3, "ended \(end.at.timeIntervalSince(killed)) s after the X server died")
            #expect(end.error.lowercased().contains("capture"), "\(end.error)")
        }
    }
}

/// The names of this process's threads now, from /proc/self/task.
func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// `top -H` and `perf` tell a sender's and a receiver's threads apart by
/// name while they run; the dispatch workers they ran on get their own
/// names back when they end (tested on one thread: other tests' senders
/// run in this process at the same time).
@Suite("Thread names", .serialized, .busy)
struct ThreadNameTests {
    @Test func theSendersAndReceiversThreadsAreNamedWhileTheyRun() throws {
        let display = try VirtualDisplay(width: 320, height: 240)
        let secret = [UInt8](repeating: 7, count: 30)
        let receiver = try ScreenReceiver(configuration: headlessReceiving(secret))
        let port = Atomic<Int>(0)
        receiver.start { event in if case .listening(let p) = event { port.store(p, ordering: .relaxed) } }
        defer { receiver.stop() }
        let deadline = Date().addingTimeInterval(5)
        while port.load(ordering: .relaxed) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let sender = try ScreenSender(configuration: screenSending(secret, to: port.load(ordering: .relaxed), display: display))
        sender.start { _ in }
        Thread.sleep(forTimeInterval: 0.5)
        let running = Set(threadNames())
        for name in ["share-capture", "share-encode", "share-pacer", "share-network", "share-decode"] {
            #expect(running.contains(name), "a thread named \(name) among \(running.sorted())")
        }
        sender.stop()
    }

    @Test func aThreadGetsItsOwnNameBackAfterItsLoop() throws {
        let own = try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        let inside = try ThreadName.running(as: "share-a-very-long-name") {
            try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        }
        #expect(inside == "share-a-very-lo\n", "Linux keeps the first 15 bytes")
        let after = try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        #expect(after == own)
    }
}
