internal import ShareCapture
internal import ShareSync

/// A screen cast through the xdg-desktop-portal ScreenCast portal, which
/// every desktop with a portal backend serves (KDE, GNOME, sway, Hyprland):
/// the desktop asks the person sharing what to share, once. With
/// `persist_mode` the desktop gives a restore token, kept under
/// `$XDG_STATE_HOME/share/`, so later runs start without asking again.
final class ScreenCastPortal: ScreenCastSession, @unchecked Sendable {
    // Safe: the bus is used by one thread at a time (the opener, then the capturing thread).
    static let service = "org.freedesktop.portal.Desktop"
    static let path = "/org/freedesktop/portal/desktop"
    static let interface = "org.freedesktop.portal.ScreenCast"

    let bus: DBusConnection
    let sessionPath: String
    var busDescriptor: Int32 { bus.descriptor }
    /// Whether the desktop closed the cast (once told, for good).
    private var hasClosed = false
    let node: UInt32
    let pipeWireDescriptor: Int32
    let summary: String

    /// `remembered`: start from the choice the desktop remembered last
    /// time (its restore token), asking only when it has none; false asks again.
    init(source: CaptureSource, cursor: MutterScreenCast.CursorMode, remembered: Bool = true,
         tokenStore: RestoreTokenStore = RestoreTokenStore()) throws(ScreenCastError) {
        let types: UInt32
        switch source {
        case .screen, .monitor: types = 1
        case .window: types = 2
        case .region:
            throw .unsupported("the screen cast portal shares monitors and windows, not regions: "
                               + "use --capture gnome on GNOME, or share the monitor")
        }
        (bus, sessionPath, node, pipeWireDescriptor, summary) = try ScreenCastError.during(
            missing: "no screen cast portal: xdg-desktop-portal is not running on this session's bus "
                + "(install xdg-desktop-portal and your desktop's backend)",
            noInterface: "the desktop portal has no ScreenCast backend for this desktop") {
            try Self.start(types: types, cursor: cursor, restoring: remembered ? tokenStore.load(types: types) : nil,
                           tokenStore: tokenStore)
        }
    }

    /// Asks the portal for a cast of `types` (1 monitor, 2 window): the
    /// session, the dialog (or the remembered choice), the stream and the
    /// PipeWire remote to reach it through.
    private static func start(types: UInt32, cursor: MutterScreenCast.CursorMode, restoring saved: String?,
                              tokenStore: RestoreTokenStore) throws
        -> (DBusConnection, String, UInt32, Int32, String) {
        let bus = try DBusConnection.session()
        let available = try property("AvailableSourceTypes", bus: bus)?.uint32 ?? 1
        guard available & types != 0 else {
            throw ScreenCastError.unsupported("this desktop's portal cannot share a \(types == 2 ? "window" : "monitor")")
        }
        let cursorModes = try property("AvailableCursorModes", bus: bus)?.uint32 ?? 0
        let created = try request(bus: bus, method: "CreateSession", token: "share_c") { token in
            [.dictionary(["handle_token": .string(token), "session_handle_token": .string("share_session")])]
        }
        guard let session = created["session_handle"]?.string else { throw ScreenCastError.unexpected("no session handle") }
        try bus.listen("type='signal',sender='\(service)',path='\(session)',interface='org.freedesktop.portal.Session'")
        var options: [String: DBusValue] = ["types": .uint32(types), "multiple": .bool(false), "persist_mode": .uint32(2)]
        if let mode = cursorMode(cursor, available: cursorModes) { options["cursor_mode"] = .uint32(mode) }
        if let saved { options["restore_token"] = .string(saved) }
        _ = try request(bus: bus, method: "SelectSources", token: "share_s") { token in
            var withToken = options
            withToken["handle_token"] = .string(token)
            return [.objectPath(session), .dictionary(withToken)]
        }
        let started = try request(bus: bus, method: "Start", token: "share_t") { token in
            [.objectPath(session), .string(""), .dictionary(["handle_token": .string(token)])]
        }
        guard let first = started["streams"]?.array?.first?.structure, let node = first.first?.uint32 else {
            throw ScreenCastError.unexpected("Start gave no stream")
        }
        if let token = started["restore_token"]?.string { tokenStore.save(token, types: types) }
        let remote = try bus.call(service, path: path, interface: interface, method: "OpenPipeWireRemote",
                                  [.objectPath(session), .dictionary([:])])
        guard case .fd(let fd)? = remote.first?.unwrapped else { throw ScreenCastError.unexpected("no PipeWire remote") }
        let what = types == 2 ? "window" : "monitor"
        let summary = saved != nil && started["restore_token"] != nil
            ? "the \(what) chosen before (the desktop remembered it; --forget-screen-choice asks again)"
            : "the \(what) chosen in the desktop's dialog"
        return (bus, session, node, fd, summary)
    }

    /// The portal's cursor mode: metadata when asked and offered, else
    /// drawn in when offered, else none (the portal's default).
    static func cursorMode(_ wanted: MutterScreenCast.CursorMode, available: UInt32) -> UInt32? {
        switch wanted {
        case .metadata where available & 4 != 0: 4
        case .metadata where available & 2 != 0, .embedded where available & 2 != 0: 2
        case .hidden where available & 1 != 0: 1
        default: nil
        }
    }

    private static func property(_ name: String, bus: DBusConnection) throws -> DBusValue? {
        try bus.call(service, path: path, interface: "org.freedesktop.DBus.Properties", method: "Get",
                     [.string(interface), .string(name)]).first?.unwrapped
    }

    /// Calls a portal method that answers through a Request object's
    /// Response signal, and waits for it (a person may be choosing: no
    /// limit but the dialog's own). Response 1 is the person saying no.
    private static func request(bus: DBusConnection, method: String, token: String,
                                arguments: (String) -> [DBusValue]) throws -> [String: DBusValue] {
        let sender = String(bus.uniqueName.dropFirst().map { $0 == "." ? "_" : $0 })
        let expected = "\(path)/request/\(sender)/\(token)"
        try bus.listen("type='signal',sender='\(service)',path='\(expected)',interface='org.freedesktop.portal.Request',member='Response'")
        let reply = try bus.call(service, path: path, interface: interface, method: method, arguments(token))
        let requestPath = reply.first?.string ?? expected
        while true {
            guard bus.isConnected else { throw ScreenCastError.failed("the session bus went away during \(method)") }
            guard let signal = bus.nextSignal(timeout: .seconds(1)) else { continue }
            if signal.member == "Closed", signal.interface == "org.freedesktop.portal.Session" {
                throw ScreenCastError.ended("the desktop closed the screen cast session during \(method)")
            }
            guard signal.member == "Response", signal.path == requestPath, let code = signal.arguments.first?.uint32 else { continue }
            let results = signal.arguments.dropFirst().first?.dictionary ?? [:]
            switch code {
            case 0: return results
            case 1: throw ScreenCastError.cancelled("screen sharing was cancelled in the desktop's dialog")
            default: throw ScreenCastError.failed("the desktop's portal refused \(method) (response \(code))")
            }
        }
    }

    func closed() -> Bool {
        while !hasClosed, let signal = bus.nextSignal(timeout: .zero) {
            if signal.member == "Closed" && signal.path == sessionPath { hasClosed = true }
        }
        if !bus.isConnected { hasClosed = true }
        return hasClosed
    }

    func stop() {
        _ = try? bus.call(Self.service, path: sessionPath, interface: "org.freedesktop.portal.Session", method: "Close",
                          timeoutMilliseconds: 2_000)
    }
}
