#if canImport(Glibc)
internal import Glibc
#endif
import Synchronization

/// A socket failure: what was attempted and the errno it ended with.
public struct TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    public var operation: String
    public var errno: Int32
    public var description: String {
        let reason = errno == 0 ? "" : ": " + String(cString: strerror(errno))
        return "\(operation)\(reason)"
    }
    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }
}

/// An IPv4 or IPv6 UDP endpoint.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    /// Resolves `host` (a name or a literal) and `port` with getaddrinfo,
    /// preferring IPv4.
    public init(host: String, port: Int) throws(TransportError) {
        guard (1...65535).contains(port) else { throw TransportError("port \(port) outside 1-65535", errno: 0) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw TransportError("cannot resolve \(host): \(String(cString: gai_strerror(status)))", errno: 0)
        }
        defer { freeaddrinfo(result) }
        var chosen = first
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if entry.pointee.ai_family == AF_INET { chosen = entry; break }
            cursor = entry.pointee.ai_next
        }
        storage = sockaddr_storage()
        length = chosen.pointee.ai_addrlen
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.copyMemory(from: UnsafeRawBufferPointer(start: chosen.pointee.ai_addr, count: Int(length)))
        }
    }

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    var family: Int32 { Int32(storage.ss_family) }
    public var isIPv6: Bool { family == AF_INET6 }

    public var port: Int {
        withUnsafeBytes(of: storage) { raw in
            // sin_port and sin6_port both sit at offset 2, in network order.
            Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
        }
    }

    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var copy = storage
        let status = withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST)
            }
        }
        return status == 0 ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }

    public var description: String { family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The address and port as bytes (the sockaddr), cheap to compare and hash.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: storage) { Array($0.prefix(Int(length))) }
    }

    /// The host part alone as bytes (4 for IPv4, 16 for IPv6), without the port.
    public var hostBytes: [UInt8] {
        withUnsafeBytes(of: storage) { raw in
            // sin_addr sits at offset 4, sin6_addr at offset 8.
            family == AF_INET6 ? Array(raw[8..<24]) : Array(raw[4..<8])
        }
    }

    /// Whether the host is this machine's loopback: 127.0.0.0/8, ::1, or
    /// an IPv4-mapped 127.x.y.z. Traffic to it never leaves the machine.
    public var isLoopback: Bool {
        let host = hostBytes
        if family != AF_INET6 { return host[0] == 127 }
        if host == [UInt8](repeating: 0, count: 15) + [1] { return true }
        return host.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff][...] && host[12] == 127
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: storage) { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(Int(length)))) }
    }

    public static func == (a: Self, b: Self) -> Bool {
        guard a.length == b.length else { return false }
        return withUnsafeBytes(of: a.storage) { x in
            withUnsafeBytes(of: b.storage) { y in memcmp(x.baseAddress!, y.baseAddress!, Int(a.length)) == 0 }
        }
    }
}

/// A UDP socket. The one place that turns errno into `TransportError` and
/// retries EINTR. Sends never block the caller for long (a full send buffer
/// drops the datagram, counted); receives wait with a timeout.
public final class UDPSocket: @unchecked Sendable {
    // Safe: the descriptor never changes and the kernel serializes calls on
    // it; the drop counter and the closed flag are atomic.
    private let descriptor: Int32
    let family: Int32
    private let drops = Atomic<Int>(0)
    private let refusals = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    /// Datagrams the kernel refused because its buffer was full.
    public var sendDrops: Int { drops.load(ordering: .relaxed) }
    /// Times a connected socket heard that nothing listens at the other end
    /// (the host's ICMP port unreachable, as ECONNREFUSED on a later call).
    public var portUnreachable: Int { refusals.load(ordering: .relaxed) }

    /// A socket bound to `port` on every local address (0 picks a free port).
    public init(bindingPort port: Int, ipv6: Bool = false, receiveBuffer: Int = 4 << 20) throws(TransportError) {
        guard (0...65535).contains(port) else { throw TransportError("port \(port) outside 0-65535", errno: 0) }
        let family = ipv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError("socket", errno: errno) }
        descriptor = fd
        self.family = family
        var size = Int32(receiveBuffer)
        // SO_RCVBUFFORCE passes net.core.rmem_max for a privileged process;
        // otherwise the plain request is capped there (see receiveBufferSize).
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var sendSize = Int32(4 << 20)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendSize, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_storage()
        var length: socklen_t
        if family == AF_INET6 {
            var v6 = sockaddr_in6()
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = UInt16(port).bigEndian
            v6.sin6_addr = in6addr_any
            var off: Int32 = 0
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &address) { $0.storeBytes(of: v6, as: sockaddr_in6.self) }
        } else {
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = UInt16(port).bigEndian
            v4.sin_addr.s_addr = INADDR_ANY
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &address) { $0.storeBytes(of: v4, as: sockaddr_in.self) }
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard status == 0 else {
            let error = errno
            Glibc.close(fd)
            throw TransportError("bind UDP port \(port)", errno: error)
        }
    }

    /// A socket on an ephemeral port, connected to `peer`: it sends there and
    /// receives only from there.
    public convenience init(connectedTo peer: SocketAddress) throws(TransportError) {
        try self.init(bindingPort: 0, ipv6: peer.family == AF_INET6)
        var storage = peer.storage
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, peer.length) }
        }
        guard status == 0 else { throw TransportError("connect to \(peer)", errno: errno) }
    }

    deinit { close() }

    /// Closes the socket now (its port is free again), once all use of it
    /// has ended; without this, it closes when the last reference goes.
    public func close() {
        if !closed.exchange(true, ordering: .sequentiallyConsistent) { _ = Glibc.close(descriptor) }
    }

    /// The local port the socket is bound to.
    public var localPort: Int {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return SocketAddress(storage: address, length: length).port
    }

    /// Sends a datagram to the connected peer, or to `destination`.
    /// Returns false when the kernel dropped it (buffer full or no route;
    /// a port unreachable reported for an earlier one is counted apart).
    @discardableResult
    public func send(_ bytes: ArraySlice<UInt8>, to destination: SocketAddress? = nil) -> Bool {
        let result: Int = bytes.withUnsafeBytes { raw in
            while true {
                let sent: Int
                if var target = destination?.storage, let length = destination?.length {
                    sent = withUnsafePointer(to: &target) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, length)
                        }
                    }
                } else {
                    sent = Glibc.send(descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT))
                }
                if sent < 0 && errno == EINTR { continue }
                if sent < 0 && errno == ECONNREFUSED { refusals.add(1, ordering: .relaxed) }
                return sent
            }
        }
        if result < 0 && errno != ECONNREFUSED { drops.add(1, ordering: .relaxed) }
        return result >= 0
    }

    /// Waits up to `timeoutMilliseconds` for a datagram and copies it into
    /// `buffer` (count set to its length). Returns the sender, or nil on timeout.
    public func receive(into buffer: inout [UInt8], count: inout Int,
                        timeoutMilliseconds: Int32) throws(TransportError) -> SocketAddress? {
        var pollfd = Glibc.pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&pollfd, 1, timeoutMilliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { throw TransportError("poll", errno: errno) }
            if ready == 0 { return nil }
            break
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        while true {
            let received = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(descriptor, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, &length)
                    }
                }
            }
            if received < 0 && errno == EINTR { continue }
            if received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return nil }
            // ICMP port unreachable from an earlier send surfaces here: not fatal.
            if received < 0 && errno == ECONNREFUSED {
                refusals.add(1, ordering: .relaxed)
                return nil
            }
            if received < 0 { throw TransportError("recvfrom", errno: errno) }
            count = received
            return SocketAddress(storage: address, length: length)
        }
    }

    /// Waits up to `timeout` until any of `sockets` has a datagram; returns
    /// which do. poll counts whole milliseconds, so the last fraction of a
    /// millisecond is slept precisely instead: releases hold to ~0.1 ms.
    public static func waitForInput(_ sockets: [UDPSocket], timeout: Duration) throws(TransportError) -> [Bool] {
        var fds = sockets.map { Glibc.pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = seconds < 0 ? 0 : Int64(seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        var milliseconds = Int32(clamping: nanoseconds / 1_000_000)
        if milliseconds == 0 && nanoseconds > 0 {
            var pause = timespec(tv_sec: 0, tv_nsec: Int(nanoseconds))
            nanosleep(&pause, nil)
            milliseconds = 0
        }
        while true {
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { throw TransportError("poll", errno: errno) }
            return fds.map { $0.revents & Int16(POLLIN) != 0 }
        }
    }

    /// The receive buffer the kernel granted (it may cap what was asked:
    /// net.core.rmem_max), in bytes as the kernel counts them.
    public var receiveBufferSize: Int {
        var size: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, &length)
        return Int(size)
    }

    /// SO_TIMESTAMPNS (and SCM_TIMESTAMPNS) on 64-bit Linux, where time_t is
    /// the kernel's long: Glibc's header picks the value through a macro
    /// Swift cannot evaluate.
    private static let timestampOption: Int32 = 35

    /// Asks the kernel to stamp each datagram with the moment it arrived
    /// (SO_TIMESTAMPNS), so a receiver busy elsewhere does not mistake its
    /// own delay for the network's.
    public func enableArrivalTimestamps() {
        var on: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, Self.timestampOption, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Takes a waiting datagram without blocking: its sender and, when
    /// `enableArrivalTimestamps` is on, the wall-clock time (Unix
    /// nanoseconds) the kernel received it. nil when nothing is waiting.
    public func receiveNow(into buffer: inout [UInt8], count: inout Int,
                           arrival: inout UInt64?) throws(TransportError) -> SocketAddress? {
        var address = sockaddr_storage()
        // cmsghdr (16 bytes on 64-bit) + a timespec (16), with room to spare.
        var control = [UInt8](repeating: 0, count: 64)
        while true {
            let received: Int = buffer.withUnsafeMutableBytes { raw in
                control.withUnsafeMutableBytes { controlRaw in
                    withUnsafeMutablePointer(to: &address) { addressPointer in
                        var vector = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
                        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                            var message = msghdr()
                            message.msg_name = UnsafeMutableRawPointer(addressPointer)
                            message.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                            message.msg_iov = vectorPointer
                            message.msg_iovlen = 1
                            message.msg_control = controlRaw.baseAddress
                            message.msg_controllen = controlRaw.count
                            let result = recvmsg(descriptor, &message, Int32(MSG_DONTWAIT))
                            arrival = result >= 0 ? Self.timestamp(in: controlRaw, length: Int(message.msg_controllen)) : nil
                            return result
                        }
                    }
                }
            }
            if received < 0 && errno == EINTR { continue }
            if received < 0 && errno == ECONNREFUSED { refusals.add(1, ordering: .relaxed) }
            if received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED) { return nil }
            if received < 0 { throw TransportError("recvmsg", errno: errno) }
            count = received
            let length = socklen_t(address.ss_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size
                                   : MemoryLayout<sockaddr_in>.size)
            return SocketAddress(storage: address, length: length)
        }
    }

    /// The SCM_TIMESTAMPNS timespec among the control messages, as Unix
    /// nanoseconds. Each cmsghdr is {size_t len; int level; int type} and its
    /// data starts at the next 8-byte boundary (CMSG_DATA); the next header
    /// follows at CMSG_ALIGN(len).
    private static func timestamp(in control: UnsafeMutableRawBufferPointer, length: Int) -> UInt64? {
        var offset = 0
        let header = 16
        while offset + header <= min(length, control.count) {
            let size = Int(control.loadUnaligned(fromByteOffset: offset, as: UInt.self))
            let level = control.loadUnaligned(fromByteOffset: offset + 8, as: Int32.self)
            let type = control.loadUnaligned(fromByteOffset: offset + 12, as: Int32.self)
            guard size >= header else { return nil }
            if level == SOL_SOCKET && type == timestampOption && size >= header + 16 && offset + header + 16 <= control.count {
                let seconds = control.loadUnaligned(fromByteOffset: offset + header, as: Int.self)
                let nanoseconds = control.loadUnaligned(fromByteOffset: offset + header + 8, as: Int.self)
                guard seconds >= 0, nanoseconds >= 0 else { return nil }
                return UInt64(seconds) * 1_000_000_000 + UInt64(nanoseconds)
            }
            offset += (size + 7) & ~7
        }
        return nil
    }
}
