internal import CXCB
public import ShareCapture
public import ShareX11
internal import ShareColor
#if canImport(Glibc)
internal import Glibc
#endif

/// What a capturer can be asked to capture, found on the display: the
/// monitors and windows there are, the rectangle a source names, and the
/// extensions' events it listens to (the pointer's shape, the screen's size).
extension ScreenCapturer {
    /// The monitors and named top-level windows of a display (`share send --list`).
    public static func inventory(display: String? = nil) throws(X11Error) -> (monitors: [Monitor], windows: [TopLevelWindow]) {
        let connection = try X11Connection(display: display)
        return (connection.monitors(), connection.topLevelWindows())
    }

    /// The rectangle a source names now, and the window to follow.
    static func resolve(_ source: CaptureSource, on connection: X11Connection,
                        screen: (width: Int, height: Int)) throws(X11Error) -> (Rectangle, xcb_window_t?) {
        let (screenWidth, screenHeight) = screen
        switch source {
        case .screen:
            return (Rectangle(x: 0, y: 0, width: screenWidth, height: screenHeight), nil)
        case .region(let region):
            guard region.fits(width: screenWidth, height: screenHeight) else {
                throw X11Error("region \(region) is not within the \(screenWidth)x\(screenHeight) screen")
            }
            return (region, nil)
        case .monitor(let name):
            let monitors = connection.monitors()
            let list = monitors.enumerated().map { "\($0.offset): \($0.element.name) \($0.element.bounds)" }.joined(separator: ", ")
            guard let monitor = monitors.first(where: { $0.name == name }) ?? Int(name).flatMap({ monitors.indices.contains($0) ? monitors[$0] : nil })
            else { throw X11Error("no monitor \(name) (the display has \(list.isEmpty ? "none" : list))") }
            return (monitor.bounds.clamped(width: screenWidth, height: screenHeight), nil)
        case .window(let name):
            let window = try findWindow(name, on: connection)
            switch connection.windowState(window) {
            case .visible(let bounds):
                return (bounds.clamped(width: screenWidth, height: screenHeight), window)
            case .hidden:
                throw X11Error("window \(name) is not shown (unmapped or minimised)")
            case .gone:
                throw X11Error("no window \(name)")
            }
        }
    }

    private static func findWindow(_ name: String, on connection: X11Connection) throws(X11Error) -> xcb_window_t {
        let number = name.lowercased().hasPrefix("0x") ? UInt32(name.dropFirst(2), radix: 16) : UInt32(name)
        if let number { return number }
        let windows = connection.topLevelWindows()
        if let exact = windows.first(where: { $0.name == name }) { return exact.id }
        let matches = windows.filter { $0.name.lowercased().contains(name.lowercased()) }
        if matches.count == 1 { return matches[0].id }
        let shown = (matches.isEmpty ? windows : matches).prefix(8)
            .map { "0x\(String($0.id, radix: 16)) \"\($0.name)\"" }.joined(separator: ", ")
        throw X11Error(matches.isEmpty ? "no window named \(name) (\(shown.isEmpty ? "none has a name" : shown))"
                       : "\(matches.count) windows match \(name): \(shown); give its id")
    }

    /// Turns on XFixes (cursor images, and events when the cursor's shape
    /// changes); false when the server has no XFixes.
    static func enableCursor(on connection: X11Connection) -> Bool {
        let c = connection.connection
        guard let ext = share_xcb_xfixes_extension(c), ext.pointee.present != 0 else { return false }
        free(xcb_xfixes_query_version_reply(c, xcb_xfixes_query_version(c, 4, 0), nil))
        xcb_xfixes_select_cursor_input(c, connection.root, UInt32(XCB_XFIXES_CURSOR_NOTIFY_MASK_DISPLAY_CURSOR.rawValue))
        connection.flush()
        return true
    }

    /// Asks RandR for an event when the screen changes size; its code.
    static func watchScreenSize(on connection: X11Connection) -> UInt8? {
        let c = connection.connection
        guard let ext = share_xcb_randr_extension(c), ext.pointee.present != 0 else { return nil }
        free(xcb_randr_query_version_reply(c, xcb_randr_query_version(c, 1, 5), nil))
        xcb_randr_select_input(c, connection.root, UInt16(XCB_RANDR_NOTIFY_MASK_SCREEN_CHANGE.rawValue))
        connection.flush()
        return ext.pointee.first_event + UInt8(XCB_RANDR_SCREEN_CHANGE_NOTIFY)
    }
}
