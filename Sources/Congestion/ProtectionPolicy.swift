internal import ShareWire
public import ShareBase

/// When to send forward error correction, and how much, sans-IO. A NACK
/// repairs a loss one round trip later; once that is longer than a frame
/// can wait unnoticed (`slowRepair`), losses mean freezes, so FEC repairs
/// them at once instead: one FlexFEC packet per group of media packets,
/// the group smaller as loss grows. Heavy loss is protected whatever the
/// round trip: there NACK alone keeps few frames whole (at 10%, a frame of
/// sixteen packets arrives whole one time in five) and its repairs are
/// lost too, so frames wait and keyframes are asked for. Off on fast paths
/// with moderate loss (NACK is cheaper) and when loss stays negligible;
/// hysteresis on both. A path found slow at its
/// first round trip starts protected (`unprovenGroup`): its loss is not
/// known until the receiver has reported on some packets, and a loss before
/// that (the first keyframe's many packets are the likeliest) would freeze
/// the picture for a round trip; without loss it goes off after `offAfter`
/// like any protection. Loss while the path is saturated is the sender's
/// own overflow, not the path's: FEC would only add to the load that
/// overflows it (and the queue's delay makes the path look slow), so
/// while `congested` there is none. On a path whose round trip is longer
/// than a viewer waits unnoticed (`crossAbove`), a group that loses two
/// packets freezes the picture for that round trip: there each packet is
/// also protected across the groups (`crossing`, `FECGroups`), so two
/// losses in one group are rebuilt too, for twice the repairs.
public struct ProtectionPolicy: Sendable {
    /// A round trip above which NACK repairs show as freezes.
    public var slowRepair: Duration = .milliseconds(60)
    /// Below this round trip FEC is turned off again.
    public var fastRepair: Duration = .milliseconds(40)
    /// Loss above which FEC starts on any path once it has lasted
    /// `heavyAfter` (moderate random loss often reads above it for a
    /// moment); a fast path turns it off again below half of it.
    public var heavyLoss = 0.07
    public var heavyAfter: Duration = .seconds(2)
    /// Loss above which FEC starts, and below which (for `offAfter`) it stops.
    public var startLoss = 0.003
    public var stopLoss = 0.001
    public var offAfter: Duration = .seconds(5)
    /// Media packets per repair packet on a slow path whose loss is not known
    /// yet: 1 in 11, about 8% of the video's bits, for the first
    /// `offAfter` if no loss comes.
    public var unprovenGroup = 11
    /// A round trip above which protection crosses the groups: a NACK's
    /// repair (the round trip, the NACK's wait and the pacer's) then comes
    /// about as late as the frame spacing plus 100 ms, which a viewer sees
    /// as a freeze (`ShownGaps`; `Benchmarks/harness.py --network rtt100`
    /// froze for such repairs); below `crossBelow` it stops.
    public var crossAbove: Duration = .milliseconds(90)
    public var crossBelow: Duration = .milliseconds(70)

    /// Smoothed loss fraction of media packets.
    public private(set) var loss = 0.0
    /// Media packets per repair packet, nil when off.
    public private(set) var group: Int? {
        didSet { if group == nil { crossing = false } }
    }
    /// Whether each packet is also protected across the groups.
    public private(set) var crossing = false
    private var quietSince: MonotonicTime?
    /// Since when loss has stayed above `heavyLoss`.
    private var heavySince: MonotonicTime?
    /// Whether a round trip has been seen (the first decides whether the
    /// path starts protected).
    private var judged = false

    public init() {}

    /// Feeds the controller's latest loss fraction and round trip, and
    /// whether the path was saturated lately.
    public mutating func update(lossFraction: Double, roundTrip: Duration?, now: MonotonicTime,
                                congested: Bool = false) -> Int? {
        loss = loss * 0.8 + min(max(lossFraction, 0), 1) * 0.2
        if congested {
            heavySince = nil
            quietSince = nil
            group = nil
            return group
        }
        let rtt = roundTrip ?? .zero
        defer { cross(roundTrip: rtt) }
        if !judged, roundTrip != nil {
            judged = true
            if rtt >= slowRepair, group == nil {
                group = unprovenGroup
                quietSince = now
            }
        }
        heavySince = loss > heavyLoss ? heavySince ?? now : nil
        let heavy = heavySince.map { now.since($0) >= heavyAfter } ?? false
        if heavy || (loss > startLoss && rtt >= slowRepair) {
            quietSince = nil
            // About 5% of the packets' worth of protection per 1% of loss,
            // so two losses in one group stay rare: 1% -> 1 in 5.
            group = min(max(Int((0.05 / loss).rounded()), 3), 12)
            return group
        }
        if rtt < fastRepair, loss < heavyLoss / 2 {
            group = nil
            return group
        }
        if group != nil, loss < stopLoss {
            let since = quietSince ?? now
            quietSince = since
            if now.since(since) >= offAfter { group = nil }
        } else {
            quietSince = nil
        }
        return group
    }

    /// Crosses the groups while protecting a path slower than `crossAbove`
    /// that was seen to lose (not one protected only until its loss is known).
    private mutating func cross(roundTrip: Duration) {
        guard group != nil else { return }
        if roundTrip >= crossAbove, loss > startLoss { crossing = true } else if roundTrip < crossBelow { crossing = false }
    }

    /// The share of video bitrate the repairs take.
    public var overhead: Double { Self.overhead(group: group, crossing: crossing) }

    /// The share of video bitrate one repair per `group` media packets takes
    /// (two, crossing the groups).
    public static func overhead(group: Int?, crossing: Bool = false) -> Double {
        group.map { (crossing ? 2 : 1) / Double($0 + (crossing ? 2 : 1)) } ?? 0
    }
}
