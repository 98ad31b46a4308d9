import Foundation
import ShareColor
import ShareDecode
import ShareVideo
import Testing
import TestSupport

/// A grey picture with a white square at (`x`, `y`).
private func square(x: Int, y: Int, width: Int = 320, height: Int = 240) -> I420Image {
    var pixels = [UInt8](repeating: 0x60, count: width * height * 4)
    for row in y..<(y + 32) {
        for column in x..<(x + 32) {
            let i = (row * width + column) * 4
            pixels[i] = 0xFF; pixels[i + 1] = 0xFF; pixels[i + 2] = 0xFF
        }
    }
    return ColorConversion.i420(fromBGRA: pixels, width: width, height: height)
}

@Suite("x264 told which macroblocks did not change", .busy)
struct UnchangedMacroblockTests {
    /// A still picture, then the square moves. Told where it was and where
    /// it is, x264 codes those macroblocks and the decoded picture follows;
    /// told (falsely) that nothing changed, it skips every macroblock (each
    /// is as good in the picture before) and the old square stays: the
    /// flags reach x264 and are acted on.
    @Test func macroblocksOutsideTheChangesAreSkipped() throws {
        for truthful in [true, false] {
            let encoder = try H264Encoder(.init(width: 320, height: 240, fps: 30, bitrateKbps: 1000))
            let decoder = try H264Decoder()
            var au: [UInt8] = []
            var sizes: [Int] = []
            for n in 0..<26 {
                // Still for twenty pictures (the quality settles), then moved.
                let moved = n >= 20
                var image = square(x: moved ? 200 : 48, y: moved ? 160 : 48)
                let changes = n == 20 ? [Rectangle(x: 48, y: 48, width: 32, height: 32),
                                         Rectangle(x: 200, y: 160, width: 32, height: 32)] : []
                let told = n == 0 ? nil : (truthful ? changes : [])
                let info = try image.withPlanes { planes in try encoder.encode(planes, changes: told, into: &au) }
                sizes.append(info?.size ?? 0)
                _ = decoder.decode(au)
            }
            let picture = try #require(decoder.lastPicture())
            if truthful {
                #expect(picture.luma(x: 216, y: 176) > 200 && picture.luma(x: 64, y: 64) < 120, "the square where it is now")
            } else {
                #expect(picture.luma(x: 216, y: 176) < 120 && picture.luma(x: 64, y: 64) > 200, "skipped: the old square stays")
            }
            // Still pictures with every macroblock constant are next to nothing.
            #expect(sizes[21...].allSatisfy { $0 < 64 }, "\(sizes)")
        }
    }

    @Test func flagsCoverEveryMacroblockAChangeTouches() {
        let flags = H264Encoder.constantMacroblocks(width: 100, height: 50, except: [Rectangle(x: 15, y: 0, width: 2, height: 1),
                                                                                   Rectangle(x: 90, y: 40, width: 50, height: 50)])
        defer { free(flags) }
        let columns = 7  // 100 pixels: 7 macroblocks, the last partly outside
        let changed = (0..<(columns * 4)).filter { flags[$0] == 0 }.map { ($0 % columns, $0 / columns) }
        #expect(changed.map { "\($0.0),\($0.1)" } == ["0,0", "1,0", "5,2", "6,2", "5,3", "6,3"])
    }
}
