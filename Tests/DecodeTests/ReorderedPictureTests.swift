import Foundation
import ShareColor
@testable import ShareDecode
import ShareVideo
import ShareWire
import TestSupport
import Testing

/// Streams with B-frames (ffmpeg's libx264 without `-tune zerolatency`):
/// pictures are sent ahead of ones shown before them. The decoder takes
/// every unit, holds the first few and gives pictures in display order;
/// a recording keeps them in the order they were sent, with decode times.
@Suite("Pictures sent out of display order (B-frames)", .busy)
struct ReorderedPictureTests {
    /// ffmpeg's default libx264 (B-frames, pyramid) from its test source,
    /// split into access units at its delimiters.
    static func units(frames: Int) throws -> [[UInt8]] {
        let dir = try TemporaryDirectory()
        let out = dir.path("b.h264")
        let result = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                        "-frames:v", "\(frames)", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-g", "30",
                                        "-x264-params", "aud=1", "-f", "h264", "-y", out])
        guard result.status == 0 else { throw TestEnvironmentError("ffmpeg: \(result.stderr)") }
        return annexBAccessUnits([UInt8](try Data(contentsOf: URL(fileURLWithPath: out))))
    }

    @Test func everyUnitIsTakenAndPicturesComeOutInDisplayOrder() throws {
        let units = try Self.units(frames: 60)
        #expect(units.count == 60)
        let decoder = try H264Decoder()
        var shown: [UInt32] = []
        var held = 0
        for (n, unit) in units.enumerated() {
            // Each unit tagged with its place in the stream.
            let timestamp = UInt32(3000 * n)
            if let picture = decoder.decode(unit, timestamp: timestamp) {
                shown.append(try #require(picture.timestamp))
            } else {
                #expect(decoder.holding, "unit \(n) was taken, not refused")
                held += 1
            }
        }
        // Each unit's picture comes out once, two units late (x264's pyramid).
        #expect(decoder.errors == 0)
        #expect(decoder.reorderDepth == 2)
        #expect(held == 2 && shown.count == 58, "held \(held), shown \(shown.count)")
        #expect(Set(shown).count == shown.count)
    }

    /// Display order: each unit is tagged with the presentation time ffmpeg
    /// gives it (ffprobe, in the order the units are stored, which is not
    /// display order); the pictures must come out in rising presentation
    /// time (a decoder set for low delay gave them in stream order and
    /// dropped some).
    @Test func thePictureForEachTimestampIsTheOneFFmpegShowsThere() throws {
        let dir = try TemporaryDirectory()
        let out = dir.path("b.h264")
        _ = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "30",
                               "-pix_fmt", "yuv420p", "-c:v", "libx264", "-g", "30", "-x264-params", "aud=1", "-y",
                               dir.path("b.mkv")])
        let probe = try run("ffprobe", ["-v", "error", "-show_entries", "packet=pts", "-of", "csv=p=0", dir.path("b.mkv")])
        // Presentation times (ms) of the units in the order they are stored (decode order).
        let presentation = probe.stdout.split(separator: "\n").compactMap { Int($0) }
        #expect(presentation.count == 30)
        _ = try run("ffmpeg", ["-v", "error", "-i", dir.path("b.mkv"), "-c", "copy", "-f", "h264", "-y", out])
        let units = annexBAccessUnits([UInt8](try Data(contentsOf: URL(fileURLWithPath: out))))
        #expect(units.count == presentation.count)
        let decoder = try H264Decoder()
        var shownTimes: [Int] = []
        for (unit, time) in zip(units, presentation) {
            if let picture = decoder.decode(unit, timestamp: UInt32(time)) { shownTimes.append(Int(picture.timestamp!)) }
        }
        #expect(presentation != presentation.sorted(), "the stream is reordered")
        #expect(shownTimes == shownTimes.sorted() && shownTimes.count == 28, "\(shownTimes)")
        #expect(decoder.errors == 0)
    }

    /// libavcodec's reorder depth only grows: a receiver that showed a
    /// stream with B-frames and then a share sender's would hold each of the
    /// new sender's pictures two frames. Starting over forgets it.
    @Test func startingOverForgetsTheLastStreamsReordering() throws {
        let decoder = try H264Decoder()
        for unit in try Self.units(frames: 10) { _ = decoder.decode(unit) }
        #expect(decoder.reorderDepth == 2)
        decoder.startOver()
        #expect(decoder.reorderDepth == 0 && decoder.lastPicture() == nil)
        let encoder = try H264Encoder(.init(width: 320, height: 240, fps: 30, bitrateKbps: 500))
        var unit: [UInt8] = []
        for n in 0..<10 {
            let image = ColorConversion.i420(fromBGRA: testPicture(width: 320, height: 240, offset: n * 4), width: 320, height: 240)
            _ = try #require(try encoder.encode(image, forceKeyframe: n == 0, into: &unit))
            #expect(decoder.decode(unit) != nil, "picture \(n) comes out with its own unit")
        }
        #expect(decoder.errors == 0 && decoder.reorderDepth == 0)
    }

    @Test func decodeTimesRiseAndNeverFollowTheirPresentation() {
        // Display instants (in frames) in the order sent: one B-frame between
        // references (depth 1: I0 P2 B1 P4 B3 ...); x264's pyramid (depth 2:
        // I0 P3 B2 b1 P6 B5 b4 ...), also with a depth larger than needed.
        var single: [Int64] = [0]
        for group in stride(from: 2, through: 60, by: 2) { single += [Int64(group), Int64(group - 1)] }
        var pyramid: [Int64] = [0]
        for group in stride(from: 3, through: 60, by: 3) { pyramid += [Int64(group), Int64(group - 1), Int64(group - 2)] }
        for (depth, order) in [(1, single), (2, pyramid), (3, pyramid)] {
            var times = DecodeTimes(depth: depth)
            var last = Int64.min
            for (n, frame) in order.enumerated() {
                let pts = frame * 3000
                let dts = times.next(pts: pts, duration: 3000)
                #expect(dts > last && dts <= pts, "depth \(depth), unit \(n): dts \(dts), pts \(pts)")
                // Past the start, a frame apart: what MP4's sample durations need.
                if n > 0 { #expect(dts - last == 3000, "depth \(depth), unit \(n)") }
                last = dts
            }
        }
        // Without reordering, decode and presentation times are the same.
        var plain = DecodeTimes(depth: 0)
        #expect((0..<5).map { plain.next(pts: Int64($0) * 3000, duration: 3000) } == [0, 3000, 6000, 9000, 12000])
    }
}
