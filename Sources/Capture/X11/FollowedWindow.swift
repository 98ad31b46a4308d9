internal import CXCB
internal import ShareColor
internal import ShareX11

/// A shared window, followed as it moves, resizes, hides and closes: what
/// the capturer grabs is where the window is at each grab.
struct FollowedWindow {
    let id: xcb_window_t
    /// Not shown at the last look (unmapped, minimised): nothing is grabbed.
    private(set) var hidden = false

    init(_ id: xcb_window_t) { self.id = id }

    /// Where the window is on a screen of `screen`'s size: its bounds up to
    /// the screen's (partly off screen, the same size from the screen's
    /// edge, so dragging it makes no new encoder); nil while it is hidden.
    /// Throws once it was closed.
    mutating func look(on connection: X11Connection, screen: (width: Int, height: Int)) throws(X11Error) -> Rectangle? {
        switch connection.windowState(id) {
        case .gone:
            throw X11Error("the window 0x\(String(id, radix: 16)) was closed")
        case .hidden:
            hidden = true
            return nil
        case .visible(let bounds):
            hidden = false
            return bounds.clamped(width: screen.width, height: screen.height)
        }
    }
}
