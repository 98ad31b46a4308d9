internal import CXCB
internal import ShareColor
#if canImport(Glibc)
internal import Glibc
#endif

/// The receiver's window: shows BGRA pictures through MIT-SHM PutImage (or
/// plain PutImage in strips when the server has no MIT-SHM), rewritten to
/// the display's own layout first when it is another (a 30-bit display).
public final class VideoWindow {
    private let connection: X11Connection
    private let layout: PixelLayout
    private let window: xcb_window_t
    private let gc: xcb_gcontext_t
    private var segment: SharedMemorySegment?
    /// Where a picture is drawn without MIT-SHM, before PutImage.
    private var scratch: [UInt8] = []
    private var deleteAtom: xcb_atom_t = 0
    public private(set) var width: Int
    public private(set) var height: Int
    /// True once the user closed the window.
    public private(set) var closed = false
    public private(set) var framesShown = 0

    public init(display: String? = nil, title: String, width: Int, height: Int) throws(X11Error) {
        let connection = try X11Connection(display: display)
        guard let layout = connection.pixelLayout else { throw X11Error(connection.unsupportedLayout) }
        self.layout = layout
        let c = connection.connection
        let window = xcb_generate_id(c)
        var values: [UInt32] = [connection.screen.black_pixel,
                                XCB_EVENT_MASK_EXPOSURE.rawValue | XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue]
        try connection.check(
            xcb_create_window_checked(c, UInt8(XCB_COPY_FROM_PARENT), window, connection.root, 0, 0,
                                      UInt16(clamping: width), UInt16(clamping: height), 0,
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
        deleteAtom = subscribeToClose()
        xcb_map_window(c, window)
        connection.flush()
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

    /// Shows a BGRA picture of `width` x `height` with `stride` bytes per row,
    /// resizing the window to it.
    package func show(width: Int, height: Int, stride: Int, pixels: UnsafeRawPointer) {
        if layout == .bgrx, !connection.hasSharedMemory {
            _ = prepare(width: width, height: height, bytes: stride * height)
            putStrips(pixels, width: width, height: height, stride: stride)
        } else {
            show(width: width, height: height, stride: stride) { $0.copyMemory(from: pixels, byteCount: stride * height) }
        }
    }

    /// Shows a BGRA picture of `width` x `height` with `stride` bytes per row
    /// that `draw` writes: straight into the shared memory the server reads
    /// it from, so a picture converted for the window is written once, not
    /// converted and then copied. Resizes the window to it.
    package func show(width: Int, height: Int, stride: Int, draw: (UnsafeMutableRawPointer) -> Void) {
        if let segment = prepare(width: width, height: height, bytes: stride * height) {
            draw(segment.address)
            ColorConversion.fromBGRX(segment.address, stride: stride, width: width, rows: height, to: layout)
            putShared(segment, width: width, height: height, stride: stride)
        } else {
            if scratch.count < stride * height { scratch = [UInt8](repeating: 0, count: stride * height) }
            scratch.withUnsafeMutableBytes { raw in
                draw(raw.baseAddress!)
                ColorConversion.fromBGRX(raw.baseAddress!, stride: stride, width: width, rows: height, to: layout)
                putStrips(UnsafeRawPointer(raw.baseAddress!), width: width, height: height, stride: stride)
            }
        }
    }

    /// Handles the window's events, follows the picture's size, and returns
    /// the shared segment to put `bytes` through (nil without MIT-SHM).
    private func prepare(width: Int, height: Int, bytes: Int) -> SharedMemorySegment? {
        pollEvents()
        let c = connection.connection
        if width != self.width || height != self.height {
            xcb_configure_window(c, window, UInt16(XCB_CONFIG_WINDOW_WIDTH.rawValue | XCB_CONFIG_WINDOW_HEIGHT.rawValue),
                                 [UInt32(width), UInt32(height)])
            self.width = width
            self.height = height
        }
        if connection.hasSharedMemory, segment == nil || segment!.size < bytes {
            segment = try? SharedMemorySegment(connection: connection, size: bytes)
        }
        return segment
    }

    private func putShared(_ segment: SharedMemorySegment, width: Int, height: Int, stride: Int) {
        let c = connection.connection
        xcb_shm_put_image(c, window, gc, UInt16(stride / 4), UInt16(height), 0, 0, UInt16(width), UInt16(height),
                          0, 0, connection.screen.root_depth, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), 0, segment.segment, 0)
        // Wait for the server so the segment can be rewritten safely.
        free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nil))
        framesShown += 1
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
        framesShown += 1
    }

    /// Handles pending window events (close requests).
    public func pollEvents() {
        let c = connection.connection
        while let event = xcb_poll_for_event(c) {
            let type = event.pointee.response_type & 0x7F
            if type == UInt8(XCB_CLIENT_MESSAGE) {
                let message = UnsafeMutableRawPointer(event).assumingMemoryBound(to: xcb_client_message_event_t.self)
                if message.pointee.data.data32.0 == deleteAtom { closed = true }
            }
            free(event)
        }
        if xcb_connection_has_error(c) != 0 { closed = true }
    }
}
