public import ShareWire

/// What the receiver asked of the sender through RTCP.
public enum SenderFeedback: Sendable, Equatable {
    /// PLI or FIR: send a keyframe (already rate-limited here).
    case keyframeRequested
    /// A receiver reported for the first time (a new reporter SSRC) and
    /// may have joined mid-stream: send a keyframe (rate-limited with the
    /// requests above).
    case receiverJoined(ssrc: UInt32)
    /// NACKed packets were resent (count), or were too old to resend (missed).
    case retransmitted(count: Int, missed: Int)
    /// A receiver report: loss fraction (0-1) and round-trip time if measurable.
    case receiverReport(fractionLost: Double, roundTrip: Duration?)
    /// RFC 8888 per-packet feedback, for the congestion controller.
    case congestion(CongestionControlFeedback)
    /// The receiver said BYE (it stopped), with its reason.
    case goodbye(reason: String?)
    /// The receiver answered the state announced last.
    case stateAcknowledged(StreamState)
}

/// Counters of a sending stream.
public struct SendStatistics: Sendable, Equatable {
    public var frames = 0
    public var keyframes = 0
    public var packets = 0
    public var bytes = 0
    public var retransmitted = 0
    public var nacksReceived = 0
    public var keyframeRequests = 0
    public var rtcpRejected = 0
    /// NACKed packets not resent because a repair left less than a round trip ago.
    public var retransmissionsSuppressed = 0
    /// NACKed packets not resent because a keyframe was sent after them.
    public var retransmissionsSuperseded = 0
    /// FlexFEC repair packets sent.
    public var fecPackets = 0
    /// Padding-only packets sent for bandwidth probes.
    public var paddingPackets = 0
    /// Their bytes on the wire.
    public var paddingBytes = 0
    /// Receivers whose first report asked for a keyframe (late joiners).
    public var receiversJoined = 0
    /// The RTCP port of its own (`handle(controlPortDatagram:)`): plain PLI
    /// or FIR honoured, plain requests refused for coming too soon after
    /// the last, plain RTCP that asked nothing of this stream (REMB, RR,
    /// another SSRC's PLI), and datagrams that were no RTCP at all.
    public var plainKeyframeRequests = 0
    public var plainRequestsLimited = 0
    public var plainIgnored = 0
    public var controlPortRefused = 0
    public var roundTrip: Duration?
    public var fractionLost = 0.0
}
