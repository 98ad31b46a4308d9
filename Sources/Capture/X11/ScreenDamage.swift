internal import CXCB
internal import ShareX11
internal import ShareColor
#if canImport(Glibc)
internal import Glibc
#endif

/// What was drawn on the screen since it was last taken: XDamage on the
/// root window, reporting only "no longer empty" (one event per change
/// after each take, not one per drawing request), and the changed parts
/// kept in an XFixes region on the server until they are fetched.
final class ScreenDamage {
    private let connection: X11Connection
    private let damage: xcb_damage_damage_t
    /// The event code of a damage report.
    let eventCode: UInt8
    /// Where `take` empties the damage into, and where `setAside` keeps
    /// what changed for the next `take`.
    private let taken: xcb_xfixes_region_t
    private let heldRegion: xcb_xfixes_region_t
    private var holds = false

    /// Starts tracking; nil when the server has no DAMAGE or XFixes (or
    /// refuses the damage object).
    init?(connection: X11Connection) {
        let c = connection.connection
        guard let ext = share_xcb_damage_extension(c), ext.pointee.present != 0,
              let fixes = share_xcb_xfixes_extension(c), fixes.pointee.present != 0 else { return nil }
        // DAMAGE must be told which version the client speaks before use.
        free(xcb_damage_query_version_reply(c, xcb_damage_query_version(c, 1, 1), nil))
        free(xcb_xfixes_query_version_reply(c, xcb_xfixes_query_version(c, 4, 0), nil))
        let id = xcb_generate_id(c)
        let level = UInt8(XCB_DAMAGE_REPORT_LEVEL_NON_EMPTY.rawValue)
        guard (try? connection.check(xcb_damage_create_checked(c, id, connection.root, level), "XDamage")) != nil else {
            return nil
        }
        taken = xcb_generate_id(c)
        xcb_xfixes_create_region(c, taken, 0, nil)
        heldRegion = xcb_generate_id(c)
        xcb_xfixes_create_region(c, heldRegion, 0, nil)
        self.connection = connection
        damage = id
        eventCode = ext.pointee.first_event + UInt8(XCB_DAMAGE_NOTIFY)
    }

    /// Empties the damage, keeping what changed for the next `take`: the
    /// server reports again at the next change drawn.
    func setAside() {
        let c = connection.connection
        xcb_damage_subtract(c, damage, xcb_xfixes_region_t(XCB_NONE), taken)
        xcb_xfixes_union_region(c, heldRegion, taken, heldRegion)
        holds = true
        xcb_flush(c)
    }

    /// Empties the damage and returns what changed since the last take
    /// (set-aside parts included), in screen coordinates; nil when the
    /// server did not answer. What is drawn from here on counts for the
    /// next take.
    func take() -> [Rectangle]? {
        let c = connection.connection
        xcb_damage_subtract(c, damage, xcb_xfixes_region_t(XCB_NONE), taken)
        if holds {
            xcb_xfixes_union_region(c, taken, heldRegion, taken)
            xcb_xfixes_set_region(c, heldRegion, 0, nil)
            holds = false
        }
        guard let reply = xcb_xfixes_fetch_region_reply(c, xcb_xfixes_fetch_region(c, taken), nil) else { return nil }
        defer { free(reply) }
        let count = Int(xcb_xfixes_fetch_region_rectangles_length(reply))
        guard let rectangles = xcb_xfixes_fetch_region_rectangles(reply) else { return [] }
        return (0..<count).map { index in
            let r = rectangles[index]
            return Rectangle(x: Int(r.x), y: Int(r.y), width: Int(r.width), height: Int(r.height))
        }
    }
}
