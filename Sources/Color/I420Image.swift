internal import CYUV

/// An I420 (YUV 4:2:0 planar) picture in one owned buffer: the Y plane at
/// full size, then U and V at half width and height (rounded up).
public struct I420Image: Sendable {
    /// Pixels across.
    public let width: Int
    /// Pixels down.
    public let height: Int
    /// Y, U and V planes back to back.
    public private(set) var storage: [UInt8]

    /// A black-green (all zero) picture of `width` x `height`.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "an image needs a size")
        self.width = width
        self.height = height
        storage = [UInt8](repeating: 0, count: width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2))
    }

    /// A copy of planes held elsewhere (a decoder's), each with its own stride.
    package init(copying y: UnsafePointer<UInt8>, yStride: Int, u: UnsafePointer<UInt8>, uStride: Int,
                 v: UnsafePointer<UInt8>, vStride: Int, width: Int, height: Int) {
        self.init(width: width, height: height)
        let (chromaWidth, chromaRows, stride) = ((width + 1) / 2, (height + 1) / 2, chromaStride)
        withMutablePlanes { dy, du, dv in
            for row in 0..<height { (dy + row * width).update(from: y + row * yStride, count: width) }
            for row in 0..<chromaRows {
                (du + row * stride).update(from: u + row * uStride, count: chromaWidth)
                (dv + row * stride).update(from: v + row * vStride, count: chromaWidth)
            }
        }
    }

    /// Bytes from one Y row to the next (the width).
    public var lumaStride: Int { width }
    /// Bytes from one U or V row to the next (half the width, rounded up).
    public var chromaStride: Int { (width + 1) / 2 }
    /// Rows of the U and V planes (half the height, rounded up).
    public var chromaHeight: Int { (height + 1) / 2 }
    var uOffset: Int { width * height }
    var vOffset: Int { uOffset + chromaStride * chromaHeight }

    /// The Y value at (x, y), for tests and probes.
    public func luma(x: Int, y: Int) -> UInt8 { storage[y * width + x] }
    /// The (U, V) pair covering (x, y).
    public func chroma(x: Int, y: Int) -> (UInt8, UInt8) {
        let index = (y / 2) * chromaStride + x / 2
        return (storage[uOffset + index], storage[vOffset + index])
    }

    /// The three planes' base addresses and strides, lent for the duration of `body`.
    package mutating func withMutablePlanes<R>(
        _ body: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) throws -> R
    ) rethrows -> R {
        let u = uOffset
        let v = vOffset
        return try storage.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            return try body(base, base + u, base + v)
        }
    }

    package func withPlanes<R>(
        _ body: (UnsafePointer<UInt8>, UnsafePointer<UInt8>, UnsafePointer<UInt8>) throws -> R
    ) rethrows -> R {
        try storage.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            return try body(base, base + uOffset, base + vOffset)
        }
    }
}

/// Colour conversion and scaling through libyuv. "ARGB" in libyuv is
/// little-endian B, G, R, A in memory, which is X11's 32-bit ZPixmap layout.
public enum ColorConversion {
    /// Converts a BGRX/BGRA picture to I420 (BT.601 limited range), scaling
    /// with a bilinear filter when `image` is smaller than the source.
    public static func convertBGRA(_ pixels: UnsafeRawPointer, stride: Int, width: Int, height: Int,
                                    into image: inout I420Image, scratch: inout I420Image?) {
        if image.width == width && image.height == height {
            convertBGRA(pixels, stride: stride, into: &image)
            return
        }
        var full = scratch.flatMap { $0.width == width && $0.height == height ? $0 : nil }
            ?? I420Image(width: width, height: height)
        scratch = nil  // keep the buffer uniquely referenced while converting
        convertBGRA(pixels, stride: stride, into: &full)
        scale(full, into: &image)
        scratch = full
    }

    private static func convertBGRA(_ pixels: UnsafeRawPointer, stride: Int, into image: inout I420Image) {
        let source = pixels.assumingMemoryBound(to: UInt8.self)
        let (width, height, ys, cs) = (image.width, image.height, image.lumaStride, image.chromaStride)
        image.withMutablePlanes { y, u, v in
            _ = ARGBToI420(source, Int32(stride), y, Int32(ys), u, Int32(cs), v, Int32(cs), Int32(width), Int32(height))
        }
    }

    /// Scales `source` to `destination`'s size.
    public static func scale(_ source: I420Image, into destination: inout I420Image) {
        let (sw, sh, sys, scs) = (source.width, source.height, source.lumaStride, source.chromaStride)
        let (dw, dh, dys, dcs) = (destination.width, destination.height, destination.lumaStride,
                                  destination.chromaStride)
        source.withPlanes { sy, su, sv in
            destination.withMutablePlanes { dy, du, dv in
                _ = I420Scale(sy, Int32(sys), su, Int32(scs), sv, Int32(scs), Int32(sw), Int32(sh),
                              dy, Int32(dys), du, Int32(dcs), dv, Int32(dcs), Int32(dw), Int32(dh), kFilterBilinear)
            }
        }
    }

    /// Converts planar 4:2:0 to BGRA at `width` x `height` into `pixels`
    /// (stride in bytes), with the matrix and range of `colors`.
    package static func convertI420(y: UnsafePointer<UInt8>, yStride: Int, u: UnsafePointer<UInt8>, uStride: Int,
                                    v: UnsafePointer<UInt8>, vStride: Int, width: Int, height: Int,
                                    colors: ColorSpace = .bt601, to pixels: UnsafeMutableRawPointer, stride: Int) {
        _ = I420ToARGBMatrix(y, Int32(yStride), u, Int32(uStride), v, Int32(vStride),
                             pixels.assumingMemoryBound(to: UInt8.self), Int32(stride), colors.constants,
                             Int32(width), Int32(height))
    }

    /// BGRA pixels of `image` (for tests and the receiver window).
    public static func bgra(of image: I420Image) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: image.width * image.height * 4)
        image.withPlanes { y, u, v in
            out.withUnsafeMutableBytes { raw in
                convertI420(y: y, yStride: image.lumaStride, u: u, uStride: image.chromaStride, v: v,
                            vStride: image.chromaStride, width: image.width, height: image.height,
                            to: raw.baseAddress!, stride: image.width * 4)
            }
        }
        return out
    }

    /// An I420 image converted from BGRA bytes (for tests and file input).
    public static func i420(fromBGRA pixels: [UInt8], width: Int, height: Int) -> I420Image {
        precondition(pixels.count >= width * height * 4, "not enough pixels")
        var image = I420Image(width: width, height: height)
        var scratch: I420Image?
        pixels.withUnsafeBytes { raw in
            convertBGRA(raw.baseAddress!, stride: width * 4, width: width, height: height, into: &image,
                        scratch: &scratch)
        }
        return image
    }
}
