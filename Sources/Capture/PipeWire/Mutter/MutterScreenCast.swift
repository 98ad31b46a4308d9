internal import ShareCapture
internal import ShareColor
internal import ShareBase
internal import ShareSync

/// A screen cast from GNOME's compositor through its own D-Bus API
/// (org.gnome.Mutter.ScreenCast, what gnome-remote-desktop uses): no
/// dialog, so the person sharing must be told plainly that the screen is
/// being captured (GNOME shows only its top-bar indicator). The cast lives
/// as long as this object's bus connection.
final class MutterScreenCast: ScreenCastSession, @unchecked Sendable {
    // Safe: the bus is used by one thread at a time (the opener, then the capturing thread).
    static let service = "org.gnome.Mutter.ScreenCast"
    private static let sessionInterface = "org.gnome.Mutter.ScreenCast.Session"
    private static let streamInterface = "org.gnome.Mutter.ScreenCast.Stream"

    let bus: DBusConnection
    let sessionPath: String
    var busDescriptor: Int32 { bus.descriptor }
    /// Whether the desktop closed the cast (once told, for good).
    private var hasClosed = false
    /// When the cast closed, and when the desktop last said its monitors changed.
    private var closedAt: MonotonicTime?
    private var monitorsChangedAt: MonotonicTime?
    let node: UInt32
    var pipeWireDescriptor: Int32 { -1 }
    let summary: String

    /// Cursor modes of the API: hidden, drawn into the pictures, or metadata.
    enum CursorMode: UInt32 { case hidden = 0, embedded = 1, metadata = 2 }

    /// Starts a cast of `source` and waits for its PipeWire node.
    init(source: CaptureSource, cursor: CursorMode) throws(ScreenCastError) {
        (bus, sessionPath, summary, node) = try ScreenCastError.during(
            missing: "GNOME's screen cast service (\(Self.service)) is not on this session's bus: "
                + "not a GNOME desktop? (--capture portal asks the desktop's portal)") {
            let bus = try DBusConnection.session()
            let created = try bus.call(Self.service, path: "/org/gnome/Mutter/ScreenCast", interface: Self.service,
                                       method: "CreateSession", [.dictionary([:])])
            guard let path = created.first?.string else { throw ScreenCastError.unexpected("CreateSession gave no session") }
            try bus.listen("type='signal',sender='\(Self.service)',path='\(path)',interface='\(Self.sessionInterface)',member='Closed'")
            try bus.listen("type='signal',interface='org.gnome.Mutter.DisplayConfig',member='MonitorsChanged'")
            let (stream, summary) = try Self.record(source, cursor: cursor, bus: bus, session: path)
            try bus.listen("type='signal',sender='\(Self.service)',path='\(stream)',interface='\(Self.streamInterface)'")
            _ = try bus.call(Self.service, path: path, interface: Self.sessionInterface, method: "Start")
            return (bus, path, summary, try Self.awaitNode(bus: bus, stream: stream))
        }
    }

    /// Asks for the stream of `source`: a monitor by connector name (the
    /// whole screen is the primary monitor), a region, or a window.
    private static func record(_ source: CaptureSource, cursor: CursorMode, bus: DBusConnection,
                               session: String) throws -> (stream: String, summary: String) {
        let properties: [String: DBusValue] = ["cursor-mode": .uint32(cursor.rawValue)]
        let reply: [DBusValue]
        let summary: String
        switch source {
        case .screen, .monitor:
            let displays = try MutterDisplays(bus: bus)
            let connector = if case .monitor(let name) = source { try displays.connector(named: name) } else { try displays.primary }
            reply = try bus.call(service, path: session, interface: sessionInterface, method: "RecordMonitor",
                                 [.string(connector), .dictionary(properties)])
            summary = "monitor \(connector)"
        case .region(let r):
            reply = try bus.call(service, path: session, interface: sessionInterface, method: "RecordArea",
                                 [.int32(Int32(r.x)), .int32(Int32(r.y)), .int32(Int32(r.width)), .int32(Int32(r.height)),
                                  .dictionary(properties)])
            summary = "region \(r)"
        case .window(let name):
            guard let id = UInt64(name) else {
                throw ScreenCastError.unsupported("GNOME's screen cast takes a window by Mutter's numeric id (--window ID), "
                                                  + "not \"\(name)\"; the portal (--capture portal --window) lets you pick one")
            }
            var withWindow = properties
            withWindow["window-id"] = .uint64(id)
            reply = try bus.call(service, path: session, interface: sessionInterface, method: "RecordWindow",
                                 [.dictionary(withWindow)])
            summary = "window \(id)"
        }
        guard let stream = reply.first?.string else { throw ScreenCastError.unexpected("no stream was given") }
        return (stream, summary)
    }

    /// The stream's PipeWire node, told by a signal once the session started.
    private static func awaitNode(bus: DBusConnection, stream: String) throws(ScreenCastError) -> UInt32 {
        let deadline = SystemClock.now() + .seconds(10)
        while SystemClock.now() < deadline {
            guard let signal = bus.nextSignal(timeout: deadline.since(SystemClock.now())) else { continue }
            if signal.member == "PipeWireStreamAdded", signal.path == stream, let node = signal.arguments.first?.uint32 {
                return node
            }
            if signal.member == "Closed" { throw .ended("the screen cast session was closed before it started") }
        }
        throw .failed("GNOME's screen cast gave no PipeWire stream within 10 s")
    }

    /// Whether the compositor closed the session (the cast stopped from the
    /// top bar, the desktop ending); reads what the bus has without waiting.
    func closed() -> Bool {
        while !hasClosed, let signal = bus.nextSignal(timeout: .zero) { note(signal) }
        if !bus.isConnected { hasClosed = true }
        return hasClosed
    }

    private func note(_ signal: DBusSignal) {
        if signal.member == "Closed" && signal.path == sessionPath {
            hasClosed = true
            closedAt = SystemClock.now()
        }
        if signal.member == "MonitorsChanged" { monitorsChangedAt = SystemClock.now() }
    }

    /// Whether the desktop said its monitors changed within `span` of the
    /// cast closing, waiting that long for it (it comes just after):
    /// a cast stopped from the top bar long after a monitor was plugged in
    /// is not a reconfiguration.
    func monitorsChanged(within span: Duration) -> Bool {
        let closed = closedAt ?? SystemClock.now()
        let deadline = closed + span
        func near() -> Bool { monitorsChangedAt.map { $0 + span >= closed } ?? false }
        while !near(), bus.isConnected, SystemClock.now() < deadline {
            let left = max(.milliseconds(1), deadline.since(SystemClock.now()))
            if let signal = bus.nextSignal(timeout: left) { note(signal) }
        }
        return near()
    }

    func stop() {
        _ = try? bus.call(Self.service, path: sessionPath, interface: Self.sessionInterface, method: "Stop",
                          timeoutMilliseconds: 2_000)
    }
}

extension PipeWireCapturer {
    /// Whether GNOME's screen cast service answers on the session bus.
    public static func gnomeAnswers() -> Bool {
        guard let bus = try? DBusConnection.session() else { return false }
        let version = try? bus.call(MutterScreenCast.service, path: "/org/gnome/Mutter/ScreenCast",
                                    interface: "org.freedesktop.DBus.Properties", method: "Get",
                                    [.string(MutterScreenCast.service), .string("Version")], timeoutMilliseconds: 2_000)
        return version?.first?.unwrapped.int32OrUInt32 != nil
    }
}

extension DBusValue {
    var int32OrUInt32: Int? {
        switch unwrapped {
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        default: nil
        }
    }
}
