public import Foundation

/// A headless GNOME session (PipeWire, WirePlumber, Mutter with one virtual
/// monitor and XWayland) for tests and benchmarks. Compositors refuse to
/// run as root and tests run as root, so the session runs as an
/// unprivileged user made once (`share-wayland`), and so do the commands
/// given to `start`: a user's screen is captured by that user. Stopped by
/// the session script's PID on deinit.
public final class GnomeSession: @unchecked Sendable {
    public static let user = "share-wayland"
    /// The session's XDG_RUNTIME_DIR (its PipeWire and Wayland sockets).
    public let runtimeDirectory: String
    /// XWayland's display (":0"), which root's X clients may draw on.
    public let xDisplay: String
    /// What a program in the session is started with.
    public let environment: [String: String]
    public let width: Int
    public let height: Int
    private let dbus: ChildProcess
    private let scriptPID: pid_t
    private let ids: (uid: UInt32, gid: UInt32)

    public init(width: Int = 1280, height: Int = 720) throws {
        (self.width, self.height) = (width, height)
        ids = try Self.ensureUser()
        runtimeDirectory = "/tmp/share-wayland-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: runtimeDirectory, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        chown(runtimeDirectory, ids.uid, ids.gid)
        let script = try Self.reachable(ShareBinary.packageRoot.appendingPathComponent("Tests/Support/Wayland/gnome-session.sh").path,
                                        uid: ids.uid)
        dbus = try ChildProcess("setpriv", Self.asUser(ids) + ["dbus-run-session", "--", script, runtimeDirectory, "\(width)x\(height)"],
                                environment: ["HOME": "/home/\(Self.user)", "USER": Self.user, "XDG_RUNTIME_DIR": runtimeDirectory])
        let envFile = runtimeDirectory + "/session.env"
        let deadline = Date().addingTimeInterval(30)
        var values: [String: String] = [:]
        while Date() < deadline {
            if let text = try? String(contentsOfFile: envFile, encoding: .utf8), text.hasSuffix("\n") {
                for line in text.split(separator: "\n") {
                    let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                    if parts.count == 2 { values[parts[0]] = parts[1] }
                }
                break
            }
            guard dbus.isRunning else { throw TestEnvironmentError("the GNOME session did not start: \(dbus.output)") }
            usleep(50_000)
        }
        guard let pid = values["SESSION_PID"].flatMap({ pid_t($0) }), let bus = values["DBUS_SESSION_BUS_ADDRESS"] else {
            dbus.stop()
            throw TestEnvironmentError("the GNOME session gave no bus within 30 s: \(dbus.output)")
        }
        scriptPID = pid
        // Mutter says which X display XWayland took.
        guard let match = dbus.output.range(of: #"Using public X11 display :[0-9]+"#, options: .regularExpression) else {
            kill(pid, SIGTERM)
            throw TestEnvironmentError("Mutter named no XWayland display: \(dbus.output)")
        }
        xDisplay = String(dbus.output[match].split(separator: " ").last!)
        environment = [
            "HOME": "/home/\(Self.user)", "USER": Self.user, "XDG_RUNTIME_DIR": runtimeDirectory,
            "DBUS_SESSION_BUS_ADDRESS": bus, "WAYLAND_DISPLAY": "wayland-0", "DISPLAY": xDisplay,
            "XAUTHORITY": values["XAUTHORITY"] ?? "", "PULSE_SERVER": "unix:\(runtimeDirectory)/pulse/native",
            "XDG_STATE_HOME": "\(runtimeDirectory)/state",
        ]
        // Root's X clients (TestClient, `share scene`) may draw on XWayland.
        _ = try run("setpriv", Self.asUser(ids) + ["env"] + environment.map { "\($0)=\($1)" } + ["xhost", "+si:localuser:root"])
    }

    deinit {
        kill(scriptPID, SIGTERM)
        _ = dbus.wait(timeout: 10)
        try? FileManager.default.removeItem(atPath: runtimeDirectory)
    }

    /// Starts `executable` (the `share` binary by default) as the session's
    /// user, inside the session; `environment` adds to the session's.
    public func start(_ arguments: [String], executable: String? = nil, environment extra: [String: String] = [:],
                      input: Bool = false) throws -> ChildProcess {
        let program = try executable ?? Self.reachable(try ShareBinary.path(), uid: ids.uid, companions: ["share-send", "share-recv"])
        let env = environment.merging(extra) { $1 }
        return try ChildProcess("setpriv", Self.asUser(ids) + ["env"] + env.map { "\($0)=\($1)" } + [program] + arguments,
                                input: input)
    }

    /// Lets the session's user write into `directory` (a test's recordings and statistics).
    public func lend(_ directory: TemporaryDirectory) {
        chown(directory.url.path, ids.uid, ids.gid)
    }

    /// Gives one file to the session's user (a key file the sender reads; mode 0600 stays).
    public func lend(file: String) {
        chown(file, ids.uid, ids.gid)
    }

    /// `setpriv`'s arguments to become the session's user (it execs: the
    /// PID a test holds is the program's own).
    private static func asUser(_ ids: (uid: UInt32, gid: UInt32)) -> [String] {
        ["--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--init-groups", "--"]
    }

    /// The unprivileged user, made once (idempotently).
    private static func ensureUser() throws -> (uid: UInt32, gid: UInt32) {
        if getpwnam(user) == nil {
            let made = try run("useradd", ["--create-home", "--shell", "/bin/bash", user])
            guard made.status == 0 || getpwnam(user) != nil else { throw TestEnvironmentError("useradd \(user): \(made.stderr)") }
        }
        guard let entry = getpwnam(user) else { throw TestEnvironmentError("no user \(user)") }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// `path`, or a copy the user can run when the user cannot reach it (a
    /// clone under /root); executables next to it (`companions`) are copied along.
    static func reachable(_ path: String, uid: UInt32, companions: [String] = []) throws -> String {
        let probe = try run("setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", "test", "-x", path])
        if probe.status == 0 { return path }
        let directory = "/tmp/share-wayland-bin"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o755])
        let folder = (path as NSString).deletingLastPathComponent
        for name in [(path as NSString).lastPathComponent] + companions {
            let target = "\(directory)/\(name)"
            try? FileManager.default.removeItem(atPath: target)
            try FileManager.default.copyItem(atPath: "\(folder)/\(name)", toPath: target)
        }
        return "\(directory)/\((path as NSString).lastPathComponent)"
    }
}

extension GnomeSession {
    /// A person's pointer and keyboard in the session (Mutter's
    /// RemoteDesktop API, through `remote_input.py`), ready for `move` and `press`.
    public func remoteInput() throws -> RemoteInput {
        let script = try Self.reachable(ShareBinary.packageRoot.appendingPathComponent("Tests/Support/Wayland/remote_input.py").path,
                                        uid: ids.uid)
        let process = try start([script], executable: "/usr/bin/python3", input: true)
        guard process.waitForOutput("ready", timeout: 10) else {
            throw TestEnvironmentError("remote input did not start: \(process.output)")
        }
        return RemoteInput(process: process)
    }
}

/// Input given to a GNOME session as a person gives it.
public final class RemoteInput: @unchecked Sendable {
    private let process: ChildProcess
    private var answered = 0

    init(process: ChildProcess) { self.process = process }

    /// Moves the pointer to (x, y) of the monitor, and waits until Mutter took it.
    public func move(x: Int, y: Int) { send("move \(x) \(y)") }

    /// Clicks the left button at (x, y).
    public func click(x: Int, y: Int) { send("click \(x) \(y)") }

    /// Turns the monitor `quarterTurns` quarter turns from upright, as the
    /// display settings do (its pictures change size).
    public func rotate(quarterTurns: Int) { send("rotate \(quarterTurns)") }

    /// Presses and releases a key (an X keysym: 0xff0d is Return).
    public func press(keysym: UInt32) { send("key \(keysym)") }

    private func send(_ command: String) {
        process.type(command + "\n")
        answered += 1
        let deadline = Date().addingTimeInterval(5)
        while process.output.components(separatedBy: "ok\n").count - 1 < answered, Date() < deadline { usleep(10_000) }
    }
}
