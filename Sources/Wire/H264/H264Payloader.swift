/// One RTP payload planned by `H264Payloader`.
public struct H264Payload: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        /// RFC 6184 §5.6: one NAL unit, sent as it is.
        case single(Range<Int>)
        /// RFC 6184 §5.7.1: the NAL units `nals[units]`, aggregated.
        case stapA(units: Range<Int>)
        /// RFC 6184 §5.8: bytes `part` of the NAL unit whose header is at `header`.
        case fuA(header: Int, part: Range<Int>, start: Bool, end: Bool)
    }

    let kind: Kind
    /// Payload size in bytes.
    public let size: Int
}

/// Turns Annex B access units into RFC 6184 packetization-mode 1 payloads:
/// single NAL unit packets, STAP-A to aggregate consecutive small units
/// (SPS, PPS, SEI, small slices) and FU-A to fragment units larger than the
/// payload budget. Knows nothing of RTP headers; reuses its scratch space so
/// a steady stream allocates nothing.
public struct H264Payloader: Sendable {
    /// Largest payload to produce (the MTU less IP, UDP, RTP and SRTP overhead).
    public var maxPayloadSize: Int {
        didSet { maxPayloadSize = max(maxPayloadSize, Self.minimumPayloadSize) }
    }
    /// The payloads planned by the last `prepare`.
    public private(set) var payloads: [H264Payload] = []
    /// Whether the last `prepare` held an IDR slice.
    public private(set) var containsIDR = false
    private var nals: [Range<Int>] = []

    /// A budget below this cannot carry a FU-A fragment and a STAP-A unit usefully.
    public static let minimumPayloadSize = 16

    public init(maxPayloadSize: Int) {
        self.maxPayloadSize = max(maxPayloadSize, Self.minimumPayloadSize)
        payloads.reserveCapacity(64)
        nals.reserveCapacity(16)
    }

    /// Plans the payloads of `accessUnit` (a whole access unit or any run
    /// of its NAL units, in Annex B) into `payloads` and returns how many.
    @discardableResult
    public mutating func prepare(accessUnit: ArraySlice<UInt8>) -> Int {
        payloads.removeAll(keepingCapacity: true)
        AnnexB.nalUnits(in: accessUnit, into: &nals)
        containsIDR = nals.contains { !$0.isEmpty && H264NALType.type(of: accessUnit[$0.lowerBound]) == H264NALType.idr }
        var groupStart = 0
        var groupSize = 1  // the STAP-A NAL header
        for (index, nal) in nals.enumerated() {
            if nal.count > maxPayloadSize {
                flushGroup(groupStart..<index)
                fragment(nal)
                groupStart = index + 1
                groupSize = 1
                continue
            }
            // RFC 6184 §5.7.1: each aggregated unit is preceded by a 16-bit size.
            if groupSize + 2 + nal.count > maxPayloadSize {
                flushGroup(groupStart..<index)
                groupStart = index
                groupSize = 1
            }
            groupSize += 2 + nal.count
        }
        flushGroup(groupStart..<nals.count)
        return payloads.count
    }

    private mutating func flushGroup(_ units: Range<Int>) {
        switch units.count {
        case 0: return
        case 1: payloads.append(H264Payload(kind: .single(nals[units.lowerBound]), size: nals[units.lowerBound].count))
        default:
            let size = 1 + nals[units].reduce(0) { $0 + 2 + $1.count }
            payloads.append(H264Payload(kind: .stapA(units: units), size: size))
        }
    }

    private mutating func fragment(_ nal: Range<Int>) {
        // RFC 6184 §5.8: the NAL header is not sent; its F and NRI bits go in
        // the FU indicator and its type in the FU header. Fragments are sized
        // evenly so no tiny last packet trails a keyframe.
        let body = nal.lowerBound + 1..<nal.upperBound
        let budget = maxPayloadSize - 2
        let fragments = (body.count + budget - 1) / budget
        let chunk = (body.count + fragments - 1) / fragments
        var start = body.lowerBound
        while start < body.upperBound {
            let end = min(start + chunk, body.upperBound)
            payloads.append(H264Payload(
                kind: .fuA(header: nal.lowerBound, part: start..<end, start: start == body.lowerBound,
                           end: end == body.upperBound),
                size: 2 + (end - start)))
            start = end
        }
    }

    /// Appends payload `index` of the last prepared `accessUnit` to `buffer`.
    /// Returns false when it does not fit (the buffer is then unchanged past its old end).
    @discardableResult
    public func writePayload(_ index: Int, of accessUnit: ArraySlice<UInt8>, into buffer: inout PacketBuffer) -> Bool {
        let payload = payloads[index]
        switch payload.kind {
        case .single(let range):
            return buffer.append(slice: accessUnit[range])
        case .stapA(let units):
            // RFC 6184 §5.7.1: "The value of NRI MUST be the maximum of all the
            // NAL units carried in the aggregation packet"; F is their OR.
            var f: UInt8 = 0
            var nri: UInt8 = 0
            for unit in nals[units] {
                let header = accessUnit[unit.lowerBound]
                f |= header & 0x80
                nri = max(nri, header & 0x60)
            }
            guard buffer.append(f | nri | H264NALType.stapA) else { return false }
            for unit in nals[units] {
                guard buffer.appendUInt16(UInt16(unit.count)), buffer.append(slice: accessUnit[unit]) else { return false }
            }
            return true
        case .fuA(let headerIndex, let part, let start, let end):
            let header = accessUnit[headerIndex]
            // FU indicator: F and NRI of the unit, type 28. FU header: S, E, R=0, unit type.
            let indicator = header & 0xE0 | H264NALType.fuA
            let fuHeader = (start ? 0x80 : 0) | (end ? 0x40 : 0) | header & 0x1F
            return buffer.append(indicator) && buffer.append(fuHeader) && buffer.append(slice: accessUnit[part])
        }
    }
}
