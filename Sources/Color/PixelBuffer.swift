internal import CYUV

/// A picture in someone else's memory, as a host hands it over: BGRA (X11's
/// and most renderers' 32-bit layout, alpha ignored), planar I420, or NV12
/// (a luma plane and an interleaved U/V plane, as cameras and hardware
/// decoders give it), each plane with its own stride in bytes. The pointers
/// are only read during the call they are given to.
public enum PixelBuffer {
    /// 32-bit pixels, bytes blue, green, red, alpha (ignored); rows `stride` bytes apart.
    case bgra(UnsafeRawPointer, stride: Int)
    /// Planar YUV 4:2:0 (BT.601, limited range): a full-size Y plane and
    /// half-size U and V planes, each with its own stride.
    case i420(y: UnsafePointer<UInt8>, yStride: Int, u: UnsafePointer<UInt8>, uStride: Int,
              v: UnsafePointer<UInt8>, vStride: Int)
    /// A full-size Y plane and a half-height plane of interleaved U and V pairs.
    case nv12(y: UnsafePointer<UInt8>, yStride: Int, uv: UnsafePointer<UInt8>, uvStride: Int)

    /// Whether each plane's stride holds a row of `width` pixels.
    package func fits(width: Int) -> Bool {
        switch self {
        case .bgra(_, let stride): stride >= width * 4
        case .i420(_, let ys, _, let us, _, let vs): ys >= width && us >= (width + 1) / 2 && vs >= (width + 1) / 2
        case .nv12(_, let ys, _, let uvs): ys >= width && uvs >= (width + 1) / 2 * 2
        }
    }
}

/// Brings pictures in any of `PixelBuffer`'s layouts to I420 at a given
/// size, with working memory of its own (for scaling), so converting
/// allocates nothing once sizes settle. One thread at a time.
public final class PixelConverter {
    private var bgra: [UInt8] = []
    private var planar = I420Image(width: 2, height: 2)

    public init() {}

    /// Converts `buffer` (`width` x `height`) into `image`, scaling to its size.
    @discardableResult
    public func convert(_ buffer: PixelBuffer, width: Int, height: Int, into image: inout I420Image) -> Bool {
        image.withPlanes { planes in convert(buffer, width: width, height: height, into: planes) }
    }

    /// Converts `buffer` (`width` x `height`) into `planes`, scaling when
    /// they are another size: BGRA is scaled before conversion (box
    /// filter), I420 and NV12 after (NV12 through I420 at its own size).
    /// False when the strides are too small for the width.
    @discardableResult
    package func convert(_ buffer: PixelBuffer, width: Int, height: Int, into planes: I420Planes) -> Bool {
        guard width > 0, height > 0, buffer.fits(width: width) else { return false }
        let same = planes.width == width && planes.height == height
        let (ys, cs) = (Int32(planes.lumaStride), Int32(planes.chromaStride))
        let (w, h) = (Int32(width), Int32(height))
        switch buffer {
        case .bgra(let pixels, let stride):
            let source = pixels.assumingMemoryBound(to: UInt8.self)
            if same {
                _ = ARGBToI420(source, Int32(stride), planes.y, ys, planes.u, cs, planes.v, cs, w, h)
            } else {
                let count = planes.width * planes.height * 4
                if bgra.count < count { bgra = [UInt8](repeating: 0, count: count) }
                bgra.withUnsafeMutableBufferPointer { scaled in
                    let out = scaled.baseAddress!
                    _ = ARGBScale(source, Int32(stride), w, h, out, Int32(planes.width * 4), Int32(planes.width),
                                  Int32(planes.height), kFilterBox)
                    _ = ARGBToI420(out, Int32(planes.width * 4), planes.y, ys, planes.u, cs, planes.v, cs,
                                   Int32(planes.width), Int32(planes.height))
                }
            }
        case .i420(let y, let yStride, let u, let uStride, let v, let vStride):
            if same {
                _ = I420Copy(y, Int32(yStride), u, Int32(uStride), v, Int32(vStride), planes.y, ys, planes.u, cs, planes.v, cs, w, h)
            } else {
                _ = I420Scale(y, Int32(yStride), u, Int32(uStride), v, Int32(vStride), w, h, planes.y, ys, planes.u, cs,
                              planes.v, cs, Int32(planes.width), Int32(planes.height), kFilterBox)
            }
        case .nv12(let y, let yStride, let uv, let uvStride):
            if same {
                _ = NV12ToI420(y, Int32(yStride), uv, Int32(uvStride), planes.y, ys, planes.u, cs, planes.v, cs, w, h)
            } else {
                if planar.width != width || planar.height != height { planar = I420Image(width: width, height: height) }
                let (pys, pcs) = (Int32(planar.lumaStride), Int32(planar.chromaStride))
                planar.withMutablePlanes { py, pu, pv in
                    _ = NV12ToI420(y, Int32(yStride), uv, Int32(uvStride), py, pys, pu, pcs, pv, pcs, w, h)
                    _ = I420Scale(py, pys, pu, pcs, pv, pcs, w, h, planes.y, ys, planes.u, cs, planes.v, cs,
                                  Int32(planes.width), Int32(planes.height), kFilterBox)
                }
            }
        }
        return true
    }
}
