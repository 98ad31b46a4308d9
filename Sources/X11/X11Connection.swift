internal import CXCB
internal import ShareColor
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
    /// The screen's size when the connection was made (RandR may change it
    /// since: `currentSize()`).
    var width: Int { Int(screen.width_in_pixels) }
    var height: Int { Int(screen.height_in_pixels) }

    /// The root window's size now.
    func currentSize() -> (width: Int, height: Int) {
        guard let geometry = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, root), nil) else {
            return (width, height)
        }
        defer { free(geometry) }
        return (Int(geometry.pointee.width), Int(geometry.pointee.height))
    }

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

    /// How the root visual stores a pixel; an error that says why when it is
    /// not in 32 bits with a layout `PixelLayout` knows (a 16-bit display,
    /// say): capture, the receiver's window and the scene all need one.
    func pixelLayout() throws(X11Error) -> PixelLayout {
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

// MARK: what is on the display: monitors, windows

extension X11Connection {
    /// The name of an atom ("" when the server does not know it).
    func atomName(_ atom: xcb_atom_t) -> String {
        guard let reply = xcb_get_atom_name_reply(connection, xcb_get_atom_name(connection, atom), nil) else { return "" }
        defer { free(reply) }
        let length = Int(xcb_get_atom_name_name_length(reply))
        guard let bytes = xcb_get_atom_name_name(reply) else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: length), as: UTF8.self)
    }

    func atom(_ name: String) -> xcb_atom_t {
        guard let reply = xcb_intern_atom_reply(connection, xcb_intern_atom(connection, 1, UInt16(name.utf8.count), name), nil)
        else { return xcb_atom_t(XCB_NONE) }
        defer { free(reply) }
        return reply.pointee.atom
    }

    /// The RandR 1.5 monitors, in the server's order.
    func monitors() -> [Monitor] {
        guard let ext = share_xcb_randr_extension(connection), ext.pointee.present != 0 else { return [] }
        free(xcb_randr_query_version_reply(connection, xcb_randr_query_version(connection, 1, 5), nil))
        guard let reply = xcb_randr_get_monitors_reply(connection, xcb_randr_get_monitors(connection, root, 1), nil) else {
            return []
        }
        defer { free(reply) }
        var result: [Monitor] = []
        var iterator = xcb_randr_get_monitors_monitors_iterator(reply)
        while iterator.rem > 0, let info = iterator.data?.pointee {
            result.append(Monitor(name: atomName(info.name),
                                  bounds: Rectangle(x: Int(info.x), y: Int(info.y), width: Int(info.width), height: Int(info.height)),
                                  primary: info.primary != 0))
            xcb_randr_monitor_info_next(&iterator)
        }
        return result
    }

    /// A window's name: _NET_WM_NAME (UTF-8), else WM_NAME.
    func windowName(_ window: xcb_window_t) -> String? {
        for (property, type) in [(atom("_NET_WM_NAME"), atom("UTF8_STRING")), (xcb_atom_t(XCB_ATOM_WM_NAME.rawValue), xcb_atom_t(XCB_GET_PROPERTY_TYPE_ANY.rawValue))] {
            guard let reply = xcb_get_property_reply(connection, xcb_get_property(connection, 0, window, property, type, 0, 256), nil)
            else { continue }
            defer { free(reply) }
            let length = Int(xcb_get_property_value_length(reply))
            if length > 0, let value = xcb_get_property_value(reply) {
                return String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
            }
        }
        return nil
    }

    enum WindowState { case visible(Rectangle), hidden, gone }

    /// Where a window is on the root window, and whether it is shown.
    func windowState(_ window: xcb_window_t) -> WindowState {
        // Three requests sent together, their answers read after: one round trip, not three (it runs every grab).
        let attributesCookie = xcb_get_window_attributes(connection, window)
        let geometryCookie = xcb_get_geometry(connection, window)
        let positionCookie = xcb_translate_coordinates(connection, window, root, 0, 0)
        let attributes = xcb_get_window_attributes_reply(connection, attributesCookie, nil)
        let geometry = xcb_get_geometry_reply(connection, geometryCookie, nil)
        let position = xcb_translate_coordinates_reply(connection, positionCookie, nil)
        defer {
            free(attributes)
            free(geometry)
            free(position)
        }
        guard let attributes, let geometry, let position else { return .gone }
        let bounds = Rectangle(x: Int(position.pointee.dst_x), y: Int(position.pointee.dst_y),
                               width: Int(geometry.pointee.width), height: Int(geometry.pointee.height))
        return attributes.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue) ? .visible(bounds) : .hidden
    }

    /// The top-level windows with a name: the window manager's client list
    /// (_NET_CLIENT_LIST) when there is one, else the root's mapped children
    /// (and their children, for window managers that reparent).
    func topLevelWindows() -> [TopLevelWindow] {
        var candidates: [xcb_window_t] = []
        if let reply = xcb_get_property_reply(connection, xcb_get_property(connection, 0, root, atom("_NET_CLIENT_LIST"),
                                                                           xcb_atom_t(XCB_ATOM_WINDOW.rawValue), 0, 4096), nil) {
            let count = Int(xcb_get_property_value_length(reply)) / 4
            if count > 0, let value = xcb_get_property_value(reply) {
                candidates = Array(UnsafeBufferPointer(start: value.assumingMemoryBound(to: xcb_window_t.self), count: count))
            }
            free(reply)
        }
        if candidates.isEmpty {
            for child in children(of: root) {
                candidates.append(child)
                if windowName(child) == nil { candidates += children(of: child) }
            }
        }
        return candidates.compactMap { window in
            guard let name = windowName(window), case .visible(let bounds) = windowState(window) else { return nil }
            return TopLevelWindow(id: window, name: name, bounds: bounds)
        }
    }

    private func children(of window: xcb_window_t) -> [xcb_window_t] {
        guard let reply = xcb_query_tree_reply(connection, xcb_query_tree(connection, window), nil) else { return [] }
        defer { free(reply) }
        let count = Int(xcb_query_tree_children_length(reply))
        guard count > 0, let list = xcb_query_tree_children(reply) else { return [] }
        return Array(UnsafeBufferPointer(start: list, count: count))
    }
}
