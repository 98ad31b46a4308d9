internal import ShareSRTP
internal import ShareWire
internal import ShareBase

/// Answers to NACKs: packets resent from the history.
extension SendStream {
    enum RepairOutcome { case sent, missing, suppressed, superseded }

    /// Resends one packet from history (as RTX, or as it was). A packet
    /// resent less than half a round trip ago is not resent again: that
    /// request left the receiver before the repair could have reached it
    /// (another receiver's, or a report sent twice). A receiver asks again
    /// only a round trip and a margin after it asked, and jitter on the way
    /// back brings that request sooner than a round trip after the repair
    /// left: refused then, it cost one of the few tries the jitter buffer
    /// waits for, and on a wifi-like path a frame and a keyframe's freeze
    /// (`Benchmarks/harness.py --network wifi`). One asked for again lost
    /// its repair, on a path that loses it as often as anything, and goes
    /// out twice: the receiver's jitter buffer has time for few more tries,
    /// and a try that fails costs a round trip of frozen picture
    /// (`Benchmarks/harness.py --network loss10`). Repeats are few, so
    /// the copies add little to a congested path.
    func retransmit(_ sequence: UInt16, now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) -> RepairOutcome {
        // Before the newest keyframe: the receiver decodes on from that.
        if let start = keyframeStart, Int16(bitPattern: sequence &- start) < 0 { return .superseded }
        guard let plain = history.packet(sequence) else { return .missing }
        let previous = history.lastResent(sequence)
        if let previous, now.since(previous) < (statistics.roundTrip ?? .milliseconds(10)) / 2 { return .suppressed }
        for _ in 0..<(previous != nil && repairs.resendsOnItsOwnStream ? 2 : 1) {
            guard repairs.writeRetransmission(of: plain, into: &repairBuffer) else { return .missing }
            do {
                try srtp.protect(&repairBuffer)
            } catch {
                return .missing
            }
            emit(repairBuffer.bytes)
        }
        history.markResent(sequence, at: now)
        return .sent
    }
}
