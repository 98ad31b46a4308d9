package import ShareColor
internal import CLibAV

/// What a decoded frame's pixel format means for showing it: how its planes
/// divide the picture and how deep its samples are. Nil for a format that is
/// not planar YUV or RGB at 4:2:0, 4:2:2, 4:4:4 or luma alone, 8 to 16 bits.
package struct PictureFormat {
    package let layout: PlanarPicture.Layout
    package let depth: Int
    /// Chroma planes' width and height divided by 2 to these powers.
    private let chromaShift: (x: Int, y: Int)
    /// A full-range ("J") YUV format.
    private let jpegRange: Bool

    /// The format libavutil calls `name` ("yuv444p10le").
    package init?(named name: String) {
        self.init(av_get_pix_fmt(name).rawValue)
    }

    init?(_ format: Int32) {
        guard format >= 0, let descriptor = av_pix_fmt_desc_get(AVPixelFormat(format)) else { return nil }
        let d = descriptor.pointee
        let flags = d.flags
        let depth = Int(d.comp.0.depth)
        let refused = UInt64(AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_ALPHA | AV_PIX_FMT_FLAG_PAL
                                 | AV_PIX_FMT_FLAG_BITSTREAM)
        // Each component alone in its own plane (not NV12's interleaved
        // chroma), all as deep, in the low bits of one or two bytes a sample.
        let components = [d.comp.0, d.comp.1, d.comp.2].prefix(Int(d.nb_components))
        guard flags & refused == 0, (8...16).contains(depth),
              Set(components.map(\.plane)).count == components.count,
              components.allSatisfy({ $0.depth == depth && $0.shift == 0 && $0.offset == 0 && $0.step == (depth > 8 ? 2 : 1) })
        else { return nil }
        let shift = (x: Int(d.log2_chroma_w), y: Int(d.log2_chroma_h))
        switch (Int(d.nb_components), flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0, shift.x, shift.y) {
        case (1, false, _, _): layout = .gray
        case (3, true, 0, 0): layout = .gbr
        case (3, false, 1, 1): layout = .yuv420
        case (3, false, 1, 0): layout = .yuv422
        case (3, false, 0, 0): layout = .yuv444
        default: return nil
        }
        self.depth = depth
        chromaShift = shift
        jpegRange = d.name.map { String(cString: $0).hasPrefix("yuvj") } ?? false
    }

    /// The chroma planes' size for a picture of `width` x `height`.
    func chromaSize(width: Int, height: Int) -> (width: Int, height: Int) {
        ((width + (1 << chromaShift.x) - 1) >> chromaShift.x, (height + (1 << chromaShift.y) - 1) >> chromaShift.y)
    }

    /// The matrix and range the frame says it is in (BT.601 video range
    /// when it says nothing).
    func colors(of frame: AVFrame) -> ColorSpace {
        let matrix: ColorSpace.Matrix = switch frame.colorspace {
        case AVCOL_SPC_BT709, AVCOL_SPC_SMPTE240M: .bt709
        case AVCOL_SPC_BT2020_NCL, AVCOL_SPC_BT2020_CL: .bt2020
        default: .bt601
        }
        return ColorSpace(matrix: matrix, fullRange: jpegRange || frame.color_range == AVCOL_RANGE_JPEG)
    }
}
