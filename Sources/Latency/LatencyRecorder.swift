internal import ShareSync
internal import ShareBase

/// Latency samples in milliseconds with percentiles. Keeps the most recent
/// `capacity` samples (16384: nine minutes at 30 fps) in storage reserved at
/// the start, so memory stays fixed on long runs.
public struct LatencyRecorder: Sendable {
    private var samples: BoundedHistory<Double>
    public var capacity: Int { samples.capacity }
    public private(set) var count = 0

    public init(capacity: Int = 16_384) {
        samples = BoundedHistory(capacity: capacity)
    }

    public mutating func record(milliseconds: Double) {
        guard milliseconds.isFinite else { return }
        count += 1
        samples.append(milliseconds)
    }

    /// The p-th percentile (0...100) by nearest rank, nil with no samples.
    public func percentile(_ p: Double) -> Double? {
        LatencySummary.percentile(p, ofSorted: samples.unordered.sorted())
    }

    /// Percentiles of the kept samples (one sort; not for every packet).
    public var summary: LatencySummary {
        var kept = samples.unordered
        return LatencySummary(samples: count, sorting: &kept)
    }

    /// The kept samples, in no particular order, in storage of their own:
    /// a copy that shares nothing with the recorder (sharing, the
    /// recorder's next sample would copy them all).
    func detachedSamples() -> [Double] {
        samples.unordered.withUnsafeBufferPointer { Array($0) }
    }
}

/// Latencies recorded on one thread (the frame path) and summarized on
/// any other: a sample is an append under a lock; whoever asks for the
/// percentiles copies the samples under the lock and sorts them on its own
/// thread. The frame path never sorts (a full window of 16384 samples takes
/// about a millisecond), however often statistics are read.
public final class LatencyLog: Sendable {
    private let recorder: Locked<LatencyRecorder>

    public init(capacity: Int = 16_384) {
        recorder = Locked(LatencyRecorder(capacity: capacity))
    }

    public func record(milliseconds: Double) {
        recorder.withLock { $0.record(milliseconds: milliseconds) }
    }

    /// Percentiles of the samples kept so far (sorted on the calling thread).
    public var summary: LatencySummary {
        var (count, kept) = recorder.withLock { ($0.count, $0.detachedSamples()) }
        return LatencySummary(samples: count, sorting: &kept)
    }
}

/// Percentiles of a latency distribution, in milliseconds.
public struct LatencySummary: Sendable, Equatable, Codable {
    /// How many latencies were measured.
    public var samples: Int
    /// The median (nil without samples).
    public var p50: Double?
    /// The 95th percentile.
    public var p95: Double?
    /// The 99th percentile.
    public var p99: Double?
    /// The largest.
    public var max: Double?

    /// A summary of these figures (none: no samples).
    public init(samples: Int = 0, p50: Double? = nil, p95: Double? = nil, p99: Double? = nil, max: Double? = nil) {
        self.samples = samples
        self.p50 = p50
        self.p95 = p95
        self.p99 = p99
        self.max = max
    }

    /// The summary of `count` latencies of which `kept` were kept; sorts `kept`.
    init(samples count: Int, sorting kept: inout [Double]) {
        kept.sort()
        self.init(samples: count, p50: Self.percentile(50, ofSorted: kept), p95: Self.percentile(95, ofSorted: kept),
                  p99: Self.percentile(99, ofSorted: kept), max: kept.last)
    }

    static func percentile(_ p: Double, ofSorted sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.min(Swift.max(rank, 0), sorted.count - 1)]
    }

    /// "p50 / p95 / p99 ms (p50/p95/p99)" with one decimal, or "no samples".
    public var text: String {
        guard let p50, let p95, let p99 else { return "no samples" }
        return String(format1(p50)) + " / " + format1(p95) + " / " + format1(p99) + " ms (p50/p95/p99)"
    }

    private func format1(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }
}
