package import CXCB
package import ShareColor
#if canImport(Glibc)
internal import Glibc
#endif

/// Why an X11 operation failed.
public struct X11Error: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    /// The X protocol error code, when the server reported one.
    public var code: UInt8?
    public var description: String { "X11: \(message)\(code.map { " (X error \($0))" } ?? "")" }
    package init(_ message: String, code: UInt8? = nil) {
        self.message = message
        self.code = code
    }
}

/// One XCB connection and its default screen. Owns the connection.
package final class X11Connection {
    /// Why xcb_connect failed, from xcb_connection_has_error's code (xcb.h's XCB_CONN_*).
    static func why(_ code: Int32) -> String {
        switch code {
        case 1: "no X server answers there, or it refused this client (is the display running, and may this user use it?)"
        case 2: "the X server lacks an extension it must have"
        case 3: "out of memory"
        case 4: "a request longer than the X server takes"
        case 5: "the display name cannot be parsed (give :N or HOST:N)"
        case 6: "the X server has no such screen"
        case 7: "the X server could not pass a file descriptor"
        default: "X connection error \(code)"
        }
    }

    package let connection: OpaquePointer
    package let screen: xcb_screen_t
    package let displayName: String

    package init(display: String?) throws(X11Error) {
        let name = display ?? getenv("DISPLAY").map { String(cString: $0) } ?? ""
        guard !name.isEmpty else { throw X11Error("no display: set DISPLAY or pass --display") }
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(name, &screenNumber) else { throw X11Error("cannot connect to \(name)") }
        let failure = xcb_connection_has_error(connection)
        guard failure == 0 else {
            xcb_disconnect(connection)
            throw X11Error("cannot connect to display \(name): \(Self.why(failure))")
        }
        var iterator = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber where iterator.rem > 0 { xcb_screen_next(&iterator) }
        guard iterator.rem > 0, let screen = iterator.data?.pointee else {
            xcb_disconnect(connection)
            throw X11Error("display \(name) has no screen \(screenNumber)")
        }
        self.connection = connection
        self.screen = screen
        self.displayName = name
    }

    deinit { xcb_disconnect(connection) }

    package var root: xcb_window_t { screen.root }
    /// The screen's size when the connection was made (RandR may change it
    /// since: `currentSize()`).
    package var width: Int { Int(screen.width_in_pixels) }
    package var height: Int { Int(screen.height_in_pixels) }

    /// The root window's size now.
    package func currentSize() -> (width: Int, height: Int) {
        guard let geometry = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, root), nil) else {
            return (width, height)
        }
        defer { free(geometry) }
        return (Int(geometry.pointee.width), Int(geometry.pointee.height))
    }

    package var hasSharedMemory: Bool {
        guard let ext = share_xcb_shm_extension(connection) else { return false }
        return ext.pointee.present != 0
    }

    /// Bits per pixel of the ZPixmap format at the root depth.
    package var bitsPerPixel: Int {
        var formats = xcb_setup_pixmap_formats_iterator(xcb_get_setup(connection))
        while formats.rem > 0 {
            if let format = formats.data?.pointee, format.depth == screen.root_depth { return Int(format.bits_per_pixel) }
            xcb_format_next(&formats)
        }
        return 0
    }

    /// How the root visual stores a pixel; an error that says why when it is
    /// not in 32 bits with a layout `PixelLayout` knows (a 16-bit display,
    /// say): capture, the receiver's window and the scene all need one.
    package func pixelLayout() throws(X11Error) -> PixelLayout {
        guard let layout = rootVisualLayout else {
            throw X11Error("the display's depth \(screen.root_depth) (\(bitsPerPixel) bits a pixel) is not one share reads: "
                           + "it needs 24- or 30-bit colour in 32 bits a pixel (Xvfb: -screen 0 WxHx24)")
        }
        return layout
    }

    private var rootVisualLayout: PixelLayout? {
        guard bitsPerPixel == 32 else { return nil }
        // The depths follow the screen in the setup's memory: its pointer
        // there, not the copy kept in `screen`.
        var roots = xcb_setup_roots_iterator(xcb_get_setup(connection))
        while roots.rem > 0, roots.data?.pointee.root != screen.root { xcb_screen_next(&roots) }
        guard roots.rem > 0, let setupScreen = roots.data else { return nil }
        var depths = xcb_screen_allowed_depths_iterator(setupScreen)
        while depths.rem > 0 {
            if let depth = depths.data {
                var visuals = xcb_depth_visuals_iterator(depth)
                while visuals.rem > 0 {
                    if let visual = visuals.data?.pointee, visual.visual_id == screen.root_visual {
                        return PixelLayout(red: visual.red_mask, green: visual.green_mask, blue: visual.blue_mask)
                    }
                    xcb_visualtype_next(&visuals)
                }
            }
            xcb_depth_next(&depths)
        }
        return nil
    }

    /// Sends a checked request's cookie and turns an X error into `X11Error`.
    package func check(_ cookie: xcb_void_cookie_t, _ what: String) throws(X11Error) {
        if let error = xcb_request_check(connection, cookie) {
            let code = error.pointee.error_code
            free(error)
            throw X11Error(what, code: code)
        }
    }

    package func flush() { xcb_flush(connection) }
}

/// A System V shared memory segment attached to this process and to the X
/// server (MIT-SHM). Removed from the system as soon as both have it, so it
/// cannot leak past the process.
package final class SharedMemorySegment {
    package let address: UnsafeMutableRawPointer
    package let size: Int
    package let segment: xcb_shm_seg_t
    private let connection: X11Connection

    package init(connection: X11Connection, size: Int) throws(X11Error) {
        let id = share_shm_create(size)
        guard id >= 0 else { throw X11Error("shmget of \(size) bytes failed (errno \(errno))") }
        guard let address = shmat(id, nil, 0), address != UnsafeMutableRawPointer(bitPattern: -1) else {
            _ = share_shm_remove(id)
            throw X11Error("shmat failed (errno \(errno))")
        }
        let segment = xcb_generate_id(connection.connection)
        do {
            try connection.check(xcb_shm_attach_checked(connection.connection, segment, UInt32(id), 0), "MIT-SHM attach")
        } catch {
            shmdt(address)
            _ = share_shm_remove(id)
            throw error
        }
        // Both sides are attached: mark for removal now so nothing outlives us.
        _ = share_shm_remove(id)
        self.address = address
        self.size = size
        self.segment = segment
        self.connection = connection
    }

    deinit {
        xcb_shm_detach(connection.connection, segment)
        connection.flush()
        shmdt(address)
    }
}
