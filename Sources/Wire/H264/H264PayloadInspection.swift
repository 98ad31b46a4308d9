/// What an RTP payload of H.264 (RFC 6184) carries, read from its NAL
/// headers alone, without depacketizing: enough for the frame assembler to
/// tell a keyframe, and where an access unit begins.
enum H264PayloadInspection {
    /// Whether an RTP payload (RFC 6184) carries an IDR slice or a piece of one.
    static func carriesIDR(_ payload: ArraySlice<UInt8>) -> Bool {
        firstNALType(in: payload) { $0 == H264NALType.idr } != nil
    }

    /// Whether an RTP payload begins with a NAL unit only an access unit's
    /// start has (a delimiter or a sequence parameter set).
    static func beginsAccessUnit(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let first = firstNALType(in: payload, where: { _ in true }) else { return false }
        return first == H264NALType.accessUnitDelimiter || first == H264NALType.sps
    }

    /// The first type, in order, of the NAL units a payload carries (one,
    /// the aggregated ones of a STAP-A, or the fragmented one of an FU-A)
    /// that `matches`; nothing is allocated.
    private static func firstNALType(in payload: ArraySlice<UInt8>, where matches: (UInt8) -> Bool) -> UInt8? {
        guard let header = payload.first else { return nil }
        let start = payload.startIndex
        switch H264NALType.type(of: header) {
        case H264NALType.stapA:
            var offset = start + 1
            while offset + 2 < payload.endIndex {
                let size = Int(payload[offset]) << 8 | Int(payload[offset + 1])
                guard size > 0 else { return nil }
                let type = H264NALType.type(of: payload[offset + 2])
                if matches(type) { return type }
                offset += 2 + size
            }
            return nil
        case H264NALType.fuA:
            guard payload.count >= 2 else { return nil }
            let type = H264NALType.type(of: payload[start + 1])
            return matches(type) ? type : nil
        case let type:
            return matches(type) ? type : nil
        }
    }
}
