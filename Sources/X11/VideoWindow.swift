internal import CXCB
internal import ShareColor
#if canImport(Glibc)
internal import Glibc
#endif

/// The receiver's window: shows BGRA pictures through MIT-SHM PutImage (or
/// plain PutImage in strips when the server has no MIT-SHM), rewritten to
/// the display's own layout first when it is another (a 30-bit display).
/// It opens at the picture's size, made smaller to fit the screen if need
/// be, and follows a new picture size the same way; a window of another
/// size than the picture (the person resized it, or the screen is too
/// small) shows the whole picture scaled to fit, its aspect kept, black
/// around it. Resized or exposed, it draws the last picture again at once.
public final class VideoWindow {
    private let connection: X11Connection
    private let layout: PixelLayout
    private let window: xcb_window_t
    private let gc: xcb_gcontext_t
    private var segment: SharedMemorySegment?
    /// Where a window-sized image is put together without MIT-SHM.
    private var scratch: [UInt8] = []
    /// The last picture, when the window's size is not its own (scaled from
    /// here); otherwise the picture is drawn straight into what is put.
    private var picture: [UInt8] = []
    private var deleteAtom: xcb_atom_t = 0
    /// The picture's size.
    public private(set) var width: Int
    public private(set) var height: Int
    /// The window's size, as the server last said (or as asked).
    public private(set) var windowWidth: Int
    public private(set) var windowHeight: Int
    /// Whether a picture was shown, and whether it is in `picture` (else
    /// in the segment or scratch, at its own size).
    private var shown = false
    private var pictureKept = false
    /// The window changed size or was exposed: the picture is drawn again.
    private var stale = false
    /// True once the user closed the window.
    public private(set) var closed = false
    public private(set) var framesShown = 0

    public init(display: String? = nil, title: String, width: Int, height: Int) throws(X11Error) {
        let connection = try X11Connection(display: display)
        layout = try connection.pixelLayout()
        let c = connection.connection
        let window = xcb_generate_id(c)
        let fitted = Self.fit(width: width, height: height, within: (connection.width, connection.height))
        var values: [UInt32] = [connection.screen.black_pixel,
                                XCB_EVENT_MASK_EXPOSURE.rawValue | XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue]
        try connection.check(
            xcb_create_window_checked(c, UInt8(XCB_COPY_FROM_PARENT), window, connection.root, 0, 0,
                                      UInt16(clamping: fitted.width), UInt16(clamping: fitted.height), 0,
                                      UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), connection.screen.root_visual,
                                      XCB_CW_BACK_PIXEL.rawValue | XCB_CW_EVENT_MASK.rawValue, &values),
            "create the receiver window")
        Self.setName(title, of: window, on: c)
        let gc = xcb_generate_id(c)
        xcb_create_gc(c, gc, window, 0, nil)
        self.connection = connection
        self.window = window
        self.gc = gc
        self.width = width
        self.height = height
        (windowWidth, windowHeight) = fitted
        deleteAtom = subscribeToClose()
        xcb_map_window(c, window)
        connection.flush()
    }

    /// `width` x `height` made smaller, its aspect kept, to fit `bounds`
    /// (at least 1x1); unchanged when it fits.
    package static func fit(width: Int, height: Int, within bounds: (width: Int, height: Int)) -> (width: Int, height: Int) {
        guard width > bounds.width || height > bounds.height, width > 0, height > 0 else { return (width, height) }
        if width * bounds.height > height * bounds.width {
            return (bounds.width, max(1, height * bounds.width / width))
        }
        return (max(1, width * bounds.height / height), bounds.height)
    }

    /// Where a picture of `width` x `height` goes in a window of `window`:
    /// as large as fits, its aspect kept, centred.
    package static func placement(width: Int, height: Int,
                                  in window: (width: Int, height: Int)) -> (x: Int, y: Int, width: Int, height: Int) {
        let size = width * window.height > height * window.width
            ? (width: window.width, height: max(1, height * window.width / max(width, 1)))
            : (width: max(1, width * window.height / max(height, 1)), height: window.height)
        return ((window.width - size.width) / 2, (window.height - size.height) / 2, size.width, size.height)
    }

    /// The window's title (the sender's state shows there: paused, ended).
    public func setTitle(_ title: String) {
        Self.setName(title, of: window, on: connection.connection)
        connection.flush()
    }

    private static func setName(_ title: String, of window: xcb_window_t, on c: OpaquePointer) {
        let utf8 = Array(title.utf8)
        xcb_change_property(c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, XCB_ATOM_WM_NAME.rawValue,
                            XCB_ATOM_STRING.rawValue, 8, UInt32(utf8.count), utf8)
    }

    deinit {
        let c = connection.connection
        segment = nil
        xcb_free_gc(c, gc)
        xcb_destroy_window(c, window)
        connection.flush()
    }

    /// Asks the window manager to send WM_DELETE_WINDOW instead of killing us.
    private func subscribeToClose() -> xcb_atom_t {
        let c = connection.connection
        func atom(_ name: String) -> xcb_atom_t {
            let reply = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, UInt16(name.utf8.count), name), nil)
            defer { free(reply) }
            return reply?.pointee.atom ?? 0
        }
        let protocols = atom("WM_PROTOCOLS")
        var delete = atom("WM_DELETE_WINDOW")
        xcb_change_property(c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, protocols, XCB_ATOM_ATOM.rawValue, 32, 1,
                            &delete)
        return delete
    }

    /// Shows a BGRA picture of `width` x `height` with `stride` bytes per row.
    package func show(width: Int, height: Int, stride: Int, pixels: UnsafeRawPointer) {
        show(width: width, height: height, stride: stride) { $0.copyMemory(from: pixels, byteCount: stride * height) }
    }

    /// Shows a BGRA picture of `width` x `height` with `stride` bytes per row
    /// that `draw` writes: when the window is the picture's size, straight
    /// into the shared memory the server reads it from (written once, not
    /// converted and then copied); otherwise kept and scaled to the window.
    package func show(width: Int, height: Int, stride: Int, draw: (UnsafeMutableRawPointer) -> Void) {
        handleEvents()
        follow(width: width, height: height)
        shown = true
        if windowWidth == width && windowHeight == height && stride == width * 4 {
            pictureKept = false
            stale = false
            put { draw($0) }
        } else {
            if picture.count < stride * height { picture = [UInt8](repeating: 0, count: stride * height) }
            picture.withUnsafeMutableBytes { draw($0.baseAddress!) }
            pictureKept = true
            redraw(stride: stride)
        }
        framesShown += 1
    }

    /// A new picture size: the window takes it, made smaller to fit the screen.
    private func follow(width: Int, height: Int) {
        guard width != self.width || height != self.height else { return }
        let fitted = Self.fit(width: width, height: height, within: (connection.width, connection.height))
        if fitted != (windowWidth, windowHeight) {
            xcb_configure_window(connection.connection, window,
                                 UInt16(XCB_CONFIG_WINDOW_WIDTH.rawValue | XCB_CONFIG_WINDOW_HEIGHT.rawValue),
                                 [UInt32(fitted.width), UInt32(fitted.height)])
            (windowWidth, windowHeight) = fitted
        }
        self.width = width
        self.height = height
    }

    /// Draws the kept picture scaled into the window, black around it.
    private func redraw(stride: Int) {
        stale = false
        let area = Self.placement(width: width, height: height, in: (windowWidth, windowHeight))
        let outStride = windowWidth * 4
        picture.withUnsafeBytes { source in
            put { out in
                out.initializeMemory(as: UInt8.self, repeating: 0, count: outStride * windowHeight)
                ColorConversion.scaleBGRA(source.baseAddress!, stride: stride, width: width, height: height,
                                          to: out + area.y * outStride + area.x * 4, outWidth: area.width,
                                          outHeight: area.height, outStride: outStride)
            }
        }
    }

    /// Puts a window-sized image that `fill` writes (BGRX, rows packed),
    /// in the display's layout: through the shared segment, or in strips.
    private func put(_ fill: (UnsafeMutableRawPointer) -> Void) {
        let c = connection.connection
        let (w, h) = (windowWidth, windowHeight)
        let stride = w * 4
        if connection.hasSharedMemory, segment == nil || segment!.size < stride * h {
            segment = try? SharedMemorySegment(connection: connection, size: stride * h)
        }
        if let segment {
            fill(segment.address)
            ColorConversion.fromBGRX(segment.address, stride: stride, width: w, rows: h, to: layout)
            xcb_shm_put_image(c, window, gc, UInt16(w), UInt16(h), 0, 0, UInt16(w), UInt16(h),
                              0, 0, connection.screen.root_depth, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), 0,
                              segment.segment, 0)
            // Wait for the server so the segment can be rewritten safely.
            free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nil))
            return
        }
        if scratch.count < stride * h { scratch = [UInt8](repeating: 0, count: stride * h) }
        scratch.withUnsafeMutableBytes { raw in
            fill(raw.baseAddress!)
            ColorConversion.fromBGRX(raw.baseAddress!, stride: stride, width: w, rows: h, to: layout)
            putStrips(UnsafeRawPointer(raw.baseAddress!), width: w, height: h, stride: stride)
        }
    }

    /// PutImage in strips that fit the maximum request length (no MIT-SHM).
    private func putStrips(_ pixels: UnsafeRawPointer, width: Int, height: Int, stride: Int) {
        let c = connection.connection
        let maxBytes = Int(xcb_get_maximum_request_length(c)) * 4 - 64
        let rows = max(1, maxBytes / stride)
        var row = 0
        while row < height {
            let count = min(rows, height - row)
            xcb_put_image(c, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), window, gc, UInt16(stride / 4), UInt16(count), 0,
                          Int16(row), 0, connection.screen.root_depth, UInt32(count * stride),
                          (pixels + row * stride).assumingMemoryBound(to: UInt8.self))
            row += count
        }
        connection.flush()
    }

    /// Handles the window's events (close requests, a new size, exposure)
    /// and draws the last picture again when the window needs it.
    public func pollEvents() {
        handleEvents()
        guard stale, shown else { return }
        if !pictureKept {
            // The picture is in what was last put, at its own size: kept
            // first, as the window's new size needs a new image.
            keepLastPut()
        }
        if pictureKept { redraw(stride: width * 4) }
    }

    /// Copies the picture last put at its own size into `picture` (the
    /// layout rewritten back to BGRX).
    private func keepLastPut() {
        let bytes = width * height * 4
        if picture.count < bytes { picture = [UInt8](repeating: 0, count: bytes) }
        picture.withUnsafeMutableBytes { raw in
            if let segment, segment.size >= bytes {
                raw.baseAddress!.copyMemory(from: segment.address, byteCount: bytes)
            } else if scratch.count >= bytes {
                scratch.withUnsafeBytes { raw.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
            } else {
                return
            }
            ColorConversion.toBGRX(raw.baseAddress!, stride: width * 4, width: width, rows: height, from: layout)
            pictureKept = true
        }
    }

    private func handleEvents() {
        let c = connection.connection
        while let event = xcb_poll_for_event(c) {
            switch event.pointee.response_type & 0x7F {
            case UInt8(XCB_CLIENT_MESSAGE):
                let message = UnsafeMutableRawPointer(event).assumingMemoryBound(to: xcb_client_message_event_t.self)
                if message.pointee.data.data32.0 == deleteAtom { closed = true }
            case UInt8(XCB_CONFIGURE_NOTIFY):
                let configure = UnsafeMutableRawPointer(event).assumingMemoryBound(to: xcb_configure_notify_event_t.self)
                let size = (Int(configure.pointee.width), Int(configure.pointee.height))
                if configure.pointee.window == window, size != (windowWidth, windowHeight) {
                    (windowWidth, windowHeight) = size
                    stale = true
                }
            case UInt8(XCB_EXPOSE):
                let expose = UnsafeMutableRawPointer(event).assumingMemoryBound(to: xcb_expose_event_t.self)
                if expose.pointee.window == window, expose.pointee.count == 0 { stale = true }
            default:
                break
            }
            free(event)
        }
        if xcb_connection_has_error(c) != 0 { closed = true }
    }
}
