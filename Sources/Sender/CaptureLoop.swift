import Dispatch
internal import ShareFrames
internal import ShareWire
internal import ShareBase
internal import ShareCapture
import Synchronization
internal import ShareSync

/// The capture thread: grabs the screen into the frame pool, converted and
/// scaled to the size the encoder is to take, and leaves the newest frame
/// in the video feed's one-slot mailbox. It never waits on anything
/// downstream: a frame the encoder has not taken yet is replaced (and
/// counted).
///
/// With change tracking (XDamage on X11) it grabs when the screen changes, not on a timer, as its
/// `GrabSchedule` says: it sleeps on the X connection until damage arrives,
/// lets the drawing finish (until nothing more is drawn for `quiet`, 0.25
/// ms; `settle`, 2 ms, at most), and grabs at once unless the last grab was
/// less than a frame interval ago (then at the next slot of the frame grid:
/// never above `fps`). A change is grabbed well under a millisecond after it
/// is drawn instead of waiting for the next tick (half an interval on
/// average, 17 ms at 30 fps). Content that changes faster than `fps` in a
/// steady rhythm (a video) is grabbed right after a change is drawn, not at
/// whatever age the slot finds it. A still screen costs one picture every
/// `stillRefresh` (every `sharpeningRefresh` while the encoder's picture of
/// it is still sharpening), and a keyframe request always gets a fresh one.
/// Without XDamage (or with `stillRefresh` nil) it grabs on a timer at `fps`.
final class CaptureLoop: Sendable {
    /// The screen; its capture calls are the capture thread's, its counters
    /// any thread's (the statistics read them).
    let capturer: any ScreenSource
    /// Where the pictures go, and the rate and size asked for.
    let feed: VideoFeed
    /// The size to scale to before any step down; nil: what is captured.
    private let configuredSize: VideoSize?
    private let stillRefresh: Duration?

    init(capturer: any ScreenSource, feed: VideoFeed, configuredSize: VideoSize?, stillRefresh: Duration?) {
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

    /// A drawing has finished when nothing more was drawn for 0.25 ms (a
    /// client's requests in one flush are drawn within microseconds of each
    /// other), or after 2 ms at most.
    static let quiet = Duration.microseconds(250)
    static let settle = Duration.milliseconds(2)
    /// How often a still screen is grabbed while the encoder's picture of it
    /// sharpens: often enough to be sharp within a second or so, seldom
    /// enough that a change drawn meanwhile rarely finds the frame slot
    /// taken by one (it would wait for the next, up to a frame interval).
    static let sharpeningRefresh = Duration.milliseconds(100)
    /// The longest wait for damage before the thread looks at its flags
    /// (a keyframe request, a pause, the end) and asks the server where the
    /// pointer is (X tells no motion): 20 ms while the pointer moves and
    /// for a second after (16 ms, `pointerInterval`, when it is sent
    /// apart), 50 ms once it rests. Each look is a wake-up and each question
    /// a round trip: on a still 720p screen the capture thread woke 104
    /// times a second for 0.50% of a core, resting it wakes 43 times for
    /// 0.20% (`Benchmarks/capture.py`). A resting pointer is asked for only
    /// when its device moved (XInput 2's raw motion ends the wait at once)
    /// or every quarter second (a program may warp it): its first move
    /// shows at once, not up to 50 ms late (`ScreenSource.restingPointerCheck`;
    /// a server without XInput 2 is asked at every look). The other threads
    /// end the wait when they have news (`SenderContext.captureWakeup`), so
    /// then a resting look comes only at the capturer's warp check
    /// (`ScreenSource.restingPointerCheck`: a quarter second on X11).
    static let longestWait = Duration.milliseconds(20)
    static let restingWait = Duration.milliseconds(50)

    /// Where the pointer goes when it is sent apart from the pictures
    /// (`--cursor metadata`, or `auto` while the receivers draw it); nil
    /// when it never is.
    /// Set before `run`, which takes it up.
    let pointerSink = Locked<(@Sendable (PointerState) -> Void)?>(nil)
    /// Whether the pointer is to go apart from the pictures (set from any
    /// thread: the network thread follows what the receivers say, for
    /// `--cursor auto`); the capture thread takes it up at its next turn.
    let pointerWanted = Atomic<Bool>(false)
    /// The pointer is read at most this often (and at every wake-up): past
    /// `CursorAnnouncer.minimumInterval` (8 ms), so no position it hands on
    /// is held back for the feedback thread to send later.
    static let pointerInterval = Duration.milliseconds(16)

    /// What the capture thread alone keeps from turn to turn.
    private struct Turns {
        /// The pointer's sink, taken up when the thread starts.
        var sink: (@Sendable (PointerState) -> Void)?
        /// Whether the pointer is apart now, when it was last read, and
        /// what was handed on then.
        var pointerApart = false
        var pointerReadAt = MonotonicTime.zero
        var lastPointer: PointerState?
        /// Why the source held pictures back at the last grab (told once per change).
        var paused: CapturePause?
    }

    private let turns = ThreadBound(Turns())

    /// Takes up a change of where the pointer goes: the capturer draws it
    /// in or leaves it out from the next grab (which takes its place
    /// again), and a receiver drawing it is told to stop (a pointer not
    /// shown) before the pictures hold it. Returns whether it changed.
    private func placePointer(_ context: SenderContext) -> Bool {
        turns.withValue { t in
            let wanted = t.sink != nil && pointerWanted.load(ordering: .relaxed)
            guard wanted != t.pointerApart else { return false }
            t.pointerApart = wanted
            capturer.placePointer(apart: wanted)
            if !wanted, var hidden = t.lastPointer {
                hidden.visible = false
                hidden.shape = nil
                t.sink?(hidden)
            }
            t.lastPointer = nil
            t.pointerReadAt = .zero
            context.stats.withLock { $0.pointerSentApart = wanted }
            return true
        }
    }

    /// Reads the pointer when it is sent apart and due, and hands it on
    /// when it moved or changed shape. A resting one is always due: read,
    /// it costs nothing unless its device moved, and then its first move
    /// goes at once.
    private func followPointer() {
        turns.withValue { t in
            guard t.pointerApart, let sink = t.sink else { return }
            let now = SystemClock.now()
            guard now.since(t.pointerReadAt) >= Self.pointerInterval || capturer.pointerResting else { return }
            t.pointerReadAt = now
            guard var pointer = capturer.readPointer() else { return }
            if pointer.shape == nil, var last = t.lastPointer {
                last.shape = nil
                if last == pointer { return }
            }
            sink(pointer)
            pointer.shape = nil
            t.lastPointer = pointer
        }
    }

    /// Whether the pointer goes apart now (the capture thread's).
    private var pointerApart: Bool { turns.withValue { $0.pointerApart } }

    func run(_ context: SenderContext) {
        let sink = pointerSink.withLock { $0 }
        turns.withValue { $0.sink = sink }
        capturer.wakeDescriptor = context.captureWakeup.descriptor
        if let refresh = stillRefresh, capturer.trackChanges() {
            runOnDamage(context, refresh: refresh)
        } else {
            runOnTimer(context)
        }
    }

    private func runOnDamage(_ context: SenderContext, refresh: Duration) {
        var schedule = GrabSchedule(quiet: Self.quiet, settle: Self.settle, refresh: refresh,
                                    longestWait: Self.longestWait, interval: Self.interval(feed))
        let resting = capturer.wakeDescriptor >= 0 ? capturer.restingPointerCheck ?? Self.restingWait : Self.restingWait
        var seen = capturer.changesSeen
        // What the last wait found (it looked at the pointer too): the next
        // turn starts from it instead of asking the server again.
        var found: Bool?
        while context.isActive {
            schedule.interval = Self.interval(feed)
            // A still screen coded coarse (the first picture, after a big
            // change, a narrow path) sharpens a step a picture: a picture
            // every `sharpeningRefresh` until it is sharp, then one a second.
            let sharpening = feed.sharpening.load(ordering: .relaxed)
            schedule.refresh = sharpening ? max(schedule.interval, Self.sharpeningRefresh) : refresh
            // A pointer moved into or out of the pictures: its place is grabbed again.
            if placePointer(context) { found = nil }
            // The pointer sent apart is read every wait, drawn in it is
            // asked after: a moving one every `pointerInterval` or
            // `longestWait`; a resting one when it moves and every
            // warp check (every `restingWait` without XInput 2).
            schedule.longestWait = capturer.pointerResting ? resting : pointerApart ? Self.pointerInterval : Self.longestWait
            guard context.isRunning else {
                found = nil
                pause(context)
                continue
            }
            followPointer()
            let pending = found ?? capturer.screenChanged
            found = nil
            noteChanges(asTheyCame: false)
            switch schedule.next(now: SystemClock.now(), pending: pending,
                                 keyframeWanted: context.keyframeRequested.load(ordering: .relaxed)) {
            case .waitForChange(let until):
                found = capturer.waitForChange(timeout: until.since(SystemClock.now()))
                noteChanges(asTheyCame: true)
            case .watchForNextChange(let until):
                _ = capturer.watchForNextChange(timeout: until.since(SystemClock.now()))
                noteChanges(asTheyCame: true)
            case .sleep(let until):
                SystemClock.sleep(until: until)
            case .grab:
                let skipped = schedule.grabbed(at: SystemClock.now())
                if skipped > 0 { context.stats.withLock { $0.framesUnchanged += skipped } }
                guard grab(context) else { return }
                // Damage the grab read is in the picture, not a change after it.
                seen = capturer.changesSeen
            }
        }

        /// A damage event read: the screen changed about now when it was
        /// read waiting for it, at some moment of the grab before when it
        /// was found there afterwards.
        func noteChanges(asTheyCame: Bool) {
            guard capturer.changesSeen != seen else { return }
            seen = capturer.changesSeen
            schedule.changed(at: SystemClock.now(), asItCame: asTheyCame)
        }
    }

    private static func interval(_ feed: VideoFeed) -> Duration {
        .seconds(1) / max(1, feed.fps.load(ordering: .relaxed))
    }

    private func runOnTimer(_ context: SenderContext) {
        var next = SystemClock.now()
        while context.isActive {
            let interval = Self.interval(feed)
            next += interval
            guard context.isRunning else {
                pause(context)
                next = SystemClock.now()
                continue
            }
            _ = placePointer(context)
            followPointer()
            guard grab(context) else { return }
            let now = SystemClock.now()
            // Fell behind (a stall): skip ahead instead of bursting to catch up.
            if next + interval < now { next = now }
            SystemClock.sleep(until: next)
        }
    }

    /// How long a paused capture thread waits at a time: the transitions
    /// and the end wake it (`SenderContext.captureWakeup`), so a second is
    /// only a safety net; a frame interval when nothing can wake it.
    static let pausedWait = Duration.seconds(1)

    /// One wait of a paused sender: nothing is grabbed or asked for, and
    /// neither the mouse nor drawing wakes the thread (`ScreenSource.idle`).
    private func pause(_ context: SenderContext) {
        let wait = capturer.wakeDescriptor >= 0 ? Self.pausedWait : Self.interval(feed)
        if !capturer.idle(timeout: wait) { SystemClock.sleep(for: Self.interval(feed)) }
    }

    /// Grabs one frame into the mailbox; false when capture failed (the run ends).
    private func grab(_ context: SenderContext) -> Bool {
        do {
            let (configured, maxHeight) = (configuredSize, feed.maxHeight.load(ordering: .relaxed))
            var incoming = try capturer.capture { width, height in
                let size = Self.pictureSize(source: VideoSize(width: width, height: height), configured: configured,
                                            maxHeight: maxHeight)
                return (size.width, size.height)
            }
            let pause = capturer.pause
            turns.withValue { t in
                guard pause != t.paused else { return }
                if let pause {
                    context.emit(.warning("\(pause.reason): nothing is sent until it is shown again"))
                } else if let paused = t.paused {
                    context.emit(.warning(paused.resumed))
                }
                t.paused = pause
            }
            if let picture = incoming.take(), feed.put(picture) {
                context.stats.withLock { $0.framesDroppedEncoderBusy += 1 }
            }
            return true
        } catch {
            context.fail(.capture("\(error)"))
            return false
        }
    }
}
