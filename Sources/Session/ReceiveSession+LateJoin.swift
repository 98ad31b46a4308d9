internal import ShareBase
internal import ShareSRTP
internal import ShareWire

/// Joining a stream whose sequence numbers wrapped before it was heard
/// (static keys only): its rollover counter is searched for, within a
/// byte budget, on datagrams no larger than an MTU.
extension ReceiveSession {
    /// Rollover counters tried for a stream heard first after its sender's
    /// sequence numbers wrapped: up to 1023 wraps, 67 million packets (62
    /// hours at 300 packets a second).
    static let rolloverCandidates: ClosedRange<UInt32> = 1...1023

    /// Bytes a second the searches may hash, on average: a few HMAC
    /// searches (about 130 KB each), or one GCM search of a full packet
    /// every half second. Hashing runs at several hundred MB a second, so
    /// a stranger flooding the port costs the network thread well under 1%
    /// of a core here (the hostile suite's rollover flood measures it).
    public static let rolloverSearchBytesPerSecond = 2_000_000.0

    /// The largest datagram searched: a genuine sender's packets fit a
    /// path's MTU, so a larger one is never a stream joined late.
    public static let largestSearchedDatagram = 1500

    /// A receiver that starts after its sender's sequence numbers wrapped
    /// cannot know the rollover counter (a static key carries none, RFC
    /// 4568): libsrtp2 assumes 0 and would refuse every packet of the
    /// stream. So the first packet of an SSRC not heard yet whose tag is
    /// not genuine at 0 is tried at the counters after it; the one that
    /// makes its tag genuine resumes the stream there. What the searches
    /// hash is budgeted in bytes (`rolloverSearchBytesPerSecond`), and only
    /// datagrams that fit an MTU are searched, so a stranger's packets under
    /// ever new SSRCs cost bounded work.
    func resumeIfJoinedLate(_ datagram: PacketBuffer, now: MonotonicTime) {
        let bytes = datagram.bytes
        guard configuration.searchesRolloverCounters, bytes.count >= RTPPacket.fixedHeaderSize else { return }
        let ssrc = bytes[(bytes.startIndex + 8)..<(bytes.startIndex + 12)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard !srtp.knows(ssrc: ssrc), srtp.rolloverCounter(of: datagram, among: 0...0) == nil else { return }
        let cost = srtp.searchCost(length: bytes.count, candidates: Self.rolloverCandidates.count)
        guard bytes.count <= Self.largestSearchedDatagram, rolloverSearchBudget.spend(Double(cost), now: now) else {
            statistics.rolloverSearchesLimited += 1
            return
        }
        statistics.rolloverSearches += 1
        statistics.rolloverSearchBytes += cost
        guard let counter = srtp.rolloverCounter(of: datagram, among: Self.rolloverCandidates),
              (try? srtp.resume(ssrc: ssrc, rolloverCounter: counter)) != nil else { return }
        statistics.streamsResumed += 1
    }
}
