internal import ShareBase

/// Notices a frame whose packets stopped before its marker, sans-IO. The
/// lost last packets of a frame leave no gap in the sequence numbers until
/// the next frame's first packet arrives, a frame interval later (33 ms at
/// 30 fps); bursty loss and a drop-tail queue both take a frame's tail more
/// often than its head. A packet without the marker promises the next
/// sequence number, so once that one is later than a frame's packets
/// usually arrive apart, it is asked for.
///
/// How far apart a frame's packets arrive is learned as a retransmission
/// timeout is (RFC 6298): a smoothed gap and its smoothed deviation, from
/// consecutive originals of one frame; the wait is the gap plus four
/// deviations. A guess that was only late costs one needless repair, and
/// its own gap teaches a longer wait.
struct FrameTail: Sendable {
    /// The highest packet heard, and whether the one after it was asked for.
    private var last: (sequence: Int64, timestamp: UInt32, marker: Bool, at: MonotonicTime, asked: Bool)?
    /// Smoothed gap between a frame's packets, and its deviation (ns).
    private var gap: Double?
    private var deviation = 0.0
    /// Cleared once a frame ended without its marker (the next packet came
    /// with a new timestamp): such a sender's tails cannot be told apart.
    private var markedEnds = true

    /// The least wait: below it, the pacer's and the path's own spacing.
    static let minimumWait: Duration = .milliseconds(3)
    /// Gaps longer than this are a sender that paused mid-frame, not spacing.
    static let longestGap: Duration = .milliseconds(200)

    /// How far apart a frame's packets arrive, smoothed: what the path (or
    /// the sender's pacer, if slower) takes to deliver one packet.
    var spacing: Duration { .nanoseconds(Int64(gap ?? 0)) }

    /// How long after a frame's last packet heard the next one is overdue.
    var wait: Duration {
        guard let gap else { return Self.minimumWait }
        return max(.nanoseconds(Int64(gap + 4 * deviation)), Self.minimumWait)
    }

    /// A packet heard: `isRepair` for a retransmission or a rebuilt packet,
    /// which continues a tail (a repaired packet may itself lack the
    /// marker) but says nothing about the spacing.
    mutating func heard(_ sequence: Int64, timestamp: UInt32, marker: Bool, isRepair: Bool, now: MonotonicTime) {
        if let last {
            guard sequence > last.sequence else { return }
            if !isRepair, sequence == last.sequence + 1, !last.marker {
                if timestamp == last.timestamp { learn(now.since(last.at)) } else { markedEnds = false }
            }
        }
        last = (sequence, timestamp, marker, now, false)
    }

    /// The sequence number overdue at `now`, once: the one after an
    /// unfinished frame's last packet heard, `extra` (the reordering
    /// waited out for any gap) past the usual spacing.
    mutating func overdue(now: MonotonicTime, extra: Duration) -> Int64? {
        guard let at = deadline(extra: extra), now >= at else { return nil }
        last?.asked = true
        return last.map { $0.sequence + 1 }
    }

    /// When the packet after an unfinished frame's last one becomes overdue.
    func deadline(extra: Duration) -> MonotonicTime? {
        guard markedEnds, let last, !last.marker, !last.asked else { return nil }
        return last.at + wait + extra
    }

    private mutating func learn(_ sample: Duration) {
        guard sample < Self.longestGap else { return }
        let value = Double(sample.nanoseconds)
        guard let smoothed = gap else {
            gap = value
            deviation = value / 2
            return
        }
        deviation = deviation * 0.75 + abs(value - smoothed) * 0.25
        gap = smoothed * 0.875 + value * 0.125
    }
}
