/// Flexible forward error correction (RFC 8627), flexible mask (R=0, F=0),
/// one protected stream. A repair packet is the XOR of the protected
/// packets, so any one of them that goes missing can be rebuilt from it and
/// the others, with no round trip. Pure: the bytes here are plain RTP
/// (before SRTP on the way out, after it on the way in).
///
/// RFC 8627 §4.2.2.1, the repair payload's header:
///
///     |0|0|P|X|  CC   |M| PT recovery |        length recovery        |
///     |                          TS recovery                          |
///     |           SN base_i           |k|          Mask [0-14]        |
///     |k|                   Mask [15-45] (optional)                   |
///
/// and §4.1: the protected stream's SSRC is the repair packet's one CSRC.
public enum FlexFEC {
    /// Packets one repair packet can cover with the 46-bit mask.
    public static let maxProtected = 46

    /// The FEC payload (header, then the XOR of everything after each
    /// packet's fixed 12-byte RTP header) protecting `packets` of one stream,
    /// whose sequence numbers lie within `maxProtected` of the first.
    public static func repairPayload(protecting packets: [ArraySlice<UInt8>]) -> [UInt8]? {
        guard let first = packets.first, first.count >= 12 else { return nil }
        let base = sequence(of: first)
        var bits: UInt64 = 0
        var header = [UInt8](repeating: 0, count: 8)
        var body: [UInt8] = []
        for packet in packets {
            guard packet.count >= 12 else { return nil }
            let offset = Int(sequence(of: packet) &- base)
            guard offset < maxProtected else { return nil }
            bits |= 1 << UInt64(offset)
            let start = packet.startIndex
            // §4.2.2.1: P, X, CC, M and PT recovery are the XOR of those bits;
            // length recovery of each packet's length past the fixed header;
            // TS recovery of the timestamps.
            header[0] ^= packet[start] & 0x3F
            header[1] ^= packet[start + 1]
            let length = UInt16(packet.count - 12)
            header[2] ^= UInt8(length >> 8)
            header[3] ^= UInt8(length & 0xFF)
            for index in 0..<4 { header[4 + index] ^= packet[start + 4 + index] }
            if body.count < packet.count - 12 { body.append(contentsOf: repeatElement(0, count: packet.count - 12 - body.count)) }
            var position = 0
            for byte in packet.dropFirst(12) {
                body[position] ^= byte
                position += 1
            }
        }
        header[0] &= 0x3F  // R = 0, F = 0: flexible mask
        var out = header
        out.appendUInt16(base)
        out.append(contentsOf: mask(bits))
        out.append(contentsOf: body)
        return out
    }

    /// The mask words (RFC 8627 §4.2.2.1): 15 bits, then 31, then 64,
    /// each word's k bit saying whether more follow.
    static func mask(_ bits: UInt64) -> [UInt8] {
        // Bit i of `bits` is packet base + i; the wire puts packet 0 first (MSB).
        let first = UInt16(truncatingIfNeeded: bits & 0x7FFF)
        let second = UInt32(truncatingIfNeeded: (bits >> 15) & 0x7FFF_FFFF)
        var words: [UInt8] = []
        let more = second != 0
        let head = (more ? 0 : 0x8000) | UInt16(reversing: first, width: 15)
        words.appendUInt16(head)
        if more { words.appendUInt32(0x8000_0000 | UInt32(reversing: second, width: 31)) }
        return words
    }

    /// What a repair payload says: the recovered header fields, the
    /// protected sequence numbers and the XORed body.
    public struct Repair: Sendable, Equatable {
        public var firstByte: UInt8
        public var secondByte: UInt8
        public var lengthRecovery: UInt16
        public var timestampRecovery: UInt32
        public var protected: [UInt16]
        public var body: ArraySlice<UInt8>

        /// Reads a repair payload; nil when it is not one this can use
        /// (truncated, or a retransmission or fixed-mask variant).
        public init?(payload: ArraySlice<UInt8>) {
            var reader = ByteReader(payload)
            guard let b0 = reader.readUInt8(), b0 & 0xC0 == 0, let b1 = reader.readUInt8(),
                  let length = reader.readUInt16(), let ts = reader.readUInt32(), let base = reader.readUInt16(),
                  let head = reader.readUInt16()
            else { return nil }
            var sequences: [UInt16] = []
            let first = UInt16(reversing: head & 0x7FFF, width: 15)
            for bit in 0..<15 where first & (1 << bit) != 0 { sequences.append(base &+ UInt16(bit)) }
            if head & 0x8000 == 0 {
                guard let word = reader.readUInt32() else { return nil }
                let second = UInt32(reversing: word & 0x7FFF_FFFF, width: 31)
                for bit in 0..<31 where second & (1 << bit) != 0 { sequences.append(base &+ UInt16(15 + bit)) }
                // A third word (up to 110 packets) is not written by us; refuse it.
                guard word & 0x8000_0000 != 0 else { return nil }
            }
            guard !sequences.isEmpty else { return nil }
            firstByte = b0
            secondByte = b1
            lengthRecovery = length
            timestampRecovery = ts
            protected = sequences
            body = reader.readRest()
        }
    }

    /// Rebuilds the one missing packet from a repair and all the other
    /// packets it protects (plain RTP bytes), for stream `ssrc`.
    public static func recover(_ repair: Repair, missing: UInt16, others: [ArraySlice<UInt8>], ssrc: UInt32) -> [UInt8]? {
        var first = repair.firstByte
        var second = repair.secondByte
        var length = repair.lengthRecovery
        var timestamp = repair.timestampRecovery
        var body = Array(repair.body)
        for packet in others {
            guard packet.count >= 12 else { return nil }
            let start = packet.startIndex
            first ^= packet[start] & 0x3F
            second ^= packet[start + 1]
            length ^= UInt16(truncatingIfNeeded: packet.count - 12)
            var ts: UInt32 = 0
            for index in 4..<8 { ts = ts << 8 | UInt32(packet[start + index]) }
            timestamp ^= ts
            guard packet.count - 12 <= body.count else { return nil }
            var position = 0
            for byte in packet.dropFirst(12) {
                body[position] ^= byte
                position += 1
            }
        }
        guard Int(length) <= body.count else { return nil }
        var out: [UInt8] = [0x80 | (first & 0x3F), second]
        out.appendUInt16(missing)
        out.appendUInt32(timestamp)
        out.appendUInt32(ssrc)
        out.append(contentsOf: body.prefix(Int(length)))
        return out
    }

    static func sequence(of packet: ArraySlice<UInt8>) -> UInt16 {
        UInt16(packet[packet.startIndex + 2]) << 8 | UInt16(packet[packet.startIndex + 3])
    }
}

extension FixedWidthInteger where Self: UnsignedInteger {
    /// The low `width` bits in reverse order (bit 0 becomes bit width-1).
    init(reversing value: Self, width: Int) {
        var result: Self = 0
        for bit in 0..<width where value & (1 << bit) != 0 { result |= 1 << (width - 1 - bit) }
        self = result
    }
}
