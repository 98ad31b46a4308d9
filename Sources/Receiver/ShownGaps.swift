internal import ShareBase

/// The gaps between pictures shown, sans-IO: told each frame's RTP
/// timestamp as it arrives (the sender's frame spacing, smoothed) and each
/// picture as it is shown, it says which gaps were freezes (more than the
/// spacing plus 100 ms) and which of those interrupted the stream: packets
/// between the two pictures that never made one (lost, or skipped until a
/// keyframe), or a picture shown more than 100 ms later than the sender
/// spaced them. A gap the sender left (a still screen sends a picture a
/// second, a paused sender none) is a freeze but no interruption.
struct ShownGaps {
    /// The sender's frame spacing in RTP ticks (90 kHz), smoothed.
    private(set) var spacing: Double?
    private var lastTimestamp: UInt32?
    private var lastShown: (at: MonotonicTime, timestamp: UInt32, sequence: Int64)?

    /// A frame's timestamp as it arrives, for the spacing.
    mutating func arrived(_ timestamp: UInt32) {
        defer { lastTimestamp = timestamp }
        guard let last = lastTimestamp else { return }
        let ticks = Double(Int32(bitPattern: timestamp &- last))
        guard ticks > 0 && ticks < 90_000 * 5 else { return }
        spacing = spacing.map { $0 * 0.9 + ticks * 0.1 } ?? ticks
    }

    /// The next picture starts a new run (after a pause): no gap before it.
    mutating func startOver() { lastShown = nil }

    /// A picture shown at `now`: the freeze before it, if there was one
    /// (its length in seconds, and whether it interrupted the stream).
    mutating func shown(at now: MonotonicTime, timestamp: UInt32,
                        sequence: ClosedRange<Int64>) -> (seconds: Double, interrupted: Bool)? {
        defer { lastShown = (now, timestamp, sequence.upperBound) }
        guard let last = lastShown else { return nil }
        let gap = now.since(last.at).milliseconds
        guard gap > (spacing ?? 3000) / 90 + 100 else { return nil }
        let missing = sequence.lowerBound > last.sequence + 1
        let spaced = Double(Int32(bitPattern: timestamp &- last.timestamp)) / 90
        return (gap / 1000, missing || gap - spaced > 100)
    }
}
