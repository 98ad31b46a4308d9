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
        let (screen, source, captureSummary) = try Self.openVideo(configuration)
        let plan = SenderPlan(configuration: configuration, source: source, captureBuffers: .bytes(screen?.heldBytes ?? 0),
                              ssrcs: .choose(for: configuration))
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
        let audioBitrate = SenderPlan.audioBitrate(sound.channels.map(\.input.bitrate))
        network = try Self.makeNetwork(configuration, plan: plan, socket: socket, destination: destination, video: video,
                                       audio: sound, audioBitrate: audioBitrate)
        Self.wirePointer(configuration, capture: capture, network: network, context: context)
        governor?.historyBytes = { [network] in
            network.video.withLock { $0.historyBytes } + network.audio.reduce(0) { $0 + $1.withLock { $0.historyBytes } }
        }
        var idle: (@Sendable (SenderContext) -> Void)?
        if let pushed {
            let refresh = configuration.stillRefresh
            idle = { context in pushed.repeatNewest(context, stillRefresh: refresh) }
        }
        pipeline = EncodePipeline(configuration: configuration, feed: feed, network: network, governor: governor,
                                  encoder: encoder, baseSize: plan.baseSize, baseBitrate: plan.baseBitrate, audioBitrate: audioBitrate,
                                  idle: idle)
        gatherer = StatisticsGatherer(context: context, network: network, capture: capture, pushed: pushed, audio: audio,
                                      governor: governor)
        var description: SessionDescription?
        if case .staticKey(let keying) = configuration.keying {
            description = plan.sessionDescription(keying: keying, host: destination.host, parameterSets: encoder.parameterSets(),
                                                  audio: sound.channels.map { .init(ssrc: $0.ssrc, channels: $0.channels) })
        }
        setup = SenderSetup(sourceSize: plan.sourceSize, encodedSize: plan.encodedSize, fps: configuration.fps,
                            bitrateKbps: encoder.configuration.bitrateKbps, destination: destination.description,
                            title: configuration.title, sessionDescription: description, capture: captureSummary)
    }

    deinit {
        stop()
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
        if let interval = configuration.statisticsInterval, interval > .zero {
            spawn("statistics") { [weak self] in
                var next = SystemClock.now() + interval
                while context.isActive {
                    SystemClock.sleep(until: min(next, SystemClock.now() + .milliseconds(50)))
                    guard SystemClock.now() >= next, context.isActive, let self else { continue }
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
                let deadline = SystemClock.now() + .seconds(1)
                while !link.ready.load(ordering: .acquiring) && SystemClock.now() < deadline {
                    SystemClock.sleep(for: .milliseconds(5))
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

    /// Stops sending to one destination of a stream with copies (0: the
    /// configuration's own, then `copies` in order), as when that SFU went
    /// away; the others go on. False when there is no such destination or
    /// it was dropped already. Dropping every one leaves the sender running
    /// with nowhere to send: the host decides whether to stop.
    @discardableResult
    public func dropDestination(_ index: Int) -> Bool {
        let destinations = network.routes.destinations
        guard destinations.count > 1, destinations.indices.contains(index) else { return false }
        return destinations[index].drop()
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
