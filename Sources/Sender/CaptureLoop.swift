import Dispatch
internal import ShareFrames
internal import ShareWire
internal import ShareX11
import Synchronization
internal import ShareSync

/// The capture thread: grabs the screen into the frame pool, converted and
/// scaled to the size the encoder is to take, and leaves the newest frame
/// in the video feed's one-slot mailbox. It never waits on anything
/// downstream: a frame the encoder has not taken yet is replaced (and
/// counted).
///
/// With XDamage it grabs when the screen changes, not on a timer: it sleeps
/// on the X connection until damage arrives, lets the drawing finish
/// (`settle`, 1 ms), and grabs at once unless the last grab was less than a
/// frame interval ago (then at that interval: never above `fps`). A change
/// leaves about a millisecond after it is drawn instead of waiting for the
/// next tick (half an interval on average, 17 ms at 30 fps). A still screen
/// costs one picture every `stillRefresh`, and a keyframe request always
/// gets a fresh one. Without XDamage (or with `stillRefresh` nil) it grabs
/// on a timer at `fps`.
final class CaptureLoop: @unchecked Sendable {
    // Safe: `capturer` and the pointer state are used by the capture thread
    // only (the capturer's counters are atomic); the feed is Sendable.
    let capturer: ScreenCapturer
    /// Where the pictures go, and the rate and size asked for.
    let feed: VideoFeed
    /// The size to scale to before any step down; nil: what is captured.
    private let configuredSize: VideoSize?
    private let stillRefresh: Duration?

    init(capturer: ScreenCapturer, feed: VideoFeed, configuredSize: VideoSize?, stillRefresh: Duration?) {
        self.capturer = capturer
        self.feed = feed
        self.configuredSize = configuredSize
        self.stillRefresh = stillRefresh
    }

    /// The picture size for what is captured: the configured size, else
    /// the captured size (even, at least 16x16), no taller than `maxHeight`.
    static func pictureSize(source: VideoSize, configured: VideoSize?, maxHeight: Int) -> VideoSize {
        let base = configured?.even ?? VideoSize(width: max(16, source.width), height: max(16, source.height)).even
        return EncodePipeline.size(base, height: maxHeight)
    }

    /// How long a change is given to finish drawing before it is grabbed.
    static let settle: UInt64 = 1_000_000
    /// The longest wait for damage before the thread looks at its flags
    /// (a keyframe request, a pause, the end).
    static let longestWait: UInt64 = 20_000_000

    /// Where the pointer goes when it is sent apart from the pictures
    /// (`--cursor metadata`); nil otherwise.
    var pointerSink: ((PointerState) -> Void)?
    /// The pointer is read at most this often (and at every wake-up).
    static let pointerInterval: UInt64 = 16_000_000
    private var pointerReadAt: UInt64 = 0
    private var lastPointer: PointerState?

    /// Reads the pointer when it is sent apart and due, and hands it on when it moved or changed shape.
    private func followPointer() {
        guard let pointerSink else { return }
        let now = Clock.monotonic()
        guard now &- pointerReadAt >= Self.pointerInterval else { return }
        pointerReadAt = now
        guard var pointer = capturer.readPointer() else { return }
        if pointer.shape == nil, var last = lastPointer {
            last.shape = nil
            if last == pointer { return }
        }
        pointerSink(pointer)
        pointer.shape = nil
        lastPointer = pointer
    }

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
        /// The frame grid: the earliest a grab may start. It advances by one
        /// interval per grab, not from each grab's own time, so a late
        /// wake-up does not lower the frame rate.
        var slot: UInt64 = 0
        while context.isActive {
            let interval = UInt64(1_000_000_000 / max(1, feed.fps.load(ordering: .relaxed)))
            guard context.isRunning else {
                Clock.sleep(until: Clock.monotonic() + interval)
                continue
            }
            followPointer()
            let now = Clock.monotonic()
            if !capturer.screenChanged, !context.keyframeRequested.load(ordering: .relaxed), now &- lastGrab < refresh {
                let longest = pointerSink == nil ? Self.longestWait : Self.pointerInterval
                let wait = min(lastGrab &+ refresh &- now, longest)
                if capturer.waitForChange(timeoutNanoseconds: wait) { Clock.sleep(until: Clock.monotonic() + Self.settle) }
                continue
            }
            // Never above the frame rate.
            if lastGrab != 0, Clock.monotonic() < slot { Clock.sleep(until: slot) }
            let grabbedAt = Clock.monotonic()
            if lastGrab != 0, grabbedAt &- lastGrab >= 2 * interval {
                // The frame ticks a timer would have spent on a still screen.
                let skipped = Int((grabbedAt &- lastGrab) / interval) - 1
                context.stats.withLock { $0.framesUnchanged += skipped }
            }
            lastGrab = grabbedAt
            // A quiet screen or a stall leaves the grid behind: start it again.
            slot = slot &+ interval < grabbedAt ? grabbedAt &+ interval : slot &+ interval
            guard grab(context) else { return }
        }
    }

    private func runOnTimer(_ context: SenderContext) {
        var next = Clock.monotonic()
        while context.isActive {
            let interval = UInt64(1_000_000_000 / max(1, feed.fps.load(ordering: .relaxed)))
            next += interval
            if context.isRunning {
                followPointer()
                guard grab(context) else { return }
            }
            let now = Clock.monotonic()
            // Fell behind (a stall): skip ahead instead of bursting to catch up.
            if next + interval < now { next = now }
            Clock.sleep(until: next)
        }
    }

    /// Whether the followed window was hidden at the last grab (told once per change).
    private var windowHidden = false

    /// Grabs one frame into the mailbox; false when capture failed (the run ends).
    private func grab(_ context: SenderContext) -> Bool {
        do {
            let (configured, maxHeight) = (configuredSize, feed.maxHeight.load(ordering: .relaxed))
            var incoming = try capturer.capture { width, height in
                let size = Self.pictureSize(source: VideoSize(width: width, height: height), configured: configured,
                                            maxHeight: maxHeight)
                return (size.width, size.height)
            }
            if capturer.windowHidden != windowHidden {
                windowHidden = capturer.windowHidden
                context.emit(.warning(windowHidden ? "the shared window is hidden: nothing is sent until it is shown again"
                                                   : "the shared window is shown again"))
            }
            if let picture = incoming.take(), feed.put(picture) {
                context.stats.withLock { $0.framesDroppedEncoderBusy += 1 }
            }
            return true
        } catch {
            context.fail(.capture(error.description))
            return false
        }
    }
}
