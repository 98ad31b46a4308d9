import Foundation
import ShareColor
import ShareDecode
import ShareVideo
import ShareWire
import TestSupport
import Testing

@Suite("x264 → libavcodec round trip, libyuv, recorder", .busy)
struct CodecTests {
    @Test func colourConversionKeepsColours() {
        let image = ColorConversion.i420(fromBGRA: testPicture(width: 64, height: 64, offset: 0), width: 64, height: 64)
        let back = ColorConversion.bgra(of: image)
        // Top-left quadrant (x < 32, y < 32) is red (B=0, G=0, R=255); the bar covers x < 16.
        let i = (8 * 64 + 24) * 4
        #expect(back[i + 2] > 230 && back[i] < 30 && back[i + 1] < 30)
    }

    @Test func encodeDecodeRoundTrip() throws {
        let encoder = try H264Encoder(.init(width: 320, height: 240, fps: 30, bitrateKbps: 1000))
        let decoder = try H264Decoder()
        var au: [UInt8] = []
        var keyframes = 0
        var decoded = 0
        for n in 0..<30 {
            let image = ColorConversion.i420(fromBGRA: testPicture(width: 320, height: 240, offset: n * 4),
                                             width: 320, height: 240)
            let info = try #require(try encoder.encode(image, forceKeyframe: n == 20, into: &au))
            #expect(info.size == au.count)
            if info.isKeyframe { keyframes += 1 }
            // x264 emits SPS/PPS before each IDR (b_repeat_headers).
            let types = AnnexB.nalUnits(in: au).map { au[$0.lowerBound] & 0x1F }
            #expect(info.isKeyframe == types.contains(5))
            if info.isKeyframe { #expect(types.prefix(2) == [7, 8]) }
            if decoder.decode(au) != nil { decoded += 1 }
        }
        #expect(keyframes == 2)
        #expect(decoded == 30)
        #expect(decoder.errors == 0)
        let picture = try #require(decoder.lastPicture())
        #expect(picture.width == 320 && picture.height == 240)
        // Bottom-right quadrant white: high luma.
        #expect(picture.luma(x: 280, y: 200) > 200)
        #expect(encoder.parameterSets().map { $0[0] & 0x1F } == [7, 8])
    }

    /// x264 marks the start of each intra-refresh sweep with a recovery
    /// point SEI (payload type 6); `never` starts none, and neither sends
    /// an IDR after the first but when asked.
    @Test(arguments: [(20, [20, 40]), (H264Encoder.Configuration.never, [])])
    func sweepsStartEveryIntervalOrNever(interval: Int, sweepsAt: [Int]) throws {
        let encoder = try H264Encoder(.init(width: 160, height: 128, fps: 30, keyframeInterval: interval))
        var au: [UInt8] = []
        var recoveryPoints: [Int] = []
        var keyframes: [Int] = []
        for n in 0..<60 {
            let image = ColorConversion.i420(fromBGRA: testPicture(width: 160, height: 128, offset: n * 3), width: 160, height: 128)
            let info = try #require(try encoder.encode(image, into: &au))
            if info.isKeyframe { keyframes.append(n) }
            let seis = AnnexB.nalUnits(in: au).filter { au[$0.lowerBound] & 0x1F == 6 && $0.count > 1 }
            if seis.contains(where: { au[$0.lowerBound + 1] == 6 }) { recoveryPoints.append(n) }
        }
        #expect(keyframes == [0])
        #expect(recoveryPoints == sweepsAt)
    }

    @Test func decoderStartedMidStreamNeedsAKeyframeAndSaysSo() throws {
        let encoder = try H264Encoder(.init(width: 160, height: 120, fps: 30))
        var aus: [[UInt8]] = []
        var au: [UInt8] = []
        for n in 0..<5 {
            let image = ColorConversion.i420(fromBGRA: testPicture(width: 160, height: 120, offset: n), width: 160, height: 120)
            _ = try encoder.encode(image, into: &au)
            aus.append(au)
        }
        let decoder = try H264Decoder()
        #expect(decoder.decode(aus[3]) == nil)  // a P frame with no reference
        #expect(decoder.errors > 0)
    }

    @Test(arguments: ["mkv", "mp4"])
    func recordingPlaysAndKeepsEveryFrame(container: String) throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("out.\(container)")
        let encoder = try H264Encoder(.init(width: 320, height: 240, fps: 30))
        let recorder = try Recorder(path: path, width: 320, height: 240, parameterSets: encoder.parameterSets())
        var au: [UInt8] = []
        for n in 0..<45 {
            let image = ColorConversion.i420(fromBGRA: testPicture(width: 320, height: 240, offset: n), width: 320, height: 240)
            let info = try #require(try encoder.encode(image, into: &au))
            try recorder.write(accessUnit: au, timestamp90kHz: Int64(n) * 3000 + 4_294_960_000, isKeyframe: info.isKeyframe)
        }
        // Probe before finishing: every flushed frame must already play
        // (the newest is held until its duration is known).
        #expect(recorder.framesWritten == 44)
        let partial = try probeVideo(path)
        #expect(partial.videoFrames == recorder.framesWritten, "unfinished file: \(partial.errors)")
        try recorder.finish()
        let finished = try probeVideo(path)
        #expect(finished.videoFrames == 45)
        #expect(finished.codec == "h264" && finished.width == 320 && finished.height == 240)
    }

    @Test func recorderRejectsUnknownExtension() {
        #expect(throws: LibAVError.self) { try Recorder(path: "/tmp/x.avi", width: 16, height: 16, parameterSets: []) }
    }
}
