public import ShareSRTP
internal import ShareWire

/// What a stream sends beside its media for the congestion controller:
/// padding for bandwidth probes, and word that a keyframe began (repairs
/// of what came before it are of no use from then on).
extension SendStream {
    /// True once after a frame with an IDR slice began to leave: repairs
    /// of earlier packets still waiting to be sent can be dropped.
    public func takeKeyframeStarted() -> Bool {
        defer { keyframeStarted = false }
        return keyframeStarted
    }

    /// Whether the stream can send padding (it has a retransmission
    /// stream to carry it).
    public var canPad: Bool { repairs.canPad }

    /// Sends `count` padding-only packets of about `size` bytes each on the
    /// wire (after SRTP) on the retransmission stream, for a bandwidth
    /// probe; nothing when there is no such stream. Each goes to `emit`
    /// with its index in the burst.
    public func sendPadding(count: Int, size: Int, emit: (Int, ArraySlice<UInt8>) -> Void) throws(SRTPError) {
        guard repairs.canPad else { return }
        let timestamp = clockAnchor?.rtp ?? 0
        for index in 0..<count {
            guard repairs.writePadding(size: size - srtp.profile.rtpOverhead, timestamp: timestamp,
                                       into: &repairBuffer) else { return }
            try srtp.protect(&repairBuffer)
            statistics.paddingPackets += 1
            statistics.paddingBytes += repairBuffer.count
            emit(index, repairBuffer.bytes)
        }
    }
}
