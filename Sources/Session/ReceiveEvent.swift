public import ShareWire

/// What the receiving session produced from input or time.
public enum ReceiveEvent: Sendable {
    /// A complete, well-formed H.264 access unit.
    case videoFrame(AccessUnit)
    /// The leading NAL units of the frame still arriving (with
    /// `earlySlices`): its `videoFrame`, or a loss, follows.
    case videoSlices(EarlySlices)
    /// Frames the jitter buffer gave up on (a keyframe is requested).
    case videoLoss(FrameLoss)
    /// An RTP packet of another stream (audio), already authenticated.
    case otherPacket(RTPPacket)
    case senderReport(ssrc: UInt32, SenderReport)
    case goodbye(ssrc: UInt32, reason: String?)
    /// The sender paused or is live again, or its stream's title (the
    /// announcement's text) changed (told reliably, answered here).
    case senderState(StreamState, title: String?)
    /// The sender's audio streams (said once per session, before the sound).
    case audioLayout([AudioStreamLayout])
    /// The mouse pointer moved or took a new shape (`--cursor metadata`).
    case cursor(CursorOverlay)
    /// The video stream went silent and another with the same key took its
    /// place (a sender restarted, with a static key and its RTCP on another
    /// port, so no BYE came): what follows is a new sender's.
    case streamReplaced(ssrc: UInt32)
}

/// Counters of everything that came in, including what was refused.
public struct ReceiveStatistics: Sendable, Equatable {
    public var datagrams = 0
    public var bytes = 0
    public var rtpPackets = 0
    public var rtcpPackets = 0
    /// Failed SRTP/SRTCP authentication: a wrong key, a stranger or corruption
    /// (a forgery whose sequence number looks old included).
    public var authenticationFailures = 0
    /// Genuine packets that came again or too late for the replay window
    /// (network duplicates, late copies, a replay attack), tags checked.
    public var replays = 0
    /// Too short, not RTP/RTCP, unparsable.
    public var malformed = 0
    public var nacksSent = 0
    public var nackedPackets = 0
    public var plisSent = 0
    public var reportsSent = 0
    public var duplicates = 0
    public var late = 0
    public var framesLost = 0
    /// Retransmissions (RTX, RFC 4588) received, and those that filled a gap.
    public var repairsReceived = 0
    /// Padding-only packets on the retransmission stream (the sender's
    /// bandwidth probes): reported in congestion feedback, then dropped.
    public var paddingReceived = 0
    /// FlexFEC repair packets received, and packets they rebuilt.
    public var fecPacketsReceived = 0
    public var fecRecovered = 0
    public var feedbackReportsSent = 0
    /// NACKs whose original arrived after all: the path reordered it.
    public var needlessNACKs = 0
    /// Streams first heard after their sender's sequence numbers wrapped,
    /// received from the rollover counter their tags told (static keys).
    public var streamsResumed = 0
    /// Video streams followed after the one before went silent (a restarted sender).
    public var streamsReplaced = 0
    /// Searches for a rollover counter (a new SSRC's first packet refused
    /// at 0), and those not made: the datagram was larger than an MTU, or
    /// the searches' byte budget was spent.
    public var rolloverSearches = 0
    public var rolloverSearchesLimited = 0
    /// About how many bytes those searches hashed.
    public var rolloverSearchBytes = 0
    /// SRTP streams dropped to keep at most 16 (the one heard longest ago
    /// goes when a seventeenth SSRC authenticates).
    public var streamsForgotten = 0
}
