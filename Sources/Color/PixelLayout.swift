internal import CYUV

/// How a display stores a pixel in 32 bits, from its visual's colour masks.
/// Everything downstream of capture (conversion to I420, the drawn pointer)
/// and the receiver's window speak `bgrx` (libyuv's "ARGB": blue in the
/// lowest byte); a band of another layout is rewritten in place on its way
/// in or out.
public enum PixelLayout: Sendable, Equatable, CustomStringConvertible {
    /// 8 bits a channel, red 0xff0000, green 0xff00, blue 0xff: nearly every display.
    case bgrx
    /// 8 bits a channel, red 0xff, blue 0xff0000.
    case rgbx
    /// 10 bits a channel (depth 30), red 0x3ff00000, green 0xffc00, blue 0x3ff.
    case bgr10
    /// 10 bits a channel, red 0x3ff, blue 0x3ff00000.
    case rgb10

    /// The layout of a 32-bit visual with these masks; nil for any other.
    public init?(red: UInt32, green: UInt32, blue: UInt32) {
        switch (red, green, blue) {
        case (0xff0000, 0xff00, 0xff): self = .bgrx
        case (0xff, 0xff00, 0xff0000): self = .rgbx
        case (0x3ff0_0000, 0xffc00, 0x3ff): self = .bgr10
        case (0x3ff, 0xffc00, 0x3ff0_0000): self = .rgb10
        default: return nil
        }
    }

    /// The pixel value of a 0xRRGGBB colour on a display of this layout
    /// (what X drawing requests take as a foreground): 8-bit channels
    /// widened to 10 bits by repeating their top bits, as libyuv does.
    public func pixel(rgb: UInt32) -> UInt32 {
        let (r, g, b) = (rgb >> 16 & 0xff, rgb >> 8 & 0xff, rgb & 0xff)
        func wide(_ c: UInt32) -> UInt32 { c << 2 | c >> 6 }
        switch self {
        case .bgrx: return r << 16 | g << 8 | b
        case .rgbx: return b << 16 | g << 8 | r
        case .bgr10: return wide(r) << 20 | wide(g) << 10 | wide(b)
        case .rgb10: return wide(b) << 20 | wide(g) << 10 | wide(r)
        }
    }

    public var description: String {
        switch self {
        case .bgrx: "8-bit BGRX"
        case .rgbx: "8-bit RGBX"
        case .bgr10: "10-bit x2R10G10B10"
        case .rgb10: "10-bit x2B10G10R10"
        }
    }
}

extension ColorConversion {
    /// Rewrites `rows` rows of `width` pixels (`stride` bytes apart) from
    /// `layout` to BGRX, in place (each pixel keeps its 4 bytes; 10-bit
    /// channels keep their top 8 bits).
    package static func toBGRX(_ pixels: UnsafeMutableRawPointer, stride: Int, width: Int, rows: Int, from layout: PixelLayout) {
        let p = pixels.assumingMemoryBound(to: UInt8.self)
        let (s, w, h) = (Int32(stride), Int32(width), Int32(rows))
        switch layout {
        case .bgrx: return
        case .rgbx: _ = ABGRToARGB(p, s, p, s, w, h)
        case .bgr10: _ = AR30ToARGB(p, s, p, s, w, h)
        case .rgb10: _ = AR30ToABGR(p, s, p, s, w, h)  // libyuv's AB30ToARGB is this, by a macro
        }
    }

    /// Rewrites BGRX rows to `layout`, in place (the receiver's window on
    /// such a display); the reverse of `toBGRX`.
    package static func fromBGRX(_ pixels: UnsafeMutableRawPointer, stride: Int, width: Int, rows: Int, to layout: PixelLayout) {
        let p = pixels.assumingMemoryBound(to: UInt8.self)
        let (s, w, h) = (Int32(stride), Int32(width), Int32(rows))
        switch layout {
        case .bgrx: return
        case .rgbx: _ = ARGBToABGR(p, s, p, s, w, h)
        case .bgr10: _ = ARGBToAR30(p, s, p, s, w, h)
        case .rgb10: _ = ABGRToAR30(p, s, p, s, w, h)  // libyuv's ARGBToAB30 is this, by a macro
        }
    }
}
