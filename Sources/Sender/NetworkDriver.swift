internal import ShareCongestion
internal import ShareSRTP
internal import ShareSession
internal import ShareTransport
internal import ShareWire
import Synchronization
internal import ShareSync
internal import ShareBase

/// The sender's network side: the one owner of the socket, the streams,
/// the pacer and the congestion controller, and the way media leaves from
/// any thread. Two threads of its own: the pacer thread (`PacedSending`)
/// sends what the pacer releases (and tells the congestion controller what
/// left when); the feedback thread (`FeedbackLoop`) reads RTCP, answers
/// NACKs (into the pacer), runs the congestion controller on RFC 8888
/// feedback and sends sender reports. Neither sleeps holding a lock.
final class NetworkDriver: @unchecked Sendable {
    // Safe: the socket is thread-safe for send/receive; everything mutable
    // is behind a mutex or an atomic, but for `placePointer`, set before
    // the threads start; lock order is stream -> pacer, and the
    // controller's lock is never held with another.
    let socket: UDPSocket
    /// Where the socket sends (the receiver's address, or the SFU's).
    let destination: SocketAddress
    let video: Locked<SendStream>
    let audio: [LockedStream]
    /// The pacer and its thread.
    let paced: PacedSending
    let controller: Locked<CongestionController>
    /// The congestion controller's target for everything we send (bits/s).
    let targetBitrate: Atomic<Int>
    /// The rates every 250 ms, for the statistics.
    let rates = RateTimeline()
    /// Media packets per FlexFEC repair (0: no FEC), set by the protection policy.
    let protectionGroup = Atomic<Int>(0)
    /// Whether each media packet is also protected across the groups.
    let protectionCrossing = Atomic<Bool>(false)
    /// The encoder's bitrate (kbit/s), for the timeline.
    let encoderKbps = Atomic<Int>(0)
    /// The quantizer of the last picture coded (0: none yet), for the rate timeline.
    let encoderQuantizer = Atomic<Int>(0)
    /// Whether the video stream can send FlexFEC.
    let fecAvailable: Bool
    /// Whether the video stream can send padding for bandwidth probes.
    let canPad: Bool
    /// Probes the path carried so far: each raised the target to a rate
    /// the path was just shown to carry (the quality ladder need not wait).
    let probesCarried = Atomic<Int>(0)

    /// Whether the congestion controller's target is followed (off: the
    /// configured rate is sent whatever the path does).
    let adaptive: Bool
    /// The session: handshake, and whether media may flow yet.
    let link: SessionLink
    /// The audio streams, as the receiver is told them.
    private let audioLayout: [AudioStreamLayout]
    /// Ports of their own for audio and RTCP (SFUs, standard receivers): one route per audio stream.
    let routes: MediaRoutes
    /// What the stream is called (`SenderConfiguration.title`): told with every state.
    private let title: String?

    init(socket: UDPSocket, destination: SocketAddress, routes: MediaRoutes, video: sending SendStream, audio: [LockedStream],
         audioLayout: [AudioStreamLayout], congestion: CongestionController.Configuration, link: SessionLink,
         adaptive: Bool = true, title: String? = nil) {
        self.socket = socket
        self.destination = destination
        self.title = title
        self.routes = routes
        self.audioLayout = audioLayout
        self.link = link
        self.adaptive = adaptive
        fecAvailable = video.configuration.forwardErrorCorrection != nil
        canPad = video.canPad
        self.video = Locked(video)
        self.audio = audio
        let controller = Locked(CongestionController(configuration: congestion))
        self.controller = controller
        paced = PacedSending(socket: socket, routes: routes, controller: controller, startRate: congestion.start)
        targetBitrate = Atomic(Int(congestion.start.bitsPerSecond))
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
            let mark = paced.mediaMark
            try stream.send(part: part, endsFrame: endsFrame, rtpTimestamp: rtpTimestamp, captureTime: captureTime,
                            now: now) { datagram in
                paced.enqueue(datagram, kind: .media, now: now)
            }
            // What came before a keyframe and has not left, repairs and
            // media alike, is of no use now: the receiver decodes on from it.
            if stream.takeKeyframeStarted() { paced.dropSuperseded(before: mark) }
        }
        paced.flush()
        return true
    }

    /// Sends a bandwidth probe: the cluster's padding, queued to leave
    /// `spacing` apart from now (the pacer thread sends each at its time).
    func sendProbe(_ cluster: ProbeCluster, now: MonotonicTime) throws(SRTPError) {
        guard link.ready.load(ordering: .acquiring) else { return }
        try video.withLock { stream throws(SRTPError) in
            try stream.sendPadding(count: cluster.packets, size: cluster.packetSize) { index, datagram in
                paced.enqueue(datagram, kind: .probe, now: now + cluster.spacing * index)
            }
        }
        paced.flush()
    }

    /// Protects and queues one audio packet (sent ahead of video).
    func sendAudio(_ index: Int, payload: ArraySlice<UInt8>, rtpTimestamp: UInt32, captureTime: NTPTimestamp,
                   now: MonotonicTime) throws(SRTPError) {
        guard link.ready.load(ordering: .acquiring) else { return }
        let destination = routes.audio[index].media
        try audio[index].withLock { stream throws(SRTPError) in
            try stream.send(payload: payload, rtpTimestamp: rtpTimestamp, captureTime: captureTime, now: now) { datagram in
                // On a port of its own audio leaves at once, as it would from the pacer.
                if destination != nil {
                    routes.deliver(datagram, audio: index, on: socket)
                } else {
                    paced.enqueue(datagram, kind: .immediate, now: now)
                }
            }
        }
        if destination == nil { paced.flush() }
    }

    /// Sends a stream's RTCP (`stream` nil: the video's) the way its route
    /// says: on its own socket, to its media's port, or with the video,
    /// through the pacer (RTCP is not paced, only kept in order with the
    /// media) unless `now` is nil (the threads are done: straight to the
    /// socket). Copies get it at their own ports.
    func sendRTCP(_ bytes: ArraySlice<UInt8>, stream: Int?, now: MonotonicTime?) {
        routes.sendToCopies(rtcp: bytes, stream: stream, on: socket)
        guard routes.primary.isActive else { return }
        let route = stream.map { routes.audio[$0] } ?? routes.video
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
            let now = SystemClock.now()
            video.withLock { $0.goodbye(reason: reason, now: now) { sendRTCP($0, stream: nil, now: nil) } }
            for (index, stream) in audio.enumerated() {
                stream.withLock { $0.goodbye(reason: reason, now: now) { sendRTCP($0, stream: index, now: nil) } }
            }
            guard link.usesHandshake else { return }
            let deadline = SystemClock.now() + .milliseconds(60)
            while SystemClock.now() < deadline {
                let wait = Int32(deadline.since(SystemClock.now()).nanoseconds / 1_000_000)
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
        let now = SystemClock.now()
        video.withLock { $0.describe(audio: audioLayout, now: now) }
        tellNow(now)
    }

    /// Sends what the video stream has due now (an announcement just made)
    /// from the calling thread: the feedback thread may be asleep until
    /// its next timer.
    private func tellNow(_ now: MonotonicTime) {
        guard link.ready.load(ordering: .acquiring) else { return }
        video.withLock { _ = $0.poll(now: now) { sendRTCP($0, stream: nil, now: now) } }
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
        let now = SystemClock.now()
        let ready = link.ready.load(ordering: .acquiring)
        video.withLock { stream in
            stream.updateCursor(position, shape: shape, now: now) { bytes in
                if ready { sendRTCP(bytes, stream: nil, now: now) }
            }
        }
        if ready { paced.flush() }
    }

    /// Tells the receiver the stream paused or is live again (repeated by
    /// the feedback thread until answered).
    func announce(_ state: StreamState) {
        let now = SystemClock.now()
        video.withLock { $0.announce(state, reason: title, now: now) }
        tellNow(now)
    }

    // MARK: statistics

    struct Snapshot {
        var estimate: CongestionController.Estimate
        var feedbackReports: Int
        var probes: (clusters: Int, carried: Int)
        var pacer: PacketPacer.Counters
        var queueDelay: Duration
    }

    func snapshot() -> Snapshot {
        let now = SystemClock.now()
        let (estimate, reports, probes) = controller.withLock { ($0.estimate, $0.feedbackReports, $0.probeCounts) }
        let (counters, delay) = paced.snapshot(now: now)
        return Snapshot(estimate: estimate, feedbackReports: reports, probes: probes, pacer: counters, queueDelay: delay)
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
        self.init(targetKbps: estimate.target.kilobitsPerSecond, acknowledgedKbps: estimate.acknowledged?.kilobitsPerSecond,
                  roundTripMilliseconds: estimate.roundTrip.map { $0.seconds * 1000 }, lossFraction: estimate.lossFraction,
                  congested: estimate.usage == .overusing)
    }
}
