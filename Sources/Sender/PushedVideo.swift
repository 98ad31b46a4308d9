internal import ShareColor
internal import ShareBase
internal import ShareFrames
internal import ShareSync
internal import ShareWire
import Synchronization

/// What became of a picture a host pushed.
public enum PushOutcome: Sendable, Hashable {
    /// Converted into a picture for the encoder.
    case accepted
    /// Sooner after the last accepted one than the frame rate asks (the
    /// encoder would not take it): dropped, counted.
    case tooSoon
    /// Every picture of the pool is still with the encoder, or another
    /// thread is pushing right now: dropped, counted. A push never waits.
    case busy
    /// The sender is not running (not started, paused or finished).
    case notRunning
    /// The picture cannot be taken (a size or stride that does not fit).
    case refused(String)
}

/// Pictures a host pushes instead of a captured screen (`ScreenSender.push`):
/// each accepted one is converted (and scaled) at once, on the pushing
/// thread, into a free picture of the frame pool at the encoded size and
/// left in the video feed; the caller's memory is not read after the push
/// returns. A push never waits: with no free picture, another push under
/// way, or sooner than the frame rate asks, it returns at once and the drop
/// is counted.
final class PushedVideo: @unchecked Sendable {
    // Safe: the pool, converter and counters below are used only by the
    // thread that holds `pushing` (taken with a compare-exchange, never
    // waited for); `poolBytes` is atomic; the feed is Sendable.
    private let pushing = Atomic<Bool>(false)
    private var pool: FramePool?
    private let converter = PixelConverter()
    private var lastAccepted: MonotonicTime?
    private var pictures: UInt64 = 0
    private var sequence: UInt64 = 0
    private let feed: VideoFeed
    private let configuredSize: VideoSize?
    private let slots: Int
    /// Bytes the pool's pictures take (read by the statistics: atomic).
    private let poolBytes = Atomic<Int>(0)
    /// The last accepted picture's size as pushed (what a repeat is made of).
    private var lastSource: VideoSize?

    init(feed: VideoFeed, configuredSize: VideoSize?, slots: Int) {
        self.feed = feed
        self.configuredSize = configuredSize
        self.slots = max(1, slots)
    }

    var heldBytes: Int { poolBytes.load(ordering: .relaxed) }

    /// Converts `picture` into the pool when the frame rate and the pool allow.
    func push(_ picture: PixelBuffer, width: Int, height: Int, time: CaptureTime?, context: SenderContext) -> PushOutcome {
        guard (1...8192).contains(width), (1...8192).contains(height) else {
            return .refused("a picture of \(width)x\(height) (1 to 8192 pixels a side)")
        }
        guard picture.fits(width: width) else { return .refused("a stride too small for \(width) pixels") }
        guard context.isRunning else { return .notRunning }
        guard pushing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            context.stats.withLock { $0.framesDroppedPoolExhausted += 1 }
            return .busy
        }
        defer { pushing.store(false, ordering: .releasing) }
        let now = SystemClock.now()
        sequence += 1
        // Up to a tenth of an interval early is on time (hosts' clocks jitter).
        let interval = Self.interval(feed) * 9 / 10
        if let lastAccepted, now.since(lastAccepted) < interval {
            context.stats.withLock { $0.framesDroppedTooSoon += 1 }
            return .tooSoon
        }
        let size = CaptureLoop.pictureSize(source: VideoSize(width: width, height: height), configured: configuredSize,
                                           maxHeight: feed.maxHeight.load(ordering: .relaxed))
        if pool?.width != size.width || pool?.height != size.height {
            pool = FramePool(width: size.width, height: size.height, slots: slots)
            poolBytes.store(pool?.bytes ?? 0, ordering: .relaxed)
        }
        guard let pool, var lease = pool.lease(time: time ?? CaptureTime.now(), sequence: sequence, sourceWidth: width,
                                               sourceHeight: height) else {
            context.stats.withLock { $0.framesDroppedPoolExhausted += 1 }
            return .busy
        }
        converter.convert(picture, width: width, height: height, into: lease.planes)
        pictures += 1
        lease.number = pictures
        lease.written()
        lastAccepted = now
        lastSource = VideoSize(width: width, height: height)
        let replaced = feed.put(lease)
        context.stats.withLock { s in
            s.framesCaptured += 1
            if replaced { s.framesDroppedEncoderBusy += 1 }
        }
        return .accepted
    }

    /// The frame interval at the frame rate asked for now.
    private static func interval(_ feed: VideoFeed) -> Duration { .seconds(1) / max(1, feed.fps.load(ordering: .relaxed)) }

    /// A host that stopped pushing (its content is still): the newest
    /// picture again, marked unchanged (x264 skips every macroblock, a few
    /// dozen bytes), once `stillRefresh` passed since the last one — or two
    /// frame intervals, when a receiver asked for a keyframe (a host still
    /// pushing brings that picture itself) — so a receiver
    /// that joins or lost packets gets a picture without waiting for the
    /// host. Called by the encode thread when it found no picture; a push
    /// under way makes it return (that push brings a picture).
    func repeatNewest(_ context: SenderContext, stillRefresh: Duration?) {
        guard context.isRunning,
              pushing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        defer { pushing.store(false, ordering: .releasing) }
        guard let accepted = lastAccepted else { return }
        let now = SystemClock.now()
        let wanted = context.keyframeRequested.load(ordering: .relaxed) ? Self.interval(feed) * 2 : stillRefresh
        guard let wanted, now.since(accepted) >= wanted, let pool, let source = lastSource else { return }
        sequence += 1
        guard var lease = pool.lease(time: CaptureTime.now(), sequence: sequence, sourceWidth: source.width,
                                     sourceHeight: source.height) else { return }
        if !lease.holdsNewest {
            guard let previous = lease.previousPlanes else { return }
            lease.planes.copyRows(0..<lease.height, from: previous)
        }
        pictures += 1
        lease.number = pictures
        lease.changes = []
        lease.written()
        lastAccepted = now
        _ = feed.put(lease)
        context.stats.withLock { $0.framesRepeated += 1 }
    }
}
