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
