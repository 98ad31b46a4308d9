internal import CXCB
public import ShareX11
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
    /// The next picture's rows converted ahead (`writeAhead`), in a segment
    /// of their own (the last picture stays whole in `segment`), and how many.
    private var ahead: SharedMemorySegment?
    package private(set) var rowsAhead = 0
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
        Self.setClass(of: window, on: c)
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

    /// The title as window managers read it today (_NET_WM_NAME, UTF-8)
    /// and as older ones do (WM_NAME, Latin-1: other characters as "?").
    private static func setName(_ title: String, of window: xcb_window_t, on c: OpaquePointer) {
        let utf8 = Array(title.utf8)
        xcb_change_property(c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, atom("_NET_WM_NAME", on: c),
                            atom("UTF8_STRING", on: c), 8, UInt32(utf8.count), utf8)
        let latin1 = title.unicodeScalars.map { $0.value < 256 ? UInt8($0.value) : UInt8(ascii: "?") }
        xcb_change_property(c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, XCB_ATOM_WM_NAME.rawValue,
                            XCB_ATOM_STRING.rawValue, 8, UInt32(latin1.count), latin1)
    }

    /// WM_CLASS (instance "share-recv", class "Share"): how docks, task
    /// switchers and window rules know the window.
    private static func setClass(of window: xcb_window_t, on c: OpaquePointer) {
        let value = Array("share-recv\0Share\0".utf8)
        xcb_change_property(c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, XCB_ATOM_WM_CLASS.rawValue,
                            XCB_ATOM_STRING.rawValue, 8, UInt32(value.count), value)
    }

    /// The atom the server has for `name` (0 if it could not say).
    private static func atom(_ name: String, on c: OpaquePointer) -> xcb_atom_t {
        let reply = xcb_intern_atom_reply(c, xcb_intern_atom(c, 0, UInt16(name.utf8.count), name), nil)
        defer { free(reply) }
        return reply?.pointee.atom ?? 0
    }

    deinit {
        let c = connection.connection
        segment = nil
        ahead = nil
        xcb_free_gc(c, gc)
        xcb_destroy_window(c, window)
        connection.flush()
    }

    /// Asks the window manager to send WM_DELETE_WINDOW instead of killing us.
    private func subscribeToClose() -> xcb_atom_t {
        let c = connection.connection
        let protocols = Self.atom("WM_PROTOCOLS", on: c)
        var delete = Self.atom("WM_DELETE_WINDOW", on: c)
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
        rowsAhead = 0
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

    /// Writes rows `rows` of the next picture, `width` x `height`, while its
    /// lower rows are still being decoded: `draw` writes them as BGRA at
    /// their place in a picture of rows `width * 4` bytes apart, into shared
    /// memory the server will read them from once `showAhead` adds the
    /// rest. `rows` starts where the last call's ended (at 0 for a new
    /// picture). False when the picture cannot be begun so (the window is
    /// not its size, no MIT-SHM): `show` then draws it whole.
    package func writeAhead(width: Int, height: Int, rows: Range<Int>, draw: (UnsafeMutableRawPointer) -> Void) -> Bool {
        let stride = width * 4
        guard rows.lowerBound == rowsAhead, rows.upperBound <= height, showsAtItsSize(width: width, height: height),
              connection.hasSharedMemory else { return false }
        if ahead == nil || ahead!.size < stride * height {
            ahead = try? SharedMemorySegment(connection: connection, size: stride * height)
        }
        guard let ahead else { return false }
        draw(ahead.address)
        ColorConversion.fromBGRX(ahead.address + rows.lowerBound * stride, stride: stride, width: width, rows: rows.count,
                                 to: layout)
        rowsAhead = rows.upperBound
        return true
    }

    /// Forgets the rows written ahead: that picture will not be shown.
    package func dropAhead() { rowsAhead = 0 }

    /// Shows the picture begun with `writeAhead`: `draw` writes its rows
    /// from `rowsAhead` on (none, if all were written ahead), as
    /// `writeAhead`'s did, and may draw over the rest. False, and nothing shown
    /// or kept of it, when none was begun at the window's size now (it
    /// changed meanwhile): `show` it whole.
    package func showAhead(width: Int, height: Int, draw: (UnsafeMutableRawPointer, Range<Int>) -> Void) -> Bool {
        handleEvents()
        defer { rowsAhead = 0 }
        guard rowsAhead > 0, let next = ahead, showsAtItsSize(width: width, height: height) else { return false }
        let stride = width * 4
        let rest = rowsAhead..<height
        draw(next.address, rest)
        if !rest.isEmpty {
            ColorConversion.fromBGRX(next.address + rest.lowerBound * stride, stride: stride, width: width, rows: rest.count,
                                     to: layout)
        }
        put(next)
        // What is shown now is in `next`: kept as the last picture, and the
        // segment it replaces takes the next picture's rows.
        ahead = segment
        segment = next
        shown = true
        pictureKept = false
        stale = false
        framesShown += 1
        return true
    }

    /// Whether a picture of this size, shown now, is drawn straight into
    /// what the server reads, as BGRX: the window is its size, with MIT-SHM,
    /// on a 24-bit display. What `show`'s `draw` writes is then what shows,
    /// and `touchUp` can change part of it.
    package func drawsInPlace(width: Int, height: Int) -> Bool {
        showsAtItsSize(width: width, height: height) && layout == .bgrx && connection.hasSharedMemory
    }

    /// Whether the window shows pictures of this size, at their own size.
    private func showsAtItsSize(width: Int, height: Int) -> Bool {
        width == self.width && height == self.height && windowWidth == width && windowHeight == height
    }

    /// Changes rows `rows` of the picture last shown, drawn in place, and
    /// puts those rows again. False, and nothing changed, when the window
    /// no longer shows it so (resized or exposed since: it was kept to be
    /// scaled, or the window is not its size).
    package func touchUp(rows: Range<Int>, _ change: (UnsafeMutableRawPointer) -> Void) -> Bool {
        handleEvents()
        guard shown, !pictureKept, !stale, let segment, drawsInPlace(width: width, height: height),
              !rows.isEmpty, rows.upperBound <= height else { return false }
        change(segment.address)
        put(segment, rows: rows)
        return true
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
        let (w, h) = (windowWidth, windowHeight)
        let stride = w * 4
        if connection.hasSharedMemory, segment == nil || segment!.size < stride * h {
            segment = try? SharedMemorySegment(connection: connection, size: stride * h)
        }
        if let segment {
            fill(segment.address)
            ColorConversion.fromBGRX(segment.address, stride: stride, width: w, rows: h, to: layout)
            put(segment)
            return
        }
        if scratch.count < stride * h { scratch = [UInt8](repeating: 0, count: stride * h) }
        scratch.withUnsafeMutableBytes { raw in
            fill(raw.baseAddress!)
            ColorConversion.fromBGRX(raw.baseAddress!, stride: stride, width: w, rows: h, to: layout)
            putStrips(UnsafeRawPointer(raw.baseAddress!), width: w, height: h, stride: stride)
        }
    }

    /// Puts a window-sized image from `segment` (its rows `rows`, or all),
    /// and waits for the server to have read it (so the segment can be
    /// written again).
    private func put(_ segment: SharedMemorySegment, rows: Range<Int>? = nil) {
        let c = connection.connection
        let (w, h) = (windowWidth, windowHeight)
        let rows = rows ?? 0..<h
        xcb_shm_put_image(c, window, gc, UInt16(w), UInt16(h), 0, UInt16(rows.lowerBound), UInt16(w), UInt16(rows.count),
                          0, Int16(rows.lowerBound), connection.screen.root_depth, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), 0,
                          segment.segment, 0)
        free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nil))
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
