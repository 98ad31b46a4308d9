public import ShareBase
#if canImport(Glibc)
internal import Glibc
#endif

/// How long the jitter buffer waits for a missing packet, sans-IO: the
/// first NACK waits out the reordering, each try takes a round trip (a
/// repeat a margin more), and as many tries fit as the path's loss makes
/// worth it. A repair is lost as often as the original was, so on a
/// clean path two tries leave next to nothing, while at 10% loss one
/// packet in a hundred that NACK could save is given up after two. Giving
/// up costs more than waiting: the receiver asks for a keyframe, which
/// takes a round trip and then many packets at the same risk, and the
/// picture freezes meanwhile (`Benchmarks/harness.py --network loss10`).
public struct RepairWait: Sendable {
    /// The share of packets whose every try may fail.
    public var residual = 0.001
    public var fewestTries = 2
    public var mostTries = 4
    /// Past the last try's round trip, for the repair's own transit and
    /// the poll that notices it.
    public var slack: Duration = .milliseconds(20)
    /// The path's loss: the latest report's fraction, or half the
    /// estimate a report ago if that is more (it rises at once and falls
    /// by half a report).
    public private(set) var loss = 0.0

    public init() {}

    /// Takes the fraction of originals lost since the last report.
    public mutating func reported(fractionLost: Double) {
        loss = max(min(max(fractionLost, 0), 1), loss / 2)
    }

    /// Tries enough that all of them fail for at most `residual` of the
    /// packets lost: `loss ^ tries <= residual`.
    public var tries: Int {
        guard loss > 0 else { return fewestTries }
        guard loss < 0.5 else { return mostTries }
        let needed = Int((log(residual) / log(loss)).rounded(.up))
        return min(max(needed, fewestTries), mostTries)
    }

    /// The wait: reordering, then `tries` round trips with a margin
    /// between them, then `slack`.
    public func depth(reorderWait: Duration, roundTrip: Duration, retryMargin: Duration) -> Duration {
        let tries = self.tries
        return reorderWait + roundTrip * tries + retryMargin * (tries - 1) + slack
    }
}
