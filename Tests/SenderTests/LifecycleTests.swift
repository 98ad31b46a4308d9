import Dispatch
import Foundation
import ShareReceiver
import ShareSender
import ShareSRTP
import ShareX11
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
@Suite("Library lifecycle from event handlers", .serialized)
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
@Suite("Sender when its display goes away", .serialized)
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
