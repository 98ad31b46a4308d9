import Dispatch
internal import ShareWire
internal import ShareX11
import Synchronization
internal import ShareSync

/// The capture thread: grabs the screen at the current rate into the
/// frame pool and leaves the newest frame in a one-slot mailbox. It never
/// waits on anything downstream: a frame the encoder has not taken yet is
/// replaced (and counted). On a still screen (XDamage) it grabs nothing but
/// a refresh a second, or when a keyframe is asked for.
final class CaptureLoop: @unchecked Sendable {
    // Safe: `capturer` is used by the capture thread only (its counters are
    // read elsewhere as plain integers); the mailbox is a mutex, the rate atomic.
    let capturer: ScreenCapturer
    private let mailbox = Locked<FrameLease?>(nil)
    /// Signalled for each frame put in the mailbox.
    let frameReady = DispatchSemaphore(value: 0)
    /// Frames per second to grab at (the governor and the ladder lower it).
    let fps: Atomic<Int>
    private let stillRefresh: Duration?

    init(capturer: ScreenCapturer, fps: Int, stillRefresh: Duration?) {
        self.capturer = capturer
        self.fps = Atomic(fps)
        self.stillRefresh = stillRefresh
    }

    /// The newest frame, if one is waiting; the caller ends its lease.
    func take() -> FrameLease? {
        mailbox.withLock { $0.take() }
    }

    func run(_ context: SenderContext) {
        var next = Clock.monotonic()
        let refresh = stillRefresh.map { $0.nanoseconds }
        let tracking = refresh != nil && capturer.trackChanges()
        var lastGrab: UInt64 = 0
        while context.isActive {
            let interval = UInt64(1_000_000_000 / max(1, fps.load(ordering: .relaxed)))
            next += interval
            if context.isRunning {
                // A still screen: nothing to grab unless a refresh or a keyframe is due.
                if tracking, !capturer.screenChanged, !context.keyframeRequested.load(ordering: .relaxed),
                   let refresh, Clock.monotonic() &- lastGrab < refresh {
                    context.stats.withLock { $0.framesUnchanged += 1 }
                    Clock.sleep(until: next)
                    continue
                }
                lastGrab = Clock.monotonic()
                do {
                    var incoming = try capturer.capture()
                    if incoming != nil {
                        let replaced = mailbox.withLock { slot -> Bool in
                            let old = slot.take()
                            slot = incoming.take()
                            return old != nil
                        }
                        if replaced { context.stats.withLock { $0.framesDroppedEncoderBusy += 1 } }
                        frameReady.signal()
                    }
                } catch {
                    context.fail(.capture(error.description))
                    return
                }
            }
            let now = Clock.monotonic()
            // Fell behind (a stall): skip ahead instead of bursting to catch up.
            if next + interval < now { next = now }
            Clock.sleep(until: next)
        }
    }
}
