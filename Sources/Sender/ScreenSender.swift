import Dispatch
internal import ShareAudio
internal import ShareBase
public import ShareColor
public import ShareFrames
internal import ShareCongestion
internal import ShareHandshake
internal import ShareSRTP
internal import ShareSession
internal import ShareTransport
internal import ShareVideo
internal import ShareWire
internal import ShareCapture
internal import ShareX11Capture
import Synchronization
public import ShareGovernor
internal import ShareSync

/// The embeddable screen sender: captures an X display, encodes H.264 and
/// sends it as SRTP to one receiver, at the rate the path carries. A small
/// owner of its parts, each on its own thread: the capture loop (never waits
/// on anything downstream), the encode pipeline (with the memory governor
/// and the quality ladder), the network driver (a pacer thread and a
/// feedback thread with the congestion controller) and one thread per audio
/// stream. The host drives it with `start`, `pause`, `resume` and `stop`.
public final class ScreenSender: Sendable {
    // Each part owns its state and says how its threads share it; the
    // governor's start is read on the calling thread before threads start.
    /// The configuration it was made with.
    public let configuration: SenderConfiguration
    /// What it settled on: sizes, rate, bitrate, destination, title.
    public let setup: SenderSetup

    private let context = SenderContext()
    /// The screen's capture loop, or the host's pushed pictures (`configuration.video`).
    private let capture: CaptureLoop?
    private let pushed: PushedVideo?
    private let feed: VideoFeed
    private let pipeline: EncodePipeline
    private let network: NetworkDriver
    private let governor: GovernorControl?
    private let audio: [AudioChannel]
    /// A budget no rung fits: the sender starts, tells the receiver why, and ends.
    private let startupFailure: SenderError?
    private let group = DispatchGroup()
    /// The finishing work (BYE, final statistics, `.finished`) still to run.
    private let finishing = DispatchGroup()
    private let finishQueue = DispatchQueue(label: "share.sender.finish")
    /// Marks the sender's own queues (workers and finishing): a host that
    /// calls `stop()` from an event handler runs on one, and must not wait
    /// for itself.
    private static let ownQueue = DispatchSpecificKey<ObjectIdentifier>()
    private let failure = Locked<SenderError?>(nil)
    private let gatherer: StatisticsGatherer
    /// Audio inputs that could not start (video goes on without them).
    public let audioWarnings: [String]

    /// Makes a sender: opens the display (or prepares for pushed pictures),
    /// the encoder, the audio inputs and the socket, and chooses the memory
    /// governor's starting rung. Nothing is sent before `start`. Throws when
    /// the configuration cannot work (the error says which part and why); an
    /// audio input that cannot start is only a warning (`audioWarnings`).
    public init(configuration: SenderConfiguration) throws(SenderError) {
        try Self.validate(configuration)
        self.configuration = configuration
        let (socket, destination) = try Self.openSocket(configuration)
        let screen = try Self.openScreen(configuration)
        let plan = SenderPlan(configuration: configuration, source: try Self.sourceSize(configuration, screen: screen),
                              captureBuffers: screen?.heldBytes ?? 0, ssrcs: .random(for: configuration))
        governor = plan.governor.map { GovernorControl(governor: $0, accounting: configuration.memoryAccounting) }
        startupFailure = plan.startupFailure.map(SenderError.memory)
        let feed = VideoFeed(fps: plan.fps, maxHeight: plan.encodedSize.height)
        self.feed = feed
        capture = screen.map { CaptureLoop(capturer: $0, feed: feed, configuredSize: configuration.size,
                                           stillRefresh: configuration.stillRefresh) }
        pushed = screen == nil ? PushedVideo(feed: feed, configuredSize: configuration.size, slots: configuration.captureSlots) : nil
        let keys = Self.startKeys(configuration)
        let video: SendStream
        do { video = try SendStream(configuration: plan.videoStream, keys: keys) } catch { throw .encryption(error.description) }
        let encoder: H264Encoder
        do {
            encoder = try EncodePipeline.makeEncoder(configuration, size: plan.encodedSize, bitrate: plan.encoderBitrateKbps,
                                                     sliceMaxSize: EncodePipeline.sliceMaxSize(payload: video.maxPayloadSize))
        } catch {
            throw .encoder(error.description)
        }
        let sound = Self.openAudio(configuration, keys: keys)
        (audio, audioWarnings) = (sound.channels, sound.warnings)
        let audioBitrate = SenderPlan.audioBitsPerSecond(sound.channels.map(\.input.bitrate))
        network = try Self.makeNetwork(configuration, plan: plan, socket: socket, destination: destination, video: video,
                                       audio: sound, audioBitrate: audioBitrate)
        Self.wirePointer(configuration, capture: capture, network: network, context: context)
        governor?.historyBytes = { [network] in
            network.video.withLock { $0.historyBytes } + network.audio.reduce(0) { $0 + $1.withLock { $0.historyBytes } }
        }
        pipeline = EncodePipeline(configuration: configuration, feed: feed, network: network, governor: governor,
                                  encoder: encoder, baseSize: plan.baseSize, baseBitrate: plan.baseBitrateKbps, audioBitrate: audioBitrate)
        if let pushed {
            let refresh = configuration.stillRefresh?.nanoseconds
            pipeline.idle = { context in pushed.repeatNewest(context, stillRefresh: refresh) }
        }
        gatherer = StatisticsGatherer(context: context, network: network, capture: capture, pushed: pushed, audio: audio,
                                      governor: governor)
        var description: SessionDescription?
        if case .staticKey(let keying) = configuration.keying {
            description = plan.sessionDescription(keying: keying, host: destination.host, parameterSets: encoder.parameterSets(),
                                                  audio: sound.channels.map { .init(ssrc: $0.ssrc, channels: $0.reader.channels) })
        }
        setup = SenderSetup(sourceSize: plan.sourceSize, encodedSize: plan.encodedSize, fps: configuration.fps,
                            bitrateKbps: encoder.configuration.bitrateKbps, destination: destination.description,
                            title: configuration.title, sessionDescription: description)
    }

    // MARK: the steps of init

    private static func validate(_ configuration: SenderConfiguration) throws(SenderError) {
        guard (1...120).contains(configuration.fps) else { throw .configuration("--fps \(configuration.fps) outside 1-120") }
        guard (400...9000).contains(configuration.mtu) else { throw .configuration("--mtu \(configuration.mtu) outside 400-9000") }
        if let problem = configuration.handshakeName.flatMap(PeerName.problem) { throw .configuration(problem) }
        try checkPorts(configuration)
        if case .pushed(let size) = configuration.video,
           !(16...8192).contains(size.width) || !(16...8192).contains(size.height) {
            throw .configuration("pushed pictures of \(size) (16 to 8192 pixels a side)")
        }
    }

    private static func openSocket(_ configuration: SenderConfiguration) throws(SenderError) -> (UDPSocket, SocketAddress) {
        do {
            let destination = try SocketAddress(host: configuration.host, port: configuration.port)
            return (try UDPSocket(connectedTo: destination), destination)
        } catch {
            throw .transport(error.description)
        }
    }

    /// The screen to capture behind the capture seam; nil when the host
    /// pushes its own pictures.
    private static func openScreen(_ configuration: SenderConfiguration) throws(SenderError) -> (any ScreenSource)? {
        guard case .screen = configuration.video else { return nil }
        let pointer = pointerPlacement(configuration)
        do {
            return try ScreenCapturer(display: configuration.display, slots: configuration.captureSlots, source: configuration.source,
                                      drawsCursor: pointer == .embed || pointer == .auto, tracksPointer: pointer == .metadata)
        } catch {
            throw .capture("\(error)")
        }
    }

    private static func sourceSize(_ configuration: SenderConfiguration, screen: (any ScreenSource)?) throws(SenderError) -> VideoSize {
        if let screen { return VideoSize(width: screen.width, height: screen.height) }
        guard case .pushed(let size) = configuration.video else { throw .configuration("no screen and no pushed pictures") }
        return size
    }

    /// With a handshake, the streams start with throwaway keys: nothing is
    /// sent until the session's keys replace them.
    private static func startKeys(_ configuration: SenderConfiguration) -> SRTPSessionKeys {
        switch configuration.keying {
        case .staticKey(let keying): .symmetric(keying)
        case .handshake: .symmetric(.random(profile: configuration.profile))
        }
    }

    /// The audio inputs that could start, their streams, and why the others did not.
    private struct OpenedAudio {
        var channels: [AudioChannel] = []
        var streams: [LockedStream] = []
        var warnings: [String] = []
    }

    private static func openAudio(_ configuration: SenderConfiguration, keys: SRTPSessionKeys) -> OpenedAudio {
        var opened = OpenedAudio()
        for input in configuration.audio {
            do {
                let channel = try AudioChannel(input: input)
                opened.streams.append(LockedStream(try channel.makeStream(keys: keys, payloadType: configuration.audioPayloadType,
                                                                          cname: configuration.cname)))
                opened.channels.append(channel)
            } catch {
                opened.warnings.append("\(error); sending without \(input.label)")
            }
        }
        return opened
    }

    private static func makeNetwork(_ configuration: SenderConfiguration, plan: SenderPlan, socket: UDPSocket,
                                    destination: SocketAddress, video: sending SendStream, audio: OpenedAudio,
                                    audioBitrate: Int) throws(SenderError) -> NetworkDriver {
        let link = SessionLink(keying: configuration.keying, name: configuration.handshakeName, profile: configuration.profile,
                               instance: UInt64.random(in: 1...UInt64.max), confirmation: configuration.confirmation)
        let layout = audio.channels.map { AudioStreamLayout(ssrc: $0.ssrc, channels: UInt8($0.reader.channels)) }
        // Audio streams are numbered as they started (as the SDP numbers them).
        let routes: MediaRoutes
        do {
            routes = try MediaRoutes.make(host: configuration.host, audioStreams: audio.channels.count,
                                          audioPorts: configuration.audioPorts, rtcpPort: configuration.rtcpPort,
                                          audioRTCPPorts: configuration.audioRTCPPorts)
        } catch {
            throw .transport(error.description)
        }
        return NetworkDriver(socket: socket, destination: destination, routes: routes, video: video, audio: audio.streams,
                             audioLayout: layout, congestion: plan.congestion(audioBitsPerSecond: audioBitrate), link: link,
                             adaptive: configuration.congestionControl, title: configuration.title)
    }

    /// The pointer apart from the pictures: always (`--cursor metadata`),
    /// or while the receivers say they draw it (`auto`).
    private static func wirePointer(_ configuration: SenderConfiguration, capture: CaptureLoop?, network: NetworkDriver,
                                    context: SenderContext) {
        let placement = pointerPlacement(configuration)
        guard placement == .metadata || placement == .auto, let capture else { return }
        if placement == .metadata {
            capture.pointerWanted.store(true, ordering: .relaxed)
        } else {
            network.placePointer = { [capture, context] apart in
                if capture.pointerWanted.exchange(apart, ordering: .relaxed) != apart { context.captureWakeup.signal() }
            }
        }
        capture.pointerSink = { [network] pointer in
            let position = CursorPosition(x: Int16(clamping: pointer.x), y: Int16(clamping: pointer.y),
                                          areaWidth: UInt16(clamping: pointer.areaWidth),
                                          areaHeight: UInt16(clamping: pointer.areaHeight), shape: pointer.serial,
                                          visible: pointer.visible)
            let shape = pointer.shape.map {
                CursorShape(serial: $0.serial, width: $0.width, height: $0.height, hotX: $0.hotX, hotY: $0.hotY, pixels: $0.pixels)
            }
            network.updateCursor(position, shape: shape)
        }
    }

    deinit {
        stop()
    }

    /// Where the pointer goes: `auto` follows what receivers say only in a
    /// handshake session (the peer is a `share recv`); with a static key the
    /// players of the SDP and Janus's browsers draw no pointer: drawn in.
    private static func pointerPlacement(_ c: SenderConfiguration) -> CursorMode {
        guard c.cursor == .auto else { return c.cursor }
        if case .handshake = c.keying { return .auto }
        return .embed
    }

    /// Ports of their own are for receivers that take a static key: a
    /// handshake needs the one port `share recv` listens on.
    private static func checkPorts(_ c: SenderConfiguration) throws(SenderError) {
        let ports: [(String, [Int])] = [("port", [c.port]), ("audio port", c.audioPorts), ("RTCP port", c.rtcpPort.map { [$0] } ?? []),
                                        ("audio RTCP port", c.audioRTCPPorts)]
        var used: Set<Int> = []
        for (name, list) in ports {
            for port in list {
                guard (1...65535).contains(port) else { throw .configuration("\(name) \(port) outside 1-65535") }
                guard used.insert(port).inserted else { throw .configuration("\(name) \(port) is taken by another stream") }
            }
        }
        for (name, list) in [("audio ports", c.audioPorts), ("audio RTCP ports", c.audioRTCPPorts)]
        where !list.isEmpty && list.count < c.audio.count {
            throw .configuration("\(list.count) \(name) for \(c.audio.count) audio streams")
        }
        for kind in PushedAudio.allCases where c.audio.filter({ $0.source == .pushed(kind) }).count > 1 {
            throw .configuration("two audio inputs pushed as \(kind): each pushed stream is one input")
        }
        if case .handshake = c.keying, !c.audioPorts.isEmpty || c.rtcpPort != nil || !c.audioRTCPPorts.isEmpty {
            throw .configuration("separate audio and RTCP ports are for SFUs and standard receivers, with a static key "
                + "(--srtp-key-file or --sdp); share recv takes everything on one port")
        }
    }

    /// Caps glibc's malloc arenas at two for the whole process: glibc gives
    /// busy threads arenas of their own that grow and never shrink, and two
    /// keep dirty memory proportional to the work (`share send` calls it at
    /// start). Process-wide, so it is the host's choice, not the library's.
    public static func limitMallocArenas() {
        ShareSender.limitMallocArenas()
    }

    /// Starts capturing and sending; `events` hears the lifecycle.
    public func start(events: @escaping @Sendable (SenderEvent) -> Void = { _ in }) {
        guard context.transition(from: .idle, to: .running) else { return }
        context.install(events: events, fail: { [weak self] error in self?.finish(with: error) })
        gatherer.started()
        // Everything the workers share is set up before they run: the
        // governor belongs to the encode thread from then on.
        context.emit(.started(setup))
        for warning in audioWarnings { context.emit(.warning(warning)) }
        governor?.announceStart(context)
        let (rungName, budgetBytes) = (governor?.current.name ?? "off", governor?.governor.budget.bytes ?? 0)
        context.stats.withLock { s in
            s.memoryRung = rungName
            s.memoryBudgetBytes = budgetBytes
        }
        let (context, network, capture, pipeline) = (self.context, self.network, self.capture, self.pipeline)
        if let capture { spawn("capture") { capture.run(context) } }
        spawn("encode") { pipeline.run(context) }
        spawn("pacer") { network.paced.loop(context) }
        spawn("network") { FeedbackLoop(network: network).run(context) { context.requestKeyframe() } }
        for (index, channel) in audio.enumerated() {
            spawn("audio") { channel.run(context, index: index, network: network) }
        }
        // The title goes with every state the receiver is told.
        if configuration.title != nil { network.announce(.live) }
        // With a static key the streams flow from the start: say now which
        // audio streams come (a handshake's session says it when it is up).
        if case .staticKey = configuration.keying { network.describeAudio() }
        if let interval = configuration.statisticsInterval?.nanoseconds, interval > 0 {
            spawn("statistics") { [weak self] in
                var next = Clock.monotonic() + interval
                while context.isActive {
                    Clock.sleep(until: min(next, Clock.monotonic() + 50_000_000))
                    guard Clock.monotonic() >= next, context.isActive, let self else { continue }
                    next += interval
                    context.emit(.statistics(statistics))
                }
            }
        }
        if let startupFailure {
            // The receiver is told why in the BYE, which needs the session's
            // keys: the handshake (a few milliseconds) gets up to a second.
            let link = network.link
            DispatchQueue.global().async { [self] in
                let deadline = Clock.monotonic() + 1_000_000_000
                while !link.ready.load(ordering: .acquiring) && Clock.monotonic() < deadline {
                    Clock.sleep(until: Clock.monotonic() + 5_000_000)
                }
                finish(with: startupFailure)
            }
        }
    }

    private func spawn(_ label: String, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        let queue = DispatchQueue(label: "share.sender.\(label)", qos: .userInteractive)
        queue.setSpecific(key: Self.ownQueue, value: ObjectIdentifier(self))
        queue.async { [group] in
            ThreadName.running(as: "share-\(label)") { body() }
            group.leave()
        }
    }

    /// Hands the sender a picture of its own (`configuration.video` is
    /// `.pushed`): converted at once into the encoder's picture (scaled to
    /// the encoded size), so `picture`'s memory is free again when this
    /// returns. Never waits: a push sooner than the frame rate asks, or while
    /// every picture is with the encoder, is dropped and counted. `time` is
    /// when the picture was made (default: now), on `CaptureTime`'s clocks.
    public func push(_ picture: PixelBuffer, width: Int, height: Int, time: CaptureTime? = nil) -> PushOutcome {
        guard let pushed else { return .refused("this sender captures the screen (configuration.video is .screen)") }
        return pushed.push(picture, width: width, height: height, time: time, context: context)
    }

    /// Hands the sender sound of its own, for the audio input
    /// `.pushed(stream)`: interleaved PCM at `rate` (a common rate, 8 to
    /// 192 kHz) with 1 or 2 `channels`, converted at once to the stream's
    /// channels and 48 kHz and queued for Opus, so `samples`' memory is free
    /// again when this returns. Never waits: at most 200 ms are queued and
    /// the oldest sound gives way (counted in `audioFramesDropped`). `time`
    /// is when the first sample was made (default: the last one was made now).
    public func push(audio samples: AudioSamples, rate: Int, channels: Int, to stream: PushedAudio,
                     time: CaptureTime? = nil) -> PushOutcome {
        guard let buffer = audio.lazy.compactMap(\.pushed).first(where: { $0.kind == stream }) else {
            return .refused("no audio input is pushed as \(stream) (configuration.audio)")
        }
        guard context.isRunning else { return .notRunning }
        return buffer.push(samples, rate: rate, channels: channels, time: time)
    }

    /// Gives the memory governor a new budget (applied with the next frame:
    /// it steps down at once when over it, climbs back when well below).
    /// False when the governor is off (`memoryBudget` nil).
    @discardableResult
    public func setMemoryBudget(_ budget: MemoryBudget) -> Bool {
        guard let governor else { return false }
        governor.requestedBudget.store(budget.bytes, ordering: .relaxed)
        return true
    }

    /// Stops capturing until `resume`; the stream stays open.
    public func pause() {
        if context.transition(from: .running, to: .paused) {
            network.announce(.paused)
            context.emit(.paused)
        }
    }

    /// Captures again after `pause`; the next picture is a keyframe.
    public func resume() {
        if context.transition(from: .paused, to: .running) {
            network.announce(.live)
            context.requestKeyframe()
            context.emit(.resumed)
        }
    }

    /// Stops the threads, sends RTCP BYE and reports `finished` before returning.
    public func stop() {
        finish(with: nil)
        waitUntilFinished()
    }

    /// Ends the stream because of an error of the host's (what a broadcast
    /// extension's `finishBroadcastWithError` does): the receiver is told
    /// `message` (in the BYE and the finished state it answers, as
    /// "error: …"), `finished` reports `.host(message)`, and this returns
    /// once all is done, like `stop`.
    public func finish(error message: String) {
        finish(with: .host(message))
        waitUntilFinished()
    }

    /// The events from now on, as an `AsyncSequence` (each call makes a new
    /// stream; any number may be read at once, beside `start`'s handler).
    /// A stream ends after `.finished`; one asked for later ends at once.
    /// A reader that falls behind loses the oldest (256 are kept).
    public var events: AsyncStream<SenderEvent> { context.broadcast.stream() }

    /// Blocks until the sender has finished (after `stop` or an error):
    /// threads ended, BYE sent, `finished` reported. From an event handler
    /// (on one of the sender's threads) it returns at once instead.
    public func waitUntilFinished() {
        // From an event handler: the stop goes on once the handler returns.
        if DispatchQueue.getSpecific(key: Self.ownQueue) == ObjectIdentifier(self) { return }
        group.wait()
        finishing.wait()
    }

    /// True between `pause` and `resume`.
    public var isPaused: Bool { context.state.load(ordering: .relaxed) == SenderContext.State.paused.rawValue }

    /// The error that ended the sender, if one did.
    public var error: SenderError? { failure.withLock { $0 } }

    private func finish(with error: SenderError?) {
        while true {
            let current = context.state.load(ordering: .sequentiallyConsistent)
            guard current == SenderContext.State.running.rawValue || current == SenderContext.State.paused.rawValue
            else { return }
            if context.state.compareExchange(expected: current, desired: SenderContext.State.stopping.rawValue,
                                             ordering: .sequentiallyConsistent).exchanged { break }
        }
        failure.withLock { $0 = error }
        // The threads that may be waiting for news without a timeout.
        feed.frameReady.signal()
        context.tellStateChanged()
        network.paced.wakeUp()
        finishing.enter()
        finishQueue.setSpecific(key: Self.ownQueue, value: ObjectIdentifier(self))
        finishQueue.async { [self] in
            defer { finishing.leave() }
            group.wait()
            let reason = error.map { "error: \($0)" } ?? "sender stopped"
            network.goodbye(reason: String(reason.prefix(200)))
            gatherer.gather()
            context.state.store(SenderContext.State.finished.rawValue, ordering: .sequentiallyConsistent)
            context.emit(.finished(error))
        }
    }

    // MARK: statistics

    /// A snapshot of the counters (footprint sampled now).
    public var statistics: SenderStatistics {
        gatherer.gather()
        return context.stats.withLock { $0 }
    }
}
