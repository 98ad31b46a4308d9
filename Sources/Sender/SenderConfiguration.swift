public import ShareX11
public import ShareHandshake
public import ShareSRTP
internal import ShareSession
public import ShareWire
public import ShareGovernor
public import ShareLatency

/// A picture size.
public struct VideoSize: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Pixels across.
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// A size of `width` x `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses "1280x720".
    public init?(_ text: String) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w >= 16, h >= 16, w <= 8192, h <= 8192
        else { return nil }
        self.init(width: w, height: h)
    }

    /// Rounded down to even dimensions, as 4:2:0 needs.
    public var even: VideoSize { VideoSize(width: width & ~1, height: height & ~1) }
    public var description: String { "\(width)x\(height)" }
}

/// What the memory governor measures against its budget.
public enum MemoryAccounting: String, Sendable, CaseIterable {
    /// The process's footprint (RssAnon + RssShmem of /proc/self/status),
    /// as iOS counts a broadcast extension: right when the process is the
    /// sender and nothing else.
    case process
    /// What the sender itself holds, by its own account: its capture slots,
    /// encoder pictures and look-ahead, scaling buffer, retransmission
    /// history (as filled), pacer queues and audio. A host's own memory is
    /// not the sender's to govern.
    case sender
}

/// Whether the mouse pointer is in the picture.
public enum CursorMode: String, Sendable, CaseIterable {
    /// Sent apart while every receiver that reports draws it itself (a
    /// `share recv` showing the picture in a window, recording nothing),
    /// drawn in otherwise: from the start until the receiver's first
    /// report, whenever a receiver that does not draw it reports (ffmpeg,
    /// a recording), and always with a static key (SDP players, Janus).
    case auto
    /// Drawn into each picture where it is (XFixes); a pointer that moves over a still screen brings a new picture.
    case embed
    /// Sent apart from the picture (RTCP APP: its position as it moves, its
    /// shape when it changes) for a receiver that draws it itself; a pointer
    /// that moves over a still screen costs no picture at all. Receivers
    /// that do not know it (ffmpeg, a browser) show no pointer.
    case metadata
    /// Left out.
    case none
}

/// Where the pictures come from.
public enum VideoInput: Sendable, Equatable {
    /// The X display (`display`, `source`, `cursor`).
    case screen
    /// Pictures the host pushes (`ScreenSender.push`), nominally of this
    /// size: the encoded size, default bitrate and ladders follow it (or
    /// `size`); pictures of another size are scaled to it.
    case pushed(VideoSize)
}

/// Everything a sender needs to start.
public struct SenderConfiguration: Sendable {
    /// The encoder thread count `encoderThreads == nil` means for a size and rate.
    public static func defaultEncoderThreads(size: VideoSize, fps: Int) -> Int {
        size.width * size.height * fps <= 1920 * 1080 * 30 ? 1 : 0
    }

    /// The receiver's host name or address (IPv4 or IPv6).
    public var host: String
    /// The receiver's port: video RTP, and everything else unless the ports
    /// below say otherwise (what `share recv` takes).
    public var port: Int = 5004
    /// For an SFU or a standard receiver (static key only): each audio
    /// stream's RTP on a port of its own (in the order of `audio`), with its
    /// RTCP muxed there unless `audioRTCPPorts` says otherwise. Empty: audio
    /// on `port`.
    public var audioPorts: [Int] = []
    /// For an SFU or a standard receiver (static key only): the video's
    /// RTCP on a port of its own (RFC 3605). Sender reports go there, and
    /// plain PLI/FIR are taken from there (from that address only, at most
    /// twice a second): Janus asks for keyframes this way. nil: muxed on `port`.
    public var rtcpPort: Int?
    /// Each audio stream's RTCP on a port of its own. Empty: muxed.
    public var audioRTCPPorts: [Int] = []
    /// X display to capture; nil means $DISPLAY.
    public var display: String?
    /// What of it: the screen, a region, a monitor, or a window followed as it moves.
    public var source: CaptureSource = .screen
    /// The mouse pointer (presenters point at things): sent apart for
    /// receivers that draw it, drawn into the picture for the others
    /// (`auto`), always one or the other, or left out.
    public var cursor: CursorMode = .auto
    /// The screen (default), or pictures the host pushes.
    public var video: VideoInput = .screen
    /// Pictures per second, 1-120 (the memory governor and the quality ladder
    /// may capture fewer; the encoder's rate stays this).
    public var fps: Int = 30
    /// Target bitrate; nil sizes it to the resolution.
    public var bitrateKbps: Int?
    /// Frames per intra-refresh sweep (a column of intra blocks crossing
    /// the picture, so a receiver can join or recover without an IDR);
    /// nil means three seconds' worth. IDR frames come only when a receiver
    /// asks (PLI/FIR) and, with `intraRefresh` off, every interval.
    public var keyframeInterval: Int?
    /// Periodic intra refresh instead of periodic IDR frames (no frame much
    /// larger than the others, so no burst to overflow a queue on the path).
    public var intraRefresh = true
    /// Follow the path: RFC 8888 feedback drives a delay- and loss-based
    /// controller that sets the encoder's bitrate (and, below a floor, its
    /// frame rate and size) and the pacer's rate. Off: the configured
    /// bitrate is sent whatever happens (for receivers that send no feedback).
    public var congestionControl = true
    /// Retransmissions on their own SSRC (RFC 4588 RTX, payload type
    /// `retransmissionPayloadType`); off resends the original packets.
    public var retransmissionStream = true
    /// The payload type of the video's retransmissions (RFC 4588 RTX).
    public var retransmissionPayloadType: UInt8 = 97
    /// FlexFEC (RFC 8627) on its own SSRC, sent when the round trip makes
    /// NACK repairs too slow and packets are being lost.
    public var forwardErrorCorrection = true
    /// The payload type of the video's FlexFEC repairs (RFC 8627).
    public var fecPayloadType: UInt8 = 98
    /// Scale the picture to this size before encoding; nil keeps the screen's size.
    public var size: VideoSize?
    /// Largest UDP payload.
    public var mtu: Int = 1200
    /// How the SRTP keys are agreed: a handshake (pre-shared key or
    /// identities) or, for other tools, a static SDES key.
    public var keying: SessionKeying
    /// Whether a receiver never met before gets the stream (identities): by
    /// default not; `.ask` lets a person compare the code first.
    public var confirmation: ConfirmationPolicy = .refuseNew
    /// The SRTP suite a handshake asks for.
    public var profile: SRTPProfile = .aes128CmHmacSha1_80
    /// Capture slots (MIT-SHM segments) in the frame pool. Two suffice: the
    /// encoder holds a lease only while converting it; every slot the
    /// process touches counts in its footprint (8 MB each at 1080p).
    public var captureSlots: Int = 2
    /// x264 threads; nil picks one thread up to 1080p30's pixel rate (it
    /// costs 10-20% less CPU per frame than sliced threads and adds under a
    /// millisecond of latency there) and lets x264 choose above it.
    public var encoderThreads: Int?
    /// While nothing on screen changes (XDamage), grab, convert and encode
    /// nothing, but still one picture every `stillRefresh` so a receiver sees
    /// the stream is alive. A keyframe request always gets a fresh picture.
    /// nil captures every frame regardless.
    public var stillRefresh: Duration? = .seconds(1)
    /// The RTCP canonical name (CNAME) the streams carry.
    public var cname: String = "share"
    /// The RTP payload type of the H.264 video.
    public var payloadType: UInt8 = 96
    /// The memory budget the governor keeps the sender under; nil turns
    /// the governor off.
    public var memoryBudget: MemoryBudget? = .default
    /// What the budget is measured against: for a library in a host
    /// process, what the sender itself holds (the default); for a process
    /// that is only the sender, its whole footprint as iOS counts it
    /// (`share send`).
    public var memoryAccounting: MemoryAccounting = .sender
    /// Extra time the encode stage takes per frame: a diagnostic knob that
    /// simulates a slow encoder (tests use it to prove capture never waits).
    /// Not part of the product's surface: the tests' own knob, behind SPI
    /// (`@_spi(Testing) import ShareSender`).
    @_spi(Testing) public var simulatedEncodeDelay: Duration = .zero
    /// Audio streams, each sent as its own Opus stream (its own SSRC), not mixed.
    public var audio: [AudioInput] = []
    /// The RTP payload type of every Opus stream.
    public var audioPayloadType: UInt8 = 111
    /// What the stream is called (a window's or an application's name, up
    /// to 200 bytes): in the setup, and told to the receiver, which shows
    /// it in its window's title (`ReceiverEvent.senderTitled`).
    public var title: String?
    /// How often `SenderEvent.statistics` reports the counters (nil: never).
    public var statisticsInterval: Duration?

    /// A sender to `host` (port 5004), keyed as `keying`: a handshake (a
    /// pre-shared key, `SessionKeying.keyFile(_:)`, or identities) or a static
    /// SDES key for other tools.
    public init(host: String, keying: SessionKeying) {
        self.host = host
        self.keying = keying
    }

    /// A sender with one static SDES key (the interop mode).
    public init(host: String, keying: SRTPKeyingMaterial) {
        self.init(host: host, keying: .staticKey(keying))
    }
}

/// What the host learns when the sender starts (ReplayKit's setup info).
/// Its description never shows a key (the SDP's `a=crypto` is redacted).
public struct SenderSetup: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The captured (or pushed) picture's size.
    public var sourceSize: VideoSize
    /// The size it is encoded at (smaller when `size` or the memory budget says so).
    public var encodedSize: VideoSize
    /// The configured frame rate.
    public var fps: Int
    /// The encoder's starting bitrate (kbit/s).
    public var bitrateKbps: Int
    /// Where the streams go (address and port).
    public var destination: String
    /// `SenderConfiguration.title`.
    public var title: String?
    /// The SDP a third-party receiver (ffmpeg, ffplay, GStreamer, VLC) can
    /// use, with the static key: nil when keys come from a handshake.
    public var sessionDescription: SessionDescription?

    public var description: String {
        "SenderSetup(" + (title.map { "\"\($0)\", " } ?? "")
            + "\(sourceSize) as \(encodedSize) at \(fps) fps, \(bitrateKbps) kbit/s to \(destination))"
    }

    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["sourceSize": sourceSize, "encodedSize": encodedSize, "fps": fps,
                                "bitrateKbps": bitrateKbps, "destination": destination, "title": title as Any])
    }
}

/// The sender's lifecycle, as the host sees it.
public enum SenderEvent: Sendable {
    /// `start` was called: the setup it runs with.
    case started(SenderSetup)
    /// The handshake waits for the receiver to confirm: both screens show
    /// `code`, and the people compare them (identities, first meeting).
    case verifying(receiver: String, code: String)
    /// A session is up (again, after a receiver restart): media flows.
    /// `firstMeeting`: the receiver was not known before and is remembered now.
    case connected(receiver: String, code: String, firstMeeting: Bool)
    /// `pause()` took effect: nothing is captured, the stream stays open.
    case paused
    /// `resume()` took effect.
    case resumed
    /// The sender stopped: nil after `stop()`, or the error that ended it.
    case finished(SenderError?)
    /// Something degraded without stopping the stream (an audio source went away).
    case warning(String)
    /// The memory governor moved to another rung: the footprint measured
    /// (or, for the starting rung, predicted for the full rung) in bytes.
    case memoryStep(from: String, to: String, footprint: Int, budget: Int)
    /// A second after a step: the footprint it settled at.
    case memorySettled(rung: String, footprint: Int, budget: Int)
    /// A receiver's feedback began: someone is listening.
    case receiverJoined
    /// The receiver said goodbye, or went silent for 3 s (the stream goes
    /// on, for it to come back or another to join).
    case receiverLeft(reason: String)
    /// The congestion controller's view of the path changed (the first
    /// estimate, then a move of 10% or more, another loss band or delay
    /// verdict; at most twice a second).
    case networkEstimate(NetworkEstimate)
    /// The counters, every `SenderConfiguration.statisticsInterval`.
    case statistics(SenderStatistics)
}

/// What the sender believes the path to its receiver carries.
public struct NetworkEstimate: Sendable, Equatable {
    /// The rate it sends at now, for everything (video, repairs, audio).
    public var targetKbps: Double
    /// What the receiver reported getting, once known.
    public var acknowledgedKbps: Double?
    /// The round trip to the receiver, once measured.
    public var roundTripMilliseconds: Double?
    /// The fraction of packets lost (0-1).
    public var lossFraction: Double
    /// Whether queues on the path are growing (the delay detector).
    public var congested: Bool

    /// An estimate with these figures.
    public init(targetKbps: Double, acknowledgedKbps: Double?, roundTripMilliseconds: Double?, lossFraction: Double,
                congested: Bool) {
        self.targetKbps = targetKbps
        self.acknowledgedKbps = acknowledgedKbps
        self.roundTripMilliseconds = roundTripMilliseconds
        self.lossFraction = lossFraction
        self.congested = congested
    }
}

/// Why the sender could not start or had to stop.
public enum SenderError: Error, Sendable, CustomStringConvertible {
    /// A configuration field out of its range, or fields that do not fit together.
    case configuration(String)
    /// The X display, the window or the monitor could not be captured.
    case capture(String)
    /// x264 refused the settings or failed.
    case encoder(String)
    /// The network: the host cannot be resolved, a socket failed.
    case transport(String)
    /// libsrtp2 refused a key or failed to protect a packet.
    case encryption(String)
    /// An audio input could not start (the video goes on without it).
    case audio(String)
    /// The memory budget cannot be met even on the cheapest rung.
    case memory(String)
    /// The handshake failed: refused, a changed identity, a different key file.
    case session(String)
    /// The host ended the stream with this error (`ScreenSender.finish(error:)`).
    case host(String)

    public var description: String {
        switch self {
        case .configuration(let m): "configuration: \(m)"
        case .capture(let m): "screen capture: \(m)"
        case .encoder(let m): "encoder: \(m)"
        case .transport(let m): "network: \(m)"
        case .encryption(let m): "encryption: \(m)"
        case .audio(let m): "audio: \(m)"
        case .memory(let m): "memory: \(m)"
        case .session(let m): "session: \(m)"
        case .host(let m): m
        }
    }
}

/// Counters and measurements of a running or finished sender.
public struct SenderStatistics: Sendable, Codable, Equatable {
    /// Seconds since `start`.
    public var elapsedSeconds = 0.0
    /// Pictures captured from the screen, or pushed pictures accepted.
    public var framesCaptured = 0
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
    /// Sessions established (1, plus one per receiver restart or renewal),
    /// and how long the first handshake took from `start`.
    public var sessions = 0
    /// How long the first handshake took from `start` (nil before, or with a static key).
    public var handshakeMilliseconds: Double?
    /// Frames encoded before a session was up (not sent).
    public var framesBeforeSession = 0
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
    /// each slice leaves as soon as x264 has written it (0 when a frame is
    /// sent only once encoded, as with more than one encoder thread).
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
    /// The encoder's bitrate, frame rate and picture now.
    public var encoderKbps = 0
    /// The frame rate pictures are captured and encoded at now (the governor and the quality ladder lower it).
    public var encodedFPS = 0
    /// The width pictures are encoded at now.
    public var encodedWidth = 0
    /// The height pictures are encoded at now.
    public var encodedHeight = 0
    /// The quantizer the last picture was coded at: from 18 (the finest the
    /// rate control chooses) to 51 (H.264's coarsest), how much detail the
    /// bitrate leaves; 0 before the first picture.
    public var quantizer = 0
    /// Steps of the quality ladder (rate and size for bandwidth).
    public var qualitySteps = 0
    /// NACKed packets not resent: a repair had left less than a round trip before.
    public var retransmissionsSuppressed = 0
    /// FlexFEC repair packets sent, and media packets per repair now (0: off).
    public var fecPackets = 0
    /// Media packets per FlexFEC repair now (0: no FEC).
    public var protectionGroup = 0
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
    /// finest the rate control chooses, to 51), once one was.
    public var quantizer: Int?

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
