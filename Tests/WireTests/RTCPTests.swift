import ShareWire
import TestSupport
import Testing
import ShareBase

@Suite("RTCP (RFC 3550 §6, RFC 4585 §6, RFC 5104 §4.3)")
struct RTCPTests {
    /// libsrtp's srtp_validate RTCP plaintext: an SR header (RC=1, PT=200,
    /// length 11 words) whose body is all 0xab; only 20 of the 44 declared
    /// bytes are present, so it must be rejected as a bad length.
    @Test func libsrtpReferenceSRIsTruncated() {
        let bytes = hex("81c8000b cafebabe abababab abababab abababab abababab")
        #expect(throws: RTCPParseError.badLength(packetType: 200, words: 11)) {
            try RTCPPacket.parseCompound(bytes)
        }
    }

    /// Hand-derived from RFC 3550 §6.4.1 field layout: SR with one report block.
    @Test func senderReportGolden() throws {
        let bytes = hex("""
            81c8000c 00000001 e1c2b3a4 80000000 0001e240 00000064 00002710
            00000002 0a000003 00010005 00000020 b3a48000 00008000
            """)
        let packets = try RTCPPacket.parseCompound(bytes)
        guard case .senderReport(let sr) = try #require(packets.first) else { Issue.record("not an SR"); return }
        #expect(sr.ssrc == 1)
        #expect(sr.ntpTimestamp.rawValue == 0xE1C2_B3A4_8000_0000)
        #expect(sr.rtpTimestamp == 123_456)
        #expect(sr.packetCount == 100 && sr.octetCount == 10_000)
        let block = try #require(sr.reports.first)
        #expect(block.ssrc == 2 && block.fractionLost == 10 && block.cumulativeLost == 3)
        #expect(block.highestSequence == 0x10005 && block.jitter == 32)
        #expect(block.lastSenderReport == 0xB3A4_8000 && block.delaySinceLastSenderReport == 0x8000)
        #expect(RTCPPacket.serializeCompound(packets) == bytes)
    }

    /// A receiver that has not had a sender report for 100 hours (a paused
    /// sender's stream): DLSR is held at its largest, nothing traps.
    @Test func delaySinceAReportLongAgoIsHeldAtTheTop() {
        var statistics = ReceptionStatistics(ssrc: 1, clockRate: 90_000)
        let start = MonotonicTime(nanoseconds: 1_000_000_000)
        for sequence: UInt16 in 0..<5 { statistics.record(sequence: sequence, timestamp: UInt32(sequence) * 3000, arrival: start) }
        statistics.didReceive(senderReport: SenderReport(ssrc: 1, ntpTimestamp: NTPTimestamp(rawValue: 0), rtpTimestamp: 0,
                                                         packetCount: 5, octetCount: 100), at: start)
        #expect(statistics.makeReport(now: start + .seconds(2)).delaySinceLastSenderReport == 2 * 65536)
        #expect(statistics.makeReport(now: start + .seconds(100 * 3600)).delaySinceLastSenderReport == .max)
    }

    /// A negative cumulative loss (duplicates) sign-extends from 24 bits.
    @Test func negativeCumulativeLoss() throws {
        let bytes = hex("81c90007 00000001 00000002 00fffffe 00000000 00000000 00000000 00000000")
        guard case .receiverReport(let rr) = try RTCPPacket.parseCompound(bytes).first else {
            Issue.record("not an RR"); return
        }
        #expect(rr.reports[0].cumulativeLost == -2)
        #expect(RTCPPacket.receiverReport(rr).serialized() == bytes)
    }

    /// RFC 3550 §6.5: CNAME "ab" → 4 SSRC + 1 type + 1 len + 2 text + null + 3 pad.
    @Test func sdesCnameGolden() throws {
        let sdes = RTCPPacket.sourceDescription(SourceDescription(ssrc: 0x1234_5678, cname: "ab"))
        let bytes = sdes.serialized()
        #expect(bytes == hex("81ca0003 12345678 01026162 00000000"))
        guard case .sourceDescription(let parsed) = try RTCPPacket.parseCompound(bytes).first else {
            Issue.record("not SDES"); return
        }
        #expect(parsed.cname(of: 0x1234_5678) == "ab")
    }

    @Test func byeWithReason() throws {
        let bye = RTCPPacket.goodbye(Goodbye(sources: [1, 2], reason: "done"))
        let bytes = bye.serialized()
        #expect(bytes == hex("82cb0004 00000001 00000002 04646f6e 65000000"))
        #expect(try RTCPPacket.parseCompound(bytes) == [bye])
    }

    /// RFC 4585 §6.2.1: PID plus a bitmask of the following 16 packets.
    @Test func nackPacksLossesIntoBitmasks() throws {
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lost: [100, 101, 103, 116, 117, 65535, 0])
        #expect(nack.entries == [GenericNACK.Entry(packetID: 100, lostBitmask: 0b1000_0000_0000_0101),
                                 GenericNACK.Entry(packetID: 117, lostBitmask: 0),
                                 GenericNACK.Entry(packetID: 65535, lostBitmask: 1)])
        #expect(nack.lostSequenceNumbers == [100, 101, 103, 116, 117, 65535, 0])
        let bytes = RTCPPacket.nack(nack).serialized()
        #expect(Array(bytes.prefix(4)) == hex("81cd0005"))
        #expect(try RTCPPacket.parseCompound(bytes) == [.nack(nack)])
    }

    @Test func pliAndFirGolden() throws {
        let pli = RTCPPacket.pictureLoss(PictureLossIndication(senderSSRC: 1, mediaSSRC: 2))
        #expect(pli.serialized() == hex("81ce0002 00000001 00000002"))
        let fir = RTCPPacket.fullIntraRequest(FullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 2, sequenceNumber: 7)]))
        #expect(fir.serialized() == hex("84ce0004 00000001 00000000 00000002 07000000"))
        #expect(try RTCPPacket.parseCompound(pli.serialized() + fir.serialized()) == [pli, fir])
    }

    /// RFC 3550 §6.1: compound packets; an APP packet and a REMB (PSFB FMT 15)
    /// are kept opaque and do not stop parsing.
    @Test func applicationPacketsRoundTripAndCarryTheSenderState() throws {
        // RFC 3550 §6.7: subtype 1, SSRC 9, name "SHST", data in 32-bit words.
        let announcement = StateAnnouncement(state: .paused, sequence: 0x0102, reason: "lunch")
        let bytes = announcement.packet(ssrc: 9).serialized()
        #expect(bytes == hex("81cc0004 00000009 53485354 0102056c 756e6368"))
        let parsed = try RTCPPacket.parseCompound(bytes)
        guard case .application(let app) = parsed.first else {
            Issue.record("not an APP packet: \(parsed)")
            return
        }
        #expect(StateAnnouncement(app) == announcement)
        #expect(StateAcknowledgement(app) == nil, "another name")
        let answer = StateAcknowledgement(sequence: 0x0102).packet(ssrc: 7)
        guard case .application(let ack) = try RTCPPacket.parseCompound(answer.serialized()).first else { return }
        #expect(StateAcknowledgement(ack)?.sequence == 0x0102 && StateAnnouncement(ack) == nil)
    }

    /// A receiver's word on the pointer: APP `SHPD`, the answer in the
    /// subtype, no data; any other subtype or name is not it.
    @Test func aReceiverSaysWhetherItDrawsThePointer() throws {
        let bytes = PointerDrawing(drawsPointer: true).packet(ssrc: 0x0A0B_0C0D).serialized()
        #expect(bytes == hex("81cc0002 0a0b0c0d 53485044"))
        for drawn in [true, false] {
            let packet = PointerDrawing(drawsPointer: drawn).packet(ssrc: 5)
            guard case .application(let app) = try RTCPPacket.parseCompound(packet.serialized()).first else {
                Issue.record("not an APP packet")
                return
            }
            #expect(PointerDrawing(app) == PointerDrawing(drawsPointer: drawn) && StateAcknowledgement(app) == nil)
        }
        #expect(PointerDrawing(ApplicationPacket(subtype: 2, ssrc: 5, name: PointerDrawing.name, data: [])) == nil)
        #expect(PointerDrawing(ApplicationPacket(subtype: 1, ssrc: 5, name: StateAcknowledgement.name, data: [0, 1])) == nil)
    }

    /// The audio layout rides after the reason: a count, then SSRC and
    /// channels per stream; an empty list has its own marker (a zero count
    /// would be padding); an announcement without it, as before, says nothing.
    @Test func theSenderStateCarriesTheAudioLayout() throws {
        let layouts: [[AudioStreamLayout]?] = [nil, [], [AudioStreamLayout(ssrc: 0xA1B2_C3D4, channels: 2),
                                                         AudioStreamLayout(ssrc: 7, channels: 1)]]
        for layout in layouts {
            let announcement = StateAnnouncement(state: .live, sequence: 3, reason: nil, audio: layout)
            guard case .application(let app) = try RTCPPacket.parseCompound(announcement.packet(ssrc: 9).serialized()).first
            else {
                Issue.record("not an APP packet")
                return
            }
            #expect(StateAnnouncement(app) == announcement, "\(String(describing: layout))")
        }
        let two = StateAnnouncement(state: .paused, sequence: 1, reason: "x",
                                    audio: [AudioStreamLayout(ssrc: 0x0102_0304, channels: 2)]).packet(ssrc: 9).serialized()
        #expect(two == hex("81cc0005 00000009 53485354 00010178 01010203 04020000"))
        // A truncated stream description is refused, not half read.
        let cut = ApplicationPacket(subtype: 0, ssrc: 9, name: "SHST", data: [0, 1, 0, 2, 1, 2])
        #expect(StateAnnouncement(cut) == nil)
    }

    @Test func unknownTypesAreSkippedNotFatal() throws {
        let rr = RTCPPacket.receiverReport(ReceiverReport(ssrc: 9))
        let app = hex("80cc0002 00000009 6e616d65")
        let remb = hex("8fce0004 00000009 00000000 52454d42 00000000")
        let sdes = RTCPPacket.sourceDescription(SourceDescription(ssrc: 9, cname: "x"))
        let packets = try RTCPPacket.parseCompound(rr.serialized() + app + remb + sdes.serialized())
        #expect(packets.count == 4)
        #expect(packets[0] == rr && packets[3] == sdes)
        guard case .application(let app) = packets[1], case .unknown(let type2, let fmt, _) = packets[2] else {
            Issue.record("unknown packets not kept"); return
        }
        #expect(app.ssrc == 9 && app.name == Array("name".utf8) && app.data.isEmpty && StateAnnouncement(app) == nil)
        #expect(type2 == 206 && fmt == 15)
    }

    @Test func paddingOnLastPacketIsRemoved() throws {
        // RR with P set: 4 bytes of padding, last byte 4.
        let bytes = hex("a0c90002 00000009 00000004")
        #expect(try RTCPPacket.parseCompound(bytes) == [.receiverReport(ReceiverReport(ssrc: 9))])
    }

    @Test(arguments: [
        ("", RTCPParseError.tooShort(0)),
        ("80c8", .tooShort(2)),
        ("40c90001 00000001", .badVersion(1)),
        ("81c90001 00000001", .truncated(packetType: 201)),
        ("80c90005 00000001", .badLength(packetType: 201, words: 5)),
        ("a0c90001 00000000", .badPadding),
        ("81ca0001 00000001", .truncated(packetType: 202)),
        ("81cb0000", .truncated(packetType: 203)),
        ("81cd0001 00000001", .truncated(packetType: 205)),
    ])
    func rejectsMalformed(input: String, error: RTCPParseError) {
        #expect(throws: error) { try RTCPPacket.parseCompound(hex(input)) }
    }

    @Test func randomCompoundsRoundTrip() throws {
        var rng = SeededGenerator(seed: 77)
        func u32() -> UInt32 { UInt32.random(in: 0...UInt32.max, using: &rng) }
        for _ in 0..<300 {
            var packets: [RTCPPacket] = []
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let reports = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    ReceptionReport(ssrc: u32(), fractionLost: UInt8.random(in: 0...255, using: &rng),
                                    cumulativeLost: Int32.random(in: -0x80_0000...0x7F_FFFF, using: &rng),
                                    highestSequence: u32(), jitter: u32(), lastSenderReport: u32(),
                                    delaySinceLastSenderReport: u32())
                }
                switch Int.random(in: 0...6, using: &rng) {
                case 0: packets.append(.senderReport(SenderReport(ssrc: u32(), ntpTimestamp: NTPTimestamp(rawValue: UInt64(u32()) << 32 | UInt64(u32())),
                                                                  rtpTimestamp: u32(), packetCount: u32(), octetCount: u32(), reports: reports)))
                case 1: packets.append(.receiverReport(ReceiverReport(ssrc: u32(), reports: reports)))
                case 2: packets.append(.sourceDescription(SourceDescription(ssrc: u32(), cname: String(repeating: "c", count: Int.random(in: 0...40, using: &rng)))))
                case 3: packets.append(.goodbye(Goodbye(sources: [u32()], reason: Bool.random(using: &rng) ? "bye" : nil)))
                case 4: packets.append(.nack(GenericNACK(senderSSRC: u32(), mediaSSRC: u32(), lost: (0..<5).map { _ in UInt16.random(in: 0...200, using: &rng) }.sorted())))
                case 5: packets.append(.pictureLoss(PictureLossIndication(senderSSRC: u32(), mediaSSRC: u32())))
                default: packets.append(.fullIntraRequest(FullIntraRequest(senderSSRC: u32(), entries: [.init(ssrc: u32(), sequenceNumber: 3)])))
                }
            }
            let bytes = RTCPPacket.serializeCompound(packets)
            #expect(bytes.count % 4 == 0)
            #expect(try RTCPPacket.parseCompound(bytes) == packets)
        }
    }
}
