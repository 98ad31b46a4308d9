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

    @Test func payloaderAdvancesTimestampBy48kHzDuration() throws {
        var payloader = OpusPayloader(initialTimestamp: UInt32.max - 500)
        #expect(try payloader.timestamp(for: [19 << 3, 1][...]) == UInt32.max - 500)
        #expect(try payloader.timestamp(for: [19 << 3, 1][...]) == 459)  // wrapped by 960
        payloader.skip(samples: 960 * 3)
        #expect(payloader.nextTimestamp == 459 + 960 * 4)
    }
}
