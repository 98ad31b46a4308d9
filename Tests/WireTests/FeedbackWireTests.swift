import ShareWire
import ShareBase
import TestSupport
import Testing

@Suite("Congestion feedback, extended reports, FlexFEC and repair SDP (RFC 8888, 3611, 8627, 4588)")
struct FeedbackWireTests {
    /// RFC 8888 §3.1 laid out by hand: FMT 11, PT 205; one stream (SSRC 2)
    /// from sequence 100: received 16/1024 s before the report, lost,
    /// received with no usable time (0x1FFF); 16 bits of padding after an
    /// odd count; then the report timestamp.
    @Test func congestionFeedbackGolden() throws {
        let bytes = hex("8bcd0006 00000001 00000002 00640003 80100000 9fff0000 12345678")
        let packets = try RTCPPacket.parseCompound(bytes)
        guard case .congestionFeedback(let feedback) = try #require(packets.first) else {
            Issue.record("not congestion feedback"); return
        }
        #expect(feedback.senderSSRC == 1 && feedback.reportTimestamp == 0x1234_5678)
        let block = try #require(feedback.blocks.first)
        #expect(block.ssrc == 2 && block.beginSequence == 100)
        #expect(block.metrics == [.init(received: true, ecn: 0, arrivalOffset: 16), .lost,
                                  .init(received: true, ecn: 0, arrivalOffset: 0x1FFF)])
        #expect(RTCPPacket.serializeCompound(packets) == bytes)
    }

    @Test(arguments: [1, 2, 3, 17, 1024])
    func congestionFeedbackRoundTrips(count: Int) throws {
        var rng = SeededGenerator(seed: UInt64(count))
        let metrics = (0..<count).map { _ -> CongestionControlFeedback.Metric in
            Bool.random(using: &rng) ? .lost
                : .init(received: true, ecn: UInt8.random(in: 0...3, using: &rng), arrivalOffset: UInt16.random(in: 0...0x1FFF, using: &rng))
        }
        let feedback = CongestionControlFeedback(
            senderSSRC: 7, blocks: [.init(ssrc: 9, beginSequence: 65_530, metrics: metrics),
                                    .init(ssrc: 10, beginSequence: 0, metrics: Array(metrics.prefix(5)))],
            reportTimestamp: 0xFFFF_FFFF)
        let bytes = RTCPPacket.congestionFeedback(feedback).serialized()
        #expect(bytes.count % 4 == 0)
        #expect(try RTCPPacket.parseCompound(bytes) == [.congestionFeedback(feedback)])
    }

    @Test func congestionFeedbackThatLiesAboutItsLengthIsRefused() {
        // num_reports says 40, only 2 metrics present.
        let bytes = hex("8bcd0005 00000001 00000002 00640028 80100000 12345678")
        #expect(throws: RTCPParseError.truncated(packetType: 205)) { try RTCPPacket.parseCompound(bytes) }
    }

    /// RFC 3611 §4.4 (RRTR, BT 4) and §4.5 (DLRR, BT 5) in one XR.
    @Test func extendedReportGolden() throws {
        let bytes = hex("80cf0008 00000005 04000002 e1c2b3a4 80000000 05000003 00000007 b3a48000 00010000")
        let packets = try RTCPPacket.parseCompound(bytes)
        guard case .extendedReport(let xr) = try #require(packets.first) else { Issue.record("not an XR"); return }
        #expect(xr.ssrc == 5)
        #expect(xr.receiverReferenceTime == NTPTimestamp(rawValue: 0xE1C2_B3A4_8000_0000))
        #expect(xr.delaySinceLastReceiverReports == [.init(ssrc: 7, lastReceiverReport: 0xB3A4_8000, delay: 0x10000)])
        #expect(RTCPPacket.serializeCompound(packets) == bytes)
        // A block of another type is skipped by its length.
        let other = hex("80cf0006 00000005 07000001 deadbeef 04000002 e1c2b3a4 80000000")
        guard case .extendedReport(let skipped) = try RTCPPacket.parseCompound(other).first else {
            Issue.record("not an XR"); return
        }
        #expect(skipped.receiverReferenceTime != nil)
    }

    /// RFC 8627 §4.2.2.1: packets base+0, base+1 and base+3 set the first,
    /// second and fourth mask bits after the k bit, which ends the mask.
    @Test func flexFECMaskGolden() throws {
        let packets = [0, 1, 3].map { offset in
            RTPPacket(payloadType: 96, sequenceNumber: 1000 + UInt16(offset), timestamp: 90_000, ssrc: 0xAA,
                      payload: [UInt8(offset), 2, 3][...]).serialized()[...]
        }
        let payload = try #require(FlexFEC.repairPayload(protecting: packets))
        #expect(Array(payload[8..<12]) == [0x03, 0xE8, 0xE8, 0x00])  // SN base 1000, k=1 | 1101 0000...
        let repair = try #require(FlexFEC.Repair(payload: payload[...]))
        #expect(repair.protected == [1000, 1001, 1003])
        // Sixteen packets need the second mask word.
        let many = (0..<20).map { offset in
            RTPPacket(payloadType: 96, sequenceNumber: 65_530 &+ UInt16(offset), timestamp: 1, ssrc: 0xAA,
                      payload: [1][...]).serialized()[...]
        }
        let widePayload = try #require(FlexFEC.repairPayload(protecting: many))
        let wide = try #require(FlexFEC.Repair(payload: widePayload[...]))
        #expect(wide.protected == (0..<20).map { 65_530 &+ UInt16($0) })
    }

    /// Every single loss in a group is rebuilt bit for bit, whatever the
    /// packets' sizes, markers, extensions and timestamps.
    @Test(arguments: [2, 5, 12, 46])
    func flexFECRebuildsAnyOneMissingPacket(group: Int) throws {
        var rng = SeededGenerator(seed: UInt64(group) * 31)
        let packets: [[UInt8]] = (0..<group).map { i in
            let ext = Bool.random(using: &rng)
                ? try? RTPHeaderExtension(elements: [RTPExtensionElement(id: 1, data: rng.bytes(8)[...])], form: .oneByte) : nil
            return RTPPacket(marker: i == group - 1, payloadType: 96, sequenceNumber: 40_000 &+ UInt16(i),
                             timestamp: UInt32.random(in: 0...UInt32.max, using: &rng), ssrc: 0x1234,
                             headerExtension: ext ?? nil, payload: rng.bytes(Int.random(in: 1...1100, using: &rng))[...]).serialized()
        }
        let payload = try #require(FlexFEC.repairPayload(protecting: packets.map { $0[...] }))
        let repair = try #require(FlexFEC.Repair(payload: payload[...]))
        for missing in 0..<group {
            let others = packets.enumerated().filter { $0.offset != missing }.map { $0.element[...] }
            let rebuilt = FlexFEC.recover(repair, missing: 40_000 &+ UInt16(missing), others: others, ssrc: 0x1234)
            #expect(rebuilt == packets[missing], "packet \(missing) of \(group)")
        }
    }

    @Test func flexFECRefusesWhatItCannotUse() {
        #expect(FlexFEC.Repair(payload: [0x40, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 0][...]) == nil, "retransmission variant")
        #expect(FlexFEC.Repair(payload: [0, 96, 0, 4, 0, 0, 0, 0, 0, 1][...]) == nil, "no mask")
        #expect(FlexFEC.Repair(payload: [0, 96, 0, 4, 0, 0, 0, 0, 0, 1, 0x80, 0][...]) == nil, "empty mask")
    }

    @Test func sdpCarriesRetransmissionAndFECStreams() throws {
        var video = MediaDescription(kind: .video, port: 5004, payloadType: 96, codec: "H264", clockRate: 90_000,
                                     formatParameters: [("packetization-mode", "1")], source: (11, "share"))
        video.retransmission = (97, 12)
        video.forwardErrorCorrection = (98, 13)
        video.feedback = ["nack", "nack pli", "ack ccfb"]
        let text = SessionDescription(connectionAddress: "127.0.0.1", media: [video]).serialized()
        #expect(text.contains("m=video 5004 RTP/SAVP 96 97 98\r\n"))
        #expect(text.contains("a=fmtp:97 apt=96\r\n") && text.contains("a=rtpmap:98 flexfec/90000\r\n"))
        #expect(text.contains("a=ssrc-group:FID 11 12\r\n") && text.contains("a=ssrc-group:FEC-FR 11 13\r\n"))
        let parsed = try #require(SessionDescription(parsing: text).video)
        #expect(parsed.payloadType == 96 && parsed.codec == "H264")
        #expect(parsed.retransmission?.payloadType == 97 && parsed.retransmission?.ssrc == 12)
        #expect(parsed.forwardErrorCorrection?.payloadType == 98 && parsed.forwardErrorCorrection?.ssrc == 13)
        #expect(parsed.source?.ssrc == 11 && parsed.source?.cname == "share")
    }

    /// One port per medium, RTCP on a port of its own (RFC 3605), as an SFU
    /// or ffmpeg takes it: written and read back.
    @Test func sdpGivesEachMediumItsPortAndRTCPItsOwn() throws {
        var video = MediaDescription(kind: .video, port: 41000, payloadType: 96, codec: "H264", clockRate: 90_000, rtcpMux: false)
        video.rtcpPort = 41001
        let audio = MediaDescription(kind: .audio, port: 41002, payloadType: 111, codec: "opus", clockRate: 48_000, channels: 2)
        let text = SessionDescription(connectionAddress: "10.0.0.2", media: [video, audio]).serialized()
        #expect(text.contains("m=video 41000 RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\na=rtcp:41001\r\n"))
        #expect(!text.contains("a=rtcp:41001\r\na=rtcp-mux"), "RTCP on its own port is not muxed")
        #expect(text.contains("m=audio 41002 RTP/SAVP 111\r\na=rtpmap:111 opus/48000/2\r\na=rtcp-mux\r\n"))
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed.video?.rtcpPort == 41001 && parsed.video?.rtcpMux == false)
        #expect(parsed.audio.first?.port == 41002 && parsed.audio.first?.rtcpPort == nil && parsed.audio.first?.rtcpMux == true)
        #expect(parsed == SessionDescription(connectionAddress: "10.0.0.2", media: [video, audio]))
        let withAddress = text.replacing("a=rtcp:41001", with: "a=rtcp:41001 IN IP4 10.0.0.2")
        #expect(try SessionDescription(parsing: withAddress).video?.rtcpPort == 41001)
        #expect(throws: SDPError.malformedLine("a=rtcp:0")) {
            try SessionDescription(parsing: text.replacing("a=rtcp:41001", with: "a=rtcp:0"))
        }
    }

    /// `share ctl budget SIZE` on the control socket: the size is carried as
    /// written (the sender parses it), anything else in its place refused.
    @Test func controlRequestsCarryABudget() {
        func request(_ text: String) -> ControlRequest { ControlRequest(line: Array(text.utf8)[...]) }
        #expect(request("budget 32M") == .budget("32M"))
        #expect(request(" budget \t 1.5G ") == .budget("1.5G"))
        #expect(request("status") == .status)
        #expect(request("budget") == .unknown("budget"))
        #expect(request("budget 32M; rm -rf") == .unknown("budget ?"))
        #expect(request("budget 12345678901234567") == .unknown("budget ?"))
        #expect(request("budgetary") == .unknown("budgetary"))
    }
}
