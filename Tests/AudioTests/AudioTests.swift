import Foundation
import ShareAudio
import ShareWire
import TestSupport
import Testing

@Suite("Opus, WAV and tone sources")
struct AudioCodecTests {
    @Test func opusRoundTripKeepsTheTone() throws {
        let encoder = try OpusEncoder(channels: 2, content: .music, bitrate: 96_000)
        let decoder = try OpusDecoder(channels: 2)
        var tone = ToneSource(frequency: 440, channels: 2)
        var mono: [Int16] = []
        for _ in 0..<100 {
            let packet = try encoder.encode(tone.next())
            #expect(packet.count > 10 && packet.count < 1500)
            #expect(try OpusPacketInfo(packet: packet).samples == 960)
            let pcm = try decoder.decode(packet)
            #expect(pcm.count == 960 * 2)
            mono += stride(from: pcm.startIndex, to: pcm.endIndex, by: 2).map { pcm[$0] }
        }
        let frequency = try #require(toneFrequency(Array(mono.dropFirst(4800))))
        #expect(abs(frequency - 440) < 2, "\(frequency) Hz")
    }

    /// RFC 7587 / RFC 6716 in-band FEC: a lost frame is rebuilt from the
    /// next packet, which is better than concealment of nothing.
    @Test func fecRebuildsALostFrame() throws {
        let encoder = try OpusEncoder(channels: 1, content: .voice, bitrate: 32_000, expectedLossPercent: 20)
        let decoder = try OpusDecoder(channels: 2)
        var tone = ToneSource(frequency: 300, channels: 1)
        var packets: [[UInt8]] = []
        for _ in 0..<30 { packets.append(Array(try encoder.encode(tone.next()))) }
        for packet in packets[0..<20] { _ = try decoder.decode(packet[...]) }
        // Packet 20 is lost: rebuild it from packet 21's FEC, then decode 21.
        let rebuilt = try decoder.decode(packets[21][...], fec: true)
        #expect(rebuilt.count == 960 * 2)
        #expect(rebuilt.map { abs(Int($0)) }.max()! > 1000, "FEC carried the tone")
        #expect(try decoder.decode(packets[21][...]).count == 960 * 2)
        // With nothing at all, concealment still yields 20 ms.
        #expect(try decoder.decode(nil).count == 960 * 2)
    }

    /// Which of libopus's own packets carry FEC, as the receiver reads them:
    /// voice expecting loss does from its second packet on (mono and stereo:
    /// the side channel's flag counts too), voice expecting none does not,
    /// and music (CELT only) never. (A tone held much longer than these
    /// 600 ms reads to SILK's voice detector as inactive, and inactive
    /// frames get no redundancy.)
    @Test func packetsSayWhetherTheyCarryFEC() throws {
        func flags(channels: Int, content: OpusEncoder.Content, loss: Int) throws -> [Bool] {
            let encoder = try OpusEncoder(channels: channels, content: content, bitrate: 32_000 * channels,
                                          expectedLossPercent: loss)
            var tone = ToneSource(frequency: 300, channels: channels)
            return try (0..<30).map { _ in try OpusPacketInfo(packet: try encoder.encode(tone.next())).carriesFEC }
        }
        #expect(try flags(channels: 1, content: .voice, loss: 20).dropFirst().allSatisfy { $0 })
        #expect(try flags(channels: 2, content: .voice, loss: 20).dropFirst().allSatisfy { $0 })
        #expect(try flags(channels: 1, content: .voice, loss: 0).allSatisfy { !$0 })
        #expect(try flags(channels: 2, content: .music, loss: 20).allSatisfy { !$0 })
    }

    @Test func encoderRefusesTheWrongFrameSize() throws {
        let encoder = try OpusEncoder(channels: 2, content: .music, bitrate: 64_000)
        #expect(throws: OpusError.self) { try encoder.encode([Int16](repeating: 0, count: 100)) }
    }

    @Test func wavFilesAreReadAndBadOnesRefused() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("tone.wav")
        try writeToneWAV(path, hertz: 1000, seconds: 0.1)
        var wav = try WAVSource(path: path)
        #expect(wav.channels == 2)
        // 0.1 s is 4800 frames; reading 3 × 960 then wrapping around works.
        for _ in 0..<6 { #expect(wav.next().count == 1920) }
        try Data("RIFF0000WAVEjunk".utf8).write(to: URL(fileURLWithPath: dir.path("bad.wav")))
        #expect(throws: WAVError.self) { try WAVSource(path: dir.path("bad.wav")) }
        #expect(throws: WAVError.self) { try WAVSource(path: dir.path("missing.wav")) }
    }
}

@Suite("Audio timelines: the sender's capture instants, the receiver's sample clock")
struct AudioTimelineTests {
    static let frame: Int64 = 20_000_000

    /// Reads that return unevenly (late, then two at once) do not move the
    /// stamps: they stay 20 ms apart, near the observations' average.
    @Test func unevenReadsGiveEvenStamps() {
        var timeline = CaptureTimeline(frameNanoseconds: Self.frame)
        let jitter: [Int64] = [0, 15, -5, 12, 19, 0, -3, 8, 18, 1]
        var stamps: [Int64] = []
        for index in 0..<500 {
            let observed = Int64(index) * Self.frame + jitter[index % jitter.count] * 1_000_000
            stamps.append(timeline.stamp(observed: observed))
        }
        for (earlier, later) in zip(stamps, stamps.dropFirst()) {
            #expect(abs(later - earlier - Self.frame) <= 1_000_000)
        }
        #expect(abs(stamps[499] - 499 * Self.frame) <= 20_000_000)
    }

    /// A sink latency change of 200 ms (a player started or stopped) is
    /// followed by at most 1 ms a frame, never by a jump.
    @Test func aLatencyChangeIsFollowedSlowly() {
        var timeline = CaptureTimeline(frameNanoseconds: Self.frame)
        var previous = timeline.stamp(observed: 0)
        var last: Int64 = 0
        for index in 1..<400 {
            let observed = Int64(index) * Self.frame + (index >= 100 ? 200_000_000 : 0)
            last = timeline.stamp(observed: observed)
            #expect(abs(last - previous - Self.frame) <= 1_000_000)
            previous = last
        }
        #expect(last == 399 * Self.frame + 200_000_000, "caught up within 200 frames")
    }

    /// A source that stopped delivering for two seconds restarts the timeline.
    @Test func aBreakRestartsTheTimeline() {
        var timeline = CaptureTimeline(frameNanoseconds: Self.frame)
        for index in 0..<10 { _ = timeline.stamp(observed: Int64(index) * Self.frame) }
        #expect(timeline.stamp(observed: 2_000_000_000) == 2_000_000_000)
        #expect(timeline.stamp(observed: 2_020_000_000) == 2_020_000_000)
    }

    /// The receiver's clock keeps packets back to back while the sender's
    /// capture instants drift either way by under 100 ms, and jumps for a pause.
    @Test func theSampleClockSlewsForDriftAndJumpsForAPause() {
        var clock = SampleClock(rate: 48_000)
        var previous = clock.time(rtp: 0, captured: 0)
        // The capture clock runs 2% fast for 100 packets (40 ms ahead), then
        // 2% slow for 200 packets (40 ms behind): never a hole or an overlap
        // over 1 ms.
        var captured: Int64 = 0
        for index in 1...300 {
            captured += index <= 100 ? 20_400 : 19_600
            let time = clock.time(rtp: UInt32(index * 960), captured: captured)
            #expect(abs(time - previous - 20_000) <= 1_000, "packet \(index)")
            previous = time
        }
        #expect(abs(previous - captured) <= 21_000, "within the 20 ms dead band and 1 ms of slew")
        // A 3 s pause: the sample clock stood still, the capture clock did not.
        let resumed = clock.time(rtp: 301 * 960, captured: captured + 3_000_000)
        #expect(resumed == captured + 3_000_000)
    }
}
