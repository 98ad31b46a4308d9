internal import CXCB
#if canImport(Glibc)
internal import Glibc
#endif

/// Why an X11 operation failed.
public struct X11Error: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    /// The X protocol error code, when the server reported one.
    public var code: UInt8?
    public var description: String { "X11: \(message)\(code.map { " (X error \($0))" } ?? "")" }
    init(_ message: String, code: UInt8? = nil) {
        self.message = message
        self.code = code
    }
}

/// One XCB connection and its default screen. Owns the connection.
final class X11Connection {
    let connection: OpaquePointer
    let screen: xcb_screen_t
    let displayName: String

    init(display: String?) throws(X11Error) {
        let name = display ?? getenv("DISPLAY").map { String(cString: $0) } ?? ""
        guard !name.isEmpty else { throw X11Error("no display: set DISPLAY or pass --display") }
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(name, &screenNumber) else { throw X11Error("cannot connect to \(name)") }
        let failure = xcb_connection_has_error(connection)
        guard failure == 0 else {
            xcb_disconnect(connection)
            throw X11Error("cannot connect to display \(name) (xcb error \(failure))")
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

    var root: xcb_window_t { screen.root }
    var width: Int { Int(screen.width_in_pixels) }
    var height: Int { Int(screen.height_in_pixels) }

    var hasSharedMemory: Bool {
        guard let ext = share_xcb_shm_extension(connection) else { return false }
        return ext.pointee.present != 0
    }

    /// Bits per pixel of the ZPixmap format at the root depth.
    var bitsPerPixel: Int {
        var formats = xcb_setup_pixmap_formats_iterator(xcb_get_setup(connection))
        while formats.rem > 0 {
            if let format = formats.data?.pointee, format.depth == screen.root_depth { return Int(format.bits_per_pixel) }
            xcb_format_next(&formats)
        }
        return 0
    }

    /// Sends a checked request's cookie and turns an X error into `X11Error`.
    func check(_ cookie: xcb_void_cookie_t, _ what: String) throws(X11Error) {
        if let error = xcb_request_check(connection, cookie) {
            let code = error.pointee.error_code
            free(error)
            throw X11Error(what, code: code)
        }
    }

    func flush() { xcb_flush(connection) }
}

/// A System V shared memory segment attached to this process and to the X
/// server (MIT-SHM). Removed from the system as soon as both have it, so it
/// cannot leak past the process.
final class SharedMemorySegment {
    let address: UnsafeMutableRawPointer
    let size: Int
    let segment: xcb_shm_seg_t
    private let connection: X11Connection

    init(connection: X11Connection, size: Int) throws(X11Error) {
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
