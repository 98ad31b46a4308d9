package import ShareBase

/// The rhythm the screen changes to, learned from the gaps between changes
/// seen one after the other: a video or an animation redraws at a steady
/// rate (60 Hz, 24 Hz…), typing and scrolling by hand do not. A period is
/// learned when the newest gaps agree, and kept while most of them still
/// agree with it, so a prediction is made for content that keeps time and
/// for nothing else, and jitter in when changes are seen (an X server
/// busy drawing for others tells of them milliseconds late) does not lose
/// it. Sans-IO: instants on the monotonic clock, given by the caller.
package struct ChangeRhythm: Sendable {
    /// Gaps kept: the period is their median.
    package static let kept = 5
    /// How many of them must lie near their median to learn a period…
    package static let agreeing = 4
    /// …and near the period learned to keep it. On a busy machine (the
    /// harness's 59 Hz scene at 1080p on two cores) one gap in seven was
    /// more than a tenth off the period, and a period kept only while four
    /// agreed was lost for a fifth of the changes: each grab then took a
    /// change up to a period old.
    package static let holding = 3
    /// A gap longer than this is a pause, not a rhythm (and is not kept).
    package static let longestGap = Duration.seconds(1)

    private var gaps: [Duration] = []
    private var newest = 0
    /// The period while the newest gaps agree; nil otherwise.
    package private(set) var period: Duration?

    package init() { gaps.reserveCapacity(Self.kept) }

    /// How far a gap may be from a period (the gaps' median, or the one
    /// learned) and still agree with it: an eighth, at least half a
    /// millisecond (an X server busy drawing for others tells of a change
    /// up to milliseconds late).
    package static func tolerance(_ period: Duration) -> Duration { max(.microseconds(500), period / 8) }

    /// Two changes were seen one after the other, `gap` apart.
    package mutating func add(gap: Duration) {
        guard gap > .zero, gap <= Self.longestGap else {
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
        if agreeing(with: median) >= Self.agreeing {
            period = median
        } else if let known = period, agreeing(with: known) >= Self.holding {
            // Kept as it was: the odd gaps are jitter around it.
        } else {
            period = nil
        }
    }

    /// How many of the kept gaps lie near `period`.
    private func agreeing(with period: Duration) -> Int {
        let near = Self.tolerance(period)
        return gaps.count(where: { $0 > period ? $0 - period <= near : period - $0 <= near })
    }

    /// Forgets what it learned (a pause; the content changed its pace).
    package mutating func forget() {
        gaps.removeAll(keepingCapacity: true)
        newest = 0
        period = nil
    }

    /// When the first change after `now` is due, going by the rhythm and a
    /// change seen at `seen`; nil while there is no rhythm.
    package func nextChange(after now: MonotonicTime, seen: MonotonicTime) -> MonotonicTime? {
        guard let period else { return nil }
        guard now >= seen else { return seen }
        let periods = now.since(seen).nanoseconds / period.nanoseconds + 1
        return seen + period * Int(periods)
    }
}
