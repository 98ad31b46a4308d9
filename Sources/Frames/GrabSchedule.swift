package import ShareBase

/// When the capture thread grabs the screen, going by when it changes
/// (XDamage). Sans-IO: the thread tells it what it saw and when (instants
/// on the monotonic clock), and does the step it is given.
///
/// - A change is grabbed once its drawing has finished (nothing more drawn
///   for `quiet`, or `settle` at most), at once unless the last grab was
///   less than a frame interval ago: grabs keep to a grid of frame
///   intervals (never above the frame rate on average, and a late wake-up
///   does not lower it).
/// - A still screen is grabbed every `refresh`; a keyframe request gets a
///   fresh picture at the next slot.
/// - Content that changes faster than the frame rate in a steady rhythm (a
///   video, an animation: `ChangeRhythm`) has a change pending whenever a
///   slot opens, often most of a period old. When the next change is due
///   soon (within twice the pending one's age and half an interval), the
///   grab waits for it and takes that one, just drawn: a 60 Hz video shared
///   at 30 fps is grabbed every other frame right after it is drawn, or a
///   little after, instead of at whatever age the slot happens to find it
///   (up to a whole period, drifting with the beat between the two rates).
/// - The rhythm is learned from changes seen one after the other: the
///   first change after a grab that followed a change closely, or, when no
///   grab did, one more change watched for between a grab's first change
///   and the next slot.
package struct GrabSchedule: Sendable {
    package enum Step: Equatable, Sendable {
        /// Nothing to grab yet: wait for the screen to change, at most until then.
        case waitForChange(until: MonotonicTime)
        /// A change is pending: set it aside for the next grab and wait for
        /// the next change to be drawn, at most until then.
        case watchForNextChange(until: MonotonicTime)
        /// Nothing to do until then.
        case sleep(until: MonotonicTime)
        /// Grab the screen now (and say so with `grabbed(at:)`).
        case grab
    }

    /// A drawing has finished when nothing more was drawn for this long…
    package let quiet: Duration
    /// …or when it has gone on this long (the rest is in the next picture).
    package let settle: Duration
    /// How often a still screen is grabbed anyway (the capture loop makes
    /// it shorter while the encoder's picture of it sharpens).
    package var refresh: Duration
    /// The longest wait for a change before the thread looks at its flags
    /// (and, drawing the pointer, where it is).
    package var longestWait: Duration
    /// The frame interval (it follows the frame rate asked for).
    package var interval: Duration
    package private(set) var rhythm = ChangeRhythm()

    private var lastGrab: MonotonicTime?
    /// The frame grid: the earliest the next grab may start.
    private var slot = MonotonicTime.zero
    /// The newest change seen since the last grab (when its drawing began),
    /// and the last damage seen (kept across grabs).
    private var change: MonotonicTime?
    private var drawn = MonotonicTime.zero
    /// Whether the change's drawing has finished, and when the thread began
    /// watching for more of it.
    private var settled = false
    private var quietWatch: MonotonicTime?
    /// The change after which XDamage was last asked to report again,
    /// promptly enough that the next change seen is the next one drawn.
    private var armedAfter: MonotonicTime?
    /// Since the last grab: a gap was learned, the thread watched for one,
    /// the grab waited for a fresh change.
    private var learned = false
    private var watchedForRhythm = false
    private var waitedForFresh = false

    package init(quiet: Duration, settle: Duration, refresh: Duration, longestWait: Duration, interval: Duration) {
        self.quiet = quiet
        self.settle = settle
        self.refresh = refresh
        self.longestWait = longestWait
        self.interval = interval
    }

    /// How soon after a change XDamage must be asked to report again for the
    /// next change seen to be the next one drawn.
    private var prompt: Duration { settle + .milliseconds(1) }

    /// The next step at `now`: `pending` says whether anything changed since
    /// the last grab (damage or the pointer), `keyframeWanted` whether a
    /// receiver waits for a fresh picture.
    package mutating func next(now: MonotonicTime, pending: Bool, keyframeWanted: Bool) -> Step {
        guard let lastGrab else { return .grab }
        if !pending && !keyframeWanted && now.since(lastGrab) < refresh {
            return .waitForChange(until: min(lastGrab + refresh, now + longestWait))
        }
        if now < slot {
            // Too soon after the last grab. If this grab taught nothing of
            // the rhythm, watch for the change after this one meanwhile.
            if !learned, let change {
                if !watchedForRhythm, now.since(change) <= prompt {
                    watchedForRhythm = true
                    armedAfter = change
                }
                if watchedForRhythm, armedAfter != nil { return .watchForNextChange(until: slot) }
            }
            return .sleep(until: slot)
        }
        if let step = settling(now: now) { return step }
        if !keyframeWanted, !waitedForFresh, let fresh = freshChange(now: now) {
            waitedForFresh = true
            armedAfter = nil
            return .watchForNextChange(until: fresh)
        }
        return .grab
    }

    /// Lets the change's drawing finish: a drawing arrives in one or more
    /// bursts of requests, so the thread sleeps `quiet` past the damage it
    /// saw (more of the same drawing comes unseen meanwhile), then asks
    /// XDamage to report again and watches `quiet` more: nothing drawn then
    /// means the drawing has finished. Sleeping first keeps a drawing of
    /// several bursts to one or two watches (each costs a request and
    /// system calls). nil: settled.
    private mutating func settling(now: MonotonicTime) -> Step? {
        guard let change, !settled else { return nil }
        let limit = change + settle
        if now >= limit {
            settled = true
        } else if let quietWatch {
            guard now < quietWatch + quiet else {
                settled = true
                return nil
            }
            return .watchForNextChange(until: min(quietWatch + quiet, limit))
        } else if now < drawn + quiet {
            return .sleep(until: min(drawn + quiet, limit))
        } else {
            quietWatch = now
            return .watchForNextChange(until: min(now + quiet, limit))
        }
        return nil
    }

    /// Until when to wait for a fresh change instead of grabbing the
    /// pending one; nil when the content keeps no rhythm faster than the
    /// frame rate, or when the wait would be longer than twice the pending
    /// change's age (then the pending change is fresh enough: showing it
    /// now, and the next one at the next slot, leaves the viewer less far
    /// behind over the interval than holding the old picture while
    /// waiting) or than half an interval.
    private func freshChange(now: MonotonicTime) -> MonotonicTime? {
        guard let change, let period = rhythm.period, period < interval,
              let due = rhythm.nextChange(after: now, seen: change) else { return nil }
        let until = due + max(.milliseconds(1), period / 8)
        let wait = until.since(now)
        return wait <= now.since(change) * 2 && wait <= interval / 2 ? until : nil
    }

    /// The thread saw the screen change at `time`: a damage event read as
    /// it came (`asItCame`), or found when the thread looked after a grab,
    /// having come at some moment during it. Damage while the drawing has
    /// not yet settled is the same drawing going on (past `settle`, it is
    /// grabbed as it is).
    package mutating func changed(at time: MonotonicTime, asItCame: Bool = true) {
        if asItCame, let change, !settled {
            if time.since(change) < settle {
                drawn = time
                quietWatch = nil
                return
            }
            if time.since(drawn) <= settle {
                // Still drawing after `settle`: grab what there is now.
                drawn = time
                settled = true
                return
            }
        }
        let goesOn = time.since(drawn) <= settle
        // A drawing that goes on past `settle` or past a grab is cut into
        // pictures, and a change found late came at an unknown moment:
        // neither tells the content's rhythm.
        if asItCame, !goesOn, let armedAfter, time > armedAfter {
            rhythm.add(gap: time.since(armedAfter))
            learned = true
        }
        armedAfter = nil
        change = time
        drawn = time
        settled = false
        quietWatch = nil
    }

    /// The thread grabbed at `time` (read just before the grab, which
    /// empties the damage); returns how many frame intervals went by
    /// without a grab before it (a still screen's frames).
    package mutating func grabbed(at time: MonotonicTime) -> Int {
        var skipped = 0
        if let lastGrab, time.since(lastGrab) >= interval * 2 {
            skipped = Int(time.since(lastGrab).nanoseconds / interval.nanoseconds) - 1
        }
        // A grab right after a change: the next change seen is the next drawn.
        if let change, time.since(change) <= prompt { armedAfter = change } else { armedAfter = nil }
        // A quiet screen or a stall leaves the grid behind: start it again.
        slot = lastGrab == nil || slot + interval < time ? time + interval : slot + interval
        lastGrab = time
        change = nil
        settled = false
        quietWatch = nil
        learned = false
        watchedForRhythm = false
        waitedForFresh = false
        return skipped
    }
}
