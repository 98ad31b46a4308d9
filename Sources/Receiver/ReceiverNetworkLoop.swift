import Dispatch
internal import ShareHandshake
internal import ShareSession
internal import ShareTransport
internal import ShareWire
import Synchronization
internal import ShareSync
internal import ShareBase

/// The receiver's network thread: receives datagrams, hands handshakes to
/// the session gate (which also decides whose media is admitted), has the session
/// unprotect them, rebuild frames and time its feedback (arrival times for
/// RFC 8888, NACK, receiver reports), and hands frames, audio and reports to
/// the decode thread through the bounded queue. It sleeps only in the
/// socket's wait, until a datagram or the session's next deadline, so a slow
/// decoder or window never delays feedback or lets the socket overflow.
final class ReceiverNetworkLoop: Sendable {
    /// What the decode thread tells the network thread, and reads of it.
    let signals = NetworkSignals()
    /// The socket's session, gate and queue: the network thread's own.
    private let work: ThreadBound<NetworkWork>

    init(socket: UDPSocket, session: ReceiveSession, gate: SessionGate, queue: WorkQueue, confirmation: ConfirmationPolicy,
         events: @escaping @Sendable (ReceiverEvent) -> Void) {
        work = ThreadBound(NetworkWork(socket: socket, session: session, gate: gate, queue: queue, confirmation: confirmation,
                                       events: events, signals: signals))
    }

    /// The sender's SSRC, read from any thread.
    var senderSSRC: UInt32? { signals.senderSSRC }

    /// Asks the network thread for a keyframe (it sends the PLI).
    func requestKeyframe() { signals.keyframeWanted.store(true, ordering: .relaxed) }

    /// The network thread's loop, until the receiver stops or the socket fails.
    func run(_ shared: ReceiverShared) -> ReceiverError? { work.withValue { $0.run(shared) } }
}

/// The flags the decode thread and the network thread share.
final class NetworkSignals: Sendable {
    /// Set by the decode thread when it needs a keyframe (decode error,
    /// frames dropped); the network thread sends the PLI.
    let keyframeWanted = Atomic<Bool>(false)
    /// The video sender's SSRC as the network thread last saw it, for the
    /// decode thread (bit 32 set when there is one: any 32-bit SSRC is valid).
    let publishedSSRC = Atomic<UInt64>(0)

    var senderSSRC: UInt32? {
        let value = publishedSSRC.load(ordering: .relaxed)
        return value == 0 ? nil : UInt32(truncatingIfNeeded: value)
    }
}

/// The network thread's state and steps (see `ReceiverNetworkLoop`).
final class NetworkWork {
    private let socket: UDPSocket
    private let session: ReceiveSession
    private let gate: SessionGate
    private let queue: WorkQueue
    private let confirmation: ConfirmationPolicy
    private let events: @Sendable (ReceiverEvent) -> Void
    private let signals: NetworkSignals
    /// The person here is asked about one new sender at a time.
    private let questions = OneQuestionAtATime()

    init(socket: UDPSocket, session: ReceiveSession, gate: SessionGate, queue: WorkQueue, confirmation: ConfirmationPolicy,
         events: @escaping @Sendable (ReceiverEvent) -> Void, signals: NetworkSignals) {
        self.socket = socket
        self.session = session
        self.gate = gate
        self.queue = queue
        self.confirmation = confirmation
        self.events = events
        self.signals = signals
    }

    /// Publishes the session's sender SSRC.
    private func publishSenderSSRC() {
        signals.publishedSSRC.store(session.senderSSRC.map { 1 << 32 | UInt64($0) } ?? 0, ordering: .relaxed)
    }

    func run(_ shared: ReceiverShared) -> ReceiverError? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var datagram = PacketBuffer(capacity: 65_536)
        var count = 0
        var published = SystemClock.now()
        func reply(_ bytes: ArraySlice<UInt8>) {
            if let peer = gate.peer { socket.send(bytes, to: peer) }
        }
        func sendTo(_ bytes: [UInt8], _ address: SocketAddress) { socket.send(bytes[...], to: address) }
        while shared.running.load(ordering: .relaxed) {
            let now = SystemClock.now()
            // Between sessions the session's timers are stale: wake for the handshake only.
            let deadline = (gate.hasSession ? session.nextDeadline : nil) ?? now + .milliseconds(10)
            let wait = min(deadline.since(now), .milliseconds(10))
            do {
                let ready = try UDPSocket.waitForInput([socket], timeout: wait)
                if ready[0] {
                    // Drain what is there before the timers. Each datagram is
                    // timed by the kernel's arrival stamp (moved onto the
                    // monotonic clock), not by when this thread got to it.
                    var arrival: UInt64?
                    while let source = try socket.receiveNow(into: &buffer, count: &count, arrival: &arrival) {
                        var at = SystemClock.now()
                        if let arrival {
                            let wall = SystemClock.wall()
                            at = at - min(.nanoseconds(wall &- min(arrival, wall)), .seconds(1))
                        }
                        if count > 0, HandshakeMessage.isHandshake(firstByte: buffer[0]) {
                            handle(gate.handshake(buffer[0..<count], from: source, now: at, send: sendTo))
                            continue
                        }
                        guard gate.admits(source, now: at, send: sendTo) else { continue }
                        datagram.removeAll()
                        datagram.append(slice: buffer[0..<count])
                        let authenticatedBefore = session.statistics.rtpPackets + session.statistics.rtcpPackets
                        let events = session.handle(datagram: &datagram, now: at, emit: reply)
                        if session.statistics.rtpPackets + session.statistics.rtcpPackets > authenticatedBefore {
                            gate.authenticated(source)
                        }
                        forward(events)
                    }
                }
            } catch {
                return .transport(error.description)
            }
            let at = SystemClock.now()
            handle(gate.poll(now: at, send: sendTo))
            if gate.hasSession {
                if signals.keyframeWanted.exchange(false, ordering: .relaxed) { session.requestKeyframe(now: at, emit: reply) }
                forward(session.poll(now: at, emit: reply))
            }
            if at.since(published) >= .milliseconds(50) {
                published = at
                publish(shared)
            }
        }
        if gate.hasSession { session.goodbye(reason: "receiver stopped", emit: reply) }
        publish(shared)
        return nil
    }

    private func forward(_ events: [ReceiveEvent]) {
        publishSenderSSRC()
        for event in events {
            switch event {
            case .videoFrame(let unit): queue.push(.video(unit))
            case .videoSlices(let slices): queue.push(.videoSlices(slices))
            case .videoLoss: queue.push(.loss)
            case .otherPacket(let packet): queue.push(.audio(packet))
            case .senderReport(let ssrc, let report): queue.push(.senderReport(ssrc: ssrc, report))
            case .goodbye(let ssrc, let reason) where session.senderSSRC == nil || ssrc == session.senderSSRC:
                // Authenticated (SRTCP) even when it comes before any media:
                // a sender that fails at start still says why. The session
                // ends; the next sender starts another.
                queue.push(.goodbye(reason: reason))
                try? gate.senderLeft()
            case .goodbye: continue
            case .senderState(let state, let title): queue.push(.senderState(state, title: title))
            case .audioLayout(let streams): queue.push(.audioLayout(streams))
            case .cursor(let overlay): queue.push(.cursor(overlay))
            case .streamReplaced:
                // A restarted sender (static key): the pictures and the
                // recording start over, as for a new session.
                queue.push(.newSession)
            }
        }
    }

    /// What the gate decided: a new session for the decode thread, people
    /// to ask, refusals to report.
    private func handle(_ gateEvents: [SessionGate.Event]) {
        publishSenderSSRC()
        for event in gateEvents {
            switch event {
            case .started(let established, let renewed):
                if !renewed { queue.push(.newSession) }
                events(.sessionStarted(sender: established.peerName,
                                       code: established.mode == .identity ? established.shortAuthenticationString : nil,
                                       firstMeeting: established.trust == .new && established.mode == .identity,
                                       renewed: renewed))
            case .refused(let sender, let reason):
                events(.sessionRefused(sender: sender, reason: reason))
            case .abandoned(let sender, let count):
                events(.warning("a new sender calling itself \"\(sender)\" stopped once it could compute the code (\(count) "
                                + "so far): if that was not you, someone may be trying to guess the code"))
            case .confirm(let request):
                switch confirmation {
                case .acceptNew:
                    events(.confirming(sender: request.peerName, code: request.shortAuthenticationString,
                                       fingerprint: request.fingerprint.description))
                    gate.answers.withLock { $0.append((request.handshakeID, true)) }
                case .refuseNew:
                    events(.sessionRefused(sender: request.peerName, reason: "a new sender, and new senders are not accepted"))
                    gate.answers.withLock { $0.append((request.handshakeID, false)) }
                case .ask(let ask):
                    let answers = gate.answers
                    let put = questions.put(request, to: ask) { accept in
                        answers.withLock { $0.append((request.handshakeID, accept)) }
                    }
                    if !put {
                        events(.warning("\"\(request.peerName)\" told to try again: a person is still being asked about another sender"))
                        gate.answers.withLock { $0.append((request.handshakeID, nil)) }
                    }
                }
            }
        }
    }

    private func publish(_ shared: ReceiverShared) {
        let s = session.statistics
        let (rtt, depth, dropped) = (session.roundTrip, session.jitterBufferDelay, queue.dropped)
        let (gateCounters, handshakes) = (gate.counters, gate.handshakes)
        shared.stats.withLock { local in
            local.packetsWithoutSession = gateCounters.withoutSession
            local.packetsFromStrangers = gateCounters.foreignSource
            local.handshakesRefused = handshakes.refused
            local.handshakesRateLimited = handshakes.rateLimited
            local.handshakesAbandoned = handshakes.abandoned
            local.handshakeCookiesSent = handshakes.cookies
            local.sessions = gateCounters.sessions
            local.sessionRenewals = gateCounters.renewals
            local.datagrams = s.datagrams
            local.bytes = s.bytes
            local.rtpPackets = s.rtpPackets
            local.framesLost = s.framesLost
            local.authenticationFailures = s.authenticationFailures
            local.replays = s.replays
            local.streamsResumed = s.streamsResumed
            local.rolloverSearches = s.rolloverSearches
            local.rolloverSearchesLimited = s.rolloverSearchesLimited
            local.rolloverSearchBytes = s.rolloverSearchBytes
            local.streamsForgotten = s.streamsForgotten
            local.streamsReplaced = s.streamsReplaced
            local.malformed = s.malformed + gateCounters.malformedHandshakes
            local.duplicates = s.duplicates
            local.nacksSent = s.nacksSent
            local.nackedPackets = s.nackedPackets
            local.needlessNACKs = s.needlessNACKs
            local.repairsReceived = s.repairsReceived
            local.paddingReceived = s.paddingReceived
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
