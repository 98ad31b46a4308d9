internal import ShareColor
internal import ShareBase
internal import ShareDecode
internal import ShareSession
internal import ShareWire
internal import ShareX11
import Synchronization
internal import ShareLatency
internal import ShareSync

/// What the receiver's two threads share: whether it runs, and its counters
/// (each thread writes its own fields).
final class ReceiverShared: Sendable {
    let running = Atomic<Bool>(false)
    let stats = Locked(ReceiverStatistics())
    /// The decode thread's latencies, summarized when the statistics are read.
    let captureToDisplay = LatencyLog()
    let lastPacketToDisplay = LatencyLog()
}

/// The receiver's decode thread: decodes each frame the network thread
/// hands over and shows it at once (or after the audio's delay, for lip
/// sync), measures latency and freezes, records the video and hands the
/// sound to its router. Asks the network thread for a keyframe when the
/// picture chain breaks.
final class Presenter: Sendable {
    /// Everything the decode thread works with, its alone.
    private let decoding: ThreadBound<Decoding>

    init(configuration: ReceiverConfiguration, decoder: H264Decoder, queue: WorkQueue, network: ReceiverNetworkLoop,
         latencies: ReceiverShared, events: @escaping @Sendable (ReceiverEvent) -> Void) {
        decoding = ThreadBound(Decoding(configuration: configuration, decoder: decoder, queue: queue, network: network,
                                        latencies: latencies, events: events))
    }

    /// Runs the decode thread until the receiver stops (or its window is closed).
    func run(_ shared: ReceiverShared) -> ReceiverError? {
        decoding.withValue { $0.run(shared) }
    }
}

/// The decode thread's state and work (see `Presenter`).
private struct Decoding {
    private let configuration: ReceiverConfiguration
    private let decoder: H264Decoder
    private let queue: WorkQueue
    private let network: ReceiverNetworkLoop
    private let events: @Sendable (ReceiverEvent) -> Void
    private var window: PictureWindow?
    private let recording: SessionRecording?
    private let latency: LatencyLog
    private let receiving: LatencyLog
    /// The last pixel format warned about as one that cannot be shown.
    private var unshownFormat: String?
    /// What this thread counts, published whole (`publish`).
    private var local = PictureStatistics()
    private let sound: AudioRouter
    /// What one sender's session left here; a new session starts afresh.
    private var session = SessionState()
    /// The frame being decoded while its last slices are on their way: its
    /// RTP timestamp and how many bytes of it were decoded.
    private var early: (timestamp: UInt32, decoded: Int)?

    /// What the decode thread knows of the session under way, replaced
    /// whole when it ends.
    private struct SessionState {
        var waitingForKeyframe = true
        var clocks = ClockMapping()
        var timeline = Timeline()
        /// Whether this session brought anything yet.
        var hasMedia = false
        var pending: [(unit: AccessUnit, due: MonotonicTime)] = []
        /// The gaps between pictures shown: freezes and interruptions.
        var gaps = ShownGaps()
        /// Pictures decoded in this session.
        var frames = 0
        /// What the sender calls its stream, and whether it paused.
        var senderTitle: String?
        var senderPaused = false
    }

    private var windowTitle: String {
        "share" + (session.senderTitle.map { ": \($0)" } ?? "") + (session.senderPaused ? " (paused by the sender)" : "")
    }

    init(configuration: ReceiverConfiguration, decoder: H264Decoder, queue: WorkQueue, network: ReceiverNetworkLoop,
         latencies: ReceiverShared, events: @escaping @Sendable (ReceiverEvent) -> Void) {
        latency = latencies.captureToDisplay
        receiving = latencies.lastPacketToDisplay
        self.configuration = configuration
        self.decoder = decoder
        self.queue = queue
        self.network = network
        self.events = events
        let recording = configuration.recordPath.map { SessionRecording(path: $0) { events(.warning($0)) } }
        self.recording = recording
        sound = AudioRouter(configuration: configuration, recording: recording, events: events)
    }

    mutating func run(_ shared: ReceiverShared) -> ReceiverError? {
        defer {
            recording?.finish(audioChannels: sound.channels)
            sound.stop()
        }
        var sampledAt = MonotonicTime.zero
        let began = SystemClock.now()
        shared.stats.withLock { $0.timelineOriginUnix = Double(SystemClock.wall()) / 1e9 }
        while shared.running.load(ordering: .relaxed) {
            // Wake for the next held frame, or at least every 10 ms for timers.
            let now = SystemClock.now()
            let untilDue = session.pending.first.map { $0.due.since(now) } ?? .milliseconds(10)
            let (work, broken) = queue.pop(timeout: min(untilDue, .milliseconds(10)))
            if broken { chainBroke() }
            do {
                if let work { try handle(work) }
                while let first = session.pending.first, first.due <= SystemClock.now() {
                    session.pending.removeFirst()
                    try present(first.unit)
                }
                window?.service()
                if window?.closed == true { shared.running.store(false, ordering: .relaxed) }
                recording?.openWhenReady(audioChannels: sound.channels)
            } catch {
                return error
            }
            publish(shared)
            // Four samples a second for the timeline (an hour of them),
            // appended where it is kept: a copy kept here too would be
            // copied whole at the next append once published.
            if SystemClock.now().since(sampledAt) >= .milliseconds(250) {
                sampledAt = SystemClock.now()
                let (seconds, decoded, frozen) = (sampledAt.since(began).seconds, local.framesDecoded, local.freezeSeconds)
                shared.stats.withLock { s in
                    s.timeline.append(ReceiverSample(seconds: seconds, framesDecoded: decoded, freezeSeconds: frozen,
                                                     framesLost: s.framesLost))
                    if s.timeline.count > 4 * 3600 { s.timeline.removeFirst() }
                }
            }
        }
        recording?.finish(audioChannels: sound.channels)
        local.framesRecorded = recording?.framesWritten ?? 0
        publish(shared)
        return nil
    }

    private mutating func chainBroke() {
        abandonEarly()
        session.waitingForKeyframe = true
        network.requestKeyframe()
    }

    private mutating func handle(_ work: ReceivedWork) throws(ReceiverError) {
        switch work {
        case .video, .audio, .senderReport, .loss:
            session.hasMedia = true
            recording?.noteMedia(audio: false)
        case .videoSlices, .goodbye, .newSession, .senderState, .audioLayout, .cursor:
            break
        }
        switch work {
        case .videoSlices(let slices):
            decodeEarly(slices)
        case .video(let unit):
            session.gaps.arrived(unit.timestamp)
            // Lip sync: while audio plays, a frame waits until its capture
            // time plus the audio's capture-to-heard delay (at most 200 ms);
            // otherwise it is shown at once (as is one begun early, when
            // sound started to play meanwhile: it is half decoded).
            var due = SystemClock.now()
            if let delay = sound.heardDelay, sound.holdsPictures, early?.timestamp != unit.timestamp {
                let wait = min(max(captureMicroseconds(of: unit) + delay - Int64(SystemClock.wall() / 1000), 0), 200_000)
                due += .microseconds(wait)
            }
            session.pending.append((unit, due))
        case .loss:
            // Freeze rather than smear: decode again from the next keyframe.
            abandonEarly()
            session.waitingForKeyframe = true
        case .goodbye(let reason):
            events(.senderLeft(reason: reason))
            window?.setTitle("share: the sender ended" + (reason.map { " (\($0))" } ?? ""))
            endSession()
        case .senderState(let state, let title):
            if title != session.senderTitle {
                session.senderTitle = title
                if let title { events(.senderTitled(title)) }
            }
            let paused = state == .paused
            if paused != session.senderPaused {
                session.senderPaused = paused
                // A pause is not a freeze.
                if paused { session.gaps.startOver() }
                events(paused ? .senderPaused : .senderResumed)
            }
            window?.setTitle(windowTitle)
        case .newSession:
            endSession()
            window?.setTitle(windowTitle)
        case .audioLayout(let streams):
            sound.announce(streams)
        case .cursor(let overlay):
            window?.showCursor(overlay, decoder: decoder)
        case .senderReport(let ssrc, let report):
            session.clocks.update(ssrc: ssrc, report: report)
        case .audio(let packet) where configuration.audioPayloadTypes.contains(packet.payloadType):
            sound.route(packet, captured: captureMicroseconds(extension: packet.headerExtension, ssrc: packet.ssrc,
                                                              timestamp: packet.timestamp, clockRate: 48_000))
        case .audio:
            break
        }
    }

    /// The session ended (BYE) or another began: its recording is finished
    /// (complete and playable), and everything learned of its streams is
    /// forgotten. Nothing happens for a session that brought nothing.
    private mutating func endSession() {
        guard session.hasMedia else { return }
        recording?.endSession(audioChannels: sound.channels)
        local.framesRecorded = recording?.framesWritten ?? 0
        sound.endSession()
        abandonEarly()
        decoder.startOver()
        session = SessionState()
    }

    /// The sender-clock capture time (Unix microseconds) of a packet: its
    /// abs-capture-time, else its stream's sender report, else arrival.
    private mutating func captureMicroseconds(extension header: RTPHeaderExtension?, ssrc: UInt32, timestamp: UInt32,
                                     clockRate: Int) -> Int64 {
        if let id = configuration.captureTimeExtensionID, let data = header?.element(id: id),
           let capture = AbsoluteCaptureTime(data) {
            return capture.ntpTimestamp.unixMicroseconds
        }
        if let mapped = session.clocks.unixNanoseconds(ssrc: ssrc, timestamp: timestamp, clockRate: clockRate) {
            return mapped / 1000
        }
        return session.timeline.estimate(ssrc: ssrc, timestamp: timestamp, clockRate: clockRate, arrival: Int64(SystemClock.wall() / 1000))
    }

    /// The sender-clock capture time (Unix microseconds) of a frame.
    private mutating func captureMicroseconds(of unit: AccessUnit) -> Int64 {
        captureMicroseconds(extension: unit.headerExtension, ssrc: network.senderSSRC ?? 0, timestamp: unit.timestamp,
                            clockRate: 90_000)
    }

    /// Decodes the first slices of a frame still arriving, when the frame
    /// will be shown as soon as it is whole (nothing before it waits, no lip
    /// sync holds it) and its references are there: its last packet then
    /// leaves only its last slices to decode.
    private mutating func decodeEarly(_ slices: EarlySlices) {
        if let begun = early, begun.timestamp == slices.timestamp, begun.decoded == slices.offset {
            // The next part of the frame begun.
        } else {
            // Parts of a frame not begun, or a part missed (the queue was
            // full): that frame is decoded whole when it comes.
            abandonEarly()
            guard slices.offset == 0, session.pending.isEmpty, !sound.holdsPictures, decoder.reorderDepth == 0,
                  !session.waitingForKeyframe || slices.holdsKeyframe else { return }
            early = (slices.timestamp, 0)
            window?.dropAhead()
        }
        guard decoder.decodeStart(slices.data[...]) else {
            local.decodeErrors += 1
            chainBroke()
            return
        }
        early?.decoded += slices.data.count
        // The rows decoded so far go to the window now: once the frame is
        // whole, only those below them are left to convert.
        window?.writeAhead(decoder)
    }

    /// A frame begun early whose rest will not be decoded: the decoder
    /// forgets it (and its references: the next frame decoded must be a keyframe).
    private mutating func abandonEarly() {
        guard early != nil else { return }
        early = nil
        window?.dropAhead()
        decoder.discardPartial()
        session.waitingForKeyframe = true
    }

    /// Decodes one access unit, shows it, measures its latency and records it.
    private mutating func present(_ unit: AccessUnit) throws(ReceiverError) {
        local.framesAssembled += 1
        var begun: Int?
        if let early, early.timestamp == unit.timestamp, early.decoded <= unit.data.count {
            begun = early.decoded
            self.early = nil
        } else {
            abandonEarly()
        }
        if session.waitingForKeyframe && !unit.isKeyframe {
            local.framesSkippedForKeyframe += 1
            network.requestKeyframe()
            return
        }
        if begun != nil { local.framesDecodedEarly += 1 }
        guard let picture = decoder.decode(unit.data[(begun ?? 0)...], timestamp: unit.timestamp) else {
            if decoder.holding {
                // B-frames: this unit's picture comes out with a later one;
                // the unit is recorded now, in the order it was sent.
                session.waitingForKeyframe = false
                let size = decoder.pictureSize
                record(unit, width: size.width, height: size.height)
                return
            }
            local.decodeErrors += 1
            chainBroke()
            return
        }
        session.waitingForKeyframe = false
        if session.frames == 0 { events(.firstFrame(width: picture.width, height: picture.height)) }
        if let format = decoder.unshownFormat, format != unshownFormat {
            unshownFormat = format
            events(.warning("the sender's pictures are in pixel format \(format), which share cannot show; recording goes on"))
        }
        if local.firstPictureUnix == nil { local.firstPictureUnix = Double(SystemClock.wall()) / 1e9 }
        session.frames += 1
        local.framesDecoded += 1
        local.width = picture.width
        local.height = picture.height
        if let onPicture = configuration.onPicture { lend(picture, of: unit, to: onPicture) }
        if configuration.showWindow {
            do {
                if window == nil {
                    window = try PictureWindow(display: configuration.display, width: picture.width, height: picture.height)
                    window?.setTitle(windowTitle)
                }
                if window?.show(decoder) == true { local.framesConvertedEarly += 1 }
                local.framesShown += 1
            } catch {
                throw .window(error.description)
            }
        }
        let shownAt = SystemClock.now()
        if let gap = session.gaps.shown(at: shownAt, timestamp: unit.timestamp, sequence: unit.sequenceRange) {
            local.freezes += 1
            local.freezeSeconds += gap.seconds
            local.longestFreezeSeconds = max(local.longestFreezeSeconds, gap.seconds)
            if gap.interrupted {
                local.interruptions += 1
                local.interruptionSeconds += gap.seconds
            }
        }
        receiving.record(milliseconds: shownAt.since(unit.completedAt).milliseconds)
        if let onShown = configuration.onShown { lend(picture, of: unit, to: onShown) }
        if let id = configuration.captureTimeExtensionID,
           let data = unit.headerExtension?.element(id: id), let capture = AbsoluteCaptureTime(data) {
            latency.record(milliseconds: (Double(SystemClock.wall()) - Double(capture.ntpTimestamp.unixNanoseconds)) / 1e6)
        }
        record(unit, width: picture.width, height: picture.height)
    }

    /// Records a decoded unit (with its capture instant) when recording.
    private mutating func record(_ unit: AccessUnit, width: Int, height: Int) {
        guard let recording else { return }
        recording.reorderDepth = decoder.reorderDepth
        recording.add(.video(unit.data, captureMicroseconds(of: unit), unit.isKeyframe, width, height))
        local.framesRecorded = recording.framesWritten
    }

    /// Lends the picture just decoded to a host's hook, as I420.
    private mutating func lend(_ picture: DecodedPicture, of unit: AccessUnit, to body: (borrowing ReceivedPicture) -> Void) {
        // The picture shown is this unit's, or with B-frames an earlier one's.
        let shown = picture.timestamp ?? unit.timestamp
        let captured = shown == unit.timestamp ? captureMicroseconds(of: unit)
            : captureMicroseconds(extension: nil, ssrc: network.senderSSRC ?? 0, timestamp: shown, clockRate: 90_000)
        let isKeyframe = shown == unit.timestamp ? unit.isKeyframe : picture.isKeyframe
        decoder.withLastI420 { y, yStride, u, uStride, v, vStride, width, height, colors in
            body(ReceivedPicture(width: width, height: height, y: y, lumaStride: yStride, u: u, uStride: uStride,
                                 v: v, vStride: vStride, colorSpace: colors, capturedUnixNanoseconds: captured * 1000,
                                 rtpTimestamp: shown, isKeyframe: isKeyframe))
        }
    }

    private mutating func publish(_ shared: ReceiverShared) {
        local.audio = sound.statistics
        if let faults = recording?.faults {
            (local.recordingFaults, local.recordingFailure, local.framesNotRecorded) = (faults.count, faults.last, faults.framesNotRecorded)
        }
        let mine = local
        shared.stats.withLock { $0.pictures = mine }
    }
}
