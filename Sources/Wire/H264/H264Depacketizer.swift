/// Why an H.264 RTP payload could not be turned back into NAL units.
public enum H264DepacketizeError: Error, Equatable, Sendable {
    case emptyPayload
    /// STAP-B, MTAP and FU-B belong to the interleaved mode, which is not negotiated.
    case unsupportedPacketType(UInt8)
    case truncatedAggregate
    case truncatedFragment
    /// A FU-A continuation or end arrived with no fragment started.
    case fragmentWithoutStart
    /// A new unit began while a fragmented one was still open.
    case unfinishedFragment
    /// A FU-A header with both S and E set, or with a nonsense type.
    case malformedFragment
    /// A unit that no encoder could have produced: forbidden bit set, a type
    /// outside 1-23, an embedded start code, or a trailing zero byte.
    case invalidNALUnit
}

/// Reverses `H264Payloader`: appends each payload's NAL units to an Annex B
/// buffer with 4-byte start codes, reassembling FU-A fragments.
public struct H264Depacketizer: Sendable {
    /// True while a FU-A unit has started and not ended.
    public private(set) var inFragment = false
    private var fragmentType: UInt8 = 0
    /// Where the open FU-A unit begins in the output, to validate it whole.
    private var fragmentStart = 0

    public init() {}

    public mutating func reset() { inFragment = false }

    /// Where the open FU-A unit's start code is in the output, while one is
    /// open: everything before it is whole NAL units.
    public var openUnitStart: Int? { inFragment ? fragmentStart - AnnexB.startCode.count : nil }

    public mutating func append(payload: ArraySlice<UInt8>, to output: inout [UInt8]) throws(H264DepacketizeError) {
        guard let first = payload.first else { throw .emptyPayload }
        let type = H264NALType.type(of: first)
        switch type {
        case 1...23:
            guard !inFragment else { throw .unfinishedFragment }
            guard Self.isValidUnit(payload) else { throw .invalidNALUnit }
            output.append(contentsOf: AnnexB.startCode)
            output.append(contentsOf: payload)
        case H264NALType.stapA:
            guard !inFragment else { throw .unfinishedFragment }
            // RFC 6184 §5.7.1: after the STAP-A header, units each preceded by
            // a 16-bit size in network byte order.
            var reader = ByteReader(payload.dropFirst())
            var units = 0
            let mark = output.count
            while !reader.isAtEnd {
                guard let size = reader.readUInt16(), size > 0, let unit = reader.readSlice(Int(size)) else {
                    output.removeSubrange(mark...)
                    throw .truncatedAggregate
                }
                guard Self.isValidUnit(unit) else {
                    output.removeSubrange(mark...)
                    throw .invalidNALUnit
                }
                output.append(contentsOf: AnnexB.startCode)
                output.append(contentsOf: unit)
                units += 1
            }
            if units == 0 { throw .truncatedAggregate }
        case H264NALType.fuA:
            guard payload.count > 2 else { throw .truncatedFragment }
            let fuHeader = payload[payload.startIndex + 1]
            let start = fuHeader & 0x80 != 0
            let end = fuHeader & 0x40 != 0
            let unitType = fuHeader & 0x1F
            // RFC 6184 §5.8: "A fragmented NAL unit MUST NOT be transmitted in
            // one FU; that is, the Start bit and End bit MUST NOT both be set".
            guard !(start && end), (1...23).contains(unitType) else { throw .malformedFragment }
            let data = payload.dropFirst(2)
            if start {
                guard !inFragment else { throw .unfinishedFragment }
                guard first & 0x80 == 0 else { throw .invalidNALUnit }
                inFragment = true
                fragmentType = unitType
                output.append(contentsOf: AnnexB.startCode)
                fragmentStart = output.count
                output.append(first & 0xE0 | unitType)
            } else {
                guard inFragment else { throw .fragmentWithoutStart }
                guard unitType == fragmentType else { throw .malformedFragment }
            }
            output.append(contentsOf: data)
            if end {
                inFragment = false
                guard Self.isValidUnit(output[fragmentStart...]) else { throw .invalidNALUnit }
            }
        default:
            throw .unsupportedPacketType(type)
        }
    }

    /// ITU-T H.264 §7.4.1: forbidden_zero_bit is 0; §7.4.1 and Annex B:
    /// emulation prevention guarantees that 0x000000, 0x000001 and 0x000002
    /// never occur inside a unit, and a unit never ends in a zero byte.
    static func isValidUnit(_ unit: ArraySlice<UInt8>) -> Bool {
        guard let header = unit.first, header & 0x80 == 0, (1...23).contains(header & 0x1F),
              unit.last != 0 else { return false }
        var zeros = 0
        for byte in unit.dropFirst() {
            if byte == 0 {
                zeros += 1
            } else {
                if zeros >= 2 && byte <= 2 { return false }
                zeros = 0
            }
            if zeros >= 3 { return false }
        }
        return true
    }

    /// The NAL units of one payload as an Annex B buffer, for a payload that
    /// stands alone (single unit or STAP-A).
    public static func nalUnits(of payload: ArraySlice<UInt8>) throws(H264DepacketizeError) -> [UInt8] {
        var depacketizer = H264Depacketizer()
        var out: [UInt8] = []
        try depacketizer.append(payload: payload, to: &out)
        if depacketizer.inFragment { throw .truncatedFragment }
        return out
    }
}
