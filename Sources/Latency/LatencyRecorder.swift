internal import ShareWire

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
        Self.percentile(p, ofSorted: samples.unordered.sorted())
    }

    private static func percentile(_ p: Double, ofSorted sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    /// Percentiles of the kept samples (one sort; not for every packet).
    public var summary: LatencySummary {
        let sorted = samples.unordered.sorted()
        return LatencySummary(samples: count, p50: Self.percentile(50, ofSorted: sorted),
                              p95: Self.percentile(95, ofSorted: sorted), p99: Self.percentile(99, ofSorted: sorted),
                              max: sorted.last)
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
