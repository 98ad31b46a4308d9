internal import CYUV

/// How a picture's YUV samples map to colours: the matrix its sender
/// converted with and whether the samples span 0-255 or the video range
/// (16-235 for Y). A stream that says nothing is BT.601 video range: what
/// libyuv, ffmpeg's scaler and `share` itself convert screens with.
public struct ColorSpace: Sendable, Equatable, CustomStringConvertible {
    /// The YUV matrix.
    public enum Matrix: Sendable, Equatable {
        /// ITU-R BT.601 (SMPTE 170M, BT.470BG): standard definition, and
        /// what screens are converted with by libyuv and ffmpeg's scaler.
        case bt601
        /// ITU-R BT.709 (and SMPTE 240M, which is close to it): high definition.
        case bt709
        /// ITU-R BT.2020, non-constant or constant luminance.
        case bt2020
    }

    /// The YUV matrix.
    public var matrix: Matrix
    /// Whether samples span 0-255 (JPEG's range) instead of the video range.
    public var fullRange: Bool

    /// A colour space of `matrix`, over the full range or the video range.
    public init(matrix: Matrix, fullRange: Bool) {
        self.matrix = matrix
        self.fullRange = fullRange
    }

    /// BT.601, video range: what `share` sends, and what an untagged stream is taken for.
    public static let bt601 = ColorSpace(matrix: .bt601, fullRange: false)

    /// "BT.709, video range".
    public var description: String {
        let name = switch matrix {
        case .bt601: "BT.601"
        case .bt709: "BT.709"
        case .bt2020: "BT.2020"
        }
        return "\(name), \(fullRange ? "full" : "video") range"
    }

    /// libyuv's coefficients for converting to RGB.
    var constants: OpaquePointer {
        let index: Int32 = switch matrix {
        case .bt601: 0
        case .bt709: 1
        case .bt2020: 2
        }
        return share_yuv_constants(index, fullRange ? 1 : 0)
    }
}

/// A decoded picture's planes as the decoder holds them, 8 bits a sample:
/// YUV at 4:2:0, 4:2:2 or 4:4:4, luma alone, or planar RGB (H.264's 4:4:4
/// with the identity matrix, as ffmpeg's libx264rgb sends). Lent, not owned:
/// valid while the decoder lends it.
package struct PlanarPicture {
    /// How the planes divide the picture.
    package enum Layout: Sendable, Equatable {
        /// Y, then U and V at half width and half height.
        case yuv420
        /// Y, then U and V at half width, full height.
        case yuv422
        /// Y, U and V all at full size.
        case yuv444
        /// Y only: shown grey.
        case gray
        /// G, B and R planes at full size (libavcodec's order).
        case gbr
    }

    package let layout: Layout
    package let width: Int
    package let height: Int
    package let colors: ColorSpace
    private let planes: (UnsafePointer<UInt8>, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?)
    private let strides: (Int, Int, Int)

    /// Planes 1 and 2 are required unless `layout` is `.gray`.
    package init(layout: Layout, width: Int, height: Int, colors: ColorSpace,
                 planes: (UnsafePointer<UInt8>, UnsafePointer<UInt8>?, UnsafePointer<UInt8>?),
                 strides: (Int, Int, Int)) {
        precondition(layout == .gray || (planes.1 != nil && planes.2 != nil), "\(layout) needs three planes")
        self.layout = layout
        self.width = width
        self.height = height
        self.colors = colors
        self.planes = planes
        self.strides = strides
    }

    /// Lends a 4:2:0 picture's planes and strides (Y, U, V) to `body`.
    package func withPlanes<R>(_ body: (_ y: UnsafePointer<UInt8>, _ yStride: Int, _ u: UnsafePointer<UInt8>, _ uStride: Int,
                                        _ v: UnsafePointer<UInt8>, _ vStride: Int) -> R) -> R {
        precondition(layout == .yuv420, "the planes of a \(layout) picture as 4:2:0")
        return body(planes.0, strides.0, planes.1!, strides.1, planes.2!, strides.2)
    }

    /// Rows `band` of the picture, as a picture of their own (for 4:2:0,
    /// `band` starts on an even row: its chroma rows are half its rows).
    package func rows(_ band: Range<Int>) -> PlanarPicture {
        precondition(band.lowerBound >= 0 && band.upperBound <= height, "rows \(band) of a picture \(height) high")
        precondition(layout != .yuv420 || band.lowerBound % 2 == 0, "4:2:0 rows from an odd row")
        let chromaRow = layout == .yuv420 ? band.lowerBound / 2 : band.lowerBound
        return PlanarPicture(layout: layout, width: width, height: band.count, colors: colors,
                             planes: (planes.0 + band.lowerBound * strides.0, planes.1.map { $0 + chromaRow * strides.1 },
                                      planes.2.map { $0 + chromaRow * strides.2 }),
                             strides: strides)
    }

    /// Where the picture's first plane is: the same for two lendings of
    /// one decoded picture.
    package var firstPlane: UnsafeRawPointer { UnsafeRawPointer(planes.0) }

    /// The first plane's sample at (x, y): luma, or green for planar RGB
    /// (which for greys is the same).
    package func luma(x: Int, y row: Int) -> UInt8 { planes.0[row * strides.0 + x] }

    /// Converts to BGRA (alpha 255) into `pixels`, rows `stride` bytes apart,
    /// with the picture's own matrix and range; chroma is not subsampled
    /// on the way (a 4:4:4 picture keeps its sharp coloured edges).
    package func convertToBGRA(into pixels: UnsafeMutableRawPointer, stride: Int) {
        let out = pixels.assumingMemoryBound(to: UInt8.self)
        let (y, ys, w, h, constants) = (planes.0, Int32(strides.0), Int32(width), Int32(height), colors.constants)
        let (us, vs) = (Int32(strides.1), Int32(strides.2))
        switch layout {
        case .yuv420: _ = I420ToARGBMatrix(y, ys, planes.1!, us, planes.2!, vs, out, Int32(stride), constants, w, h)
        case .yuv422: _ = I422ToARGBMatrix(y, ys, planes.1!, us, planes.2!, vs, out, Int32(stride), constants, w, h)
        case .yuv444: _ = I444ToARGBMatrix(y, ys, planes.1!, us, planes.2!, vs, out, Int32(stride), constants, w, h)
        case .gray: _ = I400ToARGBMatrix(y, ys, out, Int32(stride), constants, w, h)
        case .gbr:
            // Planes G, B, R; no alpha plane: opaque.
            MergeARGBPlane(planes.2!, vs, y, ys, planes.1!, us, nil, 0, out, Int32(stride), w, h)
        }
    }

    /// Converts to 8-bit I420 (chroma averaged down where it has more) into
    /// the planes given, which hold `width` x `height` at their strides.
    /// Planar RGB goes through BGRA (`scratch`, grown as needed) and comes
    /// out BT.601 video range, the colour space `I420Colors` reports for it.
    package func convertToI420(y dy: UnsafeMutablePointer<UInt8>, yStride: Int, u du: UnsafeMutablePointer<UInt8>, uStride: Int,
                               v dv: UnsafeMutablePointer<UInt8>, vStride: Int, scratch: inout [UInt8]) {
        let (y, ys, w, h) = (planes.0, Int32(strides.0), Int32(width), Int32(height))
        let (us, vs) = (Int32(strides.1), Int32(strides.2))
        let (dys, dus, dvs) = (Int32(yStride), Int32(uStride), Int32(vStride))
        switch layout {
        case .yuv420: _ = I420Copy(y, ys, planes.1!, us, planes.2!, vs, dy, dys, du, dus, dv, dvs, w, h)
        case .yuv422: _ = I422ToI420(y, ys, planes.1!, us, planes.2!, vs, dy, dys, du, dus, dv, dvs, w, h)
        case .yuv444: _ = I444ToI420(y, ys, planes.1!, us, planes.2!, vs, dy, dys, du, dus, dv, dvs, w, h)
        case .gray: _ = I400ToI420(y, ys, dy, dys, du, dus, dv, dvs, w, h)
        case .gbr:
            let stride = width * 4
            if scratch.count < stride * height { scratch = [UInt8](repeating: 0, count: stride * height) }
            scratch.withUnsafeMutableBytes { raw in
                convertToBGRA(into: raw.baseAddress!, stride: stride)
                _ = ARGBToI420(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(stride),
                               dy, dys, du, dus, dv, dvs, w, h)
            }
        }
    }

    /// The colour space of what `convertToI420` gives.
    package var i420Colors: ColorSpace { layout == .gbr ? .bt601 : colors }
}

extension ColorConversion {
    /// Reduces a plane of `depth`-bit samples (9 to 16, in 16-bit words,
    /// `sourceStride` bytes a row) to 8 bits.
    package static func reduceTo8Bits(_ source: UnsafeRawPointer, sourceStride: Int, depth: Int,
                                      into destination: UnsafeMutablePointer<UInt8>, stride: Int, width: Int, height: Int) {
        precondition((9...16).contains(depth), "a \(depth)-bit plane")
        Convert16To8Plane(source.assumingMemoryBound(to: UInt16.self), Int32(sourceStride / 2), destination, Int32(stride),
                          Int32(1 << (24 - depth)), Int32(width), Int32(height))
    }
}
