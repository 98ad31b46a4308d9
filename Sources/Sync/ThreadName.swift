#if canImport(Glibc)
internal import Glibc
#endif

/// Names the calling thread for the time of a long-running loop, so `top
/// -H`, `perf` and /proc/<pid>/task show which of a sender's or receiver's
/// threads is which (a dispatch worker is otherwise just
/// "…-qos.overcommit"). The worker gets its own name back afterwards.
package enum ThreadName {
    /// Runs `body` with the thread named `name` (Linux keeps 15 bytes of it).
    package static func running<T>(as name: String, _ body: () throws -> T) rethrows -> T {
        let previous = current()
        set(name)
        defer { if let previous { set(previous) } }
        return try body()
    }

    /// The thread's name, from /proc/thread-self/comm (nil if unreadable).
    static func current() -> String? {
        let descriptor = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = read(descriptor, &bytes, bytes.count)
        guard count > 0 else { return nil }
        return String(decoding: bytes[0..<count].prefix { $0 != 0x0A }, as: UTF8.self)
    }

    /// Writing /proc/thread-self/comm is prctl(PR_SET_NAME) without a C call.
    static func set(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = write(descriptor, bytes, bytes.count)
    }
}
