import ShareWire
import Testing

@Suite("Opus payload (RFC 7587, TOC of RFC 6716 §3.1)")
struct OpusTests {
    /// RFC 6716 §3.1 Table 2: config → frame size; code 0 = one frame.
    @Test(arguments: [
        (UInt8(0), 480), (1, 960), (2, 1920), (3, 2880),  // SILK NB 10/20/40/60 ms
        (12, 480), (13, 960),  // Hybrid SWB 10/20 ms
        (16, 120), (17, 240), (18, 480), (19, 960),  // CELT NB 2.5/5/10/20 ms
        (31, 960),  // CELT FB 20 ms
    ])
    func frameSizeFromConfig(config: UInt8, samples: Int) throws {
        let info = try OpusPacketInfo(packet: [config << 3, 0xAA][...])
        #expect(info.samples == samples)
        #expect(info.frameCount == 1)
        #expect(!info.isStereo)
    }

    @Test func frameCountCodes() throws {
        // Config 19 (CELT 20 ms), stereo, code 1: two equal frames.
        #expect(try OpusPacketInfo(packet: [19 << 3 | 0x04 | 1, 1, 1][...]).samples == 1920)
        #expect(try OpusPacketInfo(packet: [19 << 3 | 0x04 | 1][...]).isStereo)
        // Code 3 with M = 6 frames of 20 ms = 120 ms, the maximum.
        #expect(try OpusPacketInfo(packet: [19 << 3 | 3, 6][...]).samples == 5760)
        // M = 7 frames of 20 ms exceeds 120 ms (RFC 6716 §3.4 R5).
        #expect(throws: OpusPacketError.tooLong(samples: 6720)) { try OpusPacketInfo(packet: [19 << 3 | 3, 7][...]) }
        #expect(throws: OpusPacketError.badFrameCount) { try OpusPacketInfo(packet: [19 << 3 | 3, 0][...]) }
        #expect(throws: OpusPacketError.truncated) { try OpusPacketInfo(packet: [19 << 3 | 3][...]) }
        #expect(throws: OpusPacketError.empty) { try OpusPacketInfo(packet: [][...]) }
    }

    /// RFC 6716 §4.2.3: the LBRR flag follows the SILK frames' voice-activity
    /// flags at the top of the first frame's first byte, mid then side; the
    /// first frame is found past the lengths and padding of codes 2 and 3.
    /// TOC bytes: config << 3 | stereo (4) | code.
    static let fecCases: [(packet: [UInt8], carries: Bool)] = [
        ([8, 0b0100_0000], true),  // SILK 20 ms mono: VAD 0, LBRR 1
        ([8, 0b1000_0000], false),  // VAD 1, LBRR 0
        ([24, 0b0001_0000], true),  // SILK 60 ms: three VAD flags, then LBRR
        ([12, 0b0001_0000], true),  // stereo: the side channel's LBRR
        ([12, 0b0010_1111], false),  // the side channel's VAD and beyond
        ([104, 0b0100_0000], true),  // hybrid 20 ms
        ([248, 0xFF], false),  // CELT-only: no SILK layer
        ([8], false),  // no frame data (DTX)
        ([10, 2, 0b0100_0000, 0, 0], true),  // code 2: a one-byte first length
        ([10, 0, 0b0100_0000], false),  // code 2: an empty first frame
        ([10, 252, 0, 0b0100_0000], true),  // code 2: a two-byte first length (252)
        ([11, 0x02, 0b0100_0000, 0], true),  // code 3, equal frames, no padding
        ([11, 0xC2, 255, 3, 1, 0b0100_0000, 0], true),  // code 3, VBR, 257 bytes of padding
        ([11, 0xC2, 255], false),  // code 3, cut off in the padding length
    ]

    @Test(arguments: fecCases)
    func fecFlagOfTheFirstSILKFrame(packet: [UInt8], carries: Bool) throws {
        #expect(try OpusPacketInfo(packet: packet[...]).carriesFEC == carries)
    }

    @Test func payloaderAdvancesTimestampBy48kHzDuration() throws {
        var payloader = OpusPayloader(initialTimestamp: UInt32.max - 500)
        #expect(try payloader.timestamp(for: [19 << 3, 1][...]) == UInt32.max - 500)
        #expect(try payloader.timestamp(for: [19 << 3, 1][...]) == 459)  // wrapped by 960
        payloader.skip(samples: 960 * 3)
        #expect(payloader.nextTimestamp == 459 + 960 * 4)
    }
}
