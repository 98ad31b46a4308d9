/// Why an RTP packet could not be parsed.
public enum RTPParseError: Error, Equatable, Sendable {
    case tooShort(Int)
    case badVersion(UInt8)
    case truncatedCSRCList
    case truncatedExtension
    case badPadding(UInt8)
}

/// An RTP packet (RFC 3550 §5.1) with its header extension kept as raw words,
/// so that serializing a parsed packet gives back the same bytes.
///
///      0                   1                   2                   3
///      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
///     +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///     |V=2|P|X|  CC   |M|     PT      |       sequence number         |
///     |                           timestamp                           |
///     |           synchronization source (SSRC) identifier            |
public struct RTPPacket: Equatable, Sendable {
    public var marker: Bool
    public var payloadType: UInt8
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    public var ssrc: UInt32
    public var csrcs: [UInt32]
    /// The header extension, if the X bit is set.
    public var headerExtension: RTPHeaderExtension?
    public var payload: ArraySlice<UInt8>
    /// Padding bytes after the payload, the last of which is their count
    /// (RFC 3550 §5.1, P bit); empty when there is none.
    public var padding: ArraySlice<UInt8>

    public static let fixedHeaderSize = 12

    public init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32,
                ssrc: UInt32, csrcs: [UInt32] = [], headerExtension: RTPHeaderExtension? = nil,
                payload: ArraySlice<UInt8>, padding: ArraySlice<UInt8> = []) {
        self.marker = marker
        self.payloadType = payloadType & 0x7F
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.headerExtension = headerExtension
        self.payload = payload
        self.padding = padding
    }

    /// Parses one RTP packet; the payload and padding are slices of `bytes`.
    public init(parsing bytes: ArraySlice<UInt8>) throws(RTPParseError) {
        var reader = ByteReader(bytes)
        guard let first = reader.readUInt8(), let second = reader.readUInt8(),
              let sequence = reader.readUInt16(), let timestamp = reader.readUInt32(),
              let ssrc = reader.readUInt32()
        else { throw .tooShort(bytes.count) }
        guard first >> 6 == 2 else { throw .badVersion(first >> 6) }
        var csrcs: [UInt32] = []
        let csrcCount = Int(first & 0x0F)
        if csrcCount > 0 {
            csrcs.reserveCapacity(csrcCount)
            for _ in 0..<csrcCount {
                guard let csrc = reader.readUInt32() else { throw .truncatedCSRCList }
                csrcs.append(csrc)
            }
        }
        var headerExtension: RTPHeaderExtension?
        if first & 0x10 != 0 {
            // RFC 3550 §5.3.1: 16-bit profile field, 16-bit length in 32-bit words.
            guard let profile = reader.readUInt16(), let words = reader.readUInt16(),
                  let data = reader.readSlice(Int(words) * 4)
            else { throw .truncatedExtension }
            headerExtension = RTPHeaderExtension(profile: profile, data: data)
        }
        var body = reader.readRest()
        var padding: ArraySlice<UInt8> = []
        if first & 0x20 != 0 {
            // RFC 3550 §5.1: the last octet of the padding is a count of how
            // many padding octets should be ignored, including itself.
            guard let count = body.last, count > 0, Int(count) <= body.count else {
                throw .badPadding(body.last ?? 0)
            }
            padding = body.suffix(Int(count))
            body = body.dropLast(Int(count))
        }
        self.init(marker: second & 0x80 != 0, payloadType: second & 0x7F, sequenceNumber: sequence,
                  timestamp: timestamp, ssrc: ssrc, csrcs: csrcs, headerExtension: headerExtension,
                  payload: body, padding: padding)
    }

    public init(parsing bytes: [UInt8]) throws(RTPParseError) {
        try self.init(parsing: bytes[...])
    }

    /// Size of the header, CSRC list and extension.
    public var headerSize: Int {
        Self.fixedHeaderSize + csrcs.count * 4 + (headerExtension.map { 4 + $0.data.count } ?? 0)
    }

    /// The packet's bytes.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(headerSize + payload.count + padding.count)
        appendHeader(to: &out)
        out.append(contentsOf: payload)
        out.append(contentsOf: padding)
        return out
    }

    /// Appends the header (fixed part, CSRCs, extension) to `out`.
    public func appendHeader(to out: inout [UInt8]) {
        var first: UInt8 = 2 << 6
        if !padding.isEmpty { first |= 0x20 }
        if headerExtension != nil { first |= 0x10 }
        first |= UInt8(truncatingIfNeeded: min(csrcs.count, 15))
        out.append(first)
        out.append((marker ? 0x80 : 0) | (payloadType & 0x7F))
        out.appendUInt16(sequenceNumber)
        out.appendUInt32(timestamp)
        out.appendUInt32(ssrc)
        for csrc in csrcs.prefix(15) { out.appendUInt32(csrc) }
        if let headerExtension {
            out.appendUInt16(headerExtension.profile)
            out.appendUInt16(UInt16(truncatingIfNeeded: headerExtension.data.count / 4))
            out.append(contentsOf: headerExtension.data)
        }
    }
}

/// The raw RTP header extension: a profile word and data whose length is a
/// multiple of four bytes (RFC 3550 §5.3.1).
public struct RTPHeaderExtension: Equatable, Sendable {
    public var profile: UInt16
    public var data: ArraySlice<UInt8>

    public init(profile: UInt16, data: ArraySlice<UInt8>) {
        self.profile = profile
        self.data = data
    }
}
