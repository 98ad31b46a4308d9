public import ShareCapture
internal import ShareColor
/// GNOME's monitors as org.gnome.Mutter.DisplayConfig tells them: the
/// connector names RecordMonitor takes, which is primary, and where each
/// sits (for `--list` and `--monitor`).
struct MutterDisplays {
    struct Monitor: Equatable {
        var connector: String
        var name: String
        var primary: Bool
        var x: Int, y: Int, width: Int, height: Int
    }

    let monitors: [Monitor]

    init(bus: DBusConnection) throws {
        let state = try bus.call("org.gnome.Mutter.DisplayConfig", path: "/org/gnome/Mutter/DisplayConfig",
                                 interface: "org.gnome.Mutter.DisplayConfig", method: "GetCurrentState")
        monitors = Self.parse(state)
    }

    init(monitors: [Monitor]) { self.monitors = monitors }

    /// GetCurrentState gives (serial, monitors a((ssss)a(siiddada{sv})a{sv}),
    /// logical monitors a(iiduba(ssss)a{sv}), properties): each monitor's
    /// connector and current mode size; each logical monitor's place, whether
    /// it is primary and the connectors on it.
    static func parse(_ state: [DBusValue]) -> [Monitor] {
        guard state.count >= 3, let physical = state[1].array, let logical = state[2].array else { return [] }
        var sizes: [String: (Int, Int, String)] = [:]
        for monitor in physical {
            guard let fields = monitor.structure, fields.count >= 3, let spec = fields[0].structure, spec.count >= 4,
                  let connector = spec[0].string, let modes = fields[1].array else { continue }
            let display = fields[2].dictionary?["display-name"]?.string ?? spec[2].string ?? connector
            for mode in modes {
                guard let m = mode.structure, m.count >= 7, case .int32(let w) = m[1], case .int32(let h) = m[2] else { continue }
                let current: Bool = { if case .bool(true) = m[6].dictionary?["is-current"]?.unwrapped { return true }; return false }()
                if current || sizes[connector] == nil { sizes[connector] = (Int(w), Int(h), display) }
            }
        }
        var out: [Monitor] = []
        for entry in logical {
            guard let l = entry.structure, l.count >= 6, case .int32(let x) = l[0], case .int32(let y) = l[1],
                  case .bool(let primary) = l[4], let connectors = l[5].array else { continue }
            for c in connectors {
                guard let connector = c.structure?.first?.string, let size = sizes[connector] else { continue }
                out.append(Monitor(connector: connector, name: size.2, primary: primary, x: Int(x), y: Int(y),
                                   width: size.0, height: size.1))
            }
        }
        return out
    }

    /// The primary monitor's connector (the first when none is primary).
    var primary: String {
        get throws(ScreenCastError) {
            guard let monitor = monitors.first(where: \.primary) ?? monitors.first else {
                throw .failed("GNOME reports no monitor to capture")
            }
            return monitor.connector
        }
    }

    /// The connector of a monitor given by connector, display name or index.
    func connector(named name: String) throws(ScreenCastError) -> String {
        if let m = monitors.first(where: { $0.connector == name || $0.name == name }) { return m.connector }
        if let index = Int(name), monitors.indices.contains(index) { return monitors[index].connector }
        let known = monitors.map { "\($0.connector) (\($0.name))" }.joined(separator: ", ")
        throw .unsupported("no monitor \"\(name)\" on this desktop; it has \(known.isEmpty ? "none" : known)")
    }
}

extension PipeWireCapturer {
    /// GNOME's monitors as `--monitor` takes them (connector name or index),
    /// for `share send --list` on a GNOME Wayland desktop.
    public static func gnomeMonitors() throws(ScreenCastError) -> [Monitor] {
        try ScreenCastError.during(missing: "GNOME's display service is not on this session's bus: not a GNOME desktop?") {
            try MutterDisplays(bus: try DBusConnection.session()).monitors.map {
                Monitor(name: "\($0.connector) (\($0.name))", bounds: Rectangle(x: $0.x, y: $0.y, width: $0.width, height: $0.height),
                        primary: $0.primary)
            }
        }
    }
}
