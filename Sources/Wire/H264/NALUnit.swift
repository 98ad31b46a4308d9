/// H.264 NAL unit header facts (ITU-T H.264 §7.3.1) used by the payloader.
public enum H264NALType {
    public static let slice: UInt8 = 1
    public static let idr: UInt8 = 5
    public static let sei: UInt8 = 6
    public static let sps: UInt8 = 7
    public static let pps: UInt8 = 8
    public static let accessUnitDelimiter: UInt8 = 9
    /// RFC 6184 §5.7.1, single-time aggregation packet.
    public static let stapA: UInt8 = 24
    /// RFC 6184 §5.8, fragmentation unit without DON.
    public static let fuA: UInt8 = 28

    /// The 5-bit type of a NAL header byte.
    @inlinable public static func type(of header: UInt8) -> UInt8 { header & 0x1F }
}

/// Finds the NAL units of an Annex B byte stream (ITU-T H.264 Annex B):
/// each unit follows a 0x000001 start code; zero bytes before the next start
/// code (trailing_zero_8bits, or the first byte of a 4-byte start code) are
/// not part of the unit. Bytes before the first start code are ignored.
public enum AnnexB {
    /// Ranges of `stream`'s NAL units, in order; empty units are skipped.
    public static func nalUnits(in stream: ArraySlice<UInt8>, into ranges: inout [Range<Int>]) {
        ranges.removeAll(keepingCapacity: true)
        var unitStart: Int? = nil
        var i = stream.startIndex
        let end = stream.endIndex
        while i + 2 < end {
            // A start code is 00 00 01; skip ahead fast when byte i+2 cannot be part of one.
            let b2 = stream[i + 2]
            if b2 > 1 {
                i += 3
                continue
            }
            if b2 == 1 && stream[i] == 0 && stream[i + 1] == 0 {
                if let start = unitStart { appendTrimmed(start..<i, of: stream, to: &ranges) }
                unitStart = i + 3
                i += 3
            } else {
                i += 1
            }
        }
        if let start = unitStart { appendTrimmed(start..<end, of: stream, to: &ranges) }
    }

    /// Whether `stream` holds an IDR slice.
    public static func containsIDR(_ stream: ArraySlice<UInt8>) -> Bool {
        var ranges: [Range<Int>] = []
        nalUnits(in: stream, into: &ranges)
        return ranges.contains { H264NALType.type(of: stream[$0.lowerBound]) == H264NALType.idr }
    }

    public static func nalUnits(in stream: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        nalUnits(in: stream[...], into: &ranges)
        return ranges
    }

    private static func appendTrimmed(_ range: Range<Int>, of stream: ArraySlice<UInt8>, to ranges: inout [Range<Int>]) {
        var upper = range.upperBound
        while upper > range.lowerBound && stream[upper - 1] == 0 { upper -= 1 }
        if upper > range.lowerBound { ranges.append(range.lowerBound..<upper) }
    }

    /// The 4-byte start code written before every unit this project emits.
    public static let startCode: [UInt8] = [0, 0, 0, 1]
}
