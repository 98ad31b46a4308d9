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
///
/// A screen is mostly application-limited: a still or simple picture
/// sends far less than its target, and the rate control grows the target
/// no further than 1.5x what gets through, so after any cut the target
/// stays low until the content needs more, then climbs at GCC's pace
/// while a slide change or a video waits. libwebrtc probes screen shares
/// in that region (ALR probing); so does this: once the stream uses under
/// `idleShare` of a target below the ceiling, and until it uses over
/// `busyShare`, a probe every `idleInterval` for twice the target (at
/// most the ceiling). The media keeps flowing beside the padding, so the
/// padding makes up the rest, and a cluster the path carries shows that
/// it carries both: the padding and the media that left while it did. Not
/// the media's mean rate: a frame's packets leave in a burst, and a
/// cluster between two frames carried the padding alone. Counted at the
/// mean, a jittery wifi hop was taken to carry its ceiling, the encoder
/// was told the path is open and coded finer than the hop takes, and the
/// hop's queue overflowed (`Benchmarks/harness.py --network wifi`).
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
    /// A stream that uses under this share of its target is application-limited,
    public static let idleShare = 0.65
    /// until it uses more than this share (content varies frame to frame:
    /// without a margin, as libwebrtc's ALR detector keeps too, a screen
    /// near the line would leave the region and enter it all the time).
    public static let busyShare = 0.8
    /// How often an application-limited stream's target is probed.
    public var idleInterval: Duration = .seconds(5)
    /// Since when the stream has used under `idleShare` of its target.
    private var idleSince: MonotonicTime?
    /// What the stream gets through now, as last observed.
    private var used: Bitrate = .zero
    /// Whether the cluster in flight probes over an application-limited
    /// stream, its media beside the padding (not after a drop): what it
    /// carried is then the padding and the media that left with it.
    private var overMedia = false

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

    /// A controller that has seen no drop; with `goal`, one that seeks it
    /// from the first feedback on, as after a drop from it: a start under
    /// the ceiling, on a path not proven yet (libwebrtc probes at its
    /// start too). The first probe that falls short of it tells the slower
    /// path's rate, and the goal, never carried, is given up: sought on,
    /// every probe set the target at the link's rate again, and content
    /// that fills it overflowed a shallow queue each time
    /// (`Benchmarks/harness.py --network wifi --scenes video`).
    public init(seeking goal: Bitrate? = nil) {
        startGoal = goal
    }
    /// The rate sought from the first observation on.
    private var startGoal: Bitrate?
    /// Whether what is sought is the start's goal, not a rate the path carried.
    private var seekingStart = false

    /// Seeks the start's goal from now on, once: from the first feedback
    /// (a probe sent with the first packets shares the link with the first
    /// keyframe, and arrives at a fraction of its rate).
    private mutating func seekStartGoal(now: MonotonicTime) {
        guard let goal = startGoal else { return }
        beforeDrop = (goal, now)
        (startGoal, seekingStart) = (nil, true)
    }

    /// Follows the target and what the receiver was seen to get (`carried`,
    /// the acknowledged peak): notes a large drop, and forgets it once the
    /// target is back or it is old. What is sought after a drop is what the
    /// path carried before it, not a target it never proved (a start at the
    /// configured maximum, say): probing to that would overshoot the link
    /// again and again. (A start under it seeks it: `init(seeking:)`.)
    /// `used` is what the stream gets through now (the acknowledged rate):
    /// well under the target, the stream is application-limited.
    public mutating func observe(target: Bitrate, carried: Bitrate? = nil, used: Bitrate? = nil, now: MonotonicTime) {
        switch used {
        case let used? where used < target * Self.idleShare: idleSince = idleSince ?? now
        case let used? where used <= target * Self.busyShare: break
        default: idleSince = nil
        }
        self.used = used ?? .zero
        seekStartGoal(now: now)
        recent.append((now, target, carried))
        while let first = recent.first, now.since(first.at) > highWindow { recent.removeFirst() }
        let high = recent.map(\.target).max() ?? target
        if target < high * Self.dropShare, high > beforeDrop?.rate ?? .zero {
            let shown = recent.compactMap(\.carried).max()
            beforeDrop = (shown.map { min($0, high) } ?? high, now)
            (shortfalls, seekingStart) = (0, false)
        }
        if let before = beforeDrop, target >= before.rate * Self.recoveredShare || now.since(before.at) > memory {
            beforeDrop = nil
        }
    }

    /// A cluster to send now, if one is due: `calm` says the path shows no
    /// congestion; `ceiling` is the most the stream may take (nil: no
    /// probes for an application-limited stream).
    public mutating func next(now: MonotonicTime, target: Bitrate, calm: Bool, ceiling: Bitrate? = nil) -> ProbeCluster? {
        guard calm else { return nil }
        let goal: Bitrate, every: Duration, multiple: Double, beside: Bitrate?
        if let before = beforeDrop?.rate {
            (goal, every, multiple, beside) = (before, interval, shortfalls == 0 ? 3 : 2, nil)
        } else if let ceiling, let idle = idleSince, now.since(idle) >= idleInterval, target < ceiling * Self.recoveredShare {
            (goal, every, multiple, beside) = (ceiling, idleInterval, 2, used)
        } else {
            return nil
        }
        if let measurement {
            // A cluster whose feedback never came (lost, or the receiver gone) is given up.
            guard let last = measurement.lastSent, now.since(last) > .seconds(1) else { return nil }
            self.measurement = nil
        }
        let wait = shortfalls >= patience ? every * 2 : every
        if let last = lastCluster, now.since(last) < wait { return nil }
        let rate = min(goal, target * multiple)
        // After a drop, a probe worth sending seeks a fifth more; an idle
        // one may seek less, to reach the ceiling from near it.
        guard rate > target * (beside == nil ? 1.2 : 1.1) else { return nil }
        let cluster = ProbeCluster(rate: rate - (beside ?? .zero))
        overMedia = beside != nil
        clusters += 1
        lastCluster = now
        measurement = ProbeMeasurement(cluster)
        return cluster
    }

    /// A packet as it leaves: the cluster's own, or one sent beside it.
    public mutating func sent(_ packet: SentPacket) {
        if packet.isProbe { measurement?.sent(packet) } else { measurement?.sentBeside(packet) }
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
            return rate + (overMedia ? current.rateBeside : .zero)
        case .fellShort(let received):
            shortfalls += 1
            if seekingStart { (beforeDrop, seekingStart) = (nil, false) }
            // What arrived spread out arrived at the link's rate: a little
            // under it is what the path carries (libwebrtc takes 95%).
            return received.map { $0 * 0.95 }
        case .unknown:
            return nil
        }
    }
}
