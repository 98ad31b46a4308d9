internal import CXCB
internal import Foundation
#if canImport(Glibc)
internal import Glibc
#endif

/// A test's own X client: windows of one colour, named, moved, hidden and
/// closed; the pointer moved (as the mouse does, or warped as a program does).
public final class TestClient {
    let connection: OpaquePointer
    let screen: xcb_screen_t

    public init(display: String) throws {
        guard let c = xcb_connect(display, nil), xcb_connection_has_error(c) == 0 else {
            throw TestEnvironmentError("cannot connect to \(display)")
        }
        connection = c
        screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data.pointee
    }

    deinit { xcb_disconnect(connection) }

    /// A mapped top-level window filled with `rgb`, at (x, y), named `name`.
    public func window(x: Int, y: Int, width: Int, height: Int, rgb: UInt32, name: String) -> UInt32 {
        let id = xcb_generate_id(connection)
        // override-redirect: placed where asked, as no window manager runs.
        var values: [UInt32] = [rgb, 1]
        xcb_create_window(connection, UInt8(XCB_COPY_FROM_PARENT), id, screen.root, Int16(x), Int16(y), UInt16(width),
                          UInt16(height), 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), screen.root_visual,
                          UInt32(XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue), &values)
        let bytes = Array(name.utf8)
        xcb_change_property(connection, UInt8(XCB_PROP_MODE_REPLACE.rawValue), id, xcb_atom_t(XCB_ATOM_WM_NAME.rawValue),
                            xcb_atom_t(XCB_ATOM_STRING.rawValue), 8, UInt32(bytes.count), bytes)
        xcb_map_window(connection, id)
        sync()
        return id
    }

    public func resize(_ window: UInt32, width: Int, height: Int) {
        var values = [UInt32(width), UInt32(height)]
        xcb_configure_window(connection, window, UInt16(XCB_CONFIG_WINDOW_WIDTH.rawValue | XCB_CONFIG_WINDOW_HEIGHT.rawValue), &values)
        sync()
    }

    public func move(_ window: UInt32, x: Int, y: Int) {
        var values = [UInt32(bitPattern: Int32(x)), UInt32(bitPattern: Int32(y))]
        xcb_configure_window(connection, window, UInt16(XCB_CONFIG_WINDOW_X.rawValue | XCB_CONFIG_WINDOW_Y.rawValue), &values)
        sync()
    }

    public func unmap(_ window: UInt32) { xcb_unmap_window(connection, window); sync() }
    public func map(_ window: UInt32) { xcb_map_window(connection, window); sync() }
    public func destroy(_ window: UInt32) { xcb_destroy_window(connection, window); sync() }

    /// Moves the pointer as a program does (XWarpPointer): the device did
    /// not move, so XInput 2 reports nothing.
    public func warpPointer(x: Int, y: Int) {
        xcb_warp_pointer(connection, UInt32(XCB_NONE), screen.root, 0, 0, 0, 0, Int16(x), Int16(y))
        sync()
    }

    /// Moves the pointer as the mouse does (XTest, as remote-control tools
    /// and input injection do): a raw motion event for XInput 2 clients.
    /// Returns once the server says the pointer is there (fake input is
    /// queued, not done with the request).
    public func movePointer(x: Int, y: Int) {
        xcb_test_fake_input(connection, UInt8(XCB_MOTION_NOTIFY), 0, UInt32(XCB_CURRENT_TIME), screen.root, Int16(x), Int16(y), 0)
        sync()
        for _ in 0..<200 where pointer != (x, y) { usleep(1000) }
    }

    /// Where the pointer is on the screen.
    public var pointer: (x: Int, y: Int) {
        guard let reply = xcb_query_pointer_reply(connection, xcb_query_pointer(connection, screen.root), nil) else {
            return (Int.min, Int.min)
        }
        defer { free(reply) }
        return (Int(reply.pointee.root_x), Int(reply.pointee.root_y))
    }

    /// A top-level window whose name starts with `prefix` (another
    /// program's, say), once one exists: another program maps its window
    /// when it gets to it, so this asks again for up to `seconds`.
    public func window(namedLike prefix: String, within seconds: Double = 5) -> UInt32? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let found = topLevelWindow(namedLike: prefix) { return found }
            if Date() >= deadline { return nil }
            usleep(100_000)
        }
    }

    /// A window named `prefix...` among the root's children, or one level
    /// down (a window manager such as Mutter puts each in a frame of its own).
    private func topLevelWindow(namedLike prefix: String, under parent: UInt32? = nil, depth: Int = 0) -> UInt32? {
        let parent = parent ?? screen.root
        guard let tree = xcb_query_tree_reply(connection, xcb_query_tree(connection, parent), nil) else { return nil }
        defer { free(tree) }
        let children = UnsafeBufferPointer(start: xcb_query_tree_children(tree), count: Int(xcb_query_tree_children_length(tree)))
        for child in children {
            let cookie = xcb_get_property(connection, 0, child, xcb_atom_t(XCB_ATOM_WM_NAME.rawValue),
                                          xcb_atom_t(XCB_ATOM_STRING.rawValue), 0, 64)
            guard let reply = xcb_get_property_reply(connection, cookie, nil) else { continue }
            defer { free(reply) }
            let bytes = UnsafeRawBufferPointer(start: xcb_get_property_value(reply), count: Int(xcb_get_property_value_length(reply)))
            if String(decoding: bytes, as: UTF8.self).hasPrefix(prefix) { return child }
        }
        guard depth == 0 else { return nil }
        for child in children {
            if let found = topLevelWindow(namedLike: prefix, under: child, depth: 1) { return found }
        }
        return nil
    }

    /// A window's size now.
    public func size(of window: UInt32) -> (width: Int, height: Int)? {
        guard let geometry = xcb_get_geometry_reply(connection, xcb_get_geometry(connection, window), nil) else { return nil }
        defer { free(geometry) }
        return (Int(geometry.pointee.width), Int(geometry.pointee.height))
    }

    /// The screen's pixel at (x, y) as the server stores it (32 bits a
    /// pixel: 0xRRGGBB at depth 24, R, G and B in 10 bits each at depth 30).
    public func pixel(x: Int, y: Int) -> UInt32? {
        let cookie = xcb_get_image(connection, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), screen.root, Int16(x), Int16(y), 1, 1, ~0)
        guard let reply = xcb_get_image_reply(connection, cookie, nil) else { return nil }
        defer { free(reply) }
        guard xcb_get_image_data_length(reply) >= 4, let data = xcb_get_image_data(reply) else { return nil }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[$1]) << (8 * $1) }
    }

    /// The pixel at (x, y) once `done` says so of it, or the last read after
    /// `seconds` (pictures take a moment to reach a window).
    public func pixel(x: Int, y: Int, within seconds: Double = 3, until done: (UInt32) -> Bool) -> UInt32? {
        let deadline = Date().addingTimeInterval(seconds)
        var read = pixel(x: x, y: y)
        while read.map(done) != true, Date() < deadline {
            usleep(100_000)
            read = pixel(x: x, y: y)
        }
        return read
    }

    /// Waits until the server has done everything asked so far.
    public func sync() {
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), nil))
    }
}

