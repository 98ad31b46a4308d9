internal import CXCB
#if canImport(Glibc)
internal import Glibc
#endif

/// The mouse pointer as XFixes gives it (its image, premultiplied ARGB, and
/// where it is), fetched once per picture and drawn band by band.
final class CursorImage {
    private let reply: UnsafeMutablePointer<xcb_xfixes_get_cursor_image_reply_t>?
    /// Where the pointer (its hot spot) is, in screen coordinates.
    let position: (x: Int, y: Int)
    /// Where its image is, in screen coordinates (nil: no image).
    let bounds: Rectangle?

    init(connection: X11Connection) {
        let c = connection.connection
        reply = xcb_xfixes_get_cursor_image_reply(c, xcb_xfixes_get_cursor_image(c), nil)
        guard let info = reply?.pointee else {
            position = (Int.min, Int.min)
            bounds = nil
            return
        }
        position = (Int(info.x), Int(info.y))
        bounds = info.width == 0 || info.height == 0 ? nil
            : Rectangle(x: Int(info.x) - Int(info.xhot), y: Int(info.y) - Int(info.yhot), width: Int(info.width),
                        height: Int(info.height))
    }

    deinit { free(reply) }

    /// Blends the rows of the pointer that fall in `rows` (rows of `area`,
    /// the captured part of the screen) onto `pixels`, BGRX rows of `area`
    /// from `rows.lowerBound` on.
    func draw(into pixels: UnsafeMutableRawPointer, stride: Int, area: Rectangle, rows: Range<Int>) {
        guard let reply, let bounds, let image = xcb_xfixes_get_cursor_image_cursor_image(reply) else { return }
        let left = bounds.x - area.x
        let top = bounds.y - area.y
        let (firstRow, endRow) = (max(rows.lowerBound - top, 0), min(bounds.height, rows.upperBound - top))
        let (firstColumn, endColumn) = (max(0, -left), min(bounds.width, area.width - left))
        guard firstRow < endRow, firstColumn < endColumn else { return }
        let (cursorRows, columns) = (firstRow..<endRow, firstColumn..<endColumn)
        let bytes = pixels.assumingMemoryBound(to: UInt8.self)
        for row in cursorRows {
            let line = bytes + (top + row - rows.lowerBound) * stride
            for column in columns {
                let argb = image[row * bounds.width + column]
                let alpha = argb >> 24
                guard alpha > 0 else { continue }
                let pixel = line + (left + column) * 4
                let keep = 255 - alpha
                pixel[0] = UInt8(min(255, (argb & 0xFF) + (UInt32(pixel[0]) * keep + 127) / 255))
                pixel[1] = UInt8(min(255, (argb >> 8 & 0xFF) + (UInt32(pixel[1]) * keep + 127) / 255))
                pixel[2] = UInt8(min(255, (argb >> 16 & 0xFF) + (UInt32(pixel[2]) * keep + 127) / 255))
            }
        }
    }
}
