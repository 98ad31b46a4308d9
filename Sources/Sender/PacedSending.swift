import Dispatch
internal import ShareCongestion
internal import ShareTransport
internal import ShareWire
import Synchronization
internal import ShareSync
internal import ShareBase

/// The sending half of the sender's network side: the pacer behind its
/// lock, the pacer thread that sends what it releases as its budget
/// refills, what left told to the congestion controller, and the repairs
/// sent over the last second. Any thread queues; whoever queued sends what
/// may leave at once (an ordinary frame leaves without a thread hop).
final class PacedSending: @unchecked Sendable {
    // Safe: the socket is thread-safe for sending; everything mutable is
    // behind a mutex or an atomic; the pacer's lock is never held with the
    // controller's, nor while waiting.
    private let socket: UDPSocket
    /// Where released packets go: the socket's peer and any copies.
    private let routes: MediaRoutes
    private let pacer: Locked<PacketPacer>
    private let controller: Locked<CongestionController>
    private let wake = DispatchSemaphore(value: 0)
    /// Retransmissions sent over the last second (bits/s), and what they were.
    let repairBitrate = Atomic<Int>(0)
    private static let repairWindow: Duration = .seconds(1)
    private let repairs = Locked<[(at: MonotonicTime, bits: Int)]>([])

    init(socket: UDPSocket, routes: MediaRoutes, controller: Locked<CongestionController>, startRate: Bitrate) {
        self.socket = socket
        self.routes = routes
        self.controller = controller
        pacer = Locked(PacketPacer(targetBitrate: startRate))
    }

    /// Queues a protected datagram (it leaves at the next `flush` or pacer turn that allows it).
    func enqueue(_ bytes: ArraySlice<UInt8>, kind: PacketPacer.Kind, now: MonotonicTime) {
        pacer.withLock { _ = $0.enqueue(bytes, kind: kind, now: now) }
    }

    /// Sends what the pacer lets leave now, from the calling thread, and
    /// wakes the pacer thread for what must wait.
    func flush() {
        if release(at: SystemClock.now()) != nil { wake.signal() }
    }

    /// The pacer thread: sends as the budget refills, sleeping in between.
    /// With nothing queued it sleeps until a `flush` leaves something
    /// behind (or `wakeUp`), but for a turn when the last repair sent ages
    /// out of the repair rate: a still screen does not wake it.
    func loop(_ context: SenderContext) {
        while context.isActive {
            let now = SystemClock.now()
            let next = release(at: now) ?? repairs.withLock { $0.first.map { $0.at + Self.repairWindow + .nanoseconds(1) } }
            guard let next else {
                wake.wait()
                continue
            }
            if next > now { _ = wake.wait(timeout: .now() + .nanoseconds(Int(min(next.since(now), .seconds(1)).nanoseconds))) }
        }
    }

    /// Wakes the pacer thread (the end: it may be asleep with nothing queued).
    func wakeUp() { wake.signal() }

    /// The controller's new target and pacing rate (and whether packets
    /// leave one at a time, `PacketPacer.setTarget`).
    func setTarget(_ target: Bitrate, pacingRate: Bitrate, oneAtATime: Bool) {
        pacer.withLock { $0.setTarget(target, pacingRate: pacingRate, burst: oneAtATime ? .zero : nil) }
    }

    /// Where the media queue ends now (`dropSuperseded`).
    var mediaMark: Int { pacer.withLock { $0.mediaMark } }

    /// A keyframe was queued after `mark`: drops the repairs waiting and
    /// the media queued before it that has not left.
    func dropSuperseded(before mark: Int) {
        pacer.withLock {
            _ = $0.dropRepairs()
            _ = $0.dropMedia(before: mark)
        }
    }

    /// How long the oldest media packet waiting in the pacer has waited.
    func queueDelay(now: MonotonicTime) -> Duration {
        pacer.withLock { $0.queueDelay(now: now) }
    }

    /// Bytes sent so far.
    var bytesSent: Int { pacer.withLock { $0.counters.bytesSent } }

    /// The pacer's counters and how long its queue would take to drain now.
    func snapshot(now: MonotonicTime) -> (counters: PacketPacer.Counters, queueDelay: Duration) {
        pacer.withLock { ($0.counters, $0.queueDelay(now: now)) }
    }

    /// Sends what the pacer lets leave now (in order, under its lock),
    /// tells the controller what left, and returns when the pacer next has something.
    @discardableResult
    private func release(at now: MonotonicTime) -> MonotonicTime? {
        let (sent, repairBits, next) = pacer.withLock { pacer -> ([SentPacket], Int, MonotonicTime?) in
            var sent: [SentPacket] = []
            var repairBits = 0
            pacer.release(now: now) { bytes, kind in
                routes.deliver(bytes, on: socket)
                if let packet = Self.sentPacket(bytes, kind: kind, at: now) { sent.append(packet) }
                if kind == .retransmission { repairBits += bytes.count * 8 }
            }
            return (sent, repairBits, pacer.nextRelease(now: now))
        }
        if !sent.isEmpty {
            controller.withLock { controller in for packet in sent { controller.sent(packet) } }
        }
        repairs.withLock { window in
            if repairBits > 0 { window.append((now, repairBits)) }
            while let first = window.first, now.since(first.at) > Self.repairWindow { window.removeFirst() }
            repairBitrate.store(window.reduce(0) { $0 + $1.bits }, ordering: .relaxed)
        }
        return next
    }

    /// What the congestion controller needs of a datagram that left: its
    /// SSRC and sequence number (in the clear in SRTP) and size. RTCP is not
    /// reported on, so it is not recorded.
    static func sentPacket(_ bytes: ArraySlice<UInt8>, kind: PacketPacer.Kind, at now: MonotonicTime) -> SentPacket? {
        guard bytes.count >= 12 else { return nil }
        let start = bytes.startIndex
        guard !RTCPPacket.isRTCP(payloadTypeByte: bytes[start + 1]) else { return nil }
        let sequence = UInt16(bytes[start + 2]) << 8 | UInt16(bytes[start + 3])
        var ssrc: UInt32 = 0
        for index in 8..<12 { ssrc = ssrc << 8 | UInt32(bytes[start + index]) }
        return SentPacket(ssrc: ssrc, sequence: sequence, size: bytes.count, sendTime: now,
                          isRetransmission: kind == .retransmission, isProbe: kind == .probe)
    }
}
