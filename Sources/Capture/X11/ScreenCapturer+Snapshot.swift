internal import CXCB
internal import ShareColor
public import ShareX11
#if canImport(Glibc)
internal import Glibc
#endif

extension ScreenCapturer {
    /// What is captured now as BGRX bytes (`width` x `height`, rows
    /// packed), outside the pool: for tests, benchmarks and probes that need
    /// the screen's own pixels. Allocates the whole picture.
    public func snapshot() throws(X11Error) -> [UInt8] {
        let c = connection.connection
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        let cookie = xcb_get_image(c, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), connection.root, Int16(area.x), Int16(area.y),
                                   UInt16(width), UInt16(height), ~0)
        guard let reply = xcb_get_image_reply(c, cookie, &error), let data = xcb_get_image_data(reply) else {
            let code = error?.pointee.error_code ?? 0
            free(error)
            throw X11Error("GetImage of the root window failed", code: code)
        }
        defer { free(reply) }
        let count = min(Int(xcb_get_image_data_length(reply)), width * height * 4)
        var pixels = Array(UnsafeBufferPointer(start: data, count: count))
        pixels.withUnsafeMutableBytes { raw in
            ColorConversion.toBGRX(raw.baseAddress!, stride: width * 4, width: width, rows: count / (width * 4), from: layout)
        }
        return pixels
    }
}
