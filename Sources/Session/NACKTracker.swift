internal import ShareWire
#if canImport(Glibc)
internal import Glibc
public import ShareBase
#endif

/// Tracks missing packets of one stream and decides when to NACK them
/// (RFC 4585 §6.2.1), from what the path does rather than fixed numbers:
/// the first NACK waits out the reordering seen so far (a packet that is
/// merely late is not requested), a repeat waits one round trip plus a
/// margin (the repair may still be on its way), and a packet is given up
/// by time, once the jitter buffer would no longer wait for it (`maxAge`),
/// never by a count of attempts. Packets asked for together come back one
/// after another at the rate the path delivers (a frame's packets' spacing,
/// `FrameTail`): the k-th of a burst is waited for k spacings longer, both
/// before it is asked for again and before it is given up, so a long burst
/// on a slow link is neither asked for twice while its repairs are still
/// queued on the way nor given up while they are. Gaps wider than `maxGap`
/// (a restart or a forged sequence number) are not NACKed. A frame whose packets stopped
/// before its marker is asked for its next packet without waiting for the
/// next frame to show the gap (`FrameTail`). Sans-IO.
public struct NACKTracker: Sendable {
    /// The round trip to the sender; repeats wait this plus `retryMargin`.
    public var roundTrip: Duration = .milliseconds(50)
    public var retryMargin: Duration = .milliseconds(10)
    public var maxAge: Duration
    public var maxGap: Int
    /// The first NACK waits at most this long for reordering.
    public var maxReorderWait: Duration = .milliseconds(80)

    private var highest: Int64?
    private var missing: [Int64: Missing] = [:]
    private var tail = FrameTail()
    /// How late an original packet has arrived behind its successors (ns),
    /// a maximum that decays by half every `reorderHalfLife`.
    private var reorderNanoseconds = 0.0
    private var reorderUpdated: MonotonicTime?
    static let reorderHalfLife = 2.0
    public private(set) var recovered = 0
    /// Originals that arrived after being NACKed: requests that were not needed.
    public private(set) var needlessRequests = 0
    /// Packets asked for because their frame stopped short of its marker.
    public private(set) var tailRequests = 0

    private struct Missing {
        var firstSeen: MonotonicTime
        var lastSent: MonotonicTime?
        var attempts = 0
        /// Asked for as a frame's overdue tail, before any gap showed.
        var tail = false
        /// How long the repairs asked for ahead of it in the same NACK
        /// take the path to deliver.
        var behind: Duration = .zero
    }

    public init(maxAge: Duration = .milliseconds(200), maxGap: Int = 400) {
        self.maxAge = maxAge
        self.maxGap = maxGap
    }

    /// How long the first NACK for a gap waits: the reordering seen lately
    /// with a quarter on top, plus a millisecond.
    public var reorderWait: Duration {
        let wait = Duration.nanoseconds(Int64(reorderNanoseconds * 1.25)) + .milliseconds(1)
        return min(wait, maxReorderWait)
    }

    /// Records a received packet (extended sequence number). `isRepair`
    /// marks a retransmission (RTX): it fills a gap but says nothing about
    /// reordering on the path. `timestamp` and `marker` tell where frames
    /// end; the defaults say each packet ends one.
    public mutating func received(_ sequence: Int64, now: MonotonicTime, isRepair: Bool = false,
                                  timestamp: UInt32 = 0, marker: Bool = true) {
        decayReorder(now: now)
        tail.heard(sequence, timestamp: timestamp, marker: marker, isRepair: isRepair, now: now)
        if let entry = missing.removeValue(forKey: sequence) {
            if entry.tail && !isRepair {
                // Only late, not lost: the spacing FrameTail learns covers it.
                needlessRequests += 1
            } else {
                recovered += 1
                if !isRepair {
                    let lateness = Double(now.since(entry.firstSeen).nanoseconds)
                    reorderNanoseconds = max(reorderNanoseconds, min(lateness, 1e9))
                    if entry.attempts > 0 { needlessRequests += 1 }
                }
            }
        }
        guard let top = highest else {
            highest = sequence
            return
        }
        if sequence > top {
            let gap = sequence - top - 1
            if gap > 0 && gap <= Int64(maxGap) {
                for lost in (top + 1)..<sequence where missing[lost] == nil { missing[lost] = Missing(firstSeen: now) }
            } else if gap > Int64(maxGap) {
                missing.removeAll()
            }
            highest = sequence
        }
    }

    private mutating func decayReorder(now: MonotonicTime) {
        guard let last = reorderUpdated else {
            reorderUpdated = now
            return
        }
        let elapsed = now.since(last).seconds
        guard elapsed >= 0.1 else { return }
        reorderUpdated = now
        reorderNanoseconds *= exp2(-elapsed / Self.reorderHalfLife)
    }

    /// The sequence numbers to NACK now, oldest first.
    public mutating func due(now: MonotonicTime) -> [UInt16] {
        var result: [Int64] = []
        let firstWait = reorderWait
        let retry = roundTrip + retryMargin
        for (sequence, entry) in missing {
            if now.since(entry.firstSeen) > maxAge + entry.behind {
                missing[sequence] = nil
                continue
            }
            if let last = entry.lastSent {
                if now.since(last) < retry + entry.behind { continue }
            } else if now.since(entry.firstSeen) < firstWait {
                continue
            }
            missing[sequence]?.lastSent = now
            missing[sequence]?.attempts += 1
            result.append(sequence)
        }
        if let overdue = tail.overdue(now: now, extra: firstWait), missing[overdue] == nil, overdue > highest ?? .min {
            missing[overdue] = Missing(firstSeen: now, lastSent: now, attempts: 1, tail: true)
            tailRequests += 1
            result.append(overdue)
        }
        result.sort()
        queueBehind(result)
        return result.map { UInt16(truncatingIfNeeded: $0) }
    }

    /// The repairs of `batch` (asked for together, oldest first) leave the
    /// sender together and reach here a packet's spacing apart.
    private mutating func queueBehind(_ batch: [Int64]) {
        let spacing = tail.spacing
        for (index, sequence) in batch.enumerated() {
            missing[sequence]?.behind = min(spacing * index, maxAge)
        }
    }

    /// How much longer than `maxAge` the jitter buffer waits for the
    /// repairs now on their way: the delivery time of the longest burst
    /// asked for, at most `maxAge` again.
    public var burstAllowance: Duration {
        missing.values.lazy.map(\.behind).max() ?? .zero
    }

    /// When `due` may next have something to send, if anything is missing.
    public func nextDeadline() -> MonotonicTime? {
        let firstWait = reorderWait
        var next = tail.deadline(extra: firstWait)
        let retry = roundTrip + retryMargin
        for entry in missing.values {
            let at = entry.lastSent.map { $0 + retry + entry.behind } ?? entry.firstSeen + firstWait
            next = min(next ?? at, at)
        }
        return next
    }

    public var outstanding: Int { missing.count }
}
