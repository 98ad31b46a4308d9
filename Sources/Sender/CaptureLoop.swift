import Dispatch
internal import ShareWire
internal import ShareX11
import Synchronization
internal import ShareSync

/// The capture thread: grabs the screen into the frame pool and leaves the
/// newest frame in a one-slot mailbox. It never waits on anything
/// downstream: a frame the encoder has not taken yet is replaced (and
/// counted).
///
/// With XDamage it grabs when the screen changes, not on a timer: it sleeps
/// on the X connection until damage arrives, lets the drawing finish
/// (`settle`, 1 ms), and grabs at once unless the last grab was less than a
/// frame interval ago (then at that interval: never above `fps`). A change
/// leaves about a millisecond after it is drawn instead of waiting for the
/// next tick (half an interval on average, 17 ms at 30 fps). When a change
/// had to wait for the rate (a screen redrawn faster than `fps`), the thread
/// gives the next drawing up to `freshnessHold` and grabs it as it lands, so
/// what leaves is fresh rather than up to a frame old. A still screen
/// costs one picture every `stillRefresh`, and a keyframe request always
/// gets a fresh one. Without XDamage (or with `stillRefresh` nil) it grabs
/// on a timer at `fps`.
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

    /// How long a change is given to finish drawing before it is grabbed.
    static let settle: UInt64 = 1_000_000
    /// The longest wait for damage before the thread looks at its flags
    /// (a keyframe request, a pause, the end).
    static let longestWait: UInt64 = 20_000_000
    /// How long a change that waited for the frame rate (so it is up to a
    /// frame old) is held for a fresh one: on a screen redrawn faster than
    /// the frame rate, the next drawing is grabbed right after it is made.
    static let freshnessHold: UInt64 = 8_000_000
    /// After a hold that found nothing, this many stale changes go without one.
    static let holdBackoffFrames = 30

    func run(_ context: SenderContext) {
        let refresh = stillRefresh.map { $0.nanoseconds }
        if let refresh, capturer.trackChanges() {
            runOnDamage(context, refresh: refresh)
        } else {
            runOnTimer(context)
        }
    }

    private func runOnDamage(_ context: SenderContext, refresh: UInt64) {
        var lastGrab: UInt64 = 0
        /// When a change woke the thread (nil: noticed without waiting).
        var changeSeenAt: UInt64?
        /// Stale changes to grab without holding, after a hold found no
        /// fresh drawing (a screen redrawn at between one and two times the
        /// frame rate: holding would only add delay).
        var holdBackoff = 0
        while context.isActive {
            let interval = UInt64(1_000_000_000 / max(1, fps.load(ordering: .relaxed)))
            guard context.isRunning else {
                Clock.sleep(until: Clock.monotonic() + interval)
                continue
            }
            let now = Clock.monotonic()
            let changed = capturer.screenChanged
            if !changed, !context.keyframeRequested.load(ordering: .relaxed), now &- lastGrab < refresh {
                let wait = min(lastGrab &+ refresh &- now, Self.longestWait)
                if capturer.waitForChange(timeoutNanoseconds: wait) {
                    changeSeenAt = Clock.monotonic()
                    Clock.sleep(until: changeSeenAt! + Self.settle)
                }
                continue
            }
            // Never above the frame rate.
            let earliest = lastGrab &+ interval
            if lastGrab != 0, Clock.monotonic() < earliest { Clock.sleep(until: earliest) }
            // A change that is no longer fresh (it waited for the rate, or
            // was noticed late): the screen is probably being redrawn, so
            // give the next drawing a moment and grab that one as it lands.
            let stale = changeSeenAt.map { Clock.monotonic() &- $0 > Self.settle * 3 } ?? true
            if lastGrab != 0, changed, stale, !context.keyframeRequested.load(ordering: .relaxed) {
                if holdBackoff > 0 {
                    holdBackoff -= 1
                } else {
                    capturer.rearmChangeTracking()
                    if capturer.waitForChange(timeoutNanoseconds: Self.freshnessHold) {
                        Clock.sleep(until: Clock.monotonic() + Self.settle)
                    } else {
                        holdBackoff = Self.holdBackoffFrames
                    }
                }
            }
            changeSeenAt = nil
            let grabbedAt = Clock.monotonic()
            if lastGrab != 0, grabbedAt &- lastGrab >= 2 * interval {
                // The frame ticks a timer would have spent on a still screen.
                let skipped = Int((grabbedAt &- lastGrab) / interval) - 1
                context.stats.withLock { $0.framesUnchanged += skipped }
            }
            lastGrab = grabbedAt
            guard grab(context) else { return }
        }
    }

    private func runOnTimer(_ context: SenderContext) {
        var next = Clock.monotonic()
        while context.isActive {
            let interval = UInt64(1_000_000_000 / max(1, fps.load(ordering: .relaxed)))
            next += interval
            if context.isRunning {
                guard grab(context) else { return }
            }
            let now = Clock.monotonic()
            // Fell behind (a stall): skip ahead instead of bursting to catch up.
            if next + interval < now { next = now }
            Clock.sleep(until: next)
        }
    }

    /// Grabs one frame into the mailbox; false when capture failed (the run ends).
    private func grab(_ context: SenderContext) -> Bool {
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
            return true
        } catch {
            context.fail(.capture(error.description))
            return false
        }
    }
}
