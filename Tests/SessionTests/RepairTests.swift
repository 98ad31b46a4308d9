import ShareSRTP
import ShareSession
import ShareWire
import TestSupport
import Testing
import ShareBase

@Suite("Repairs and feedback: RTX, FlexFEC, RFC 8888 reports, round trip (sans-IO)")
struct RepairTests {
    static func repairing() throws -> Link {
        try Link { configuration in
            configuration.retransmission = (0xCCCC, 97)
            configuration.forwardErrorCorrection = (0xDDDD, 98)
        }
    }

    /// A lost packet comes back on the RTX stream (RFC 4588): the receiver
    /// rebuilds the original and counts it as a repair.
    @Test func lostPacketComesBackOnTheRetransmissionStream() throws {
        let link = try Self.repairing()
        try link.send(0, size: 20_000, keyframe: true)
        link.deliver()
        try link.send(1, size: 20_000)
        var repairSSRCs: [UInt32] = []
        link.deliver { index, _ in index == 3 }
        link.advance(.milliseconds(2))
        link.deliver()
        for bytes in link.toReceiver where bytes.count >= 12 {
            repairSSRCs.append(ssrc(of: bytes))
        }
        #expect(repairSSRCs == [0xCCCC], "the repair travels on its own SSRC")
        link.deliver()
        #expect(link.frames.count == 2)
        #expect(link.frames[1].data == accessUnit(1, size: 20_000, keyframe: false))
        #expect(link.receiver.statistics.repairsReceived == 1)
        #expect(link.losses == 0)
    }

    /// A bandwidth probe's padding goes on the RTX stream as padding-only
    /// packets (RFC 4588 §8.2) of the asked size on the wire; the receiver
    /// counts them, reports their arrival, and takes them for nothing else.
    @Test func probePaddingTravelsOnTheRetransmissionStreamAndIsDropped() throws {
        let link = try Self.repairing()
        try link.send(0, size: 5000, keyframe: true)
        link.deliver()
        #expect(link.sender.canPad)
        link.toReceiver.removeAll()  // the sender's RTCP replies
        var indices: [Int] = []
        try link.sender.sendPadding(count: 5, size: 200) { index, bytes in
            indices.append(index)
            link.toReceiver.append(Array(bytes))
        }
        #expect(indices == Array(0..<5))
        for bytes in link.toReceiver {
            #expect(bytes.count == 200)
            #expect(bytes[0] & 0x20 != 0, "the padding bit")
            #expect(bytes[1] & 0x7F == 97)
            #expect(ssrc(of: bytes) == 0xCCCC)
        }
        link.deliver()
        #expect(link.receiver.statistics.paddingReceived == 5)
        #expect(link.receiver.statistics.malformed == 0)
        #expect(link.receiver.statistics.repairsReceived == 0)
        #expect(link.frames.count == 1)
        #expect(link.sender.statistics.paddingPackets == 5)
        // Without a retransmission stream there is nowhere to put it.
        let plain = try Link()
        #expect(!plain.sender.canPad)
        var sent = 0
        try plain.sender.sendPadding(count: 5, size: 200) { _, _ in sent += 1 }
        #expect(sent == 0)
    }

    /// After a keyframe, nothing sent before it is needed: NACKs for those
    /// packets are not answered, and the stream says once that a keyframe
    /// began (so queued repairs can be dropped).
    @Test func aKeyframeSupersedesRepairsOfWhatCameBeforeIt() throws {
        let link = try Self.repairing()
        try link.send(0, size: 3000, keyframe: true)
        #expect(link.sender.takeKeyframeStarted())
        #expect(!link.sender.takeKeyframeStarted(), "once")
        try link.send(1, size: 3000)
        #expect(!link.sender.takeKeyframeStarted())
        let beforeKeyframe = UInt16(65_500 + link.toReceiver.count - 1)
        try link.send(2, size: 3000, keyframe: true)
        #expect(link.sender.takeKeyframeStarted())
        let inKeyframe = UInt16(65_500 + link.toReceiver.count - 1)
        link.toReceiver.removeAll()
        let receiverSide = try SRTPContext(keying: link.keying, direction: .outbound)
        var repairs = 0
        for sequence in [beforeKeyframe, inKeyframe] {
            var buffer = PacketBuffer(RTCPPacket.serializeCompound([
                .nack(GenericNACK(senderSSRC: 0xBBBB, mediaSSRC: 0xAAAA, lost: [sequence]))]))
            try receiverSide.protectRTCP(&buffer)
            var datagram = PacketBuffer(buffer.bytes)
            _ = link.sender.handle(datagram: &datagram, now: link.now) { _ in repairs += 1 }
        }
        #expect(repairs == 1, "only the keyframe's own packet is resent")
        #expect(link.sender.statistics.retransmissionsSuperseded == 1)
    }

    /// A NACK repeated within half a round trip (sent before the repair
    /// could arrive) does not send the packet twice; one repeated after it
    /// (the repair was lost; a receiver's retry, brought forward by jitter
    /// on the way back, comes under a round trip after the repair left)
    /// sends two copies on the RTX stream, each under its own sequence
    /// number, and the receiver takes the first and counts the second
    /// late, not a replay. Without an RTX stream the packet goes once, as
    /// it was.
    @Test(arguments: [true, false])
    func repeatedNACKWithinHalfARoundTripIsNotAnsweredTwice(rtx: Bool) throws {
        let link = try rtx ? Self.repairing() : Link()
        link.sender.observeRoundTrip(.milliseconds(100))
        try link.send(0, size: 5000, keyframe: true)
        // The receiver hears the keyframe but for the packet NACKed below
        // (its replies stay with it: the NACKs below are the only ones).
        for bytes in link.toReceiver where sequenceNumber(of: bytes) != 65_501 {
            var datagram = PacketBuffer(bytes)
            _ = link.receiver.handle(datagram: &datagram, now: link.now) { _ in }
        }
        link.toReceiver.removeAll()
        let nack = RTCPPacket.nack(GenericNACK(senderSSRC: 0xBBBB, mediaSSRC: 0xAAAA, lost: [65_501]))
        let receiverSide = try SRTPContext(keying: link.keying, direction: .outbound)
        func protect(_ packet: RTCPPacket) throws -> [UInt8] {
            var buffer = PacketBuffer(RTCPPacket.serializeCompound([packet]))
            try receiverSide.protectRTCP(&buffer)
            return Array(buffer.bytes)
        }
        var repairs = 0
        for _ in 0..<2 {
            var datagram = PacketBuffer(try protect(nack))
            _ = link.sender.handle(datagram: &datagram, now: link.now) { _ in repairs += 1 }
            link.advance(.milliseconds(30))
        }
        #expect(repairs == 1)
        #expect(link.sender.statistics.retransmissionsSuppressed == 1)
        // 90 ms after the first repair left: the retry of a receiver whose
        // round trip is 100 ms, 20 ms sooner for the jitter.
        link.advance(.milliseconds(30))
        var datagram = PacketBuffer(try protect(nack))
        var copies: [[UInt8]] = []
        _ = link.sender.handle(datagram: &datagram, now: link.now) { copies.append(Array($0)) }
        #expect(copies.count == (rtx ? 2 : 1), "after a round trip it may have been lost again")
        #expect(Set(copies.map(sequenceNumber(of:))).count == copies.count)
        var events: [ReceiveEvent] = []
        for bytes in copies {
            var datagram = PacketBuffer(bytes)
            events += link.receiver.handle(datagram: &datagram, now: link.now) { _ in }
        }
        let statistics = link.receiver.statistics
        #expect(statistics.replays == 0 && statistics.authenticationFailures == 0)
        #expect(statistics.repairsReceived == (rtx ? 2 : 0))
        #expect(statistics.late == (rtx ? 1 : 0), "the second copy comes after its frame went on")
        #expect(events.filter { if case .videoFrame = $0 { true } else { false } }.count == 1, "the keyframe whole")
    }

    /// With FEC on, a lost packet is rebuilt as soon as the repair arrives:
    /// no NACK, no waiting a round trip.
    @Test func flexFECRebuildsALostPacketWithoutARoundTrip() throws {
        let link = try Self.repairing()
        link.sender.protectionGroup = 4
        try link.send(0, size: 8000, keyframe: true)
        link.deliver()
        try link.send(1, size: 12_000)
        // The frame's media packets and, after every four, a repair; drop the second media packet.
        link.deliver { index, _ in index == 1 }
        #expect(link.frames.count == 2, "complete in the same instant")
        #expect(link.frames[1].data == accessUnit(1, size: 12_000, keyframe: false))
        #expect(link.receiver.statistics.fecRecovered == 1)
        #expect(link.receiver.statistics.nacksSent == 0)
        #expect(link.sender.statistics.fecPackets >= 3)
    }

    /// Protected across its groups, a frame that lost two packets of one
    /// group is rebuilt from the columns' repairs a few frames later, its
    /// retransmissions lost too: what a long round trip would have waited for.
    @Test func flexFECAcrossGroupsRebuildsTwoLossesInOneGroup() throws {
        let link = try Self.repairing()
        try link.send(0, size: 8000, keyframe: true)
        link.deliver()
        link.sender.protectionGroup = 4
        link.sender.protectionCrossing = true
        try link.send(1, size: 12_000)
        // The second and third media packets, of the first group.
        link.deliver { index, _ in index == 1 || index == 2 }
        #expect(link.frames.count == 1, "not whole yet")
        for n in 2...4 {
            link.advance(.milliseconds(33))
            try link.send(n, size: 3000)
            // Retransmissions lost: only FEC can rebuild.
            link.deliver { _, bytes in bytes.count >= 12 && ssrc(of: bytes) == 0xCCCC }
        }
        #expect(link.frames.count == 5, "every frame, in order")
        let rebuilt = link.frames.count > 1 && link.frames[1].data == accessUnit(1, size: 12_000, keyframe: false)
        #expect(rebuilt, "the frame that lost two packets, whole")
        #expect(link.receiver.statistics.fecRecovered == 2)
    }

    @Test func feedbackReporterReportsLatePacketsAgain() {
        var reporter = FeedbackReporter()
        var now = MonotonicTime(nanoseconds: 5_000_000_000)
        for sequence: UInt16 in [10, 11, 13] {
            reporter.received(ssrc: 1, sequence: sequence, now: now)
        }
        let first = reporter.poll(now: now, senderSSRC: 9)
        #expect(first?.blocks.first?.beginSequence == 10)
        #expect(first?.blocks.first?.metrics.map(\.received) == [true, true, false, true])
        now = now + .milliseconds(20)
        reporter.received(ssrc: 1, sequence: 12, now: now)  // late
        reporter.received(ssrc: 1, sequence: 14, now: now)
        #expect(reporter.poll(now: now, senderSSRC: 9) == nil, "not before the interval")
        now = now + .milliseconds(50)
        let second = reporter.poll(now: now, senderSSRC: 9)
        #expect(second?.blocks.first?.beginSequence == 12, "reaches back to the late one")
        #expect(second?.blocks.first?.metrics.map(\.received) == [true, true, true])
        // Arrival offsets: 12 and 14 arrived 50 ms (51.2 units of 1/1024 s) before the report.
        #expect(second?.blocks.first?.metrics.first?.arrivalOffset == 51)
        #expect(reporter.poll(now: now + .seconds(1), senderSSRC: 9) == nil, "nothing new, nothing sent")
    }

    /// The receiver learns the round trip from its RRTR and the sender's
    /// DLRR echo, and sizes its jitter buffer by it.
    @Test func receiverLearnsTheRoundTripFromExtendedReports() throws {
        let link = try Self.repairing()
        try link.send(0, size: 2000, keyframe: true)
        link.deliver()  // the receiver's first report carries an RRTR; the sender echoes it
        link.advance(.milliseconds(40))
        link.deliver()  // the echo arrives 40 ms after the report left
        let rtt = try #require(link.receiver.roundTrip)
        #expect(rtt >= .milliseconds(39) && rtt <= .milliseconds(41))
        #expect(link.receiver.jitterBufferDelay >= .milliseconds(100), "two round trips and a margin")
    }
}
