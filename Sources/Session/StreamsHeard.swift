internal import ShareBase
internal import ShareWire

/// What a receive session knows of one sender's streams: the jitter
/// buffer, NACK, FEC, reception reports, the round-trip probe and what
/// was last reported of the sender's state. A new sender (a new session)
/// replaces it whole; the session's counters go on.
struct StreamsHeard {
    var assembler: H264FrameAssembler
    var nack: NACKTracker
    var repairWait = RepairWait()
    var videoSSRC: UInt32?
    /// When the video stream's last packet came.
    var videoHeardAt: MonotonicTime?
    var videoPayloadType: UInt8?
    var unwrapper = SequenceUnwrapper()
    var reception: ReceptionStatistics?
    var lastKeyframeRequest: MonotonicTime?
    var nextReport: MonotonicTime?
    var feedback = FeedbackReporter()
    var fec = FECDecoder()
    var probe = RoundTripProbe()
    /// The last state announcement seen.
    var stateSequence: UInt16?
    /// What was last reported of the sender's state, title and audio
    /// layout, and whether its end (finished or BYE) was reported already.
    var reportedState = StreamState.live
    var reportedTitle: String?
    var reportedAudio: [AudioStreamLayout]?
    var goodbyeReported = false

    /// Nothing heard yet: the jitter buffer starts at the larger of the
    /// configured minimum and 100 ms, and learns from there.
    init(_ configuration: ReceiveSession.Configuration) {
        let start = max(configuration.minimumDelay, .milliseconds(100))
        assembler = H264FrameAssembler(maxDelay: start, earlySlices: configuration.earlySlices)
        nack = NACKTracker(maxAge: start)
        videoPayloadType = configuration.videoPayloadType
    }
}
