internal import ShareCongestion
internal import ShareHandshake
internal import ShareSession
internal import ShareSRTP
internal import ShareTransport
internal import ShareWire
import Synchronization
internal import ShareSync
internal import ShareBase

/// The sender's feedback thread: reads what the receiver sends (the
/// handshake, RTCP on the main socket and on control ports of their own),
/// answers NACKs and keyframe requests, runs the congestion controller on
/// RFC 8888 feedback and applies its target, sends the streams' reports,
/// announcements and repeats when due, samples the rates every quarter
/// second (the FEC policy, the estimates the host hears of) and tells the
/// host when a receiver joins or leaves. It sleeps until a timer is due or
/// the receiver says something. Its state is its own; what it shares with
/// the other threads is the network driver's.
final class FeedbackLoop {
    private let network: NetworkDriver
    /// Whether a receiver listens, and which estimates the host hears of.
    private var presence = ReceiverPresence()
    private var estimateChanges = EstimateChanges()
    private var protection = ProtectionPolicy()
    /// The pacing rate last applied.
    private var pacing = 0
    /// Whether the pacer was last told to send one packet at a time.
    private var draining = false

    /// How long the thread waits for the receiver at most: while a
    /// handshake is under way (its retransmissions, this end's answer), and
    /// otherwise, when only its own timers call. The timers not told to it
    /// are coarse (the controller's 1.5 s feedback timeout, a new handshake
    /// after 2 s of silence, a receiver gone after 3 s): a quarter second.
    /// With announcements nobody answers backing off, a still screen's
    /// feedback thread wakes 7-8 times a second with a static key instead
    /// of 22, 11-12 with a `share recv` reporting (`Benchmarks/capture.py`).
    static let shortestWait: Duration = .milliseconds(10)
    static let longestWait: Duration = .milliseconds(250)

    init(network: NetworkDriver) {
        self.network = network
    }

    /// `keyframe` is called for each honoured keyframe request and each
    /// new session.
    func run(_ context: SenderContext, keyframe: @escaping () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let started = SystemClock.now()
        let sendHandshake = { [socket = network.socket] (bytes: [UInt8]) in _ = socket.send(bytes[...]) }
        network.link.begin(now: started, send: sendHandshake)
        var wait = Self.shortestWait
        while context.isActive {
            do {
                try receive(waiting: wait, into: &buffer, context: context, began: started, send: sendHandshake, keyframe: keyframe)
            } catch {
                context.fail(.transport(error.description))
                return
            }
            let now = SystemClock.now()
            if let outcome = network.link.poll(now: now, send: sendHandshake) {
                apply(outcome, context: context, began: started, keyframe: keyframe)
            }
            if network.link.firstHandshakeUnanswered(now: now) { context.emit(.warning(unanswered)) }
            wait = Self.shortestWait
            guard network.link.ready.load(ordering: .relaxed) else { continue }
            let next = serviceTimers(now: now, context: context)
            // A pointer sent apart needs no quicker turn: the capture thread
            // reads it at most every 16 ms (`CaptureLoop.pointerInterval`),
            // past the announcer's 8 ms minimum, so each position leaves at
            // once from that thread and none waits here for its time.
            let longest = network.link.isBusy ? Self.shortestWait : Self.longestWait
            wait = min(max(next.since(now), .milliseconds(1)), longest)
        }
    }

    /// Waits up to `wait` for what the receiver sends, on the
    /// main socket and the RTCP ports of their own, and handles it.
    private func receive(waiting wait: Duration, into buffer: inout [UInt8], context: SenderContext, began: MonotonicTime,
                         send: @escaping ([UInt8]) -> Void, keyframe: @escaping () -> Void) throws(TransportError) {
        var count = 0
        let controls = network.routes.controlSockets
        if controls.isEmpty {
            if try network.socket.receive(into: &buffer, count: &count, timeoutMilliseconds: Int32(wait / .milliseconds(1))) != nil {
                receiveMain(buffer[0..<count], context: context, began: began, send: send, keyframe: keyframe)
            }
            return
        }
        let ready = try UDPSocket.waitForInput([network.socket] + controls.map(\.socket), timeout: wait)
        if ready[0], try network.socket.receive(into: &buffer, count: &count, timeoutMilliseconds: 0) != nil {
            receiveMain(buffer[0..<count], context: context, began: began, send: send, keyframe: keyframe)
        }
        for (index, control) in controls.enumerated() where ready[index + 1] {
            try receiveControl(control.socket, stream: control.stream, from: control.destination, buffer: &buffer, keyframe: keyframe)
        }
    }

    /// The timers of a session that is up: the controller's target, the
    /// streams' reports, announcements and repeats, the receivers'
    /// presence, the rate sample. Returns when the next is due: the thread
    /// sleeps until then or until the receiver says something, not on a
    /// fixed tick (the rest, the controller's feedback timeout and the
    /// receiver's silence, is coarse).
    private func serviceTimers(now: MonotonicTime, context: SenderContext) -> MonotonicTime {
        // The streams' locks take closures that may capture only what is
        // shared (the driver), not this thread's own state.
        let network = network
        let (polled, rtt, pacing, draining, carried) = network.controller.withLock {
            ($0.poll(now: now), $0.roundTrip, $0.pacingRate, $0.draining, $0.probeCounts.carried)
        }
        apply(target: polled, pacingRate: pacing, draining: draining)
        network.probesCarried.store(carried, ordering: .relaxed)
        probe(now: now, context: context)
        let (videoDue, drawnApart) = network.video.withLock { stream in
            if let rtt { stream.observeRoundTrip(rtt) }
            return (stream.poll(now: now) { network.sendRTCP($0, stream: nil, now: now) },
                    stream.pointerDrawnApart(now: now))
        }
        network.placePointer?(drawnApart)
        var next = videoDue
        for (index, stream) in network.audio.enumerated() {
            let due = stream.withLock { $0.poll(now: now) { network.sendRTCP($0, stream: index, now: now) } }
            next = min(next, due)
        }
        // Reports and repairs just queued leave now when the budget allows.
        network.paced.flush()
        tell(presence.poll(now: now), context)
        if now >= network.rates.next { sampleRates(now: now, context: context) }
        return min(next, network.rates.next)
    }

    /// Four times a second: the estimate the host hears of, the FEC
    /// policy, and a sample of the rates.
    private func sampleRates(now: MonotonicTime, context: SenderContext) {
        let bytes = network.paced.bytesSent
        let state = network.controller.withLock { RateTimeline.ControllerState($0) }
        let estimate = state.estimate
        if presence.present, let news = estimateChanges.check(estimate, now: now) {
            context.emit(.networkEstimate(NetworkEstimate(news)))
        }
        let congested = state.lastSaturation.map { now.since($0) < .seconds(2) } ?? false
        protect(lossFraction: estimate.lossFraction, roundTrip: estimate.roundTrip, congested: congested, now: now)
        network.rates.record(at: now, bytesSent: bytes, controller: state,
                             encoderKbps: network.encoderKbps.load(ordering: .relaxed),
                             quantizer: network.encoderQuantizer.load(ordering: .relaxed),
                             protectionGroup: network.protectionGroup.load(ordering: .relaxed),
                             protectionCrossing: network.protectionCrossing.load(ordering: .relaxed),
                             framesEncoded: context.stats.withLock { $0.framesEncoded })
    }

    /// What the host is told when the receiver has not answered the first
    /// handshake: why, as far as this end can tell.
    private var unanswered: String {
        let seconds = Int(SessionLink.unansweredNotice.seconds)
        let destination = network.destination
        if network.socket.portUnreachable > 0 {
            return "UDP port \(destination.port) of \(destination.host) was reported unreachable (nothing listens there): "
                + "is share recv running there, on that port? Still trying"
        }
        return "no answer from \(destination.host) port \(destination.port) in \(seconds) s: is share recv running there, "
            + "and does the path let UDP through to that port? Still trying"
    }

    /// Sets the video's FEC as the policy says for the path now.
    private func protect(lossFraction: Double, roundTrip: Duration?, congested: Bool = false, now: MonotonicTime) {
        guard network.fecAvailable else { return }
        let group = protection.update(lossFraction: lossFraction, roundTrip: roundTrip, now: now, congested: congested)
        let crossing = protection.crossing
        guard group ?? 0 != network.protectionGroup.load(ordering: .relaxed)
            || crossing != network.protectionCrossing.load(ordering: .relaxed) else { return }
        network.protectionGroup.store(group ?? 0, ordering: .relaxed)
        network.protectionCrossing.store(crossing, ordering: .relaxed)
        network.video.withLock {
            $0.protectionGroup = group
            $0.protectionCrossing = crossing
        }
    }

    /// A datagram on the main socket: a handshake message, or the
    /// receiver's RTCP once a session is up.
    private func receiveMain(_ bytes: ArraySlice<UInt8>, context: SenderContext, began: MonotonicTime,
                             send: ([UInt8]) -> Void, keyframe: () -> Void) {
        let network = network
        let now = SystemClock.now()
        if let first = bytes.first, HandshakeMessage.isHandshake(firstByte: first) {
            if let outcome = network.link.handle(bytes, now: now, send: send) {
                apply(outcome, context: context, began: began, keyframe: keyframe)
            }
            return
        }
        guard network.link.ready.load(ordering: .relaxed) else { return }
        var datagram = PacketBuffer(bytes)
        let feedback = network.video.withLock { stream in
            stream.handle(datagram: &datagram, now: now, reply: { bytes in
                network.paced.enqueue(bytes, kind: .immediate, now: now)
            }, repair: { bytes in
                network.paced.enqueue(bytes, kind: .retransmission, now: now)
            })
        }
        if !feedback.isEmpty {
            network.link.heardFeedback(at: now)
            tell(presence.heard(at: now), context)
        }
        for item in feedback {
            if case .goodbye(let reason) = item { tell(presence.saidGoodbye(reason: reason), context) }
            handle(item, now: now, keyframe: keyframe)
        }
    }

    /// A receiver joined or left: the host hears of it.
    private func tell(_ change: ReceiverPresence.Change?, _ context: SenderContext) {
        switch change {
        case .joined: context.emit(.receiverJoined)
        case .left(let reason): context.emit(.receiverLeft(reason: reason))
        case nil: break
        }
    }

    /// Drains an RTCP socket of its own (at most 64 datagrams a turn): the
    /// video's takes authenticated feedback and plain keyframe requests
    /// (counted for the destination that asked); an audio stream's only
    /// what concerns that stream. A dropped destination's are read and ignored.
    private func receiveControl(_ control: UDPSocket, stream index: Int?, from destination: DestinationState, buffer: inout [UInt8],
                                keyframe: () -> Void) throws(TransportError) {
        let network = network
        var count = 0
        for _ in 0..<64 {
            guard try control.receive(into: &buffer, count: &count, timeoutMilliseconds: 0) != nil else { return }
            guard network.link.ready.load(ordering: .relaxed), destination.isActive else { continue }
            let now = SystemClock.now()
            var datagram = PacketBuffer(buffer[0..<count])
            if let index {
                _ = network.audio[index].withLock { stream in
                    stream.handle(controlPortDatagram: &datagram, now: now, reply: { _ = control.send($0) }, repair: { _ in })
                }
            } else {
                let feedback = network.video.withLock { stream in
                    // What this destination asked, honoured or too soon after the last.
                    let before = stream.statistics.plainKeyframeRequests + stream.statistics.plainRequestsLimited
                    defer {
                        if stream.statistics.plainKeyframeRequests + stream.statistics.plainRequestsLimited > before {
                            destination.keyframeRequests.add(1, ordering: .relaxed)
                        }
                    }
                    return stream.handle(controlPortDatagram: &datagram, now: now, reply: { _ = control.send($0) }, repair: { bytes in
                        network.paced.enqueue(bytes, kind: .retransmission, now: now)
                    })
                }
                for item in feedback { handle(item, now: now, keyframe: keyframe) }
            }
        }
    }

    /// What a handshake step means for the streams and the host.
    private func apply(_ outcome: SessionLink.Outcome, context: SenderContext, began: MonotonicTime, keyframe: () -> Void) {
        switch outcome {
        case .verifying(let receiver, let code):
            context.emit(.verifying(receiver: receiver, code: code))
        case .failed(let failure):
            context.fail(.session(failure.description))
        case .setback(let failure, let retryIn):
            context.stats.withLock { s in
                s.handshakeSetbacks += 1
                s.lastHandshakeSetback = failure.description
            }
            context.emit(.warning("handshake: \(failure); trying again in \(Int(retryIn.seconds.rounded())) s"))
        case .established(let session):
            do {
                try network.video.withLock { stream throws(SRTPError) in try stream.rekey(session.keys) }
                for stream in network.audio { try stream.withLock { stream throws(SRTPError) in try stream.rekey(session.keys) } }
            } catch {
                context.fail(.encryption(error.description))
                return
            }
            // The handshake timed the path: the first keyframe is protected
            // already if the path is slow (its loss is not known yet).
            if let roundTrip = session.roundTrip {
                let (rtt, loss) = network.controller.withLock { controller in
                    controller.observeRoundTrip(roundTrip)
                    return (controller.roundTrip, controller.estimate.lossFraction)
                }
                protect(lossFraction: loss, roundTrip: rtt, now: SystemClock.now())
            }
            network.link.ready.store(true, ordering: .releasing)
            network.describeAudio()
            keyframe()
            let elapsed = SystemClock.now().since(began).seconds * 1000
            context.stats.withLock { s in
                s.sessions += 1
                if s.handshakeMilliseconds == nil { s.handshakeMilliseconds = elapsed }
            }
            context.emit(.connected(receiver: session.peerName, code: session.shortAuthenticationString,
                                    firstMeeting: session.trust == .new && session.mode == .identity))
        }
    }

    private func handle(_ item: SenderFeedback, now: MonotonicTime, keyframe: () -> Void) {
        switch item {
        case .keyframeRequested, .receiverJoined:
            keyframe()
        case .congestion(let report):
            let (target, pacing, draining, collapsed) = network.controller.withLock {
                ($0.handle(report, now: now), $0.pacingRate, $0.draining, $0.takeCollapse())
            }
            apply(target: target, pacingRate: pacing, draining: draining)
            if collapsed {
                // A keyframe follows at the next picture: what the pacer
                // holds of the old rate's frames would only keep the path's
                // queue full in front of it.
                network.paced.dropSuperseded(before: network.paced.mediaMark)
                keyframe()
            }
        case .receiverReport(_, let roundTrip):
            if let roundTrip { network.controller.withLock { $0.observeRoundTrip(roundTrip) } }
        default:
            break
        }
    }

    /// Sends a bandwidth probe when the controller has one due (only with
    /// a retransmission stream to carry the padding, and only when the
    /// target is followed).
    private func probe(now: MonotonicTime, context: SenderContext) {
        guard network.adaptive, network.canPad else { return }
        guard let cluster = network.controller.withLock({ $0.nextProbe(now: now) }) else { return }
        do {
            try network.sendProbe(cluster, now: now)
        } catch {
            context.fail(.encryption(error.description))
        }
    }

    private func apply(target: Bitrate, pacingRate: Bitrate, draining: Bool) {
        guard network.adaptive else { return }
        // Whole bits a second: the encoder thread reads the target atomically.
        let bits = Int(target.bitsPerSecond)
        guard bits != network.targetBitrate.load(ordering: .relaxed) || Int(pacingRate.bitsPerSecond) != pacing
            || draining != self.draining else { return }
        network.targetBitrate.store(bits, ordering: .relaxed)
        pacing = Int(pacingRate.bitsPerSecond)
        self.draining = draining
        network.paced.setTarget(target, pacingRate: pacingRate, oneAtATime: draining)
    }
}
