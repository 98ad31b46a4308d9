import ShareSRTP
import ShareSession
import ShareWire
import Testing

/// What lets a receiver that joins a running stream get a picture fast: a
/// keyframe for a new reporter, and plain PLI/FIR from an SFU on the RTCP
/// port of its own, within limits.
@Suite("Late joiners and plain keyframe requests (sans-IO)")
struct LateJoinTests {
    private func plain(_ packets: [RTCPPacket]) -> PacketBuffer { PacketBuffer(RTCPPacket.serializeCompound(packets)) }

    private func controlPort(_ link: Link, _ datagram: PacketBuffer) -> [SenderFeedback] {
        var datagram = datagram
        return link.sender.handle(controlPortDatagram: &datagram, now: link.now, reply: { _ in }, repair: { _ in })
    }

    @Test func plainPictureLossOnTheRTCPPortAsksForAKeyframeAtMostTwiceASecond() throws {
        let link = try Link()
        try link.send(0, keyframe: true)
        let pli = plain([.pictureLoss(PictureLossIndication(senderSSRC: 1, mediaSSRC: 0xAAAA))])
        #expect(controlPort(link, pli) == [.keyframeRequested])
        link.advance(.milliseconds(100))
        #expect(controlPort(link, pli).isEmpty, "a second request 100 ms later is refused")
        link.advance(.milliseconds(450))
        let fir = plain([.fullIntraRequest(FullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 0xAAAA, sequenceNumber: 1)]))])
        #expect(controlPort(link, fir) == [.keyframeRequested], "FIR works as PLI does")
        // Janus's REMB, a PLI for someone else's stream, a receiver report:
        // plain RTCP that asks nothing of this stream.
        let remb: [UInt8] = [0x8F, 0xCE, 0x00, 0x05, 0, 0, 0, 1, 0, 0, 0, 0, 0x52, 0x45, 0x4D, 0x42, 1, 0x0A, 0x00, 0x00, 0, 0, 0xAA, 0xAA]
        link.advance(.seconds(1))
        #expect(controlPort(link, PacketBuffer(remb)).isEmpty)
        #expect(controlPort(link, plain([.pictureLoss(PictureLossIndication(senderSSRC: 1, mediaSSRC: 0xBEEF))])).isEmpty)
        #expect(controlPort(link, plain([.receiverReport(ReceiverReport(ssrc: 5))])).isEmpty)
        // Not RTCP at all.
        #expect(controlPort(link, PacketBuffer([0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1])).isEmpty)
        #expect(controlPort(link, PacketBuffer([0x81, 0xCE, 0x00, 0x09, 0, 0, 0, 1])).isEmpty, "a length beyond the datagram")
        let s = link.sender.statistics
        #expect(s.plainKeyframeRequests == 2)
        #expect(s.plainRequestsLimited == 1)
        #expect(s.plainIgnored == 3)
        #expect(s.controlPortRefused == 2)
        #expect(s.rtcpRejected == 0, "plain RTCP on its own port is not an SRTCP failure")
    }

    @Test func authenticatedReportsOnTheRTCPPortAreHandledInFull() throws {
        let link = try Link()
        try link.send(0, keyframe: true)
        link.sender.poll(now: link.now) { _ in }  // a sender report for the round trip
        let batch = link.toReceiver
        link.toReceiver.removeAll()
        for bytes in batch {
            var datagram = PacketBuffer(bytes)
            _ = link.receiver.handle(datagram: &datagram, now: link.now) { _ in }
        }
        link.advance(.milliseconds(1100))
        var reports: [[UInt8]] = []
        _ = link.receiver.poll(now: link.now) { reports.append(Array($0)) }
        #expect(!reports.isEmpty)
        var feedback: [SenderFeedback] = []
        for bytes in reports { feedback += controlPort(link, PacketBuffer(bytes)) }
        #expect(feedback.contains { if case .receiverReport = $0 { true } else { false } })
        #expect(link.sender.statistics.controlPortRefused == 0 && link.sender.statistics.plainIgnored == 0)
    }

    /// Receivers of the link's stream sending their reports (SRTCP, one
    /// context per receiver as each has its own SRTCP index).
    private final class Receivers {
        let keying: SRTPKeyingMaterial
        private var contexts: [UInt32: SRTPContext] = [:]
        init(keying: SRTPKeyingMaterial) { self.keying = keying }

        func report(from ssrc: UInt32) throws -> PacketBuffer {
            let context = try contexts[ssrc] ?? SRTPContext(keying: keying, direction: .outbound)
            var packet = PacketBuffer(RTCPPacket.serializeCompound([.receiverReport(ReceiverReport(ssrc: ssrc, reports: [
                ReceptionReport(ssrc: 0xAAAA, fractionLost: 0, cumulativeLost: 0, highestSequence: 1, jitter: 0,
                                lastSenderReport: 0, delaySinceLastSenderReport: 0),
            ]))]))
            try context.protectRTCP(&packet)
            contexts[ssrc] = context
            return packet
        }
    }

    @Test func aReceiverThatReportsForTheFirstTimeGetsAKeyframe() throws {
        let link = try Link()
        try link.send(0, keyframe: true)
        var feedback: [SenderFeedback] = []
        let receivers = Receivers(keying: link.keying)
        func deliver(_ ssrc: UInt32) throws {
            var datagram = try receivers.report(from: ssrc)
            feedback = link.sender.handle(datagram: &datagram, now: link.now, emit: { _ in })
        }
        try deliver(0x1111)
        #expect(feedback.contains(.receiverJoined(ssrc: 0x1111)), "with a static key any first report may be a late join")
        link.advance(.seconds(1))
        try deliver(0x2222)
        #expect(feedback.contains(.receiverJoined(ssrc: 0x2222)), "a second receiver joining")
        link.advance(.milliseconds(50))
        try deliver(0x3333)
        #expect(!feedback.contains(.receiverJoined(ssrc: 0x3333)), "within the keyframe request interval: the keyframe just asked for serves")
        link.advance(.seconds(1))
        try deliver(0x2222)
        #expect(!feedback.contains(.receiverJoined(ssrc: 0x2222)), "a receiver reporting again is no join")
        #expect(link.sender.statistics.receiversJoined == 2)
    }

    @Test func theSessionsOwnReceiverIsNoLateJoiner() throws {
        let link = try Link()
        try link.send(0, keyframe: true)
        let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        try link.sender.rekey(.symmetric(keying))
        let receivers = Receivers(keying: keying)
        var datagram = try receivers.report(from: 0x1111)
        #expect(!link.sender.handle(datagram: &datagram, now: link.now, emit: { _ in }).contains(.receiverJoined(ssrc: 0x1111)),
                "a session starts with a keyframe: its receiver's first report needs none")
        link.advance(.seconds(1))
        var second = try receivers.report(from: 0x2222)
        #expect(link.sender.handle(datagram: &second, now: link.now, emit: { _ in }).contains(.receiverJoined(ssrc: 0x2222)))
    }
}
