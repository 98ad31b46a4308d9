public import ShareLatency
internal import ShareBase
internal import ShareSync

/// Reads the frame stamp (`FrameStamp`, drawn by `share scene --stamp`)
/// back from each picture a receiver shows, and measures glass to glass:
/// from the scene drawing a stamp to the first picture holding it shown.
/// Both ends must share one machine's monotonic clock. Fed on the
/// receiver's decode thread (`ReceiverConfiguration.onShown`), read from any.
public final class StampReader: Sendable {
    /// What the stamps said so far.
    public struct Counts: Sendable, Equatable, Codable {
        /// Drawing a stamp to its first picture shown.
        public var glassToGlass = LatencySummary()
        /// Pictures whose stamp was new, the previous picture's, or unreadable.
        public var stampsNew = 0
        public var stampsRepeated = 0
        public var stampsUnreadable = 0
    }

    private struct State {
        var last: FrameStamp?
        var counts = Counts()
    }

    private let latency = LatencyLog()
    private let state = Locked(State())

    public init() {}

    /// Reads the stamp of a `width` x `height` picture whose luma `luma`
    /// gives, shown at `now` (monotonic microseconds; nil: now), and
    /// returns it (nil when unreadable).
    @discardableResult
    public func read(width: Int, height: Int, now: UInt64? = nil, luma: (_ x: Int, _ y: Int) -> UInt8) -> FrameStamp? {
        let now = now ?? SystemClock.now().nanoseconds / 1000
        let stamp = FrameStamp.read(width: width, height: height, luma: luma)
        let elapsed: UInt64? = state.withLock { state in
            guard let stamp else {
                state.counts.stampsUnreadable += 1
                return nil
            }
            // A stamp is new when its time is: a frame number is read
            // only where one was drawn, and says nothing about newness.
            guard stamp.microseconds != state.last?.microseconds else {
                state.counts.stampsRepeated += 1
                return nil
            }
            state.last = stamp
            state.counts.stampsNew += 1
            return stamp.microseconds(until: now)
        }
        if let elapsed { latency.record(milliseconds: Double(elapsed) / 1000) }
        return stamp
    }

    /// The counts now, with the latency summarized (sorted here, on the reader's thread).
    public var counts: Counts {
        let summary = latency.summary
        var counts = state.withLock { $0.counts }
        counts.glassToGlass = summary
        return counts
    }
}
