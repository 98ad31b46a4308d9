#if canImport(Glibc)
internal import Glibc
#endif

/// A TCP connection for short request/response exchanges (an HTTP API
/// call): connect within a deadline, write everything, read what comes.
/// Every call waits at most until the deadline it is given; nothing blocks
/// forever on a peer that stops answering.
public final class TCPStream {
    private let descriptor: Int32

    /// Connects to `address` within `timeout` (non-blocking connect + poll).
    public init(connectingTo address: SocketAddress, timeout: Duration) throws(TransportError) {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw TransportError("socket", errno: errno) }
        descriptor = fd
        var storage = address.storage
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, address.length) }
        }
        if status != 0 {
            guard errno == EINPROGRESS else {
                let error = errno
                close(fd)
                throw TransportError("connect to \(address)", errno: error)
            }
            guard try Self.wait(fd, for: Int16(POLLOUT), timeout: timeout) else {
                close(fd)
                throw TransportError("connect to \(address): no answer within \(timeout)", errno: 0)
            }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
            guard failure == 0 else {
                close(fd)
                throw TransportError("connect to \(address)", errno: failure)
            }
        }
    }

    deinit { close(descriptor) }

    /// The socket, for a layer above that reads and writes it itself (TLS);
    /// this stream still owns and closes it.
    public var fileDescriptor: Int32 { descriptor }

    /// Waits up to `timeout` until the socket is readable (or writable);
    /// false when the time ran out.
    public func wait(readable: Bool, timeout: Duration) throws(TransportError) -> Bool {
        try Self.wait(descriptor, for: Int16(readable ? POLLIN : POLLOUT), timeout: timeout)
    }

    /// Writes all of `bytes` within `timeout`.
    public func write(_ bytes: [UInt8], timeout: Duration) throws(TransportError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                guard try Self.wait(descriptor, for: Int16(POLLOUT), timeout: timeout) else {
                    throw TransportError("write: the peer took nothing for \(timeout)", errno: 0)
                }
            } else {
                throw TransportError("write", errno: errno)
            }
        }
    }

    /// Reads what is available (waiting up to `timeout` for something) into
    /// `buffer`; returns the count, 0 when the peer closed the connection.
    public func read(into buffer: inout [UInt8], timeout: Duration) throws(TransportError) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in recv(descriptor, raw.baseAddress, raw.count, 0) }
            if count >= 0 { return count }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { throw TransportError("read", errno: errno) }
            guard try Self.wait(descriptor, for: Int16(POLLIN), timeout: timeout) else {
                throw TransportError("read: no answer within \(timeout)", errno: 0)
            }
        }
    }

    private static func wait(_ fd: Int32, for events: Int16, timeout: Duration) throws(TransportError) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        while true {
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { throw TransportError("poll", errno: errno) }
            return ready > 0
        }
    }
}
