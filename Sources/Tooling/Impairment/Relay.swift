public import ShareTransport
import Synchronization
#if canImport(Glibc)
internal import Glibc
internal import ShareSync
internal import ShareBase
#endif

/// A UDP relay through an impaired path: datagrams from the sender (whoever
/// last sent to the listening port) go to the target through `forward`;
/// datagrams from the target go back through `reverse`. One thread waits on
/// both sockets and on the next due release, so timing holds to well under a
/// millisecond on an idle machine.
public final class Relay: @unchecked Sendable {
    // Safe: `client`, the links and the queue are touched only by the thread
    // running `run`; other threads read `counters` and set `running` (atomic).
    public let profile: NetworkProfile
    private let inbound: UDPSocket
    private let outbound: UDPSocket
    private var forward: ImpairedLink
    private var reverse: ImpairedLink
    private var client: SocketAddress?
    private var queue: [(at: MonotonicTime, toTarget: Bool, bytes: [UInt8])] = []
    private let running = Atomic<Bool>(true)
    private let snapshot = Locked<(ImpairedLink.Counters, ImpairedLink.Counters)>((.init(), .init()))

    public init(listenPort: Int, target: SocketAddress, profile: NetworkProfile, seed: UInt64) throws(TransportError) {
        self.profile = profile
        inbound = try UDPSocket(bindingPort: listenPort)
        outbound = try UDPSocket(connectedTo: target)
        forward = ImpairedLink(profile: profile.forward, seed: seed)
        reverse = ImpairedLink(profile: profile.reverse, seed: seed &+ 0x5EED)
    }

    public var port: Int { inbound.localPort }

    /// Counters toward the target and back.
    public var counters: (forward: ImpairedLink.Counters, reverse: ImpairedLink.Counters) { snapshot.withLock { $0 } }

    public func stop() { running.store(false, ordering: .relaxed) }

    /// Relays until `stop` is called.
    public func run() throws(TransportError) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var count = 0
        while running.load(ordering: .relaxed) {
            let now = Self.now()
            let wait = queue.first.map { $0.at.since(now) } ?? .milliseconds(50)
            let ready = try UDPSocket.waitForInput([inbound, outbound], timeout: min(wait, .milliseconds(50)))
            if ready[0] {
                while let source = try inbound.receive(into: &buffer, count: &count, timeoutMilliseconds: 0) {
                    client = source
                    schedule(Array(buffer[0..<count]), toTarget: true, now: Self.now())
                }
            }
            if ready[1] {
                while try outbound.receive(into: &buffer, count: &count, timeoutMilliseconds: 0) != nil {
                    schedule(Array(buffer[0..<count]), toTarget: false, now: Self.now())
                }
            }
            let due = Self.now()
            while let first = queue.first, first.at <= due {
                queue.removeFirst()
                if first.toTarget {
                    outbound.send(first.bytes[...])
                } else if let client {
                    inbound.send(first.bytes[...], to: client)
                }
            }
            let (f, r) = (forward.counters, reverse.counters)
            snapshot.withLock { $0 = (f, r) }
        }
    }

    private func schedule(_ bytes: [UInt8], toTarget: Bool, now: MonotonicTime) {
        let releases = toTarget ? forward.submit(size: bytes.count, now: now) : reverse.submit(size: bytes.count, now: now)
        for at in releases {
            // Insert in release order (the queue is short: a sorted array will do).
            var index = queue.count
            while index > 0 && queue[index - 1].at > at { index -= 1 }
            queue.insert((at, toTarget, bytes), at: index)
        }
    }

    static func now() -> MonotonicTime { SystemClock.now() }
}
