internal import ShareWire
public import ShareBase

/// The bottleneck's rate from packet-train dispersion: the pacer releases a
/// frame's packets back to back, and a link slower than that spreads them
/// out, so their arrival spacing is its serialisation time. A slow link's
/// short queue can be overflowed by one large frame long before any delay
/// trend shows; knowing the rate lets the pacer send no faster than the
/// link drains. Only trains that arrive in order and evenly spread count
/// (jitter spreads a train unevenly; a path that reordered a train lately
/// jitters more than our packets' spacing, and is not measured), and the
/// estimate is the median of the last few when they agree; trains that
/// arrive as tightly as they left say there is no bottleneck below our
/// pacing rate, and clear it. Samples expire after
/// `memory`: paced at the bottleneck's rate, trains no longer form, and
/// the next frame after the expiry leaves as a train again and re-measures
/// (or finds the link faster than it was).
public struct BottleneckEstimator: Sendable {
    /// Packets sent within this of each other belong to one train.
    static let trainGap: Duration = .microseconds(1500)
    static let minimumPackets = 4
    /// Arrival spans shorter than this are below the feedback's resolution (1/1024 s).
    static let minimumSpan = 4.0  // ms
    static let keep = 9
    /// How far apart the middle half of the recent trains' rates may be.
    static let agreement = 1.5

    /// How long a measurement counts.
    public var memory: Duration = .seconds(3)
    private var samples: [(at: Duration, rate: Bitrate)] = []
    private var unconstrained = 0
    private var latest: Duration = .zero
    /// When a train last arrived out of order: the path's delay varies by
    /// more than the spacing of our packets, and no train's spreading can
    /// be told from that (a link, a FIFO, never reorders).
    private var reorderedAt: Duration?
    /// Set when trains showed a bottleneck gone (the path got faster); the
    /// owner takes it with `takeWidened`.
    private var widened = false
    private var pinned: (at: Duration, rate: Bitrate)?

    /// True once after a bottleneck has been seen to go away.
    public mutating func takeWidened() -> Bool {
        defer { widened = false }
        return widened
    }

    public init() {}

    /// Forgets what was measured (a probe showed the path faster).
    public mutating func forget() {
        samples.removeAll()
        unconstrained = 0
        pinned = nil
    }

    /// A rate measured another way, that stands for `memory` unless trains
    /// measure the link again: what a saturated link delivered.
    public mutating func pin(_ rate: Bitrate) {
        samples.removeAll()
        pinned = (latest, rate)
    }

    /// The rate of the narrowest link seen lately, if one is.
    public var rate: Bitrate? {
        let recent = samples.filter { latest - $0.at <= memory }.map(\.rate).sorted()
        if recent.count < 3, let pinned, latest - pinned.at <= memory { return pinned.rate }
        guard recent.count >= 3 else { return nil }
        // A link serialises every train at its one rate, so its trains
        // agree; jitter spreads the few trains that happen to arrive in
        // order and evenly at random rates, which do not. The middle half
        // must agree within a factor of 1.5.
        guard recent[recent.count * 3 / 4] <= recent[recent.count / 4] * Self.agreement else { return nil }
        return recent[recent.count / 2]
    }

    public mutating func update(_ results: [PacketResult]) {
        var train: [PacketResult] = []
        for result in results where !result.packet.isRetransmission {
            if let arrival = result.arrival { latest = max(latest, arrival) }
            if let last = train.last, result.packet.sendTime.since(last.packet.sendTime) > Self.trainGap
                || result.packet.sendTime < last.packet.sendTime {
                measure(train)
                train.removeAll(keepingCapacity: true)
            }
            train.append(result)
        }
        measure(train)
    }

    private mutating func measure(_ train: [PacketResult]) {
        guard train.count >= Self.minimumPackets, train.allSatisfy({ $0.arrival != nil }) else { return }
        let arrivals = train.map { $0.arrival! / .milliseconds(1) }
        guard zip(arrivals, arrivals.dropFirst()).allSatisfy({ $0 <= $1 }) else {
            // Reordered: what was measured lately may be such jitter too.
            reorderedAt = latest
            samples.removeAll()
            return
        }
        let span = arrivals.last! - arrivals.first!
        let sent = Double(train.last!.packet.sendTime.since(train.first!.packet.sendTime).nanoseconds) / 1e6
        let size = ByteCount(bytes: train.dropFirst().reduce(0) { $0 + $1.packet.size })
        if span < max(Self.minimumSpan, sent * 1.5 + 1) {
            // As tight as it left: nothing below our pacing rate on the path.
            unconstrained += 1
            if unconstrained >= 3 {
                if !samples.isEmpty || pinned != nil { widened = true }
                samples.removeAll()
                pinned = nil
                unconstrained = 0
            }
            return
        }
        // Evenly spread, as serialisation does: each gap near its share of the span.
        let expected = span / Double(train.count - 1)
        let gaps = zip(arrivals, arrivals.dropFirst()).map { $1 - $0 }
        let deviation = gaps.reduce(0) { $0 + abs($1 - expected) } / Double(gaps.count)
        guard deviation < max(expected * 0.5, 1.0) else { return }
        unconstrained = 0
        if let reorderedAt, latest - reorderedAt <= memory { return }
        samples.append((train.last!.arrival!, .bitsPerSecond(size.bits / span * 1000)))  // span in ms
        if samples.count > Self.keep { samples.removeFirst() }
    }
}
