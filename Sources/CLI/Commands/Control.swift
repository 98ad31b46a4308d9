import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Foundation
public import ShareWire
internal import ShareBase
internal import ShareSync

/// The local control channel of a running `share send` or `share recv`: a
/// Unix socket in a directory only the user can enter, one command line in,
/// one JSON line out (`status`, `stop`; a sender also `pause`, `resume`,
/// `budget SIZE`). A client gets a second to send its line: a silent one
/// cannot wedge the channel.
public enum ControlChannel {
    /// `$XDG_RUNTIME_DIR/share`, else `/tmp/share-<uid>`, created 0700. An
    /// existing one must be a real directory (not a link) of this user that
    /// no one else can enter: `/tmp` is shared, and someone could have made
    /// it first.
    public static func directory() throws -> String {
        let base = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map { "\($0)/share" } ?? "/tmp/share-\(getuid())"
        if mkdir(base, 0o700) != 0 && errno != EEXIST {
            throw UsageProblem("cannot create \(base): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(base, &info) == 0 else { throw UsageProblem("cannot use \(base): \(String(cString: strerror(errno)))") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw UsageProblem("\(base) is not a directory (a link?): refusing it") }
        guard info.st_uid == getuid() else { throw UsageProblem("\(base) belongs to user \(info.st_uid), not you: refusing it") }
        guard info.st_mode & 0o077 == 0 else {
            throw UsageProblem("\(base) can be entered by others (mode \(String(info.st_mode & 0o777, radix: 8))): run chmod 700 \(base)")
        }
        return base
    }

    /// What runs: its socket's name starts with the role ("send-<pid>.sock").
    public enum Role: String, CaseIterable, Sendable {
        case send, recv
    }

    public static func defaultPath(_ role: Role = .send) throws -> String { "\(try directory())/\(role.rawValue)-\(getpid()).sock" }

    /// The only running `share send` or `share recv` (of `roles`), for
    /// `share ctl` without `--socket`.
    public static func findRunning(_ roles: [Role] = Role.allCases) throws -> String {
        let dir = try directory()
        let sockets = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted().filter { name in
            guard let role = roles.first(where: { name.hasPrefix("\($0.rawValue)-") }), name.hasSuffix(".sock") else { return false }
            // A socket whose process is gone is stale.
            let pid = Int32(name.dropFirst(role.rawValue.count + 1).dropLast(".sock".count)) ?? 0
            return pid > 0 && kill(pid, 0) == 0
        }
        let what = roles.map { "`share \($0.rawValue)`" }.joined(separator: " or ")
        guard sockets.count == 1 else {
            throw UsageProblem(sockets.isEmpty ? "no running \(what) found in \(dir)"
                                                : "\(sockets.count) are running: pick one with --socket (\(sockets.joined(separator: ", ")))")
        }
        return "\(dir)/\(sockets[0])"
    }

    /// Serves commands on `path` on a background thread until the process ends.
    public static func serve(path: String, handler: @escaping @Sendable (ControlRequest) -> String) throws {
        try removeStaleSocket(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UsageProblem("control socket: \(String(cString: strerror(errno)))") }
        var address = unixAddress(path)
        // Created 0600 by the umask (a chmod after bind would follow a link
        // swapped in between); the directory keeps others out anyway.
        let mask = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(mask)
        guard bound == 0, listen(fd, 4) == 0 else {
            close(fd)
            throw UsageProblem("control socket \(path): \(String(cString: strerror(errno)))")
        }
        atexit_unlink(path)
        DispatchQueue(label: "share.control").async {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { if errno == EINTR { continue } else { return } }
                let reply = Array((reply(to: readRequest(client), handler) + "\n").utf8)
                // A client gone before its reply (Ctrl-C on `share ctl`) is an
                // EPIPE here, not a SIGPIPE that would end the sender.
                _ = reply.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                close(client)
            }
        }
    }

    /// One client's request: the bytes until a newline, the end of the
    /// stream or one second, whichever comes first (a client that says
    /// nothing, or drips a byte at a time, cannot hold the channel).
    private static func readRequest(_ client: Int32) -> ControlRequest {
        var reader = ControlRequestReader()
        var buffer = [UInt8](repeating: 0, count: ControlRequest.maximumLength + 1)
        let deadline = SystemClock.now() + .seconds(1)
        while true {
            // One reading of the clock per turn: a test and a later subtraction
            // could see it pass the deadline in between.
            let now = SystemClock.now()
            guard now < deadline else { break }
            setTimeout(client, microseconds: max(1_000, Int(deadline.since(now).nanoseconds / 1_000)))
            let n = read(client, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            if let request = reader.consume(buffer[0..<n]) { return request }
        }
        return reader.finish()
    }

    private static func reply(to request: ControlRequest, _ handler: (ControlRequest) -> String) -> String {
        switch request {
        case .unknown(let text): #"{"ok":false,"error":"unknown command \"\#(text)\" (pause, resume, stop, status, budget SIZE)"}"#
        case .malformed(let why): #"{"ok":false,"error":"malformed request: \#(why)"}"#
        default: handler(request)
        }
    }

    /// The reply to `status`: the state in words and the counters, as one JSON line.
    public static func statusReply(state: String, statistics: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(statistics)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return #"{"ok":true,"state":"\#(state)","statistics":\#(body)}"#
    }

    /// Sends one command and returns the reply.
    public static func send(_ command: String, to path: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = unixAddress(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw UsageProblem("cannot reach \(path): \(String(cString: strerror(errno)))") }
        setTimeout(fd, microseconds: 5_000_000)
        let bytes = Array((command + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: reply, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Removes a socket left at `path` by a sender that is gone; anything
    /// else there (a file, a link, a live sender's socket) is refused, never
    /// removed.
    static func removeStaleSocket(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw UsageProblem("--control \(path): something that is not a socket is there; refusing to replace it")
        }
        if (try? send("status", to: path)) != nil {
            throw UsageProblem("--control \(path): a running sender already listens there")
        }
        unlink(path)
    }

    /// Reads and writes on `fd` give up after `microseconds`.
    private static func setTimeout(_ fd: Int32, microseconds: Int) {
        var limit = timeval(tv_sec: microseconds / 1_000_000, tv_usec: microseconds % 1_000_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    private static func unixAddress(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
        }
        return address
    }

    nonisolated(unsafe) private static var toUnlink: [String] = []
    private static func atexit_unlink(_ path: String) {
        toUnlink.append(path)
        atexit { for path in ControlChannel.toUnlink { unlink(path) } }
    }
}

public struct UsageProblem: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
