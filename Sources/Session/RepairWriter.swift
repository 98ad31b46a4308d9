internal import ShareWire

/// Writes one stream's repair packets, before SRTP: retransmissions (RFC
/// 4588 RTX on their own SSRC, or the original resent as it was) and
/// FlexFEC packets (RFC 8627) over groups of the media packets just sent.
/// Sans-IO; the stream protects and emits what it writes.
struct RepairWriter: Sendable {
    let mediaSSRC: UInt32
    private var retransmission: RTPPacketizer?
    private let fec: (ssrc: UInt32, payloadType: UInt8)?
    private var fecSequence = RTPSequence.randomStart()
    private var groups = FECGroups()

    /// Media packets per FEC packet; nil sends no FEC.
    var protectionGroup: Int? {
        get { groups.size }
        set { groups.size = newValue }
    }
    /// Whether each packet is also protected across the rows (`FECGroups`).
    var protectionCrossing: Bool {
        get { groups.crossing }
        set { groups.crossing = newValue }
    }

    init(mediaSSRC: UInt32, clockRate: UInt32, retransmission: (ssrc: UInt32, payloadType: UInt8)?,
         forwardErrorCorrection: (ssrc: UInt32, payloadType: UInt8)?) {
        self.mediaSSRC = mediaSSRC
        fec = forwardErrorCorrection
        if let rtx = retransmission {
            self.retransmission = RTPPacketizer(ssrc: rtx.ssrc, payloadType: rtx.payloadType, clockRate: clockRate,
                                                initialSequenceNumber: RTPSequence.randomStart())
        }
    }

    /// Bytes a repair adds to the largest media packet: RFC 4588 §4 puts
    /// the original sequence number (2) in front of the payload; a FlexFEC
    /// packet adds a CSRC and its header (4 + 14).
    static func overhead(retransmission: Bool, forwardErrorCorrection: Bool) -> Int {
        max(retransmission ? 2 : 0, forwardErrorCorrection ? 18 : 0)
    }

    /// Writes the retransmission of `plain` (a media packet as sent, before
    /// SRTP) into `buffer`: RFC 4588 §4, same timestamp and marker, the
    /// original sequence number in front of the original payload.
    mutating func writeRetransmission(of plain: ArraySlice<UInt8>, into buffer: inout PacketBuffer) -> Bool {
        buffer.removeAll()
        guard var rtx = retransmission else { return buffer.append(slice: plain) }
        guard let original = try? RTPPacket(parsing: plain) else { return false }
        rtx.beginPacket(in: &buffer, timestamp: original.timestamp, marker: original.marker,
                        headerExtension: original.headerExtension)
        guard buffer.appendUInt16(original.sequenceNumber), buffer.append(slice: original.payload) else { return false }
        rtx.didSend(payloadSize: original.payload.count + 2)
        retransmission = rtx
        return true
    }

    /// Whether padding can be sent: it goes on the retransmission stream,
    /// which every receiver that negotiated it expects to carry packets
    /// that are not media (RFC 4588 §8.2: padding-only packets on the RTX
    /// SSRC, as libwebrtc sends its probes).
    var canPad: Bool { resendsOnItsOwnStream }

    /// Whether a resent packet goes on the RTX stream, under a sequence
    /// number of its own (without one it goes again as it was, and a
    /// second copy would be a replay).
    var resendsOnItsOwnStream: Bool { retransmission != nil }

    /// Writes a padding-only packet of `size` bytes before SRTP (a 12-byte
    /// header, the P bit set, then padding whose last octet counts it, so
    /// at most 255 of it) on the retransmission stream, with `timestamp`.
    mutating func writePadding(size: Int, timestamp: UInt32, into buffer: inout PacketBuffer) -> Bool {
        guard var rtx = retransmission else { return false }
        let padding = min(max(size - RTPPacket.fixedHeaderSize, 1), 255)
        rtx.beginPacket(in: &buffer, timestamp: timestamp, marker: false)
        for _ in 1..<padding { guard buffer.append(0) else { return false } }
        guard buffer.append(UInt8(padding)) else { return false }
        _ = buffer.withMutableStorage { bytes, _ in bytes[0] |= 0x20 }
        rtx.didSend(payloadSize: 0)
        retransmission = rtx
        return true
    }

    /// Notes a media packet just sent. For each group it closes (`FECGroups`:
    /// a row full or ended by the frame's last packet, so a frame's repair
    /// leaves right behind it; columns across the rows), writes the FlexFEC
    /// packet into `buffer` and hands it to `emit` (RFC 8627 §4.1: its own
    /// SSRC, the protected stream's SSRC as its one CSRC).
    mutating func mediaSent<E: Error>(_ sequence: UInt16, endsFrame: Bool, timestamp: UInt32,
                                      history: RetransmissionHistory, into buffer: inout PacketBuffer,
                                      emit: (inout PacketBuffer) throws(E) -> Void) throws(E) {
        guard let fec else { return }
        for group in groups.sent(sequence, endsFrame: endsFrame) {
            let packets = group.compactMap { history.packet($0) }
            guard packets.count == group.count, let payload = FlexFEC.repairPayload(protecting: packets) else { continue }
            buffer.removeAll()
            buffer.append(2 << 6 | 1)  // V=2, CC=1
            buffer.append(fec.payloadType & 0x7F)
            buffer.appendUInt16(fecSequence)
            buffer.appendUInt32(timestamp)
            buffer.appendUInt32(fec.ssrc)
            buffer.appendUInt32(mediaSSRC)
            guard buffer.append(contentsOf: payload) else { continue }
            fecSequence &+= 1
            try emit(&buffer)
        }
    }
}
