public import ShareBase

/// Per-source reception state of RFC 3550 Appendix A: sequence validation
/// with probation (§A.1), loss accounting (§A.3) and interarrival jitter
/// (§A.8). Feeds the report blocks of RR and SR packets.
public struct ReceptionStatistics: Sendable {
    /// RFC 3550 §A.1 constants.
    static let maxDropout: UInt16 = 3000
    static let maxMisorder: UInt16 = 100
    static let minSequential = 2

    public let ssrc: UInt32
    public let clockRate: UInt32

    private var maxSequence: UInt16 = 0
    private var cycles: UInt32 = 0
    private var baseSequence: UInt32 = 0
    private var badSequence: UInt32 = 0x1_0000 + 1  // RTP_SEQ_MOD + 1: no bad sequence yet
    private var probation = minSequential
    public private(set) var received: UInt32 = 0
    private var expectedPrior: UInt32 = 0
    private var receivedPrior: UInt32 = 0
    private var transit: Int64?
    private var jitterQ4: Int64 = 0  // jitter * 16, as in §A.8
    private var lastSenderReport: (middle: UInt32, at: MonotonicTime)?

    public init(ssrc: UInt32, clockRate: UInt32) {
        self.ssrc = ssrc
        self.clockRate = clockRate
    }

    /// Records a packet's arrival. Returns false when the sequence number is
    /// not (yet) valid: during probation or after a wild jump (§A.1 update_seq).
    @discardableResult
    public mutating func record(sequence: UInt16, timestamp: UInt32, arrival: MonotonicTime) -> Bool {
        guard accept(sequence) else { return false }
        // §A.8: D(i-1,i) = (Rj - Ri) - (Sj - Si), J += (|D| - J) / 16,
        // with arrival time in RTP timestamp units.
        let arrivalUnits = Int64(arrival.nanoseconds / 1000) * Int64(clockRate) / 1_000_000
        let current = arrivalUnits - Int64(timestamp)
        if let transit {
            var delta = current - transit
            // Timestamps wrap at 2^32; keep the difference in range.
            delta = Int64(Int32(truncatingIfNeeded: delta))
            jitterQ4 += abs(delta) - ((jitterQ4 + 8) >> 4)
        }
        transit = current
        return true
    }

    private mutating func accept(_ sequence: UInt16) -> Bool {
        let delta = sequence &- maxSequence
        if probation > 0 {
            // A source is valid only after MIN_SEQUENTIAL packets in sequence.
            if sequence == maxSequence &+ 1 {
                probation -= 1
                maxSequence = sequence
                if probation == 0 {
                    start(at: sequence)
                    received += 1
                    return true
                }
            } else {
                probation = Self.minSequential - 1
                maxSequence = sequence
            }
            return false
        } else if delta < Self.maxDropout {
            if sequence < maxSequence { cycles &+= 0x1_0000 }
            maxSequence = sequence
        } else if delta <= UInt16.max &- Self.maxMisorder {
            // A very large jump: accept only if the next packet follows it,
            // which means the source restarted.
            if UInt32(sequence) == badSequence {
                start(at: sequence)
            } else {
                badSequence = UInt32(sequence &+ 1)
                return false
            }
        }
        // Otherwise a duplicate or reordered packet: counted, not moving max.
        received &+= 1
        return true
    }

    private mutating func start(at sequence: UInt16) {
        baseSequence = UInt32(sequence)
        maxSequence = sequence
        badSequence = 0x1_0000 + 1
        cycles = 0
        received = 0
        receivedPrior = 0
        expectedPrior = 0
    }

    /// The extended highest sequence number received.
    public var extendedHighest: UInt32 { cycles &+ UInt32(maxSequence) }

    /// Packets expected from the first to the highest sequence number.
    public var expected: UInt32 { extendedHighest &- baseSequence &+ 1 }

    /// Cumulative packets lost (negative with duplicates), §A.3.
    public var cumulativeLost: Int64 { probation > 0 ? 0 : Int64(expected) - Int64(received) }

    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32 { UInt32(truncatingIfNeeded: jitterQ4 >> 4) }

    /// Remembers an SR from this source for the LSR/DLSR fields (§6.4.1).
    public mutating func didReceive(senderReport: SenderReport, at now: MonotonicTime) {
        lastSenderReport = (senderReport.ntpTimestamp.middle32, now)
    }

    /// The report block for this source, and starts a new reporting interval.
    public mutating func makeReport(now: MonotonicTime) -> ReceptionReport {
        let expectedNow = probation > 0 ? 0 : expected
        let expectedInterval = Int64(expectedNow) - Int64(expectedPrior)
        let receivedInterval = Int64(received) - Int64(receivedPrior)
        expectedPrior = expectedNow
        receivedPrior = received
        let lostInterval = expectedInterval - receivedInterval
        // §A.3: fraction = (lost_interval << 8) / expected_interval, 0 when none lost.
        let fraction: UInt8 = expectedInterval == 0 || lostInterval <= 0
            ? 0 : UInt8(min((lostInterval << 8) / expectedInterval, 255))
        var lsr: UInt32 = 0
        var dlsr: UInt32 = 0
        if let last = lastSenderReport {
            lsr = last.middle
            // Delay in units of 1/65536 seconds: 32 bits hold 18 h, held at the top after that.
            let microseconds = now.since(last.at).nanoseconds / 1000
            dlsr = microseconds >= 65_536_000_000 ? .max : UInt32(microseconds * 65536 / 1_000_000)
        }
        let lost = max(min(cumulativeLost, 0x7F_FFFF), -0x80_0000)
        return ReceptionReport(ssrc: ssrc, fractionLost: fraction, cumulativeLost: Int32(lost),
                               highestSequence: extendedHighest, jitter: jitter, lastSenderReport: lsr,
                               delaySinceLastSenderReport: dlsr)
    }
}
