internal import CXCB
internal import ShareCapture
internal import ShareColor
internal import ShareX11
#if canImport(Glibc)
internal import Glibc
#endif

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
