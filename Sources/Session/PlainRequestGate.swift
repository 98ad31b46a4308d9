internal import ShareBase
internal import ShareWire

/// What a stream makes of unauthenticated RTCP on its RTCP port of its
/// own, sans-IO. Plain RTCP is what an SFU such as Janus sends (its PLI and
/// FIR are unprotected): it may ask for a keyframe and nothing else, at
/// most once an `interval`; everything else is refused or ignored.
struct PlainRequestGate {
    enum Verdict: Equatable {
        /// Not RTCP at all.
        case refused
        /// RTCP that asks nothing of this stream (REMB, RR, another SSRC's PLI).
        case ignored
        /// A keyframe request sooner than `interval` after the last honoured.
        case tooSoon
        /// A keyframe request to honour.
        case keyframe
    }

    let ssrc: UInt32
    let interval: Duration
    private var lastHonoured: MonotonicTime?

    init(ssrc: UInt32, interval: Duration) {
        self.ssrc = ssrc
        self.interval = interval
    }

    mutating func judge(_ datagram: ArraySlice<UInt8>, now: MonotonicTime) -> Verdict {
        guard datagram.count >= 8, RTCPPacket.isRTCP(payloadTypeByte: datagram[datagram.startIndex + 1]),
              let packets = try? RTCPPacket.parseCompound(datagram)
        else { return .refused }
        guard packets.contains(where: { Self.asksForKeyframe($0, ssrc: ssrc) }) else { return .ignored }
        if let last = lastHonoured, now.since(last) < interval { return .tooSoon }
        lastHonoured = now
        return .keyframe
    }

    /// Whether `packet` is a PLI or FIR for `ssrc`.
    static func asksForKeyframe(_ packet: RTCPPacket, ssrc: UInt32) -> Bool {
        switch packet {
        case .pictureLoss(let pli): pli.mediaSSRC == ssrc
        case .fullIntraRequest(let fir): fir.entries.contains { $0.ssrc == ssrc }
        default: false
        }
    }
}
