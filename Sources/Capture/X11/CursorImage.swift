internal import CXCB
internal import ShareX11
internal import ShareColor
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

    convenience init(connection: X11Connection) {
        self.init(connection: connection, asked: Self.ask(connection))
    }

    /// Asks for the pointer's image without waiting: sent with other
    /// requests, their replies come in one round trip.
    static func ask(_ connection: X11Connection) -> xcb_xfixes_get_cursor_image_cookie_t {
        xcb_xfixes_get_cursor_image(connection.connection)
    }

    /// The image asked for with `ask`.
    init(connection: X11Connection, asked: xcb_xfixes_get_cursor_image_cookie_t) {
        reply = xcb_xfixes_get_cursor_image_reply(connection.connection, asked, nil)
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

    /// XFixes' serial of the image: a new image (another shape, a frame of
    /// an animated one) has a new serial.
    var serial: UInt32? { reply?.pointee.cursor_serial }

    /// Blends the rows of the pointer that fall in `rows` (rows of `area`,
    /// the captured part of the screen) onto `pixels`, BGRX rows of `area`
    /// from `rows.lowerBound` on.
    func draw(into pixels: UnsafeMutableRawPointer, stride: Int, area: Rectangle, rows: Range<Int>) {
        guard let reply, let bounds, let image = xcb_xfixes_get_cursor_image_cursor_image(reply) else { return }
        ColorConversion.blendPremultiplied(image, imageWidth: bounds.width, imageHeight: bounds.height, onto: pixels, stride: stride,
                                           width: area.width, rows: rows.count, left: bounds.x - area.x,
                                           top: bounds.y - area.y - rows.lowerBound)
    }

    /// The image as a shape to send (`--cursor metadata`): serial, size,
    /// hot spot and pixels; nil without one.
    var shape: (serial: UInt32, width: Int, height: Int, hotX: Int, hotY: Int, pixels: [UInt32])? {
        guard let reply, let bounds, let image = xcb_xfixes_get_cursor_image_cursor_image(reply) else { return nil }
        let info = reply.pointee
        return (info.cursor_serial, bounds.width, bounds.height, Int(info.xhot), Int(info.yhot),
                Array(UnsafeBufferPointer(start: image, count: bounds.width * bounds.height)))
    }
}
