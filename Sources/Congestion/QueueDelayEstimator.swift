internal import ShareWire
internal import ShareBase

/// How long packets now wait in queues on the path: one-way delay (receiver
/// arrival minus our send time, so the clocks' offset cancels) above the
/// smallest seen in the last `baseWindow`. The trendline sees a queue while
/// it grows; this sees one that stays full (a drop-tail buffer at capacity,
/// where delay is high but flat), as SCReAM's queue delay target does
/// (RFC 8298 §4.1.2.1).
public struct QueueDelayEstimator: Sendable {
    public var baseWindow: Duration = .seconds(10)
    /// Minimum one-way delay per second of arrival time, oldest first.
    private var minima: [(second: Int64, delay: Double)] = []
    private var smoothed: Double?

    public init() {}

    /// The current queueing delay in milliseconds, once known.
    public var queueDelay: Double? {
        guard let smoothed, let base = minima.map(\.delay).min() else { return nil }
        return max(smoothed - base, 0)
    }

    public mutating func update(_ results: [PacketResult]) {
        for result in results {
            guard let arrival = result.arrival, let delay = result.oneWayDelay, !result.packet.isRetransmission else { continue }
            let second = Int64((arrival / .seconds(1)).rounded(.down))
            if let last = minima.last, last.second == second {
                minima[minima.count - 1].delay = min(last.delay, delay)
            } else {
                minima.append((second, delay))
            }
            let keep = Int64(baseWindow / .seconds(1))
            while let first = minima.first, second - first.second > keep { minima.removeFirst() }
            // About 200 ms of smoothing at a few hundred packets a second.
            smoothed = smoothed.map { $0 * 0.97 + delay * 0.03 } ?? delay
        }
    }
}
