import Dispatch
import Foundation

/// The local control channel of a running `share send`: a Unix socket in a
/// directory only the user can enter, one command line in, one JSON line
/// out (`status`, `pause`, `resume`, `stop`).
public enum ControlChannel {
    /// `$XDG_RUNTIME_DIR/share`, else `/tmp/share-<uid>`, created 0700.
    public static func directory() -> String {
        let base = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map { "\($0)/share" } ?? "/tmp/share-\(getuid())"
        mkdir(base, 0o700)
        return base
    }

    public static func defaultPath() -> String { "\(directory())/send-\(getpid()).sock" }

    /// The only running sender's socket, for `share ctl` without `--socket`.
    public static func findSender() throws -> String {
        let dir = directory()
        let sockets = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
            .filter { $0.hasPrefix("send-") && $0.hasSuffix(".sock") }
            .filter { name in
                // A socket whose process is gone is stale.
                let pid = Int32(name.dropFirst("send-".count).dropLast(".sock".count)) ?? 0
                return pid > 0 && kill(pid, 0) == 0
            }
        guard sockets.count == 1 else {
            throw UsageProblem(sockets.isEmpty ? "no running `share send` found in \(dir)"
                                                : "\(sockets.count) senders are running: pick one with --socket (\(sockets.joined(separator: ", ")))")
        }
        return "\(dir)/\(sockets[0])"
    }

    /// Serves commands on `path` on a background thread until the process ends.
    public static func serve(path: String, handler: @escaping @Sendable (String) -> String) throws {
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw UsageProblem("control socket: \(String(cString: strerror(errno)))") }
        var address = unixAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, listen(fd, 4) == 0 else {
            close(fd)
            throw UsageProblem("control socket \(path): \(String(cString: strerror(errno)))")
        }
        atexit_unlink(path)
        DispatchQueue(label: "share.control").async {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { if errno == EINTR { continue } else { return } }
                var buffer = [UInt8](repeating: 0, count: 256)
                let n = read(client, &buffer, buffer.count)
                let command = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
                let reply = Array((handler(command) + "\n").utf8)
                _ = reply.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                close(client)
            }
        }
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
        let bytes = Array((command + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            reply.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: reply, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
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
