public import ShareLatency

/// Counters and measurements of a running or finished sender.
public struct SenderStatistics: Sendable, Codable, Equatable {
    /// Seconds since `start`.
    public var elapsedSeconds = 0.0
    /// Pictures captured from the screen, or pushed pictures accepted.
    public var framesCaptured = 0
    /// Pictures the desktop's screen cast delivered (Wayland), captured or
    /// replaced by a newer one before the capture thread took them; nil
    /// where capture grabs each picture itself (X11).
    public var framesDelivered: Int?
    /// Capture ticks skipped because nothing on screen had changed.
    public var framesUnchanged = 0
    /// Frames not captured because every pool slot was still leased.
    public var framesDroppedPoolExhausted = 0
    /// Bands of the screen grabbed, and bands kept from the picture before
    /// because nothing in them had changed (a small change, the pointer
    /// moving, costs its bands, not the screen).
    public var bandsGrabbed = 0
    /// Bands kept from the picture before, unchanged (see `bandsGrabbed`).
    public var bandsKept = 0
    /// Whether the pointer is sent apart from the pictures now, for the
    /// receiver to draw (`--cursor metadata`, or `auto` while every
    /// receiver says it draws it), rather than drawn into them.
    public var pointerSentApart = false
    /// Bytes capture holds: the frame pool's pictures and the band buffers.
    public var captureBytes = 0
    /// Pictures of a host that stopped pushing sent again (`stillRefresh`,
    /// or at once for a keyframe request): the newest pushed picture.
    public var framesRepeated = 0
    /// Pushed pictures dropped for coming sooner than the frame rate asks.
    public var framesDroppedTooSoon = 0
    /// Frames captured but replaced by a newer one before the encoder got to them.
    public var framesDroppedEncoderBusy = 0
    /// Pictures encoded (and sent, once a session is up).
    public var framesEncoded = 0
    /// Keyframes (IDR pictures) among them.
    public var keyframes = 0
    /// Video RTP packets sent (repairs not counted).
    public var packetsSent = 0
    /// Opus packets sent, over every audio stream.
    public var audioPacketsSent = 0
    /// Audio streams being sent.
    public var audioStreams = 0
    /// Pushed sound dropped (in 48 kHz sample frames) because the host
    /// pushed more than 200 ms ahead of what was sent.
    public var audioFramesDropped = 0
    /// Bytes of video RTP sent.
    public var bytesSent = 0
    /// Video packets sent again for a receiver's NACK.
    public var packetsRetransmitted = 0
    /// Keyframes asked for by receivers (PLI or FIR).
    public var keyframeRequests = 0
    /// Receivers whose first report brought a keyframe (they joined mid-stream).
    public var receiversJoined = 0
    /// On the RTCP port of its own (`rtcpPort`): plain PLI/FIR honoured,
    /// refused for coming too soon, plain RTCP that asked nothing of the
    /// stream (REMB, reports), and datagrams that were not RTCP.
    public var plainKeyframeRequests = 0
    /// Plain keyframe requests refused for coming too soon after the last (see `plainKeyframeRequests`).
    public var plainRequestsLimited = 0
    /// Plain RTCP that asked nothing of the stream (see `plainKeyframeRequests`).
    public var plainRTCPIgnored = 0
    /// Datagrams on the RTCP port that were not RTCP (see `plainKeyframeRequests`).
    public var controlPortRefused = 0
    /// Datagrams from the receiver's address refused: not RTCP, or failed SRTCP authentication.
    public var rtcpRejected = 0
    /// With copies (`SenderConfiguration.copies`): each destination, the
    /// first one first. Empty without copies.
    public var destinations: [DestinationStatistics] = []
    /// Sessions established (1, plus one per receiver restart or renewal),
    /// and how long the first handshake took from `start`.
    public var sessions = 0
    /// How long the first handshake took from `start` (nil before, or with a static key).
    public var handshakeMilliseconds: Double?
    /// Handshake attempts that ended on something unauthenticated (a reject
    /// without the session's MAC, a changed identity, a stall) and were
    /// tried again.
    public var handshakeSetbacks = 0
    /// The last setback's reason, for people (nil when there was none).
    public var lastHandshakeSetback: String?
    /// Frames encoded before a session was up (not sent).
    public var framesBeforeSession = 0
    /// Pictures not encoded because the pacer still held more than 200 ms
    /// of earlier frames (the path had become slower than the encoder could
    /// follow at once).
    public var framesSkippedForQueue = 0
    /// Datagrams the kernel refused because its send buffer was full.
    public var sendDrops = 0
    /// CPU time the whole process used since `start`, in seconds.
    public var cpuSeconds = 0.0
    /// The process's footprint now (dirty memory: anonymous and shared resident pages), as iOS counts it.
    public var footprintBytes = 0
    /// The highest footprint seen: sampled ten times a second (when the
    /// governor runs) and at each read of the statistics.
    public var peakFootprintBytes = 0
    /// The process's resident memory now (RSS, clean pages included).
    public var residentBytes = 0
    /// The highest resident memory seen.
    public var peakResidentBytes = 0
    /// The round trip to the receiver, once measured (ms).
    public var roundTripMilliseconds: Double?
    /// What the governor last measured against its budget (the process's
    /// footprint, or the sender's own account: `memoryAccounting`).
    public var memoryAccountedBytes = 0
    /// The governor's current rung and budget, and how often it moved.
    public var memoryRung = "full"
    /// The governor's budget in bytes (0: no governor).
    public var memoryBudgetBytes = 0
    /// How often the governor moved from one rung to another.
    public var memorySteps = 0
    /// The fraction of video packets lost (0-1) in the receiver's last report.
    public var receiverLossFraction = 0.0
    /// Capture instant to the frame's last packet handed to the kernel.
    public var captureToSend: LatencySummary = LatencySummary(samples: 0)
    /// Encoding per frame (colour conversion is done while capturing).
    public var encodeMilliseconds: LatencySummary = LatencySummary(samples: 0)
    /// How long before its encoding ended a frame's first packet was sent:
    /// each slice leaves as soon as x264 has written it and the slices above
    /// it have (0 when a frame is sent only once encoded).
    public var firstPacketLead: LatencySummary = LatencySummary(samples: 0)
    /// The congestion controller: its target for all we send, what the
    /// receiver acknowledged, the loss it saw and the delay detector's verdict.
    public var targetKbps = 0.0
    /// What the receiver reported getting (kbit/s), once known.
    public var acknowledgedKbps: Double?
    /// The loss (0-1) the congestion controller sees in the receiver's per-packet feedback.
    public var feedbackLossFraction = 0.0
    /// The delay detector's verdict on the path's queues: normal, overusing or underusing.
    public var delaySignal = "normal"
    /// Congestion-control feedback reports received (RFC 8888).
    public var feedbackReports = 0
    /// Bandwidth probes sent after a drop in the rate (bursts of padding
    /// on the retransmission stream).
    public var probeClusters = 0
    /// Probes the path carried: each raised the target at once.
    public var probesCarried = 0
    /// The encoder's bitrate, frame rate and picture now.
    public var encoderKbps = 0
    /// The frame rate pictures are captured and encoded at now (the governor and the quality ladder lower it).
    public var encodedFPS = 0
    /// The width pictures are encoded at now.
    public var encodedWidth = 0
    /// The height pictures are encoded at now.
    public var encodedHeight = 0
    /// The quantizer the last picture was coded at: from 18 (the finest the
    /// rate control chooses; 12 for a still screen or on an open path) to 51 (H.264's coarsest), how much detail the
    /// bitrate leaves; 0 before the first picture.
    public var quantizer = 0
    /// Steps of the quality ladder (rate and size for bandwidth).
    public var qualitySteps = 0
    /// NACKed packets not resent: a repair had left less than a round trip before.
    public var retransmissionsSuppressed = 0
    /// NACKed packets not resent, and queued repairs dropped, because a
    /// keyframe was sent after them (the receiver decodes on from it).
    public var retransmissionsSuperseded = 0
    /// Media packets still waiting in the pacer when a keyframe was queued
    /// after them, dropped unsent (the receiver decodes on from the keyframe).
    public var mediaSuperseded = 0
    /// FlexFEC repair packets sent, and media packets per repair now (0: off).
    public var fecPackets = 0
    /// Media packets per FlexFEC repair now (0: no FEC).
    public var protectionGroup = 0
    /// Whether FEC also protects across the groups (a long round trip).
    public var protectionCrossing = false
    /// Packets the pacer dropped (waited too long, or its queue was full).
    public var pacerDrops = 0
    /// How long a packet waits in the pacer now, in milliseconds.
    public var pacerQueueMilliseconds = 0.0
    /// Four times a second for the last five minutes: the target and what actually left.
    public var rateTimeline: [RateSample] = []
    /// When the timeline's second 0 was (Unix seconds), to line it up with a receiver's.
    public var timelineOriginUnix = 0.0

    /// All counters at zero.
    public init() {}

    /// Pictures encoded per second over the run.
    public var fps: Double { elapsedSeconds > 0 ? Double(framesEncoded) / elapsedSeconds : 0 }
    /// Video bitrate over the run, in kbit/s.
    public var bitrateKbps: Double { elapsedSeconds > 0 ? Double(bytesSent) * 8 / elapsedSeconds / 1000 : 0 }
    /// CPU milliseconds per encoded picture over the run (the whole process).
    public var cpuMillisecondsPerFrame: Double { framesEncoded > 0 ? cpuSeconds * 1000 / Double(framesEncoded) : 0 }
}

/// The sender's rate at one moment of the run, and why.
public struct RateSample: Sendable, Codable, Equatable {
    /// Seconds since the sender started.
    public var seconds: Double
    /// The congestion controller's target, and its delay- and loss-based parts.
    public var targetKbps: Double
    /// The delay-based estimate's part of the target (kbit/s).
    public var delayBasedKbps: Double
    /// The loss-based estimate's part of the target (kbit/s).
    public var lossBasedKbps: Double
    /// What the receiver reported getting.
    public var acknowledgedKbps: Double?
    /// What left in the last interval (media, repairs, audio, RTCP).
    public var sentKbps: Double
    /// The encoder's bitrate (kbit/s).
    public var encoderKbps: Int
    /// How long packets wait in queues on the path, once known (ms).
    public var queueDelayMilliseconds: Double?
    /// The fraction of packets lost (0-1).
    public var lossFraction: Double
    /// The round trip to the receiver, once measured (ms).
    public var roundTripMilliseconds: Double?
    /// Frames encoded so far.
    public var framesEncoded = 0
    /// The narrowest link's rate, from how packet trains arrive spread out,
    /// once one was measured (kbit/s).
    public var bottleneckKbps: Double?
    /// What the delay-based detector said of the path since the sample
    /// before: "overusing" (queues grew, or one stood full: the sender was
    /// above what the path carries) if any feedback report said so, else
    /// "underusing" (queues drained) if any said that, else "normal".
    public var delayVerdict = "normal"
    /// The rule that set the target: "delay" (the delay-based estimate),
    /// "loss", "bottleneck" (the measured bottleneck's rate, with room for
    /// repairs), "feedbackTimeout" (nothing heard back: halved), "ceiling"
    /// or "floor" (the configured maximum or minimum).
    public var limitedBy = "ceiling"
    /// The quantizer of the last picture coded before the sample (18, the
    /// finest the rate control chooses, 12 for a still screen or on an open path, to 51), once one was.
    public var quantizer: Int?
    /// Media packets per FlexFEC repair packet at the sample (nil: no FEC).
    public var protectionGroup: Int?
    /// Whether the repairs also crossed the groups at the sample (nil: no).
    public var protectionCrossing: Bool?
    /// How fast the pacer may send at the sample (kbit/s): 2.5x the target,
    /// or less under a measured bottleneck or after the path's queue
    /// overflowed, never under 1.1x the target; half the link's rate
    /// while the queue left by a fall drains. Nil in older timelines.
    public var pacingKbps: Double?

    /// A sample of the rate at `seconds`.
    public init(seconds: Double, targetKbps: Double, delayBasedKbps: Double, lossBasedKbps: Double,
                acknowledgedKbps: Double?, sentKbps: Double,
                encoderKbps: Int, queueDelayMilliseconds: Double?, lossFraction: Double, roundTripMilliseconds: Double?) {
        self.seconds = seconds
        self.targetKbps = targetKbps
        self.delayBasedKbps = delayBasedKbps
        self.lossBasedKbps = lossBasedKbps
        self.acknowledgedKbps = acknowledgedKbps
        self.sentKbps = sentKbps
        self.encoderKbps = encoderKbps
        self.queueDelayMilliseconds = queueDelayMilliseconds
        self.lossFraction = lossFraction
        self.roundTripMilliseconds = roundTripMilliseconds
    }
}

/// One destination of a stream sent to several (`SenderStatistics.destinations`).
public struct DestinationStatistics: Sendable, Codable, Equatable {
    /// Plain PLI/FIR it sent on its RTCP port (honoured under the stream's
    /// limit of two a second, whoever asks).
    public var keyframeRequests = 0
    /// Whether it was dropped (`ScreenSender.dropDestination`): nothing is sent there since.
    public var dropped = false

    /// A destination's figures (the sender fills them in).
    public init(keyframeRequests: Int = 0, dropped: Bool = false) {
        self.keyframeRequests = keyframeRequests
        self.dropped = dropped
    }
}
