public import ShareBase

/// When to probe, and how fast, sans-IO. After a large drop in the
/// target (the path's rate fell, or a burst of loss was taken for it), the
/// rate control alone climbs back at about 12% a second: from a tenth of
/// the rate, tens of seconds. libwebrtc probes instead, and so does this:
/// while the target is well under what it was before the drop, and the
/// path is calm (no overuse, little loss, a short queue), a probe cluster
/// every `interval` at up to three times the target (never above the rate
/// before the drop). A cluster the path carries raises the estimate at
/// once, and the next follows as soon as its result is in; one that falls
/// short costs about `ProbeCluster.duration` of queue at the probe's rate.
/// The rate before the drop is forgotten once reached, or after `memory`.
public struct ProbeController: Sendable {
    /// A target below this share of the recent high is a large drop.
    public static let dropShare = 0.6
    /// Probing stops once the target is back to this share of the rate before the drop.
    public static let recoveredShare = 0.85
    /// How often a probe may be sent while the path stays below the rate before the drop.
    public var interval: Duration = .seconds(1)
    /// After this many clusters in a row fell short, probes come half as often.
    public var patience = 5
    /// How long after a drop the rate before it is still sought.
    public var memory: Duration = .seconds(30)
    /// How far back the recent high looks.
    public var highWindow: Duration = .seconds(3)

    private var recent: [(at: MonotonicTime, target: Bitrate, carried: Bitrate?)] = []
    /// The rate before the last large drop (the most the path was seen to
    /// carry then, else the target), and when it was.
    public private(set) var beforeDrop: (rate: Bitrate, at: MonotonicTime)?
    private var measurement: ProbeMeasurement?
    private var lastCluster: MonotonicTime?
    private var shortfalls = 0
    /// Clusters sent.
    public private(set) var clusters = 0
    /// Clusters the path carried.
    public private(set) var carried = 0

    /// A controller that has seen no drop.
    public init() {}

    /// Follows the target and what the receiver was seen to get (`carried`,
    /// the acknowledged peak): notes a large drop, and forgets it once the
    /// target is back or it is old. What is sought after a drop is what the
    /// path carried before it, not a target it never proved (a start at the
    /// configured maximum, say): probing to that would overshoot the link.
    public mutating func observe(target: Bitrate, carried: Bitrate? = nil, now: MonotonicTime) {
        recent.append((now, target, carried))
        while let first = recent.first, now.since(first.at) > highWindow { recent.removeFirst() }
        let high = recent.map(\.target).max() ?? target
        if target < high * Self.dropShare, high > beforeDrop?.rate ?? .zero {
            let shown = recent.compactMap(\.carried).max()
            beforeDrop = (shown.map { min($0, high) } ?? high, now)
            shortfalls = 0
        }
        if let before = beforeDrop, target >= before.rate * Self.recoveredShare || now.since(before.at) > memory {
            beforeDrop = nil
        }
    }

    /// A cluster to send now, if one is due: `calm` says the path shows no
    /// congestion.
    public mutating func next(now: MonotonicTime, target: Bitrate, calm: Bool) -> ProbeCluster? {
        guard let goal = beforeDrop?.rate, calm else { return nil }
        if let measurement {
            // A cluster whose feedback never came (lost, or the receiver gone) is given up.
            guard let last = measurement.lastSent, now.since(last) > .seconds(1) else { return nil }
            self.measurement = nil
        }
        let wait = shortfalls >= patience ? interval * 2 : interval
        if let last = lastCluster, now.since(last) < wait { return nil }
        let rate = min(goal, target * (shortfalls == 0 ? 3 : 2))
        guard rate > target * 1.2 else { return nil }
        let cluster = ProbeCluster(rate: rate)
        clusters += 1
        lastCluster = now
        measurement = ProbeMeasurement(cluster)
        return cluster
    }

    /// A probe packet as it leaves.
    public mutating func sent(_ packet: SentPacket) {
        measurement?.sent(packet)
    }

    /// Takes feedback on probe packets; returns a rate the path was seen to
    /// carry when a cluster's verdict is in: the probe's own, or, when it
    /// arrived spread out, a little under the rate it arrived at.
    public mutating func handle(_ results: [PacketResult]) -> Bitrate? {
        guard var current = measurement else { return nil }
        let outcome = current.update(results)
        measurement = current
        guard let outcome else { return nil }
        measurement = nil
        switch outcome {
        case .carried(let rate):
            carried += 1
            shortfalls = 0
            // The next cluster may follow at once.
            lastCluster = nil
            return rate
        case .fellShort(let received):
            shortfalls += 1
            // What arrived spread out arrived at the link's rate: a little
            // under it is what the path carries (libwebrtc takes 95%).
            return received.map { $0 * 0.95 }
        case .unknown:
            return nil
        }
    }
}
