/// The rhythm the screen changes to, learned from the gaps between changes
/// seen one after the other: a video or an animation redraws at a steady
/// rate (60 Hz, 24 Hz…), typing and scrolling by hand do not. The period is
/// known only while the newest gaps agree, so a prediction is made for
/// content that keeps time and for nothing else. Sans-IO: times are the
/// monotonic clock's nanoseconds, given by the caller.
package struct ChangeRhythm: Sendable {
    /// Gaps kept: the period is their median.
    package static let kept = 5
    /// How many of them must lie near the median.
    package static let agreeing = 4
    /// A gap longer than this is a pause, not a rhythm (and is not kept).
    package static let longestGap: UInt64 = 1_000_000_000

    private var gaps: [UInt64] = []
    private var newest = 0
    /// The period while the newest gaps agree; nil otherwise.
    package private(set) var period: UInt64?

    package init() { gaps.reserveCapacity(Self.kept) }

    /// How far a gap may be from the median and still agree with it: a
    /// tenth, at least half a millisecond (timer jitter on a busy machine).
    package static func tolerance(_ median: UInt64) -> UInt64 { max(500_000, median / 10) }

    /// Two changes were seen one after the other, `gap` apart.
    package mutating func add(gap: UInt64) {
        guard gap > 0, gap <= Self.longestGap else {
            forget()
            return
        }
        if gaps.count < Self.kept {
            gaps.append(gap)
        } else {
            gaps[newest] = gap
        }
        newest = (newest + 1) % Self.kept
        guard gaps.count >= Self.agreeing else { return }
        let median = gaps.sorted()[gaps.count / 2]
        let near = Self.tolerance(median)
        let agree = gaps.count(where: { $0 > median ? $0 - median <= near : median - $0 <= near })
        period = agree >= Self.agreeing ? median : nil
    }

    /// Forgets what it learned (a pause; the content changed its pace).
    package mutating func forget() {
        gaps.removeAll(keepingCapacity: true)
        newest = 0
        period = nil
    }

    /// When the first change after `now` is due, going by the rhythm and a
    /// change seen at `seen`; nil while there is no rhythm.
    package func nextChange(after now: UInt64, seen: UInt64) -> UInt64? {
        guard let period else { return nil }
        guard now >= seen else { return seen }
        let periods = (now - seen) / period + 1
        return seen + periods * period
    }
}
