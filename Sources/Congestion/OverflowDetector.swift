internal import ShareWire
internal import ShareBase

/// Tells a queue that overflowed from loss that only happened, sans-IO. A
/// drop-tail queue loses packets when it is full, so the packet sent just
/// before a lost one arrived near the longest delay the path has shown
/// lately; random loss strikes at any queue. A shallow queue (a wifi
/// driver's, a policer's) overflows on a frame's burst long before a delay
/// trend or the loss rate says anything, and then keeps doing so, once a
/// frame or so, while the rate stays where it is.
///
/// A loss counts as an overflow when the nearest packet received before it
/// (sent at most `neighbourSpan` earlier) waited in the path's queue at
/// least `nearFull` of the deepest queue seen in the last `memory`, and
/// that queue was at least `shallowest` deep: jitter alone spreads one-way
/// delays by less.
public struct OverflowDetector: Sendable {
    static let memory: Duration = .seconds(2)
    static let neighbourSpan: Duration = .milliseconds(20)
    static let nearFull = 0.75
    static let shallowest = 25.0  // ms

    /// Received originals lately: send time and one-way delay (ms, on the
    /// receiver's clock minus ours, so only differences mean anything).
    private var delays: [(sent: MonotonicTime, delay: Double)] = []
    /// The first of `delays` still within `memory`; those before it are
    /// dropped in one go once they are half the array.
    private var start = 0
    /// Losses taken for overflows so far.
    public private(set) var overflows = 0

    /// A detector that has seen nothing yet.
    public init() {}

    /// Reads a report's results; true when a loss in them was an overflow.
    public mutating func update(_ results: [PacketResult]) -> Bool {
        var found = false
        for result in results where !result.packet.isRetransmission && !result.packet.isProbe {
            if let delay = result.oneWayDelay {
                insert(result.packet.sendTime, delay)
            } else if !result.received, overflowed(before: result.packet.sendTime) {
                overflows += 1
                found = true
            }
        }
        return found
    }

    private mutating func insert(_ sent: MonotonicTime, _ delay: Double) {
        // Reports come in send order; a late one is placed where it belongs.
        var index = delays.count
        while index > start, delays[index - 1].sent > sent { index -= 1 }
        delays.insert((sent, delay), at: index)
        guard let newest = delays.last?.sent else { return }
        while start < delays.count, newest.since(delays[start].sent) > Self.memory { start += 1 }
        if start > delays.count / 2 {
            delays.removeFirst(start)
            start = 0
        }
    }

    private func overflowed(before lost: MonotonicTime) -> Bool {
        let recent = delays[start...]
        guard let neighbour = recent.last(where: { $0.sent <= lost }), lost.since(neighbour.sent) <= Self.neighbourSpan,
              let lowest = recent.map(\.delay).min(), let highest = recent.map(\.delay).max() else { return false }
        let deepest = highest - lowest
        return deepest >= Self.shallowest && neighbour.delay - lowest >= deepest * Self.nearFull
    }
}
