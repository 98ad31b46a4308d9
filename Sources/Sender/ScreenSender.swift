import Dispatch
internal import ShareAudio
internal import ShareColor
internal import ShareSRTP
internal import ShareSession
internal import ShareTransport
internal import ShareVideo
internal import ShareWire
internal import ShareX11
import Synchronization

/// The embeddable screen sender: captures an X display, encodes H.264 and
/// sends it as SRTP to one receiver. Three threads: capture (never waits on
/// anything downstream), encode+send, and network (RTCP feedback). The host
/// drives it with `start`, `pause`, `resume` and `stop`.
public final class ScreenSender: @unchecked Sendable {
    public let configuration: SenderConfiguration
    public let setup: SenderSetup

    private let capturer: ScreenCapturer
    /// Replaced by the encode thread when the governor changes size or rate.
    private var encoder: H264Encoder
    private var governor: MemoryGovernor?
    /// A step whose settled footprint is still to be reported, and when.
    private var settling: (rung: String, at: UInt64)?
    private var startupFailure: SenderError?
    private let captureFPS: Atomic<Int>
    private let baseSize: VideoSize
    private let baseBitrate: Int
    private let socket: UDPSocket
    private let stream: Mutex<SendStream>
    private let mailbox = Mutex<FrameLease?>(nil)
    private let frameReady = DispatchSemaphore(value: 0)
    private let state = Atomic<Int>(State.idle.rawValue)
    private let keyframeRequested = Atomic<Bool>(true)
    private let stats = Mutex(SenderStatistics())
    private let group = DispatchGroup()
    /// The finishing work (BYE, final statistics, `.finished`) still to run.
    private let finishing = DispatchGroup()
    private let failure = Mutex<SenderError?>(nil)
    private var events: (@Sendable (SenderEvent) -> Void)?
    private let rtpTimestampBase = UInt32.random(in: 0...UInt32.max)
    private let startTime = Mutex<(mono: UInt64, cpu: Duration)>((0, .zero))
    private let audio: [AudioChannel]
    /// Audio inputs that could not start (video goes on without them).
    public let audioWarnings: [String]

    /// One running audio stream: its reader, encoder and RTP stream.
    final class AudioChannel: @unchecked Sendable {
        let input: AudioInput
        let reader: AudioReader
        let encoder: OpusEncoder
        let stream: Mutex<SendStream>
        let timestampBase = UInt32.random(in: 0...UInt32.max)
        let ssrc: UInt32

        init(input: AudioInput, keying: SRTPKeyingMaterial, payloadType: UInt8, cname: String) throws(SenderError) {
            self.input = input
            reader = try AudioReader(input)
            do {
                encoder = try OpusEncoder(channels: reader.channels, content: input.isVoice ? .voice : .music,
                                          bitrate: input.bitrate)
            } catch {
                throw .audio("\(input.label): \(error)")
            }
            ssrc = UInt32.random(in: 1...UInt32.max)
            var configuration = SendStream.Configuration(ssrc: ssrc, cname: cname)
            configuration.payloadType = payloadType
            configuration.clockRate = 48_000
            configuration.historyPackets = 64
            do {
                stream = Mutex(try SendStream(configuration: configuration, keying: keying))
            } catch {
                throw .encryption(error.description)
            }
        }
    }

    private enum State: Int {
        case idle, running, paused, stopping, finished
    }

    public init(configuration: SenderConfiguration) throws(SenderError) {
        // glibc gives busy threads arenas of their own that grow and never
        // shrink; two arenas keep dirty memory proportional to the work.
        limitMallocArenas()
        guard (1...120).contains(configuration.fps) else { throw .configuration("--fps \(configuration.fps) outside 1-120") }
        guard (400...9000).contains(configuration.mtu) else { throw .configuration("--mtu \(configuration.mtu) outside 400-9000") }
        self.configuration = configuration
        let destination: SocketAddress
        do {
            destination = try SocketAddress(host: configuration.host, port: configuration.port)
            socket = try UDPSocket(connectedTo: destination)
        } catch {
            throw .transport(error.description)
        }
        do {
            capturer = try ScreenCapturer(display: configuration.display, slots: configuration.captureSlots)
        } catch {
            throw .capture(error.description)
        }
        let source = VideoSize(width: capturer.width, height: capturer.height)
        let base = (configuration.size ?? source).even
        baseSize = base
        baseBitrate = configuration.bitrateKbps
            ?? H264Encoder.Configuration.defaultBitrateKbps(width: base.width, height: base.height, fps: configuration.fps)
        var startRung: MemoryRung?
        if let budget = configuration.memoryBudget {
            // What does not change with the rung: the runtime and libraries
            // (about 8 MiB measured) and the capture slot in use.
            let account = MemoryAccount(fixedBytes: (8 << 20) + source.width * source.height * 4,
                                        sourceWidth: base.width, sourceHeight: base.height)
            var governor = MemoryGovernor(budget: budget,
                                          ladder: MemoryGovernor.ladder(fps: configuration.fps, sourceHeight: base.height,
                                                                        history: 1024),
                                          account: account)
            if case .fail(let message) = governor.chooseStart() { startupFailure = .memory(message) }
            startRung = governor.current
            self.governor = governor
        }
        let fps = startRung?.fps ?? configuration.fps
        captureFPS = Atomic(fps)
        let encoded = startRung.map { Self.size(base, height: $0.height) } ?? base
        do {
            encoder = try Self.makeEncoder(configuration, size: encoded, fps: fps,
                                           bitrate: Int(Double(baseBitrate) * (startRung?.bitrateScale ?? 1)))
        } catch {
            throw .encoder(error.description)
        }
        var streamConfiguration = SendStream.Configuration(ssrc: UInt32.random(in: 1...UInt32.max),
                                                                cname: configuration.cname)
        streamConfiguration.historyPackets = startRung?.historyPackets ?? 1024
        streamConfiguration.mtu = configuration.mtu
        streamConfiguration.payloadType = configuration.payloadType
        do {
            stream = Mutex(try SendStream(configuration: streamConfiguration, keying: configuration.keying))
        } catch {
            throw .encryption(error.description)
        }
        var channels: [AudioChannel] = []
        var warnings: [String] = []
        for input in configuration.audio {
            do {
                channels.append(try AudioChannel(input: input, keying: configuration.keying,
                                                 payloadType: configuration.audioPayloadType, cname: configuration.cname))
            } catch {
                warnings.append("\(error); sending without \(input.label)")
            }
        }
        audio = channels
        audioWarnings = warnings
        var description = Self.describe(encoder: encoder, configuration: configuration, destination: destination,
                                        ssrc: streamConfiguration.ssrc)
        for channel in channels {
            // RFC 7587 §7: opus/48000/2 always; stereo=1 says what we send.
            description.media.append(MediaDescription(
                kind: .audio, port: configuration.port, payloadType: configuration.audioPayloadType, codec: "opus",
                clockRate: 48_000, channels: 2,
                formatParameters: [("minptime", "10"), ("useinbandfec", "1"), ("stereo", channel.reader.channels == 2 ? "1" : "0")],
                crypto: (configuration.keying.profile.rawValue, configuration.keying.inlineKeySalt()),
                extensions: [(1, AbsoluteCaptureTime.uri)], source: (channel.ssrc, configuration.cname)))
        }
        setup = SenderSetup(sourceSize: source, encodedSize: encoded, fps: configuration.fps,
                            bitrateKbps: encoder.configuration.bitrateKbps, destination: destination.description,
                            sessionDescription: description)
    }

    deinit {
        stop()
    }

    /// `base` scaled to `height` lines (even), or `base` when not smaller.
    static func size(_ base: VideoSize, height: Int) -> VideoSize {
        guard height < base.height else { return base }
        return VideoSize(width: base.width * height / base.height, height: height).even
    }

    static func makeEncoder(_ configuration: SenderConfiguration, size: VideoSize, fps: Int,
                            bitrate: Int) throws(EncoderError) -> H264Encoder {
        try H264Encoder(.init(width: size.width, height: size.height, fps: fps, bitrateKbps: bitrate,
                              keyframeInterval: configuration.keyframeInterval.map { $0 * fps / max(configuration.fps, 1) },
                              threads: configuration.encoderThreads
                                  ?? SenderConfiguration.defaultEncoderThreads(size: size, fps: fps)))
    }

    /// The SDP for a receiver of this stream: H.264 packetization-mode 1
    /// with the parameter sets, rtcp-mux, capture-time extension, SDES key.
    static func describe(encoder: H264Encoder, configuration: SenderConfiguration,
                         destination: SocketAddress, ssrc: UInt32) -> SessionDescription {
        let sets = encoder.parameterSets()
        var fmtp: [(String, String)] = [("packetization-mode", "1")]
        if let sps = sets.first(where: { $0.first.map { $0 & 0x1F == 7 } ?? false }), sps.count >= 4 {
            // RFC 6184 §8.1: profile_idc, constraint flags and level_idc from the SPS.
            let hex = sps[1...3].map { byte in
                let digits = Array("0123456789abcdef")
                return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
            }.joined()
            fmtp.append(("profile-level-id", hex))
        }
        if !sets.isEmpty {
            fmtp.append(("sprop-parameter-sets", sets.map { Base64.encode($0) }.joined(separator: ",")))
        }
        let video = MediaDescription(
            kind: .video, port: configuration.port, payloadType: configuration.payloadType, codec: "H264",
            clockRate: 90_000, formatParameters: fmtp,
            crypto: (configuration.keying.profile.rawValue, configuration.keying.inlineKeySalt()),
            extensions: [(1, AbsoluteCaptureTime.uri)], source: (ssrc, configuration.cname))
        return SessionDescription(connectionAddress: destination.host, media: [video])
    }

    /// Starts capturing and sending; `events` hears the lifecycle.
    public func start(events: @escaping @Sendable (SenderEvent) -> Void = { _ in }) {
        guard state.compareExchange(expected: State.idle.rawValue, desired: State.running.rawValue,
                                    ordering: .sequentiallyConsistent).exchanged else { return }
        self.events = events
        startTime.withLock { $0 = (Clock.monotonic(), ProcessFootprint.cpuTime()) }
        for (label, body) in [("capture", captureLoop), ("encode", encodeLoop), ("network", networkLoop)] {
            group.enter()
            DispatchQueue(label: "share.sender.\(label)", qos: .userInteractive).async { [self] in
                body()
                group.leave()
            }
        }
        for channel in audio {
            group.enter()
            DispatchQueue(label: "share.sender.audio", qos: .userInteractive).async { [self] in
                audioLoop(channel)
                group.leave()
            }
        }
        events(.started(setup))
        for warning in audioWarnings { events(.warning(warning)) }
        if let governor, governor.rung > 0 {
            events(.memoryStep(from: governor.ladder[0].name, to: governor.current.name,
                               footprint: governor.account.predicted(governor.ladder[0]), budget: governor.budget.bytes))
            settling = (governor.current.name, Clock.monotonic() + 1_000_000_000)
        }
        let (rungName, budgetBytes) = (governor?.current.name ?? "off", governor?.budget.bytes ?? 0)
        stats.withLock { s in
            s.memoryRung = rungName
            s.memoryBudgetBytes = budgetBytes
        }
        if let startupFailure { finish(with: startupFailure) }
    }

    /// Stops capturing until `resume`; the stream stays open.
    public func pause() {
        if state.compareExchange(expected: State.running.rawValue, desired: State.paused.rawValue,
                                 ordering: .sequentiallyConsistent).exchanged {
            events?(.paused)
        }
    }

    public func resume() {
        if state.compareExchange(expected: State.paused.rawValue, desired: State.running.rawValue,
                                 ordering: .sequentiallyConsistent).exchanged {
            keyframeRequested.store(true, ordering: .relaxed)
            events?(.resumed)
        }
    }

    /// Stops the threads, sends RTCP BYE and reports `finished` before returning.
    public func stop() {
        finish(with: nil)
        waitUntilFinished()
    }

    /// Blocks until the sender has finished (after `stop` or an error):
    /// threads ended, BYE sent, `finished` reported.
    public func waitUntilFinished() {
        group.wait()
        finishing.wait()
    }

    /// True between `pause` and `resume`.
    public var isPaused: Bool { state.load(ordering: .relaxed) == State.paused.rawValue }

    /// The error that ended the sender, if one did.
    public var error: SenderError? { failure.withLock { $0 } }

    private var isActive: Bool {
        let current = state.load(ordering: .relaxed)
        return current == State.running.rawValue || current == State.paused.rawValue
    }

    private func finish(with error: SenderError?) {
        while true {
            let current = state.load(ordering: .sequentiallyConsistent)
            guard current == State.running.rawValue || current == State.paused.rawValue else { return }
            if state.compareExchange(expected: current, desired: State.stopping.rawValue,
                                     ordering: .sequentiallyConsistent).exchanged { break }
        }
        failure.withLock { $0 = error }
        frameReady.signal()
        finishing.enter()
        DispatchQueue.global().async { [self] in
            defer { finishing.leave() }
            group.wait()
            let reason = error.map { "error: \($0)" } ?? "sender stopped"
            stream.withLock { $0.goodbye(reason: String(reason.prefix(200))) { socket.send($0) } }
            for channel in audio { channel.stream.withLock { $0.goodbye(reason: String(reason.prefix(200))) { socket.send($0) } } }
            updateStatistics()
            state.store(State.finished.rawValue, ordering: .sequentiallyConsistent)
            events?(.finished(error))
        }
    }

    // MARK: capture thread

    private func captureLoop() {
        var next = Clock.monotonic()
        let refresh = configuration.stillRefresh.map { UInt64($0.components.seconds) * 1_000_000_000
            + UInt64($0.components.attoseconds / 1_000_000_000) }
        let tracking = refresh != nil && capturer.trackChanges()
        var lastGrab: UInt64 = 0
        while isActive {
            let interval = UInt64(1_000_000_000 / max(1, captureFPS.load(ordering: .relaxed)))
            next += interval
            if state.load(ordering: .relaxed) == State.running.rawValue {
                // A still screen: nothing to grab unless a refresh or a keyframe is due.
                if tracking, !capturer.screenChanged, !keyframeRequested.load(ordering: .relaxed),
                   let refresh, Clock.monotonic() &- lastGrab < refresh {
                    stats.withLock { $0.framesUnchanged += 1 }
                    Clock.sleep(until: next)
                    continue
                }
                lastGrab = Clock.monotonic()
                do {
                    var incoming = try capturer.capture()
                    if incoming != nil {
                        // Newest frame wins: a frame the encoder has not taken yet is dropped.
                        let replaced = mailbox.withLock { slot -> Bool in
                            let old = slot.take()
                            slot = incoming.take()
                            return old != nil
                        }
                        if replaced { stats.withLock { $0.framesDroppedEncoderBusy += 1 } }
                        frameReady.signal()
                    }
                } catch {
                    finish(with: .capture(error.description))
                    return
                }
            }
            let now = Clock.monotonic()
            // Fell behind (a stall): skip ahead instead of bursting to catch up.
            if next + interval < now { next = now }
            Clock.sleep(until: next)
        }
    }

    // MARK: encode thread

    private func encodeLoop() {
        var image = I420Image(width: setup.encodedSize.width, height: setup.encodedSize.height)
        var scratch: I420Image?
        var accessUnit: [UInt8] = []
        accessUnit.reserveCapacity(256 * 1024)
        var pacer = Pacer(bitrateKbps: encoder.configuration.bitrateKbps)
        var captureToSend = LatencyRecorder()
        var encodeTime = LatencyRecorder()
        var frames = 0
        while isActive {
            _ = frameReady.wait(timeout: .now() + .milliseconds(100))
            guard let lease = mailbox.withLock({ $0.take() }) else { continue }
            let captured = lease.time
            let began = Clock.monotonic()
            Self.convert(lease, into: &image, scratch: &scratch)
            let forceKeyframe = keyframeRequested.exchange(false, ordering: .relaxed)
            let info: EncodedFrameInfo?
            do {
                info = try encoder.encode(image, forceKeyframe: forceKeyframe, into: &accessUnit)
            } catch {
                finish(with: .encoder(error.description))
                return
            }
            if configuration.simulatedEncodeDelay > .zero {
                Clock.sleep(until: Clock.monotonic() + configuration.simulatedEncodeDelay.nanoseconds)
            }
            let encoded = Clock.monotonic()
            guard let info else { continue }
            let rtpTimestamp = rtpTimestampBase &+ UInt32(truncatingIfNeeded: captured.monotonicNanoseconds / 100_000 * 9)
            let now = MonotonicTime(nanoseconds: encoded)
            do {
                pacer.beginFrame(now: encoded)
                try stream.withLock { stream throws(SRTPError) in
                    try stream.send(accessUnit: accessUnit, rtpTimestamp: rtpTimestamp,
                                    captureTime: NTPTimestamp(unixNanoseconds: captured.unixNanoseconds),
                                    isKeyframe: info.isKeyframe, now: now) { datagram in
                        pacer.wait(forBytes: datagram.count)
                        socket.send(datagram)
                    }
                }
            } catch {
                finish(with: .encryption(error.description))
                return
            }
            let sent = Clock.monotonic()
            if governor != nil, !govern(image: &image) { return }
            captureToSend.record(milliseconds: Double(sent &- captured.monotonicNanoseconds) / 1e6)
            encodeTime.record(milliseconds: Double(encoded - began) / 1e6)
            frames += 1
            let sampleMemory = frames % 15 == 1
            stats.withLock { s in
                s.framesEncoded += 1
                if info.isKeyframe { s.keyframes += 1 }
                if sampleMemory || frames < 15 {
                    s.captureToSend = captureToSend.summary
                    s.encodeMilliseconds = encodeTime.summary
                }
            }
            if sampleMemory { updateStatistics() }
        }
        stats.withLock { s in
            s.captureToSend = captureToSend.summary
            s.encodeMilliseconds = encodeTime.summary
        }
    }

    /// Samples the footprint and applies the governor's decision. Returns
    /// false when the sender has to stop.
    private func govern(image: inout I420Image) -> Bool {
        guard var governor else { return true }
        let footprint = ProcessFootprint.current().footprintBytes
        let decision = governor.observe(footprint: footprint, now: MonotonicTime(nanoseconds: Clock.monotonic()))
        self.governor = governor
        if let pending = settling, Clock.monotonic() >= pending.at {
            settling = nil
            events?(.memorySettled(rung: pending.rung, footprint: footprint, budget: governor.budget.bytes))
        }
        switch decision {
        case .stay:
            return true
        case .fail(let message):
            finish(with: .memory(message))
            return false
        case .step(let from, let to):
            let rung = governor.ladder[to]
            let size = Self.size(baseSize, height: rung.height)
            let bitrate = Int(Double(baseBitrate) * rung.bitrateScale)
            let old = encoder.configuration
            if old.width != size.width || old.height != size.height || old.fps != rung.fps || old.bitrateKbps != bitrate {
                do {
                    encoder = try Self.makeEncoder(configuration, size: size, fps: rung.fps, bitrate: bitrate)
                } catch {
                    finish(with: .encoder(error.description))
                    return false
                }
                image = I420Image(width: size.width, height: size.height)
            }
            captureFPS.store(rung.fps, ordering: .relaxed)
            stream.withLock { $0.setHistoryCapacity(rung.historyPackets) }
            stats.withLock { s in
                s.memorySteps += 1
                s.memoryRung = rung.name
            }
            events?(.memoryStep(from: governor.ladder[from].name, to: rung.name, footprint: footprint,
                                budget: governor.budget.bytes))
            settling = (rung.name, Clock.monotonic() + 1_000_000_000)
            return true
        }
    }

    /// Converts the captured frame and ends its lease: the slot goes back to
    /// the pool before encoding starts.
    private static func convert(_ lease: consuming FrameLease, into image: inout I420Image, scratch: inout I420Image?) {
        let (width, height, stride) = (lease.width, lease.height, lease.stride)
        lease.withPixels { pixels in
            ColorConversion.convertBGRA(pixels, stride: stride, width: width, height: height, into: &image,
                                        scratch: &scratch)
        }
    }

    // MARK: network thread

    private func networkLoop() {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var count = 0
        while isActive {
            let now = MonotonicTime(nanoseconds: Clock.monotonic())
            do {
                if try socket.receive(into: &buffer, count: &count, timeoutMilliseconds: 50) != nil {
                    var datagram = PacketBuffer(buffer[0..<count])
                    let feedback = stream.withLock { $0.handle(datagram: &datagram, now: now) { socket.send($0) } }
                    for item in feedback {
                        if case .keyframeRequested = item { keyframeRequested.store(true, ordering: .relaxed) }
                    }
                }
            } catch {
                finish(with: .transport(error.description))
                return
            }
            let later = MonotonicTime(nanoseconds: Clock.monotonic())
            stream.withLock { _ = $0.poll(now: later) { socket.send($0) } }
            for channel in audio { channel.stream.withLock { _ = $0.poll(now: later) { socket.send($0) } } }
        }
    }

    // MARK: audio threads

    /// Reads, encodes and sends one audio stream, 20 ms at a time. It never
    /// touches the video path: a stalled or vanished audio server stops only
    /// this stream, with one warning.
    private func audioLoop(_ channel: AudioChannel) {
        var samples: UInt32 = 0
        while isActive {
            let frame: (pcm: [Int16], captured: CaptureTime)
            do {
                frame = try channel.reader.read()
            } catch {
                events?(.warning("\(channel.input.label) stopped: \(error); video goes on"))
                return
            }
            guard state.load(ordering: .relaxed) == State.running.rawValue else { continue }
            let timestamp = channel.timestampBase &+ samples
            samples &+= UInt32(OpusFormat.frameSamples)
            do {
                let packet = try channel.encoder.encode(frame.pcm)
                try channel.stream.withLock { stream throws(SRTPError) in
                    try stream.send(payload: packet, rtpTimestamp: timestamp,
                                    captureTime: NTPTimestamp(unixNanoseconds: frame.captured.unixNanoseconds),
                                    now: MonotonicTime(nanoseconds: frame.captured.monotonicNanoseconds)) { socket.send($0) }
                }
            } catch {
                events?(.warning("\(channel.input.label) stopped: \(error); video goes on"))
                return
            }
        }
    }

    // MARK: statistics

    /// A snapshot of the counters (footprint sampled now).
    public var statistics: SenderStatistics {
        updateStatistics()
        return stats.withLock { $0 }
    }

    private func updateStatistics() {
        let memory = ProcessFootprint.current()
        let (began, cpuAtStart) = startTime.withLock { $0 }
        let cpu = ProcessFootprint.cpuTime() - cpuAtStart
        let streamStats = stream.withLock { $0.statistics }
        let (captured, droppedPool) = (capturer.captured, capturer.droppedForPool)
        let drops = socket.sendDrops
        let audioPackets = audio.reduce(0) { sum, channel in sum + channel.stream.withLock { $0.statistics.packets } }
        let audioCount = audio.count
        stats.withLock { s in
            s.audioPacketsSent = audioPackets
            s.audioStreams = audioCount
            s.elapsedSeconds = began == 0 ? 0 : Double(Clock.monotonic() - began) / 1e9
            s.cpuSeconds = cpu.seconds
            s.framesCaptured = captured
            s.framesDroppedPoolExhausted = droppedPool
            s.packetsSent = streamStats.packets
            s.bytesSent = streamStats.bytes
            s.packetsRetransmitted = streamStats.retransmitted
            s.keyframeRequests = streamStats.keyframeRequests
            s.roundTripMilliseconds = streamStats.roundTrip.map { $0.seconds * 1000 }
            s.receiverLossFraction = streamStats.fractionLost
            s.sendDrops = drops
            s.footprintBytes = memory.footprintBytes
            s.residentBytes = memory.residentBytes
            s.peakFootprintBytes = max(s.peakFootprintBytes, memory.footprintBytes)
            s.peakResidentBytes = max(s.peakResidentBytes, memory.residentBytes)
        }
    }
}

/// Spreads a frame's packets so a keyframe does not leave as one burst: a
/// token bucket of 32 KB refilled at eight times the video bitrate (at least
/// 20 Mbit/s), so ordinary frames go out at once and large ones within a few
/// milliseconds.
struct Pacer {
    private let bytesPerSecond: Double
    private let depth: Double = 32 * 1024
    private var tokens: Double
    private var last: UInt64 = 0

    init(bitrateKbps: Int) {
        bytesPerSecond = max(Double(bitrateKbps) * 1000 * 8 / 8, 20_000_000 / 8)
        tokens = depth
    }

    mutating func beginFrame(now: UInt64) { refill(now: now) }

    mutating func wait(forBytes bytes: Int) {
        refill(now: Clock.monotonic())
        if tokens < Double(bytes) {
            let deficit = Double(bytes) - tokens
            let wake = last + UInt64(deficit / bytesPerSecond * 1e9)
            Clock.sleep(until: wake)
            refill(now: Clock.monotonic())
        }
        tokens -= Double(bytes)
    }

    private mutating func refill(now: UInt64) {
        if last != 0 { tokens = min(depth, tokens + Double(now &- last) / 1e9 * bytesPerSecond) }
        last = now
    }
}
