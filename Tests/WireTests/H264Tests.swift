import ShareWire
import ShareBase
import TestSupport
import Testing

/// Builds an Annex B access unit from NAL units, with 4- or 3-byte start codes.
func annexB(_ nals: [[UInt8]], shortStartCodes: Bool = false) -> [UInt8] {
    nals.flatMap { (shortStartCodes ? [0, 0, 1] : [0, 0, 0, 1]) + $0 }
}

/// The NAL units of an Annex B buffer.
func nalList(_ stream: [UInt8]) -> [[UInt8]] {
    AnnexB.nalUnits(in: stream).map { Array(stream[$0]) }
}

/// A random NAL unit of `size` bytes with a valid header and no start-code emulation.
func randomNAL(type: UInt8, size: Int, using rng: inout SeededGenerator) -> [UInt8] {
    var nal: [UInt8] = [0x60 | type]
    while nal.count < size { nal.append(UInt8.random(in: 4...255, using: &rng)) }
    return nal
}

/// A random access unit: sometimes SPS+PPS+IDR, otherwise slices, of mixed sizes.
func randomAccessUnit(using rng: inout SeededGenerator, maxNALSize: Int = 6000) -> [[UInt8]] {
    var nals: [[UInt8]] = []
    if Bool.random(using: &rng) {
        nals.append(randomNAL(type: H264NALType.sps, size: Int.random(in: 8...30, using: &rng), using: &rng))
        nals.append(randomNAL(type: H264NALType.pps, size: Int.random(in: 4...8, using: &rng), using: &rng))
        nals.append(randomNAL(type: H264NALType.idr, size: Int.random(in: 1...maxNALSize, using: &rng), using: &rng))
    }
    for _ in 0..<Int.random(in: nals.isEmpty ? 1...4 : 0...2, using: &rng) {
        nals.append(randomNAL(type: H264NALType.slice, size: Int.random(in: 1...maxNALSize, using: &rng), using: &rng))
    }
    return nals
}

@Suite("H.264 payloading (RFC 6184, packetization-mode 1)")
struct H264PayloaderTests {
    @Test func annexBFindsUnitsWithEitherStartCode() {
        let stream: [UInt8] = [0xFF, 0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 0, 1, 0x65, 4, 0, 0]
        #expect(nalList(stream) == [[0x67, 1, 2], [0x68, 3], [0x65, 4]])
        #expect(nalList([1, 2, 3]).isEmpty)
        #expect(nalList([0, 0, 1, 0, 0, 1]).isEmpty)
    }

    /// RFC 6184 §5.7.1 Figure 7: a STAP-A of SPS and PPS: header with the
    /// largest NRI and type 24, then 16-bit size + unit for each.
    @Test func stapAGolden() throws {
        let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1F]
        let pps: [UInt8] = [0x68, 0xCE, 0x3C, 0x80]
        let idr: [UInt8] = [0x45, 0x88]  // NRI 2, type 5
        var payloader = H264Payloader(maxPayloadSize: 1200)
        let au = annexB([sps, pps, idr])
        #expect(payloader.prepare(accessUnit: au[...]) == 1)
        var buffer = PacketBuffer(capacity: 1500)
        #expect(payloader.writePayload(0, of: au[...], into: &buffer))
        #expect(Array(buffer.bytes) == [0x78, 0, 4] + sps + [0, 4] + pps + [0, 2] + idr)
        #expect(try H264Depacketizer.nalUnits(of: buffer.bytes) == au)
    }

    /// RFC 6184 §5.8: FU indicator keeps F|NRI with type 28; FU header has S,
    /// E and the original type; the NAL header byte itself is not sent.
    @Test func fuAGolden() {
        let nal: [UInt8] = [0x65] + (1...40).map { UInt8($0) }
        let au = annexB([nal])
        var payloader = H264Payloader(maxPayloadSize: 16)
        let count = payloader.prepare(accessUnit: au[...])
        #expect(count == 3)  // 40 body bytes, 14 per fragment → 3 fragments of 14/14/12
        var payloads: [[UInt8]] = []
        for i in 0..<count {
            var buffer = PacketBuffer(capacity: 100)
            payloader.writePayload(i, of: au[...], into: &buffer)
            payloads.append(Array(buffer.bytes))
        }
        #expect(payloads[0].prefix(2) == [0x7C, 0x85])
        #expect(payloads[1].prefix(2) == [0x7C, 0x05])
        #expect(payloads[2].prefix(2) == [0x7C, 0x45])
        #expect(Array(payloads[0].dropFirst(2)) == Array(nal[1...14]))
        #expect(payloads.map(\.count) == [16, 16, 14])
    }

    @Test func singleNALWhenAloneOrLarge() {
        var payloader = H264Payloader(maxPayloadSize: 100)
        let big = [UInt8](repeating: 0x41, count: 100)
        let au = annexB([big, [0x41, 1], [0x41, 2]])
        #expect(payloader.prepare(accessUnit: au[...]) == 2)
        #expect(payloader.payloads.map(\.size) == [100, 1 + 4 + 4])
    }

    /// Seeded property over 400 random access units and MTUs: every payload
    /// fits, the marker is only on the last packet, sequence numbers are
    /// contiguous, and depacketize(payload(x)) == x.
    @Test func randomAccessUnitsRoundTrip() throws {
        var rng = SeededGenerator(seed: 0xA11CE)
        var packetizer = RTPPacketizer(ssrc: 0x1234, payloadType: 96, clockRate: 90_000,
                                       initialSequenceNumber: 65_000)
        var buffer = PacketBuffer(capacity: 1500)
        var expectedSequence: UInt16 = 65_000
        for frame in 0..<400 {
            let mtu = Int.random(in: 100...1400, using: &rng)
            var payloader = H264Payloader(maxPayloadSize: mtu - RTPPacket.fixedHeaderSize)
            let nals = randomAccessUnit(using: &rng)
            let au = annexB(nals, shortStartCodes: frame % 3 == 0)
            let count = payloader.prepare(accessUnit: au[...])
            var depacketizer = H264Depacketizer()
            var rebuilt: [UInt8] = []
            for index in 0..<count {
                let sequence = packetizer.beginPacket(in: &buffer, timestamp: UInt32(frame) * 3000,
                                                      marker: index == count - 1)
                #expect(sequence == expectedSequence)
                expectedSequence &+= 1
                #expect(payloader.writePayload(index, of: au[...], into: &buffer))
                #expect(buffer.count <= mtu)
                let packet = try RTPPacket(parsing: Array(buffer.bytes))
                #expect(packet.marker == (index == count - 1))
                #expect(packet.payload.count == payloader.payloads[index].size)
                try depacketizer.append(payload: packet.payload, to: &rebuilt)
            }
            #expect(!depacketizer.inFragment)
            #expect(nalList(rebuilt) == nals)
        }
    }
}

@Suite("H.264 depacketizer errors")
struct H264DepacketizerTests {
    @Test(arguments: [
        ([UInt8](), H264DepacketizeError.emptyPayload),
        ([0x78], .truncatedAggregate),
        ([0x78, 0, 5, 1, 2], .truncatedAggregate),
        ([0x78, 0, 0], .truncatedAggregate),
        ([0x7C, 0x85], .truncatedFragment),
        ([0x7C, 0xC5, 1], .malformedFragment),
        ([0x7C, 0x80, 1], .malformedFragment),
        ([0x7C, 0x05, 1], .fragmentWithoutStart),
        ([0x79, 1, 2], .unsupportedPacketType(25)),
        ([0x7D, 1, 2], .unsupportedPacketType(29)),
        ([0x60, 1], .unsupportedPacketType(0)),
        // Units no encoder emits: an embedded start code, forbidden bit, trailing zero (H.264 §7.4.1).
        ([0x41, 5, 0, 0, 1, 7], .invalidNALUnit),
        ([0x41, 5, 0, 0, 0, 7], .invalidNALUnit),
        ([0xC1, 5], .invalidNALUnit),
        ([0x41, 5, 0], .invalidNALUnit),
        ([0x78, 0, 4, 0x41, 0, 0, 2], .invalidNALUnit),
    ])
    func rejects(payload: [UInt8], error: H264DepacketizeError) {
        var depacketizer = H264Depacketizer()
        var out: [UInt8] = []
        #expect(throws: error) { try depacketizer.append(payload: payload[...], to: &out) }
    }

    /// 0x000003 is emulation prevention itself and is valid inside a unit.
    @Test func emulationPreventionIsAccepted() throws {
        #expect(try H264Depacketizer.nalUnits(of: [0x41, 0, 0, 3, 1, 0, 0, 3][...]) == [0, 0, 0, 1, 0x41, 0, 0, 3, 1, 0, 0, 3])
    }

    /// A fragmented unit is validated whole, across fragment boundaries.
    @Test func startCodeSplitAcrossFragmentsIsCaught() throws {
        var depacketizer = H264Depacketizer()
        var out: [UInt8] = []
        try depacketizer.append(payload: [0x7C, 0x81, 9, 0, 0][...], to: &out)
        #expect(throws: H264DepacketizeError.invalidNALUnit) {
            try depacketizer.append(payload: [0x7C, 0x41, 1, 9][...], to: &out)
        }
    }

    @Test func newUnitInsideOpenFragmentIsAnError() throws {
        var depacketizer = H264Depacketizer()
        var out: [UInt8] = []
        try depacketizer.append(payload: [0x7C, 0x85, 1, 2], to: &out)
        #expect(throws: H264DepacketizeError.unfinishedFragment) {
            try depacketizer.append(payload: [0x41, 9], to: &out)
        }
    }
}
