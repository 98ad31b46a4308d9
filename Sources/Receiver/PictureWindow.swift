internal import ShareColor
internal import ShareDecode
internal import ShareSession
internal import ShareWire
internal import ShareX11

/// The receiver's window: the newest decoded picture converted for X11,
/// with the sender's pointer drawn over it when the sender sends the pointer
/// as metadata (`--cursor metadata`). A pointer that moves over a still
/// picture is shown without converting the picture again. Decode thread only.
final class PictureWindow {
    private let window: VideoWindow
    /// The picture as converted (BGRX), without the pointer, while a pointer
    /// is drawn over it; and whether it holds the newest picture.
    private var pixels: [UInt8] = []
    private var pixelsCurrent = false
    private var size = (width: 0, height: 0)
    private var cursor: CursorOverlay?

    init(display: String?, width: Int, height: Int) throws(X11Error) {
        window = try VideoWindow(display: display, title: "share", width: width, height: height)
    }

    var closed: Bool { window.closed }
    /// Takes the window's events: closed, resized or exposed (the last
    /// picture is drawn again at once, a still sender's next may be a
    /// second away).
    func service() { window.pollEvents() }
    func setTitle(_ title: String) { window.setTitle(title) }

    /// Shows the decoder's newest picture. Without a pointer to draw over it,
    /// the picture is converted straight into what the X server reads (no
    /// copy of it is kept); with one, into `pixels`, kept clean for the
    /// pointer's next move.
    func show(_ decoder: H264Decoder) {
        guard cursor?.shape != nil else {
            decoder.withLastPicture { picture in
                let (width, height) = (picture.width, picture.height)
                window.show(width: width, height: height, stride: width * 4) { destination in
                    picture.convertToBGRA(into: destination, stride: width * 4)
                }
                size = (width, height)
            }
            pixelsCurrent = false
            return
        }
        keep(decoder)
        present()
    }

    /// The pointer moved or changed shape: shown over the picture now
    /// (converted again first if it was last shown without a pointer).
    func showCursor(_ overlay: CursorOverlay, decoder: H264Decoder) {
        cursor = overlay
        guard size.width > 0 else { return }
        if !pixelsCurrent { keep(decoder) }
        present()
    }

    /// Converts the decoder's newest picture into `pixels`.
    private func keep(_ decoder: H264Decoder) {
        decoder.withLastPicture { picture in
            let (width, height, stride) = (picture.width, picture.height, picture.width * 4)
            if pixels.count < stride * height { pixels = [UInt8](repeating: 0, count: stride * height) }
            pixels.withUnsafeMutableBytes { picture.convertToBGRA(into: $0.baseAddress!, stride: stride) }
            size = (width, height)
        }
        pixelsCurrent = true
    }

    /// Where the pointer's image goes on the picture (its top left corner),
    /// with the hot spot scaled from the sender's captured area.
    static func cursorOrigin(_ overlay: CursorOverlay, shape: CursorShape, width: Int, height: Int) -> (x: Int, y: Int) {
        let p = overlay.position
        let x = Int(p.x) * width / max(1, Int(p.areaWidth))
        let y = Int(p.y) * height / max(1, Int(p.areaHeight))
        return (x - shape.hotX, y - shape.hotY)
    }

    /// Puts the picture on the window, the pointer blended in a copy of the
    /// rows it covers (the picture itself stays clean for the next move).
    private func present() {
        let (width, height) = size
        let stride = width * 4
        var saved: (rows: Range<Int>, bytes: [UInt8])?
        pixels.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!
            if let overlay = cursor, overlay.position.visible, let shape = overlay.shape {
                let origin = Self.cursorOrigin(overlay, shape: shape, width: width, height: height)
                let rows = max(0, origin.y)..<max(0, min(height, origin.y + shape.height))
                if !rows.isEmpty {
                    saved = (rows, Array(UnsafeRawBufferPointer(start: base + rows.lowerBound * stride, count: rows.count * stride)))
                    shape.pixels.withUnsafeBufferPointer { image in
                        ColorConversion.blendPremultiplied(image.baseAddress!, imageWidth: shape.width, imageHeight: shape.height,
                                                           onto: base, stride: stride, width: width, rows: height,
                                                           left: origin.x, top: origin.y)
                    }
                }
            }
            window.show(width: width, height: height, stride: stride, pixels: UnsafeRawPointer(base))
            if let saved {
                saved.bytes.withUnsafeBytes { (base + saved.rows.lowerBound * stride).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
        }
    }
}
