internal import ShareSession
internal import ShareTransport
internal import ShareWire
import Synchronization

/// The receiver's network thread: receives datagrams, has the session
/// unprotect them, rebuild frames and time its feedback (arrival times for
/// RFC 8888, NACK, receiver reports), and hands frames, audio and reports to
/// the decode thread through the bounded queue. It sleeps only in the
/// socket's wait, until a datagram or the session's next deadline, so a slow
/// decoder or window never delays feedback or lets the socket overflow.
final class ReceiverNetworkLoop: @unchecked Sendable {
    // Safe: the session and `peer` are used by the network thread only;
    // the keyframe flag is atomic, statistics go through the shared mutex.
    private let socket: UDPSocket
    private let session: ReceiveSession
    private let queue: WorkQueue
    /// Set by the decode thread when it needs a keyframe (decode error,
    /// frames dropped); the network thread sends the PLI.
    let keyframeWanted = Atomic<Bool>(false)
    private var peer: SocketAddress?

    init(socket: UDPSocket, session: ReceiveSession, queue: WorkQueue) {
        self.socket = socket
        self.session = session
        self.queue = queue
    }

    var senderSSRC: UInt32? { session.senderSSRC }

    func run(_ shared: ReceiverShared) -> ReceiverError? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var datagram = PacketBuffer(capacity: 65_536)
        var count = 0
        var published = monotonicNow()
        func reply(_ bytes: ArraySlice<UInt8>) {
            if let peer { socket.send(bytes, to: peer) }
        }
        while shared.running.load(ordering: .relaxed) {
            let now = monotonicNow()
            let deadline = session.nextDeadline.map { $0.nanoseconds } ?? now + 10_000_000
            let wait = min(deadline > now ? deadline - now : 0, 10_000_000)
            do {
                let ready = try UDPSocket.waitForInput([socket], timeout: .nanoseconds(Int64(wait)))
                if ready[0] {
                    // Drain what is there before the timers. Each datagram is
                    // timed by the kernel's arrival stamp (moved onto the
                    // monotonic clock), not by when this thread got to it.
                    var arrival: UInt64?
                    while let source = try socket.receiveNow(into: &buffer, count: &count, arrival: &arrival) {
                        let mono = monotonicNow()
                        var at = MonotonicTime(nanoseconds: mono)
                        if let arrival {
                            let age = min(wallNow() &- min(arrival, wallNow()), 1_000_000_000)
                            at = MonotonicTime(nanoseconds: mono - min(age, mono))
                        }
                        datagram.removeAll()
                        datagram.append(slice: buffer[0..<count])
                        let authenticatedBefore = session.statistics.rtpPackets + session.statistics.rtcpPackets
                        let events = session.handle(datagram: &datagram, now: at, emit: reply)
                        // Learn where to send RTCP from the first authenticated packet only.
                        if peer == nil && session.statistics.rtpPackets + session.statistics.rtcpPackets > authenticatedBefore {
                            peer = source
                        }
                        forward(events)
                    }
                }
            } catch {
                return .transport(error.description)
            }
            let at = MonotonicTime(nanoseconds: monotonicNow())
            if keyframeWanted.exchange(false, ordering: .relaxed) { session.requestKeyframe(now: at, emit: reply) }
            forward(session.poll(now: at, emit: reply))
            if at.nanoseconds &- published >= 50_000_000 {
                published = at.nanoseconds
                publish(shared)
            }
        }
        publish(shared)
        return nil
    }

    private func forward(_ events: [ReceiveEvent]) {
        for event in events {
            switch event {
            case .videoFrame(let unit): queue.push(.video(unit))
            case .videoLoss: queue.push(.loss)
            case .otherPacket(let packet): queue.push(.audio(packet))
            case .senderReport(let ssrc, let report): queue.push(.senderReport(ssrc: ssrc, report))
            case .goodbye(let ssrc, let reason) where session.senderSSRC == nil || ssrc == session.senderSSRC:
                // Authenticated (SRTCP) even when it comes before any media:
                // a sender that fails at start still says why.
                queue.push(.goodbye(reason: reason))
            case .goodbye: continue
            }
        }
    }

    private func publish(_ shared: ReceiverShared) {
        let s = session.statistics
        let (rtt, depth, dropped) = (session.roundTrip, session.jitterBufferDelay, queue.dropped)
        shared.stats.withLock { local in
            local.datagrams = s.datagrams
            local.bytes = s.bytes
            local.rtpPackets = s.rtpPackets
            local.framesLost = s.framesLost
            local.authenticationFailures = s.authenticationFailures
            local.replays = s.replays
            local.malformed = s.malformed
            local.duplicates = s.duplicates
            local.nacksSent = s.nacksSent
            local.nackedPackets = s.nackedPackets
            local.needlessNACKs = s.needlessNACKs
            local.repairsReceived = s.repairsReceived
            local.fecPacketsReceived = s.fecPacketsReceived
            local.fecRecovered = s.fecRecovered
            local.feedbackReports = s.feedbackReportsSent
            local.keyframeRequests = s.plisSent
            local.roundTripMilliseconds = rtt.map { $0.seconds * 1000 }
            local.jitterBufferMilliseconds = depth.seconds * 1000
            local.framesDroppedDecoderBusy = dropped
        }
    }
}
