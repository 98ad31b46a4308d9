internal import CDBus
internal import ShareBase
internal import ShareSync
#if canImport(Glibc)
internal import Glibc
#endif

/// Why a D-Bus exchange failed: the error's name and message, or a reply
/// that was not what the API promises.
struct DBusError: Error, CustomStringConvertible, Sendable {
    /// The D-Bus error name (org.freedesktop.DBus.Error.ServiceUnknown), when it has one.
    var name: String?
    var message: String
    var description: String { message }

    /// Ours: there is no session bus to connect to.
    static let noSessionBus = "share.NoSessionBus"

    var interfaceMissing: Bool {
        name == "org.freedesktop.DBus.Error.UnknownMethod" || name == "org.freedesktop.DBus.Error.UnknownInterface"
    }

    var serviceMissing: Bool {
        name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner"
    }
}

/// A signal heard: who sent it from where, and its arguments.
struct DBusSignal: Sendable {
    var path: String
    var interface: String
    var member: String
    var arguments: [DBusValue]
}

/// A private connection to the session bus (libdbus), used by one thread
/// at a time: method calls that wait for their reply, and the signals the
/// screen-cast APIs answer with, read as they come. Screen casts live as
/// long as the connection that asked for them, so it stays open for the
/// whole capture.
final class DBusConnection: @unchecked Sendable {
    // Safe: one thread at a time (the one setting capture up, then the
    // capturing thread); libdbus itself locks its connection.
    private let connection: OpaquePointer
    /// Signals that came while a reply was awaited, for `nextSignal`.
    private var heard: [DBusSignal] = []

    /// The user's session bus (DBUS_SESSION_BUS_ADDRESS, or
    /// $XDG_RUNTIME_DIR/bus). Never X11 autolaunch: with neither, there is
    /// no desktop session to cast from.
    static func session() throws(DBusError) -> DBusConnection {
        let address = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) } ?? ""
        let runtime = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? ""
        guard !address.isEmpty || (!runtime.isEmpty && access(runtime + "/bus", F_OK) == 0) else {
            throw DBusError(name: DBusError.noSessionBus,
                            message: "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set): not inside a desktop session")
        }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error) else {
            defer { dbus_error_free(&error) }
            throw DBusError(name: DBusError.noSessionBus, message: "no D-Bus session bus: \(Self.text(error) ?? "cannot connect") "
                            + "(is this a desktop session? DBUS_SESSION_BUS_ADDRESS is not usable)")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        return DBusConnection(connection)
    }

    private init(_ connection: OpaquePointer) { self.connection = connection }

    deinit {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    /// This connection's unique name (":1.42"), which portals build their
    /// request paths from.
    var uniqueName: String { dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? "" }

    /// The descriptor to poll for incoming messages.
    var descriptor: Int32 {
        var fd: Int32 = -1
        return dbus_connection_get_unix_fd(connection, &fd) != 0 ? fd : -1
    }

    var isConnected: Bool { dbus_connection_get_is_connected(connection) != 0 }

    /// Calls `method` and waits up to `timeoutMilliseconds` for its reply's arguments.
    func call(_ destination: String, path: String, interface: String, method: String, _ arguments: [DBusValue] = [],
              timeoutMilliseconds: Int32 = 25_000) throws(DBusError) -> [DBusValue] {
        guard let message = dbus_message_new_method_call(destination, path, interface, method) else {
            throw DBusError(name: nil, message: "out of memory for a D-Bus message")
        }
        defer { dbus_message_unref(message) }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for argument in arguments { DBusWriter.append(argument, to: &iterator) }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, timeoutMilliseconds, &error) else {
            defer { dbus_error_free(&error) }
            let name = error.name.map { String(cString: $0) }
            throw DBusError(name: name, message: "\(interface).\(method): \(Self.text(error) ?? "no reply")")
        }
        defer { dbus_message_unref(reply) }
        keepSignals()
        return DBusReader.arguments(of: reply)
    }

    /// Asks the bus to pass on signals matching `rule` (a D-Bus match rule).
    func listen(_ rule: String) throws(DBusError) {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        dbus_bus_add_match(connection, rule, &error)
        if dbus_error_is_set(&error) != 0 {
            defer { dbus_error_free(&error) }
            throw DBusError(name: nil, message: "cannot listen for D-Bus signals: \(Self.text(error) ?? rule)")
        }
    }

    /// The next signal that came, waiting up to `timeout` for one (zero:
    /// only what is there); nil when none came or the bus closed.
    func nextSignal(timeout: Duration) -> DBusSignal? {
        let deadline = SystemClock.now() + timeout
        _ = dbus_connection_read_write(connection, 0)
        keepSignals()
        while heard.isEmpty, isConnected {
            let now = SystemClock.now()
            guard now < deadline else { break }
            _ = dbus_connection_read_write(connection, Int32(clamping: (deadline.since(now).nanoseconds + 999_999) / 1_000_000))
            keepSignals()
        }
        return heard.isEmpty ? nil : heard.removeFirst()
    }

    /// Moves every signal waiting in libdbus's queue to `heard` (replies and
    /// method calls to this connection are dropped: it serves nothing).
    private func keepSignals() {
        while let message = dbus_connection_pop_message(connection) {
            defer { dbus_message_unref(message) }
            guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL else { continue }
            let string = { (p: UnsafePointer<CChar>?) in p.map { String(cString: $0) } ?? "" }
            heard.append(DBusSignal(path: string(dbus_message_get_path(message)),
                                    interface: string(dbus_message_get_interface(message)),
                                    member: string(dbus_message_get_member(message)),
                                    arguments: DBusReader.arguments(of: message)))
        }
    }

    private static func text(_ error: CDBus.DBusError) -> String? {
        error.message.map { String(cString: $0) }
    }
}
