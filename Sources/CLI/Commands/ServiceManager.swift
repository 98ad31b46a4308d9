import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how a service is doing (the sd_notify protocol): one
/// datagram to the unix socket `$NOTIFY_SOCKET` names ("@" for the abstract
/// namespace), when systemd started us with `Type=notify`; nothing otherwise.
public enum ServiceManager {
    /// "READY=1" once the service does what it is for (share recv: listening).
    public static func ready(status: String) { send("READY=1\nSTATUS=\(status)") }

    /// "STOPPING=1" as it begins to stop.
    public static func stopping() { send("STOPPING=1") }

    private static func send(_ message: String) {
        guard let path = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], path.count > 1,
              path.hasPrefix("/") || path.hasPrefix("@") else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        // An abstract name's length counts exactly; a path's ends at its NUL.
        let length = MemoryLayout<sa_family_t>.size + bytes.count + (bytes[0] == 0 ? 0 : 1)
        _ = Array(message.utf8).withUnsafeBytes { payload in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, payload.baseAddress, payload.count, 0, $0, socklen_t(length))
                }
            }
        }
    }
}
