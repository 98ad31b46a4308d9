public import ShareWire

/// Tracks missing packets of one stream and decides when to NACK them
/// (RFC 4585 §6.2.1): right after a gap is seen, then again every
/// `retryInterval`, at most `maxAttempts` times, never for gaps older than
/// `maxAge` (past the jitter buffer's patience) or wider than `maxGap`.
public struct NACKTracker: Sendable {
    public var retryInterval: Duration
    public var maxAttempts: Int
    public var maxAge: Duration
    public var maxGap: Int

    private var highest: Int64?
    private var missing: [Int64: (firstSeen: MonotonicTime, lastSent: MonotonicTime?, attempts: Int)] = [:]
    public private(set) var recovered = 0

    public init(retryInterval: Duration = .milliseconds(30), maxAttempts: Int = 3, maxAge: Duration = .milliseconds(200),
                maxGap: Int = 400) {
        self.retryInterval = retryInterval
        self.maxAttempts = maxAttempts
        self.maxAge = maxAge
        self.maxGap = maxGap
    }

    /// Records a received packet (extended sequence number).
    public mutating func received(_ sequence: Int64, now: MonotonicTime) {
        if missing.removeValue(forKey: sequence) != nil { recovered += 1 }
        guard let top = highest else {
            highest = sequence
            return
        }
        if sequence > top {
            let gap = sequence - top - 1
            if gap > 0 && gap <= Int64(maxGap) {
                for lost in (top + 1)..<sequence { missing[lost] = (now, nil, 0) }
            }
            highest = sequence
        }
    }

    /// The sequence numbers to NACK now, oldest first.
    public mutating func due(now: MonotonicTime) -> [UInt16] {
        var result: [Int64] = []
        for (sequence, entry) in missing {
            if now.since(entry.firstSeen) > maxAge || entry.attempts >= maxAttempts {
                missing[sequence] = nil
                continue
            }
            if let last = entry.lastSent, now.since(last) < retryInterval { continue }
            missing[sequence] = (entry.firstSeen, now, entry.attempts + 1)
            result.append(sequence)
        }
        return result.sorted().map { UInt16(truncatingIfNeeded: $0) }
    }

    public var outstanding: Int { missing.count }
}
