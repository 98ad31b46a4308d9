internal import ShareCongestion
internal import ShareHandshake
internal import ShareSRTP
internal import ShareSession
internal import ShareTransport
internal import ShareWire
import Synchronization
internal import ShareSync

/// The sender's network side: the one owner of the socket. Two threads:
/// the pacer thread (`PacedSending`) sends what the pacer releases (and
/// tells the congestion controller what left when); the feedback thread
/// reads RTCP, answers NACKs (into the pacer), runs the congestion
/// controller on RFC 8888 feedback and sends sender reports. Neither sleeps
/// holding a lock.
final class NetworkDriver: @unchecked Sendable {
    // Safe: the socket is thread-safe for send/receive; everything mutable
    // is behind a mutex or an atomic, but for the feedback thread's own
    // state (`protection`) and `placePointer`, set before
    // the threads start; lock order is stream -> pacer, and the
    // controller's lock is never held with another.
    let socket: UDPSocket
    let video: Locked<SendStream>
    let audio: [LockedStream]
    /// The pacer and its thread.
    let paced: PacedSending
    private let controller: Locked<CongestionController>
    /// The congestion controller's target for everything we send (bits/s).
    let targetBitrate: Atomic<Int>
    /// The rates every 250 ms, for the statistics.
    let rates = RateTimeline()
    /// Media packets per FlexFEC repair (0: no FEC), set by the protection policy.
    let protectionGroup = Atomic<Int>(0)
    private var protection = ProtectionPolicy()
    /// The encoder's bitrate (kbit/s), for the timeline.
    let encoderKbps = Atomic<Int>(0)
    /// The quantizer of the last picture coded (0: none yet), for the rate timeline.
    let encoderQuantizer = Atomic<Int>(0)
    /// How long the feedback thread waits for the receiver at most: while
    /// a handshake is under way (its retransmissions, this end's answer),
    /// and otherwise, when only its own timers call. The timers not told
    /// to it are coarse (the controller's 1.5 s feedback timeout, a new
    /// handshake after 2 s of silence, a receiver gone after 3 s): a
    /// quarter second. With announcements nobody answers backing off, a
    /// still screen's feedback thread wakes 7-8 times a second with a
    /// static key instead of 22, 11-12 with a `share recv` reporting
    /// (`Benchmarks/capture.py`).
    static let shortestWait: UInt64 = 10_000_000
    static let longestWait: UInt64 = 250_000_000

    /// Whether the video stream can send FlexFEC.
    private let fecAvailable: Bool
    /// The pacing rate last applied (feedback thread only).
    private var pacing = 0

    /// Whether the congestion controller's target is followed (off: the
    /// configured rate is sent whatever the path does).
    private let adaptive: Bool
    /// The session: handshake, and whether media may flow yet.
    let link: SessionLink
    /// The audio streams, as the receiver is told them.
    private let audioLayout: [AudioStreamLayout]
    /// Ports of their own for audio and RTCP (SFUs, standard receivers): one route per audio stream.
    let routes: MediaRoutes
    /// What the stream is called (`SenderConfiguration.title`): told with every state.
    private let title: String?
    /// Whether a receiver listens, and which estimates the host hears of (feedback thread only).
    private var presence = ReceiverPresence()
    private var estimateChanges = EstimateChanges()

    init(socket: UDPSocket, routes: MediaRoutes, video: sending SendStream, audio: [LockedStream],
         audioLayout: [AudioStreamLayout], congestion: CongestionController.Configuration, link: SessionLink,
         adaptive: Bool = true, title: String? = nil) {
        self.socket = socket
        self.title = title
        self.routes = routes
        self.audioLayout = audioLayout
        self.link = link
        self.adaptive = adaptive
        fecAvailable = video.configuration.forwardErrorCorrection != nil
        self.video = Locked(video)
        self.audio = audio
        let controller = Locked(CongestionController(configuration: congestion))
        self.controller = controller
        paced = PacedSending(socket: socket, controller: controller, startRate: congestion.start)
        targetBitrate = Atomic(Int(congestion.start))
    }

    // MARK: sending (any thread)

    /// Packetizes, protects and queues part of an access unit (one slice,
    /// as the encoder writes it, or the whole frame) for pacing; false
    /// (nothing sent) while no session is up. What fits the pacer's budget
    /// leaves at once, from this thread, while the encoder goes on with the
    /// rest of the picture; the pacer thread sends the rest as the budget refills.
    @discardableResult
    func sendVideo(part: ArraySlice<UInt8>, endsFrame: Bool, rtpTimestamp: UInt32, captureTime: NTPTimestamp,
                   now: MonotonicTime) throws(SRTPError) -> Bool {
        guard link.ready.load(ordering: .acquiring) else { return false }
        try video.withLock { stream throws(SRTPError) in
            try stream.send(part: part, endsFrame: endsFrame, rtpTimestamp: rtpTimestamp, captureTime: captureTime,
                            now: now) { datagram in
                paced.enqueue(datagram, kind: .media, now: now)
            }
        }
        paced.flush()
        return true
    }

    /// Protects and queues one audio packet (sent ahead of video).
    func sendAudio(_ index: Int, payload: ArraySlice<UInt8>, rtpTimestamp: UInt32, captureTime: NTPTimestamp,
                   now: MonotonicTime) throws(SRTPError) {
        guard link.ready.load(ordering: .acquiring) else { return }
        let destination = routes.audio[index].media
        try audio[index].withLock { stream throws(SRTPError) in
            try stream.send(payload: payload, rtpTimestamp: rtpTimestamp, captureTime: captureTime, now: now) { datagram in
                // On a port of its own audio leaves at once, as it would from the pacer.
                if let destination {
                    socket.send(datagram, to: destination)
                } else {
                    paced.enqueue(datagram, kind: .immediate, now: now)
                }
            }
        }
        if destination == nil { paced.flush() }
    }

    /// Sends a stream's RTCP the way its route says: on its own socket, to
    /// its media's port, or with the video, through the pacer (RTCP is not
    /// paced, only kept in order with the media) unless `now` is nil (the
    /// threads are done: straight to the socket).
    private func sendRTCP(_ bytes: ArraySlice<UInt8>, route: MediaRoutes.Route, now: MonotonicTime?) {
        if let control = route.control {
            control.send(bytes)
        } else if let now, route.media == nil {
            paced.enqueue(bytes, kind: .immediate, now: now)
        } else {
            socket.send(bytes, to: route.media)
        }
    }

    /// The announcement that the stream finished, and why, with RTCP BYE on
    /// every stream, straight to the socket (the threads are done). After a
    /// handshake the receiver answers it: it is repeated until it does (at
    /// most 5 times, 60 ms apart); other receivers get it once.
    func goodbye(reason: String) {
        guard link.ready.load(ordering: .acquiring) else { return }
        var buffer = [UInt8](repeating: 0, count: 2048)
        var count = 0
        for _ in 0..<(link.usesHandshake ? 5 : 1) {
            let now = MonotonicTime(nanoseconds: Clock.monotonic())
            video.withLock { $0.goodbye(reason: reason, now: now) { sendRTCP($0, route: routes.video, now: nil) } }
            for (index, stream) in audio.enumerated() {
                stream.withLock { $0.goodbye(reason: reason, now: now) { sendRTCP($0, route: routes.audio[index], now: nil) } }
            }
            guard link.usesHandshake else { return }
            let deadline = Clock.monotonic() + 60_000_000
            while Clock.monotonic() < deadline {
                let wait = Int32((deadline &- min(Clock.monotonic(), deadline)) / 1_000_000)
                guard case .some(.some) = try? socket.receive(into: &buffer, count: &count, timeoutMilliseconds: wait),
                      count > 0, !HandshakeMessage.isHandshake(firstByte: buffer[0]) else { continue }
                var datagram = PacketBuffer(buffer[0..<count])
                let feedback = video.withLock { $0.handle(datagram: &datagram, now: now) { _ in } }
                if feedback.contains(where: { if case .stateAcknowledged(.finished) = $0 { true } else { false } }) { return }
            }
        }
    }

    /// Tells the receiver which audio streams come (repeated by the feedback
    /// thread until answered), so it can lay out a recording before the
    /// first sound.
    func describeAudio() {
        let now = MonotonicTime(nanoseconds: Clock.monotonic())
        video.withLock { $0.describe(audio: audioLayout, now: now) }
        tellNow(now)
    }

    /// Sends what the video stream has due now (an announcement just made)
    /// from the calling thread: the feedback thread may be asleep until
    /// its next timer.
    private func tellNow(_ now: MonotonicTime) {
        guard link.ready.load(ordering: .acquiring) else { return }
        video.withLock { _ = $0.poll(now: now) { sendRTCP($0, route: routes.video, now: now) } }
        paced.flush()
    }

    /// For `--cursor auto`: told at each turn of the feedback thread
    /// whether to send the pointer apart, as the receivers say.
    var placePointer: ((Bool) -> Void)?

    /// The pointer for a receiver that draws it (`--cursor metadata`): what
    /// changed leaves at once, with the media (through the pacer, not
    /// paced); the feedback thread repeats it. Before a session it is only
    /// kept, and sent whole when the session starts.
    func updateCursor(_ position: CursorPosition, shape: CursorShape?) {
        let now = MonotonicTime(nanoseconds: Clock.monotonic())
        let ready = link.ready.load(ordering: .acquiring)
        video.withLock { stream in
            stream.updateCursor(position, shape: shape, now: now) { bytes in
                if ready { sendRTCP(bytes, route: routes.video, now: now) }
            }
        }
        if ready { paced.flush() }
    }

    /// Tells the receiver the stream paused or is live again (repeated by
    /// the feedback thread until answered).
    func announce(_ state: StreamState) {
        let now = MonotonicTime(nanoseconds: Clock.monotonic())
        video.withLock { $0.announce(state, reason: title, now: now) }
        tellNow(now)
    }

    // MARK: feedback thread

    /// `keyframe` is called for each honoured keyframe request and each
    /// new session.
    func feedbackLoop(_ context: SenderContext, keyframe: @escaping () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var count = 0
        let started = Clock.monotonic()
        let sendHandshake = { [socket] (bytes: [UInt8]) in _ = socket.send(bytes[...]) }
        link.begin(now: started, send: sendHandshake)
        let controls = routes.controlSockets
        var wait = Self.shortestWait
        while context.isActive {
            do {
                if controls.isEmpty {
                    if try socket.receive(into: &buffer, count: &count, timeoutMilliseconds: Int32(wait / 1_000_000)) != nil {
                        receiveMain(buffer[0..<count], context: context, began: started, send: sendHandshake, keyframe: keyframe)
                    }
                } else {
                    let ready = try UDPSocket.waitForInput([socket] + controls.map(\.socket),
                                                           timeout: .nanoseconds(Int64(wait)))
                    if ready[0], try socket.receive(into: &buffer, count: &count, timeoutMilliseconds: 0) != nil {
                        receiveMain(buffer[0..<count], context: context, began: started, send: sendHandshake, keyframe: keyframe)
                    }
                    for (index, control) in controls.enumerated() where ready[index + 1] {
                        try receiveControl(control.socket, stream: control.stream, buffer: &buffer, keyframe: keyframe)
                    }
                }
            } catch {
                context.fail(.transport(error.description))
                return
            }
            let clock = Clock.monotonic()
            let now = MonotonicTime(nanoseconds: clock)
            if let outcome = link.poll(now: clock, send: sendHandshake) {
                apply(outcome, context: context, began: started, keyframe: keyframe)
            }
            wait = Self.shortestWait
            guard link.ready.load(ordering: .relaxed) else { continue }
            let (polled, rtt, pacing) = controller.withLock { ($0.poll(now: now), $0.roundTrip, $0.pacingRate) }
            apply(target: polled, pacingRate: pacing)
            // Sleep until a timer is due or the receiver says something,
            // not on a fixed tick: the streams' reports, announcements and
            // repeats, the rate sample; the rest (the controller's feedback
            // timeout, the receiver's silence) is coarse.
            let (videoDue, drawnApart) = video.withLock { stream in
                if let rtt { stream.observeRoundTrip(rtt) }
                return (stream.poll(now: now) { sendRTCP($0, route: routes.video, now: now) }, stream.pointerDrawnApart(now: now))
            }
            placePointer?(drawnApart)
            var next = videoDue.nanoseconds
            for (index, stream) in audio.enumerated() {
                let due = stream.withLock { $0.poll(now: now) { sendRTCP($0, route: routes.audio[index], now: now) } }
                next = min(next, due.nanoseconds)
            }
            // Reports and repairs just queued leave now when the budget allows.
            paced.flush()
            tell(presence.poll(now: now), context)
            if clock >= rates.next {
                let bytes = paced.bytesSent
                let state = controller.withLock { RateTimeline.ControllerState($0) }
                let estimate = state.estimate
                if presence.present, let news = estimateChanges.check(estimate, now: now) {
                    context.emit(.networkEstimate(NetworkEstimate(news)))
                }
                if fecAvailable {
                    let group = protection.update(lossFraction: estimate.lossFraction, roundTrip: estimate.roundTrip, now: now)
                    if group ?? 0 != protectionGroup.load(ordering: .relaxed) {
                        protectionGroup.store(group ?? 0, ordering: .relaxed)
                        video.withLock { $0.protectionGroup = group }
                    }
                }
                rates.record(at: clock, bytesSent: bytes, controller: state, encoderKbps: encoderKbps.load(ordering: .relaxed),
                             quantizer: encoderQuantizer.load(ordering: .relaxed),
                             framesEncoded: context.stats.withLock { $0.framesEncoded })
            }
            next = min(next, rates.next)
            // A pointer sent apart needs no quicker turn: the capture thread
            // reads it at most every 16 ms (`CaptureLoop.pointerInterval`),
            // past the announcer's 8 ms minimum, so each position leaves at
            // once from that thread and none waits here for its time.
            let longest = link.isBusy ? Self.shortestWait : Self.longestWait
            wait = min(max(next > clock ? next - clock : 0, 1_000_000), longest)
        }
    }

    /// A datagram on the main socket: a handshake message, or the
    /// receiver's RTCP once a session is up.
    private func receiveMain(_ bytes: ArraySlice<UInt8>, context: SenderContext, began: UInt64,
                             send: ([UInt8]) -> Void, keyframe: () -> Void) {
        let clock = Clock.monotonic()
        let now = MonotonicTime(nanoseconds: clock)
        if let first = bytes.first, HandshakeMessage.isHandshake(firstByte: first) {
            if let outcome = link.handle(bytes, now: clock, send: send) {
                apply(outcome, context: context, began: began, keyframe: keyframe)
            }
            return
        }
        guard link.ready.load(ordering: .relaxed) else { return }
        var datagram = PacketBuffer(bytes)
        let feedback = video.withLock { stream in
            stream.handle(datagram: &datagram, now: now, reply: { bytes in
                paced.enqueue(bytes, kind: .immediate, now: now)
            }, repair: { bytes in
                paced.enqueue(bytes, kind: .retransmission, now: now)
            })
        }
        if !feedback.isEmpty {
            link.heardFeedback(at: clock)
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
    /// video's takes authenticated feedback and plain keyframe requests;
    /// an audio stream's only what concerns that stream.
    private func receiveControl(_ control: UDPSocket, stream index: Int?, buffer: inout [UInt8],
                                keyframe: () -> Void) throws(TransportError) {
        var count = 0
        for _ in 0..<64 {
            guard try control.receive(into: &buffer, count: &count, timeoutMilliseconds: 0) != nil else { return }
            guard link.ready.load(ordering: .relaxed) else { continue }
            let now = MonotonicTime(nanoseconds: Clock.monotonic())
            var datagram = PacketBuffer(buffer[0..<count])
            if let index {
                _ = audio[index].withLock { stream in
                    stream.handle(controlPortDatagram: &datagram, now: now, reply: { _ = control.send($0) }, repair: { _ in })
                }
            } else {
                let feedback = video.withLock { stream in
                    stream.handle(controlPortDatagram: &datagram, now: now, reply: { _ = control.send($0) }, repair: { bytes in
                        paced.enqueue(bytes, kind: .retransmission, now: now)
                    })
                }
                for item in feedback { handle(item, now: now, keyframe: keyframe) }
            }
        }
    }

    /// What a handshake step means for the streams and the host.
    private func apply(_ outcome: SessionLink.Outcome, context: SenderContext, began: UInt64, keyframe: () -> Void) {
        switch outcome {
        case .verifying(let receiver, let code):
            context.emit(.verifying(receiver: receiver, code: code))
        case .failed(let failure):
            context.fail(.session(failure.description))
        case .established(let session):
            do {
                try video.withLock { stream throws(SRTPError) in try stream.rekey(session.keys) }
                for stream in audio { try stream.withLock { stream throws(SRTPError) in try stream.rekey(session.keys) } }
            } catch {
                context.fail(.encryption(error.description))
                return
            }
            link.ready.store(true, ordering: .releasing)
            describeAudio()
            keyframe()
            let elapsed = Double(Clock.monotonic() &- began) / 1e6
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
            let (target, pacing) = controller.withLock { ($0.handle(report, now: now), $0.pacingRate) }
            apply(target: target, pacingRate: pacing)
        case .receiverReport(_, let roundTrip):
            if let roundTrip { controller.withLock { $0.observeRoundTrip(roundTrip) } }
        default:
            break
        }
    }

    private func apply(target: Double, pacingRate: Double) {
        guard adaptive else { return }
        let bits = Int(target)
        guard bits != targetBitrate.load(ordering: .relaxed) || Int(pacingRate) != pacing else { return }
        targetBitrate.store(bits, ordering: .relaxed)
        pacing = Int(pacingRate)
        paced.setTarget(target, pacingRate: pacingRate)
    }

    // MARK: statistics

    struct Snapshot {
        var estimate: CongestionController.Estimate
        var feedbackReports: Int
        var pacer: PacketPacer.Counters
        var queueDelay: Duration
    }

    func snapshot() -> Snapshot {
        let now = MonotonicTime(nanoseconds: Clock.monotonic())
        let (estimate, reports) = controller.withLock { ($0.estimate, $0.feedbackReports) }
        let (counters, delay) = paced.snapshot(now: now)
        return Snapshot(estimate: estimate, feedbackReports: reports, pacer: counters, queueDelay: delay)
    }
}

/// A stream behind its own lock, so a list of them can be kept (a Mutex
/// cannot be copied into an array).
final class LockedStream: Sendable {
    private let mutex: Locked<SendStream>

    init(_ stream: sending SendStream) { mutex = Locked(stream) }

    func withLock<Result, Failure: Error>(_ body: (inout sending SendStream) throws(Failure) -> sending Result) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }
}

extension NetworkEstimate {
    init(_ estimate: CongestionController.Estimate) {
        self.init(targetKbps: estimate.target / 1000, acknowledgedKbps: estimate.acknowledged.map { $0 / 1000 },
                  roundTripMilliseconds: estimate.roundTrip.map { $0.seconds * 1000 }, lossFraction: estimate.lossFraction,
                  congested: estimate.usage == .overusing)
    }
}
