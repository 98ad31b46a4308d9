internal import ShareBase
internal import ShareCongestion
internal import ShareGovernor
internal import ShareSession
internal import ShareSRTP
internal import ShareVideo
internal import ShareWire

/// What a sender is to be, worked out from its configuration and the size
/// of what it captures before anything runs: the picture sizes, the
/// bitrate ceilings, the streams' configuration, the memory governor's
/// account and starting rung, the congestion controller's bounds and the
/// SDP. Pure: no display, no socket, no encoder; the same inputs give the
/// same plan. `ScreenSender.init` opens the parts and connects them as it says.
struct SenderPlan {
    let configuration: SenderConfiguration
    /// What is captured (or pushed), and what the capture loop scales it to
    /// before any step down: a region under 16 pixels a side is scaled up to
    /// the encoder's smallest picture.
    let sourceSize: VideoSize
    let baseSize: VideoSize
    /// The bitrate for `baseSize` at the configured rate (or the configured one).
    let baseBitrate: Bitrate
    /// The memory governor with its starting rung chosen; nil without a budget.
    let governor: MemoryGovernor?
    /// Why no rung fits the budget: the sender starts, tells the receiver, and ends.
    let startupFailure: String?
    /// The frame rate and encoded size at the starting rung.
    let fps: Int
    let encodedSize: VideoSize
    /// The streams' SSRCs: the video's, and its repair streams' when asked for.
    let ssrcs: StreamSSRCs

    struct StreamSSRCs: Equatable {
        var video: UInt32
        var retransmission: UInt32?
        var forwardErrorCorrection: UInt32?

        /// The host's chosen SSRC, or fresh random ones for the streams
        /// `configuration` asks for.
        static func choose(for configuration: SenderConfiguration) -> StreamSSRCs {
            if let chosen = configuration.ssrcs { return StreamSSRCs(video: chosen.video) }
            return StreamSSRCs(video: .random(in: 1...UInt32.max),
                        retransmission: configuration.retransmissionStream ? .random(in: 1...UInt32.max) : nil,
                        forwardErrorCorrection: configuration.forwardErrorCorrection ? .random(in: 1...UInt32.max) : nil)
        }
    }

    /// The memory the governor counts beside the frame pool's pictures
    /// (which change with the rung).
    enum FixedMemory {
        /// The whole process: the Swift runtime and the libraries, as a
        /// sender at rest measures them (`ProcessFootprint`).
        static let processBase = ByteCount.mebibytes(8)
        /// The sender's own account: the pacer's rings and the statistics'
        /// storage, reserved at the start.
        static let senderRings = ByteCount.mebibytes(1)
        /// Each audio stream's buffers and Opus encoder.
        static let perAudioStream = ByteCount.mebibytes(1)
    }

    /// What the congestion controller may send beyond the video's bitrate:
    /// RTP and SRTP headers (about 4% of the video) and room for repairs.
    static let overheadFactor = 1.15
    /// The lowest the controller goes, as a share of the video's bitrate
    /// (and at least `floorRate`): below it a picture of the screen cannot
    /// be kept readable at any size the ladder offers.
    static let floorFraction = 0.05
    static let floorRate = Bitrate.kilobitsPerSecond(100)
    /// Where the controller starts, as a share of the video's ceiling, when a
    /// retransmission stream can carry probes: the path is unproven, and a
    /// start at the ceiling over a slower link (a wifi hop) overflowed its
    /// queue in the first half second, lost frames and froze the picture
    /// while a keyframe was asked for (`Benchmarks/harness.py --network
    /// wifi`). The controller's first probe seeks the ceiling a round trip
    /// after the first feedback (as libwebrtc's initial probes do), so a
    /// path that carries it is at the ceiling within a few round trips.
    static let startShare = 0.5
    /// The audio stream's own headers and repairs beside its Opus bitrate.
    static let audioOverhead = Bitrate.kilobitsPerSecond(16)

    /// The plan for `configuration` sending pictures of `source`, whose
    /// capture holds `captureBuffers` of its own (the band buffers).
    init(configuration: SenderConfiguration, source: VideoSize, captureBuffers: ByteCount, ssrcs: StreamSSRCs) {
        self.configuration = configuration
        self.sourceSize = source
        self.ssrcs = ssrcs
        let base = CaptureLoop.pictureSize(source: source, configured: configuration.size, maxHeight: .max)
        baseSize = base
        baseBitrate = .kilobitsPerSecond(configuration.bitrateKbps
            ?? H264Encoder.Configuration.defaultBitrateKbps(width: base.width, height: base.height, fps: configuration.fps))
        var failure: String?
        governor = configuration.memoryBudget.map { budget in
            var governor = MemoryGovernor(budget: budget,
                                          ladder: MemoryGovernor.ladder(fps: configuration.fps, sourceHeight: base.height,
                                                                        history: Self.historyPackets),
                                          account: Self.account(configuration, base: base, captureBuffers: captureBuffers))
            if case .fail(let message) = governor.chooseStart() { failure = message }
            return governor
        }
        startupFailure = failure
        let rung = governor?.current
        fps = rung?.fps ?? configuration.fps
        encodedSize = rung.map { EncodePipeline.size(base, height: $0.height) } ?? base
    }

    /// Packets of video kept for retransmission at full memory.
    static let historyPackets = 1024

    /// What the governor counts that does not change with the rung.
    static func account(_ configuration: SenderConfiguration, base: VideoSize, captureBuffers: ByteCount) -> MemoryAccount {
        let fixed = configuration.memoryAccounting == .process
            ? FixedMemory.processBase + captureBuffers
            : captureBuffers + FixedMemory.senderRings + FixedMemory.perAudioStream * configuration.audio.count
        return MemoryAccount(fixed: fixed, sourceWidth: base.width, sourceHeight: base.height,
                             pictureSlots: max(1, configuration.captureSlots))
    }

    /// The encoder's bitrate at the starting rung.
    var encoderBitrateKbps: Int {
        EncodePipeline.ceilingKbps(configuration, base: baseSize, rung: governor?.current)
    }

    /// The video stream: its SSRCs, MTU, payload types and history.
    var videoStream: SendStream.Configuration {
        var stream = SendStream.Configuration(ssrc: ssrcs.video, cname: configuration.cname)
        stream.historyPackets = governor?.current.historyPackets ?? Self.historyPackets
        stream.mtu = configuration.mtu
        stream.payloadType = configuration.payloadType
        if let ssrc = ssrcs.retransmission { stream.retransmission = (ssrc, configuration.retransmissionPayloadType) }
        if let ssrc = ssrcs.forwardErrorCorrection { stream.forwardErrorCorrection = (ssrc, configuration.fecPayloadType) }
        return stream
    }

    /// What the audio streams send, headers and repairs included.
    /// `opusBitrates` in bits a second, as Opus takes them.
    static func audioBitrate(_ opusBitrates: [Int]) -> Bitrate {
        opusBitrates.reduce(.zero) { $0 + .bitsPerSecond(Double($1)) + audioOverhead }
    }

    /// The congestion controller's bounds: it works on everything sent,
    /// the video with its headers and room for repairs, plus the audio. It
    /// starts under the ceiling only where probes can prove the path (they
    /// travel on the retransmission stream): without them it would climb
    /// at the rate control's pace alone.
    func congestion(audio: Bitrate) -> CongestionController.Configuration {
        let video = baseBitrate * Self.overheadFactor
        let ceiling = video + audio
        // The share is of the video: the sound takes its few kbit/s
        // whatever the path, and halved with the rest it left a small
        // picture's video under the ladder's floor until the probe came.
        let start = ssrcs.retransmission == nil ? ceiling : video * Self.startShare + audio
        return CongestionController.Configuration(start: start,
                                                  minimum: max(baseBitrate * Self.floorFraction, Self.floorRate) + audio,
                                                  maximum: ceiling)
    }

    /// One audio stream as the SDP describes it.
    struct AudioStream {
        var ssrc: UInt32
        var channels: Int
    }

    /// The SDP a standard receiver needs (static keys only: a handshake's
    /// receiver learns everything in the session): the video with the
    /// encoder's parameter sets, its repairs, and each audio stream.
    func sessionDescription(keying: SRTPKeyingMaterial, host: String, parameterSets: [[UInt8]],
                            audio: [AudioStream]) -> SessionDescription {
        var description = SenderDescription.video(configuration: configuration, keying: keying, host: host,
                                                  parameterSets: parameterSets, ssrcs: ssrcs)
        for (index, stream) in audio.enumerated() {
            description.media.append(SenderDescription.audio(stream, index: index, configuration: configuration, keying: keying))
        }
        return description
    }
}
