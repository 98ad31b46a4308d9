public import Foundation

/// A child process started by a test with posix_spawn, its output going to
/// a log file, and stopped by its PID (waitpid) on deinit.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let name: String
    public let logPath: String
    private var exitStatus: Int32?
    /// The write end of the child's standard input, when it was asked for.
    private var input: Int32 = -1

    /// `input`: the child reads its standard input from a pipe the test
    /// writes with `type(_:)`; otherwise from /dev/null.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                input: Bool = false) throws {
        let path = executable.hasPrefix("/") ? executable : try which(executable)
        name = (path as NSString).lastPathComponent
        logPath = NSTemporaryDirectory() + "share-\(name)-\(UUID().uuidString.prefix(8)).log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if input {
            guard pipe(&pipeEnds) == 0 else { throw TestEnvironmentError("pipe: errno \(errno)") }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[0], 0)
            posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        // The test runner blocks some signals; a child must start with none
        // blocked and default handlers, or it would ignore our SIGTERM.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let status = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        if input { close(pipeEnds[0]) }
        guard status == 0 else { throw TestEnvironmentError("cannot start \(path): errno \(status)") }
        pid = child
        self.input = pipeEnds[1]
    }

    /// Writes `text` to the child's standard input (started with `input: true`).
    public func type(_ text: String) {
        let bytes = Array(text.utf8)
        if input >= 0 { _ = Glibc.write(input, bytes, bytes.count) }
    }

    /// Waits until the output contains `text` (true) or `timeout` passes.
    public func waitForOutput(_ text: String, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if output.contains(text) { return true }
            usleep(20_000)
        }
        return output.contains(text)
    }

    /// True until the child has exited (and been reaped).
    public var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            return false
        }
        return true
    }

    /// Sends `signal`, waits up to `timeout` for the exit, then SIGKILLs.
    public func stop(signal: Int32 = SIGTERM, timeout: TimeInterval = 5) {
        guard isRunning else { return }
        kill(pid, signal)
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { usleep(5_000) }
        if isRunning {
            kill(pid, SIGKILL)
            while isRunning { usleep(5_000) }
        }
    }

    /// Waits for the exit (SIGTERM, then SIGKILL, after `timeout`) and returns
    /// the status and everything the child printed.
    public func wait(timeout: TimeInterval = 60) -> (status: Int32, output: String) {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning && Date() < deadline { usleep(10_000) }
        if isRunning { stop() }
        return (exitStatus ?? -1, output)
    }

    /// Everything printed so far.
    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    deinit {
        if input >= 0 { close(input) }
        stop(signal: SIGKILL, timeout: 1)
        try? FileManager.default.removeItem(atPath: logPath)
    }
}

/// An Xvfb server on a free display number, for tests that need a real X
/// server; or, `resizable`, an Xephyr server (a nested X server, with MIT-SHM,
/// DAMAGE, XFixes and RandR) inside a hidden Xvfb, whose screen changes size
/// with RandR as a laptop's does when it is docked (Xvfb's cannot).
public final class VirtualDisplay: @unchecked Sendable {
    public let display: String
    public let width: Int
    public let height: Int
    private let server: ChildProcess
    private let host: VirtualDisplay?

    /// Display numbers this process has handed out: suites run in
    /// parallel, and two of them must never race for the same number.
    nonisolated(unsafe) private static var claimed = Set<Int>()
    private static let claiming = NSLock()

    /// `depth`: 24 (8 bits a channel) or 30 (10 bits a channel), both
    /// stored in 32 bits a pixel; 16 and 8 store fewer.
    public init(width: Int = 1280, height: Int = 720, depth: Int = 24, resizable: Bool = false) throws {
        self.width = width
        self.height = height
        // Xephyr's screen can grow to what its host's holds.
        host = resizable ? try VirtualDisplay(width: max(width, 1920), height: max(height, 1200)) : nil
        var number = 90 + Int(getpid() % 200)
        for _ in 0..<20 {
            // Free: not claimed here, and neither a socket nor a lock file exists.
            Self.claiming.lock()
            while Self.claimed.contains(number) || FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)")
                    || FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") {
                number += 1
            }
            Self.claimed.insert(number)
            Self.claiming.unlock()
            let candidate = try host.map { host in
                try ChildProcess("Xephyr", [":\(number)", "-screen", "\(width)x\(height)x24", "-resizeable", "-nolisten", "tcp",
                                            "-noreset"], environment: ["DISPLAY": host.display])
            } ?? ChildProcess("Xvfb", [":\(number)", "-screen", "0", "\(width)x\(height)x\(depth)", "-nolisten",
                                       "tcp", "-noreset", "+extension", "MIT-SHM"])
            // Ours only if the lock file names our server: another process
            // may have started one on the same number a moment earlier.
            let deadline = Date().addingTimeInterval(10)
            var owner: pid_t?
            while owner == nil && Date() < deadline && candidate.isRunning {
                if FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)"),
                   let text = try? String(contentsOfFile: "/tmp/.X\(number)-lock", encoding: .utf8) {
                    owner = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
                }
                if owner == nil { usleep(20_000) }
            }
            if owner == candidate.pid && candidate.isRunning {
                display = ":\(number)"
                server = candidate
                usleep(host == nil ? 100_000 : 500_000)
                return
            }
            candidate.stop()
            number += 1
        }
        throw TestEnvironmentError("\(resizable ? "Xephyr" : "Xvfb") did not start on any free display")
    }

    /// Changes the screen's size through RandR (`xrandr -s`; a resizable
    /// display only, to one of its modes: 1024x768, 800x600, 1280x1024, ...).
    public func resize(width: Int, height: Int) throws {
        guard host != nil else { throw TestEnvironmentError("only a resizable display changes size") }
        let result = try run("xrandr", ["-s", "\(width)x\(height)"], environment: ["DISPLAY": display])
        guard result.status == 0 else { throw TestEnvironmentError("xrandr -s \(width)x\(height): \(result.stderr)") }
    }

    /// Ends the X server now (as when a session's display goes away).
    public func stop() { server.stop(signal: SIGKILL) }

    deinit { server.stop() }
}
