import Foundation
import ShareColor
import ShareDecode
import ShareVideo
import TestSupport
import Testing

/// Pictures in every layout and depth x264 writes, as ffmpeg and GStreamer
/// send them by default (a screen grabbed as RGB becomes 4:4:4; GStreamer's
/// test source 10-bit 4:4:4 in BT.709), decoded and shown in their own colours.
@Suite("Decoded pictures in any H.264 format, shown in their colours", .busy)
struct PictureFormatTests {
    /// Three colours (R, G, B): orange top left, blue top right, green below.
    static let colours: [(x: Int, y: Int, rgb: (Int, Int, Int))] = [
        (32, 32, (0xFF, 0x80, 0x00)), (96, 32, (0x20, 0x40, 0xC0)), (64, 96, (0x20, 0xC0, 0x40)),
    ]

    /// One picture of the three colours, encoded by ffmpeg's libx264 (or
    /// `encoder`) from RGB through `convert` (a scale and format filter), as
    /// an Annex B access unit.
    static func encoded(_ convert: String, encoder: String = "libx264", tags: [String] = []) throws -> [UInt8] {
        let dir = try TemporaryDirectory()
        let out = dir.path("picture.h264")
        let sources = "color=c=0xFF8000:s=64x64,format=rgb24[a];color=c=0x2040C0:s=64x64,format=rgb24[b];"
            + "color=c=0x20C040:s=128x64,format=rgb24[c];[a][b]hstack[t];[t][c]vstack,\(convert)"
        let result = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", sources, "-frames:v", "1", "-c:v", encoder,
                                         "-preset", "ultrafast", "-qp", "4"] + tags + ["-f", "h264", "-y", out])
        guard result.status == 0 else { throw TestEnvironmentError("ffmpeg: \(result.stderr)") }
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    /// The decoded picture as BGRA, and as I420 converted to BGRA.
    static func decoded(_ unit: [UInt8]) throws -> (shown: [UInt8], i420: [UInt8], colors: ColorSpace, layout: PlanarPicture.Layout) {
        let decoder = try H264Decoder()
        let picture = try #require(decoder.decode(unit))
        #expect(picture.width == 128 && picture.height == 128)
        #expect(decoder.unshownFormat == nil)
        var shown = [UInt8](repeating: 0, count: 128 * 128 * 4)
        let facts = try #require(decoder.withLastPicture { picture in
            shown.withUnsafeMutableBytes { picture.convertToBGRA(into: $0.baseAddress!, stride: 128 * 4) }
            return (picture.colors, picture.layout)
        })
        var i420 = [UInt8](repeating: 0, count: 128 * 128 * 4)
        let i420Colors = try #require(decoder.withLastI420 { y, ys, u, us, v, vs, width, height, colors in
            i420.withUnsafeMutableBytes { raw in
                ColorConversion.convertI420(y: y, yStride: ys, u: u, uStride: us, v: v, vStride: vs, width: width,
                                            height: height, colors: colors, to: raw.baseAddress!, stride: width * 4)
            }
            return colors
        })
        // The owned copy is the same picture as the one lent.
        let copy = try #require(decoder.lastPicture())
        #expect(copy.width == 128 && copy.height == 128)
        return (shown, i420, i420Colors, facts.1)
    }

    /// Whether each colour's middle reads within `tolerance` of what was sent
    /// (as grey, by BT.601 luma, when `grey`).
    static func expectColours(_ pixels: [UInt8], tolerance: Int, grey: Bool = false, _ what: String) {
        for (x, y, rgb) in colours {
            var want = rgb
            if grey {
                let luma = Int((0.299 * Double(rgb.0) + 0.587 * Double(rgb.1) + 0.114 * Double(rgb.2)).rounded())
                want = (luma, luma, luma)
            }
            let i = (y * 128 + x) * 4
            let got = (Int(pixels[i + 2]), Int(pixels[i + 1]), Int(pixels[i]))
            let off = max(abs(got.0 - want.0), abs(got.1 - want.1), abs(got.2 - want.2))
            #expect(off <= tolerance, "\(what) at (\(x), \(y)): \(got), sent \(want)")
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let convert: String
        var encoder = "libx264"
        var tags: [String] = []
        let layout: PlanarPicture.Layout
        let colors: ColorSpace
        var grey = false
        /// How far a channel may read from what was sent: 6 through 8-bit
        /// planes; 12 where BT.709 is shown, whose blue coefficient (2.112)
        /// libyuv caps at 2.0 in its fixed point: a saturated blue reads up
        /// to 0.112 x 112 = 12.5 levels short.
        var tolerance = 6
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "4:2:0, untagged (BT.601)", convert: "format=yuv420p", layout: .yuv420, colors: .bt601),
        Case(name: "4:4:4, untagged: ffmpeg's default from a screen", convert: "format=yuv444p", layout: .yuv444,
             colors: .bt601),
        Case(name: "4:2:2", convert: "format=yuv422p", layout: .yuv422, colors: .bt601),
        Case(name: "4:2:0 BT.709", convert: "scale=out_color_matrix=bt709,format=yuv420p", tags: ["-colorspace", "bt709"],
             layout: .yuv420, colors: ColorSpace(matrix: .bt709, fullRange: false), tolerance: 12),
        Case(name: "4:2:0 full range", convert: "scale=out_range=full,format=yuvj420p", tags: ["-color_range", "pc"],
             layout: .yuv420, colors: ColorSpace(matrix: .bt601, fullRange: true)),
        Case(name: "4:2:0 BT.709 full range", convert: "scale=out_color_matrix=bt709:out_range=full,format=yuv420p",
             tags: ["-colorspace", "bt709", "-color_range", "pc"], layout: .yuv420,
             colors: ColorSpace(matrix: .bt709, fullRange: true), tolerance: 12),
        Case(name: "4:2:0 10-bit", convert: "format=yuv420p10le", layout: .yuv420, colors: .bt601),
        Case(name: "4:4:4 10-bit BT.709: GStreamer's x264enc from its test source",
             convert: "scale=out_color_matrix=bt709,format=yuv444p10le", tags: ["-colorspace", "bt709"], layout: .yuv444,
             colors: ColorSpace(matrix: .bt709, fullRange: false), tolerance: 12),
        Case(name: "4:2:2 10-bit", convert: "format=yuv422p10le", layout: .yuv422, colors: .bt601),
        // Monochrome (x264's 4:0:0): libavcodec hands it over as 4:2:0 with
        // neutral chroma. ffmpeg's grey is full range, so it is tagged so.
        Case(name: "luma alone", convert: "format=gray", tags: ["-color_range", "pc"], layout: .yuv420,
             colors: ColorSpace(matrix: .bt601, fullRange: true), grey: true),
        Case(name: "luma alone, 10-bit", convert: "format=gray10le", tags: ["-color_range", "pc"], layout: .yuv420,
             colors: ColorSpace(matrix: .bt601, fullRange: true), grey: true),
        Case(name: "planar RGB (libx264rgb)", convert: "format=bgr24", encoder: "libx264rgb", layout: .gbr, colors: .bt601),
    ]

    @Test(arguments: cases)
    func isShownInItsColours(_ c: Case) throws {
        let unit = try Self.encoded(c.convert, encoder: c.encoder, tags: c.tags)
        let (shown, i420, i420Colors, layout) = try Self.decoded(unit)
        #expect(layout == c.layout)
        Self.expectColours(shown, tolerance: c.tolerance, grey: c.grey, "shown")
        // An embedder's I420, converted with the colour space it is told.
        #expect(i420Colors == (c.layout == .gbr ? .bt601 : c.colors))
        Self.expectColours(i420, tolerance: c.tolerance + 2, grey: c.grey, "I420")
    }

    /// The colour space the decoder reads for each case is the one it was
    /// tagged with (planar RGB has none to read).
    @Test(arguments: cases.filter { $0.layout != .gbr })
    func readsTheColourSpaceTheStreamSays(_ c: Case) throws {
        let decoder = try H264Decoder()
        _ = try #require(decoder.decode(try Self.encoded(c.convert, encoder: c.encoder, tags: c.tags)))
        #expect(decoder.withLastPicture { $0.colors } == c.colors)
    }

    /// Luma alone and planar RGB, from planes made here: grey shown grey at
    /// the range it is in, and the G, B, R planes in their places.
    @Test func lumaAloneAndPlanarRGBAreShownFromTheirPlanes() {
        let (width, height) = (8, 4)
        var first = [UInt8](repeating: 126, count: width * height)  // video range: 128 after expansion
        var second = [UInt8](repeating: 0x40, count: width * height)
        var third = [UInt8](repeating: 0xFF, count: width * height)
        var out = [UInt8](repeating: 0, count: width * height * 4)
        first.withUnsafeMutableBufferPointer { a in
            second.withUnsafeMutableBufferPointer { b in
                third.withUnsafeMutableBufferPointer { c in
                    let grey = PlanarPicture(layout: .gray, width: width, height: height, colors: .bt601,
                                             planes: (UnsafePointer(a.baseAddress!), nil, nil), strides: (width, 0, 0))
                    out.withUnsafeMutableBytes { grey.convertToBGRA(into: $0.baseAddress!, stride: width * 4) }
                    #expect(abs(Int(out[0]) - 128) <= 2 && out[0] == out[1] && out[1] == out[2] && out[3] == 255, "\(out[0..<4])")
                    // G = 126, B = 0x40, R = 0xFF.
                    let rgb = PlanarPicture(layout: .gbr, width: width, height: height, colors: .bt601,
                                            planes: (UnsafePointer(a.baseAddress!), UnsafePointer(b.baseAddress!),
                                                     UnsafePointer(c.baseAddress!)), strides: (width, width, width))
                    out.withUnsafeMutableBytes { rgb.convertToBGRA(into: $0.baseAddress!, stride: width * 4) }
                    #expect(Array(out[0..<4]) == [0x40, 126, 0xFF, 255])
                }
            }
        }
    }

    /// Formats no H.264 picture comes in are refused, not misread.
    @Test func formatsThatAreNotPlanarYUVOrRGBAreNotShown() {
        for name in ["nv12", "yuv440p", "rgba", "yuva420p", "p010le", "no such format"] {
            #expect(PictureFormat(named: name) == nil, "\(name)")
        }
        #expect(PictureFormat(named: "yuv444p")?.layout == .yuv444)
        #expect(PictureFormat(named: "yuvj422p")?.layout == .yuv422)
        #expect(PictureFormat(named: "gbrp10le")?.layout == .gbr)
        #expect(PictureFormat(named: "gray12le")?.depth == 12)
        #expect(PictureFormat(named: "yuv420p10le")?.depth == 10)
    }

    /// share's own pictures say what they are (BT.601 matrix, video range),
    /// so no receiver guesses BT.709 from their size.
    @Test func shareSaysItsColourSpace() throws {
        let encoder = try H264Encoder(.init(width: 1280, height: 720, fps: 30, bitrateKbps: 2000))
        var unit: [UInt8] = []
        let image = ColorConversion.i420(fromBGRA: testPicture(width: 1280, height: 720, offset: 0), width: 1280, height: 720)
        _ = try #require(try encoder.encode(image, forceKeyframe: true, into: &unit))
        let dir = try TemporaryDirectory()
        let path = dir.path("share.h264")
        try Data(unit).write(to: URL(fileURLWithPath: path))
        let probe = try run("ffprobe", ["-v", "error", "-show_entries", "stream=color_space,color_range,color_primaries,color_transfer",
                                        "-of", "default=noprint_wrappers=1", path])
        #expect(probe.stdout.contains("color_space=smpte170m") && probe.stdout.contains("color_range=tv")
                && probe.stdout.contains("color_primaries=bt709") && probe.stdout.contains("color_transfer=iec61966-2-1"),
                "\(probe.stdout)")
    }
}
