extension SendStream {
    /// How a stream sends: its SSRC and payload type, the MTU, the
    /// repairs, the history kept, and how often it answers requests.
    public struct Configuration: Sendable {
        public var ssrc: UInt32
        public var payloadType: UInt8 = 96
        /// RTP clock: 90 kHz for video, 48 kHz for Opus.
        public var clockRate: UInt32 = 90_000
        /// Largest UDP payload to send (IP + UDP headers excluded).
        public var mtu: Int = 1200
        public var cname: String
        /// One-byte header extension id for abs-capture-time; nil to omit it.
        public var captureTimeExtensionID: UInt8? = 1
        public var historyPackets = 1024
        /// Minimum time between honoured keyframe requests; at least two
        /// round trips are kept between them too.
        public var keyframeRequestInterval: Duration = .milliseconds(200)
        /// Minimum time between honoured unauthenticated (plain) keyframe
        /// requests on the RTCP port of its own: Janus repeats its PLI
        /// every second until a viewer has a picture.
        public var plainKeyframeRequestInterval: Duration = .milliseconds(500)
        /// Retransmissions on their own SSRC and payload type (RFC 4588);
        /// nil resends the original packet as it was.
        public var retransmission: (ssrc: UInt32, payloadType: UInt8)?
        /// Forward error correction on its own SSRC and payload type
        /// (RFC 8627 FlexFEC), sent while `protectionGroup` is set.
        public var forwardErrorCorrection: (ssrc: UInt32, payloadType: UInt8)?
        public var reportInterval: Duration = .seconds(1)

        public init(ssrc: UInt32, cname: String) {
            self.ssrc = ssrc
            self.cname = cname
        }
    }
}
