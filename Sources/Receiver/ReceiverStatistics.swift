public import ShareLatency

/// Counters and measurements of a receiver: what its network thread
/// counts (`network`) and what its decode thread counts (`pictures`),
/// each kept whole by the thread that writes it. Every field of both
/// reads and writes as the receiver's own (`statistics.framesDecoded`),
/// and is coded flat, as one object.
@dynamicMemberLookup
public struct ReceiverStatistics: Sendable, Codable, Equatable {
    /// Packets, sessions, repairs and the jitter buffer: the network thread's
    /// counts, and the run's time and latencies the reader adds.
    public var network = NetworkStatistics()
    /// Pictures decoded, shown and recorded, freezes and the sound: the
    /// decode thread's counts.
    public var pictures = PictureStatistics()

    /// All counters at zero.
    public init() {}

    /// A field of `network`, as the receiver's own.
    public subscript<Value>(dynamicMember field: WritableKeyPath<NetworkStatistics, Value>) -> Value {
        get { network[keyPath: field] }
        set { network[keyPath: field] = newValue }
    }

    /// A field of `pictures`, as the receiver's own.
    public subscript<Value>(dynamicMember field: WritableKeyPath<PictureStatistics, Value>) -> Value {
        get { pictures[keyPath: field] }
        set { pictures[keyPath: field] = newValue }
    }

    /// Reads both parts from one flat object.
    public init(from decoder: any Decoder) throws {
        network = try NetworkStatistics(from: decoder)
        pictures = try PictureStatistics(from: decoder)
    }

    /// Writes both parts into one flat object.
    public func encode(to encoder: any Encoder) throws {
        try network.encode(to: encoder)
        try pictures.encode(to: encoder)
    }

    /// Pictures decoded per second over the run.
    public var fps: Double { network.elapsedSeconds > 0 ? Double(pictures.framesDecoded) / network.elapsedSeconds : 0 }
    /// What arrived per second over the run, in kbit/s.
    public var bitrateKbps: Double { network.elapsedSeconds > 0 ? Double(network.bytes) * 8 / network.elapsedSeconds / 1000 : 0 }
}

/// What a receiver's network thread counts (see `ReceiverStatistics`).
public struct NetworkStatistics: Sendable, Codable, Equatable {
    /// Seconds since `start`.
    public var elapsedSeconds = 0.0
    /// UDP datagrams received.
    public var datagrams = 0
    /// Bytes received.
    public var bytes = 0
    /// RTP packets that passed SRTP authentication.
    public var rtpPackets = 0
    /// Frames given up on (packets missing past the jitter buffer's wait).
    public var framesLost = 0
    /// Packets that failed SRTP or SRTCP authentication (dropped).
    public var authenticationFailures = 0
    /// Packets refused as replays of ones already received.
    public var replays = 0
    /// Streams first heard after their sender's sequence numbers wrapped
    /// (static keys carry no rollover counter): received from the counter
    /// their packets' tags told.
    public var streamsResumed = 0
    /// Searches for such a stream's rollover counter (static keys): a
    /// stranger's flood of new SSRCs shows here.
    public var rolloverSearches = 0
    /// Searches not made: the datagram was larger than an MTU, or the
    /// searches' byte budget was spent.
    public var rolloverSearchesLimited = 0
    /// About how many bytes the searches hashed.
    public var rolloverSearchBytes = 0
    /// SRTP streams dropped to keep at most 16 (the one heard longest ago).
    public var streamsForgotten = 0
    /// Video streams followed after the one before went silent for a
    /// second: a sender started again with the same static key.
    public var streamsReplaced = 0
    /// Sessions begun (one per sender instance) and key renewals.
    public var sessions = 0
    /// Key renewals within a sender's session (see `sessions`).
    public var sessionRenewals = 0
    /// Media dropped: before any session, or from an address not the session's.
    public var packetsWithoutSession = 0
    /// Packets from an address that is not the session's (see `packetsWithoutSession`).
    public var packetsFromStrangers = 0
    /// Handshakes refused: a wrong key, a changed identity, a person's no.
    public var handshakesRefused = 0
    /// Handshakes not answered because too many came at once.
    public var handshakesRateLimited = 0
    /// New senders that stopped once they could compute the short code
    /// (someone trying codes would show here).
    public var handshakesAbandoned = 0
    /// Commits answered with a cookie, holding nothing until it is echoed
    /// (a flood from forged addresses shows here).
    public var handshakeCookiesSent = 0
    /// Datagrams that were not well-formed RTP, RTCP or handshake messages.
    public var malformed = 0
    /// Packets that arrived twice (the second dropped).
    public var duplicates = 0
    /// NACK messages sent to ask for missing packets.
    public var nacksSent = 0
    /// Packets asked for in them.
    public var nackedPackets = 0
    /// NACKs whose original arrived after all (the path reordered it).
    public var needlessNACKs = 0
    /// Retransmissions (RTX) that arrived.
    public var repairsReceived = 0
    /// Padding-only packets on the retransmission stream that arrived (the
    /// sender's bandwidth probes): reported in congestion feedback, then dropped.
    public var paddingReceived = 0
    /// FlexFEC repair packets that arrived, and packets they rebuilt.
    public var fecPacketsReceived = 0
    /// Packets rebuilt from FlexFEC repairs (see `fecPacketsReceived`).
    public var fecRecovered = 0
    /// RFC 8888 congestion control feedback messages sent.
    public var feedbackReports = 0
    /// Keyframes asked for (PLI).
    public var keyframeRequests = 0
    /// Round trip to the sender (RFC 3611 RRTR/DLRR), and how long the
    /// jitter buffer waits for a missing packet now.
    public var roundTripMilliseconds: Double?
    /// How long the jitter buffer waits for a missing packet now (ms).
    public var jitterBufferMilliseconds = 0.0
    /// Frames (and other items) dropped because decoding fell behind.
    public var framesDroppedDecoderBusy = 0
    /// The socket receive buffer the kernel granted (bytes).
    public var receiveBufferBytes = 0
    /// Four times a second: pictures decoded and freeze time so far.
    public var timeline: [ReceiverSample] = []
    /// When the timeline's second 0 was (Unix seconds), to line it up with a sender's.
    public var timelineOriginUnix = 0.0
    /// Capture instant (sender's clock) to the picture shown (or decoded, headless).
    public var captureToDisplay = LatencySummary()
    /// A frame's last packet arriving to its picture shown (or decoded,
    /// headless): the receiver's own share of the latency.
    public var lastPacketToDisplay = LatencySummary()

    /// All counters at zero.
    public init() {}
}

/// What a receiver's decode thread counts (see `ReceiverStatistics`).
public struct PictureStatistics: Sendable, Codable, Equatable {
    /// Video frames rebuilt whole from their packets.
    public var framesAssembled = 0
    /// Pictures decoded.
    public var framesDecoded = 0
    /// Frames whose decoding began before their last packet arrived (the
    /// sender sent their first slices while it still encoded the rest).
    public var framesDecodedEarly = 0
    /// Pictures shown in the window.
    public var framesShown = 0
    /// Pictures shown whose top rows were converted for the window while
    /// their last slices were on their way (of `framesDecodedEarly`): when
    /// whole, only the rows below were left to convert.
    public var framesConvertedEarly = 0
    /// Complete frames not decoded while waiting for a keyframe after a loss.
    public var framesSkippedForKeyframe = 0
    /// Frames the decoder refused.
    public var decodeErrors = 0
    /// Pictures shown more than the sender's frame spacing + 100 ms after
    /// the previous one, and the time those gaps add up to: what a viewer
    /// of moving content sees stop, whatever the cause (the harness's
    /// measure). A still screen's pauses count too; `interruptions` do not.
    public var freezes = 0
    /// The time those freezes add up to, in seconds (see `freezes`).
    public var freezeSeconds = 0.0
    /// The longest of those freezes, in seconds.
    public var longestFreezeSeconds = 0.0
    /// Those freezes with pictures missing before the next one (lost, or
    /// skipped until a keyframe) or shown later than the sender spaced
    /// them: the network's or the receiver's doing, not a still screen's
    /// or the sender's own pauses.
    public var interruptions = 0
    /// The time those interruptions add up to, in seconds.
    public var interruptionSeconds = 0.0
    /// Video frames written to the recording.
    public var framesRecorded = 0
    /// Times the recording stopped on a fault (no space, an I/O error, the
    /// file removed or replaced).
    public var recordingFaults = 0
    /// The last recording fault, for people (nil when there was none).
    public var recordingFailure: String?
    /// Pictures received after a recording fault that were not recorded.
    public var framesNotRecorded = 0
    /// When the first picture was decoded (Unix seconds): with the time a
    /// sender was started, the time to first picture.
    public var firstPictureUnix: Double?
    /// The last decoded picture's width.
    public var width = 0
    /// The last decoded picture's height.
    public var height = 0
    /// The sound received, over every audio stream.
    public var audio = AudioStatistics()

    /// All counters at zero.
    public init() {}
}

/// The receiver's counts at one moment of the run (seconds since it started).
public struct ReceiverSample: Sendable, Codable, Equatable {
    /// Seconds since the receiver started.
    public var seconds: Double
    /// Pictures decoded so far.
    public var framesDecoded: Int
    /// Freeze time so far, in seconds.
    public var freezeSeconds: Double
    /// Frames lost so far.
    public var framesLost: Int

    /// A sample at `seconds`.
    public init(seconds: Double, framesDecoded: Int, freezeSeconds: Double, framesLost: Int) {
        self.seconds = seconds
        self.framesDecoded = framesDecoded
        self.freezeSeconds = freezeSeconds
        self.framesLost = framesLost
    }
}
