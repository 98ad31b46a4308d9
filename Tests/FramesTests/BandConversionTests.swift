import ShareColor
import ShareFrames
import Testing

/// A BGRX picture with detail everywhere (gradients and a pseudo-random
/// pattern), so that a band converted from the wrong rows shows.
private func picture(width: Int, height: Int) -> [UInt8] {
    var pixels = [UInt8](repeating: 0, count: width * height * 4)
    var state: UInt32 = 0x1234_5678
    for y in 0..<height {
        for x in 0..<width {
            state = state &* 1_664_525 &+ 1_013_904_223
            let i = (y * width + x) * 4
            pixels[i] = UInt8(truncatingIfNeeded: x * 255 / max(1, width - 1)) ^ UInt8(truncatingIfNeeded: state >> 28)
            pixels[i + 1] = UInt8(truncatingIfNeeded: y * 255 / max(1, height - 1))
            pixels[i + 2] = UInt8(truncatingIfNeeded: state >> 24)
            pixels[i + 3] = 0xFF
        }
    }
    return pixels
}

/// The whole picture converted (and scaled) in one go: the reference.
private func whole(_ pixels: [UInt8], width: Int, height: Int, to outWidth: Int, _ outHeight: Int) -> I420Image {
    guard outWidth != width || outHeight != height else {
        return ColorConversion.i420(fromBGRA: pixels, width: width, height: height)
    }
    var scaled = [UInt8](repeating: 0, count: outWidth * outHeight * 4)
    pixels.withUnsafeBytes { source in
        scaled.withUnsafeMutableBytes { out in
            ColorConversion.scaleBGRA(source.baseAddress!, stride: width * 4, width: width, height: height,
                                      to: out.baseAddress!, outWidth: outWidth, outHeight: outHeight)
        }
    }
    return ColorConversion.i420(fromBGRA: scaled, width: outWidth, height: outHeight)
}

@Suite("Capture in bands: geometry, and the same picture as converting it whole")
struct BandConversionTests {
    static let sizes: [(source: (Int, Int), picture: (Int, Int))] = [
        ((640, 360), (640, 360)), ((3840, 2160), (1920, 1080)), ((3840, 2160), (1280, 720)), ((1920, 1080), (1280, 720)),
        ((2560, 1440), (1920, 1080)), ((1366, 768), (1280, 720)), ((301, 201), (300, 200)), ((200, 100), (640, 320)),
        ((1920, 1080), (960, 540)), ((1920, 1080), (640, 360)),
    ]

    @Test(arguments: [1 << 16, 1 << 18, 1 << 20])
    func bandsCoverThePictureInEvenRowsFromWhatTheyNeed(bandBytes: Int) {
        for (source, picture) in Self.sizes {
            let plan = BandPlan(sourceWidth: source.0, sourceHeight: source.1, width: picture.0, height: picture.1,
                                bandBytes: bandBytes)
            var next = 0
            for band in plan.bands {
                #expect(band.rows.lowerBound == next && !band.rows.isEmpty, "\(source) -> \(picture)")
                #expect(band.rows.lowerBound % 2 == 0)
                #expect(band.sourceRows.lowerBound >= 0 && band.sourceRows.upperBound <= source.1)
                next = band.rows.upperBound
                if !plan.scales { #expect(band.sourceRows == band.rows) }
                // A band's captured rows stay near the budget (two rows at
                // least, and the filter's neighbours when scaling).
                #expect(band.sourceRows.count * source.0 * 4 <= max(bandBytes, 2 * source.0 * 4) + 4 * source.0 * 4 * max(1, source.1 / picture.1),
                        "\(source) -> \(picture): \(band)")
            }
            #expect(next == picture.1)
        }
        let plan = BandPlan(sourceWidth: 3840, sourceHeight: 2160, width: 1920, height: 1080, bandBytes: 1 << 20)
        #expect(plan.maxSourceRows * 3840 * 4 < (1 << 20) + 4 * 3840 * 4, "a 4K band is about a MiB")
        #expect(plan.bands(touching: [0..<1]) == [0])
        #expect(plan.bands(touching: [2150..<2160]) == [plan.bands.count - 1])
        #expect(plan.bands(touching: []).isEmpty)
    }

    /// Each band is converted from a buffer of its own rows only, with rows
    /// of another colour around it: a band that read past its rows would
    /// differ from the reference.
    @Test func bandByBandIsTheWholePictureByteForByte() {
        for (source, size) in Self.sizes {
            let (width, height) = source
            let pixels = picture(width: width, height: height)
            let reference = whole(pixels, width: width, height: height, to: size.0, size.1)
            let plan = BandPlan(sourceWidth: width, sourceHeight: height, width: size.0, height: size.1, bandBytes: 1 << 16)
            var banded = I420Image(width: size.0, height: size.1)
            let scaled = HeapBuffer(size: (plan.bands.map(\.rows.count).max() ?? 0) * size.0 * 4)
            let stride = width * 4
            let guardRows = 8
            for band in plan.bands {
                var buffer = [UInt8](repeating: 0x5A, count: (band.sourceRows.count + 2 * guardRows) * stride)
                for (n, row) in band.sourceRows.enumerated() {
                    buffer.replaceSubrange((guardRows + n) * stride..<(guardRows + n + 1) * stride,
                                           with: pixels[row * stride..<(row + 1) * stride])
                }
                buffer.withUnsafeBytes { raw in
                    banded.withPlanes { planes in
                        ColorConversion.convertBand(raw.baseAddress! + guardRows * stride, stride: stride, sourceWidth: width,
                                                    sourceHeight: height, sourceRows: band.sourceRows, into: planes,
                                                    rows: band.rows, scaled: scaled.address)
                    }
                }
            }
            let differing = zip(banded.storage, reference.storage).filter { $0 != $1 }.count
            #expect(differing == 0, "\(source) -> \(size): \(differing) bytes differ over \(plan.bands.count) bands")
        }
    }
}

/// Displays that store a pixel otherwise than BGRX: the layout read from
/// the visual's masks, and bands rewritten in place both ways.
@Suite struct PixelLayoutTests {
    @Test func theVisualsMasksNameTheLayout() {
        #expect(PixelLayout(red: 0xff0000, green: 0xff00, blue: 0xff) == .bgrx)
        #expect(PixelLayout(red: 0xff, green: 0xff00, blue: 0xff0000) == .rgbx)
        #expect(PixelLayout(red: 0x3ff0_0000, green: 0xffc00, blue: 0x3ff) == .bgr10)
        #expect(PixelLayout(red: 0x3ff, green: 0xffc00, blue: 0x3ff0_0000) == .rgb10)
        #expect(PixelLayout(red: 0xf800, green: 0x7e0, blue: 0x1f) == nil, "16-bit 5:6:5")
    }

    /// Orange (#ff8000) as each display stores it: 10-bit channels repeat
    /// their top bits (0x80 -> 0x202), the two unused bits are set.
    @Test(arguments: [(PixelLayout.bgrx, UInt32(0xffff_8000)), (.rgbx, 0xff00_80ff), (.bgr10, 0xfff8_0800),
                      (.rgb10, 0xc008_0bff)])
    func orangeInEachLayout(layout: PixelLayout, stored: UInt32) {
        var pixel: [UInt32] = [0xffff_8000]
        pixel.withUnsafeMutableBytes { ColorConversion.fromBGRX($0.baseAddress!, stride: 4, width: 1, rows: 1, to: layout) }
        #expect(pixel[0] == stored, "\(layout): \(String(pixel[0], radix: 16))")
        pixel.withUnsafeMutableBytes { ColorConversion.toBGRX($0.baseAddress!, stride: 4, width: 1, rows: 1, from: layout) }
        #expect(pixel[0] == 0xffff_8000, "\(layout) back: \(String(pixel[0], radix: 16))")
        // What X drawing takes for it: the same, without the unused bits.
        let unused: UInt32 = layout == .bgrx || layout == .rgbx ? 0xff00_0000 : 0xc000_0000
        #expect(layout.pixel(rgb: 0xff8000) | unused == stored)
    }

    /// In place, at widths that leave SIMD remainders, with padded rows:
    /// out and back gives every 8-bit pixel again, the padding untouched.
    @Test(arguments: [PixelLayout.rgbx, .bgr10, .rgb10])
    func bandsRoundTripInPlace(layout: PixelLayout) {
        for width in [1, 3, 7, 16, 33, 1281] {
            let rows = 3
            let stride = width * 4 + 12
            let pixels = picture(width: stride / 4, height: rows)
            var band = pixels
            band.withUnsafeMutableBytes { raw in
                ColorConversion.fromBGRX(raw.baseAddress!, stride: stride, width: width, rows: rows, to: layout)
            }
            #expect(band != pixels, "\(layout) at \(width): rewritten")
            band.withUnsafeMutableBytes { raw in
                ColorConversion.toBGRX(raw.baseAddress!, stride: stride, width: width, rows: rows, from: layout)
            }
            #expect(band == pixels, "\(layout) at \(width): the same pixels back, padding untouched")
        }
    }
}
