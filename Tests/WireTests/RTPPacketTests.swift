import ShareWire
import ShareBase
import TestSupport
import Testing

@Suite("RTP packets (RFC 3550 §5.1, RFC 8285)")
struct RTPPacketTests {
    /// The plaintext packet of libsrtp's srtp_validate known-answer test:
    /// V=2, PT=15, seq 0x1234, ts 0xdecafbad, SSRC 0xcafebabe, 16 bytes 0xab.
    @Test func parsesLibsrtpReferencePacket() throws {
        let bytes = hex("800f1234 decafbad cafebabe abababab abababab abababab abababab")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.payloadType == 15)
        #expect(!packet.marker)
        #expect(packet.sequenceNumber == 0x1234)
        #expect(packet.timestamp == 0xDECA_FBAD)
        #expect(packet.ssrc == 0xCAFE_BABE)
        #expect(packet.csrcs.isEmpty)
        #expect(packet.headerExtension == nil)
        #expect(Array(packet.payload) == [UInt8](repeating: 0xAB, count: 16))
        #expect(packet.serialized() == bytes)
    }

    /// libsrtp's header-extension test packet (srtp_validate_encrypted_extensions_headers):
    /// profile 0xBEDE, six words, one-byte elements ids 1 (8 bytes), 2 (3), 3 (1), 4 (7), one padding byte.
    @Test func parsesOneByteExtensionElements() throws {
        let bytes = hex("""
            900f1234 decafbad cafebabe bede0006
            17414273 a4752627 482200 00c8 308e 46 55996386 b395fb 00
            abababab abababab abababab abababab
            """)
        let packet = try RTPPacket(parsing: bytes)
        let ext = try #require(packet.headerExtension)
        #expect(ext.profile == 0xBEDE)
        #expect(ext.data.count == 24)
        let elements = try ext.elements()
        #expect(elements.map(\.id) == [1, 2, 3, 4])
        #expect(elements.map(\.data.count) == [8, 3, 1, 7])
        #expect(Array(elements[0].data) == hex("414273a475262748"))
        #expect(Array(elements[2].data) == [0x8E])
        #expect(packet.serialized() == bytes)
        #expect(try RTPHeaderExtension(elements: elements).data == ext.data)
    }

    /// RFC 8285 §4.3: two-byte form, profile 0x100 + appbits, id and length bytes.
    @Test func twoByteExtensionsRoundTrip() throws {
        let elements = [
            RTPExtensionElement(id: 1, data: []),
            RTPExtensionElement(id: 200, data: [1, 2, 3]),
            RTPExtensionElement(id: 15, data: ArraySlice(repeating: 7, count: 20)),
        ]
        let ext = try RTPHeaderExtension(elements: elements)
        #expect(ext.profile == 0x1000)
        #expect(ext.data.count % 4 == 0)
        // id 1 len 0 | id 200 len 3 1 2 3 | id 15 len 20 ...
        #expect(Array(ext.data.prefix(7)) == [1, 0, 200, 3, 1, 2, 3])
        #expect(try ext.elements() == elements)
    }

    @Test func oneByteFormRejectsWhatItCannotCarry() {
        #expect(throws: RTPExtensionError.unrepresentable(id: 15, length: 1)) {
            try RTPHeaderExtension(elements: [RTPExtensionElement(id: 15, data: [0])], form: .oneByte)
        }
        #expect(throws: RTPExtensionError.unrepresentable(id: 1, length: 17)) {
            try RTPHeaderExtension(elements: [RTPExtensionElement(id: 1, data: ArraySlice(repeating: 0, count: 17))],
                                   form: .oneByte)
        }
    }

    /// RFC 8285 §4.2: ID 15 stops processing of the remaining extension.
    @Test func oneByteId15StopsParsing() throws {
        let ext = RTPHeaderExtension(profile: 0xBEDE, data: [0x10, 0xAA, 0xF0, 0x10, 0xBB, 0, 0, 0][...])
        #expect(try ext.elements() == [RTPExtensionElement(id: 1, data: [0xAA])])
    }

    @Test func csrcsMarkerAndPaddingRoundTrip() throws {
        // CC=2, P=1, M=1, PT=96, padding of 4 bytes whose last says 4.
        let bytes = hex("a2e00001 00000010 11111111 00000001 00000002 cafe 00000004")
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.csrcs == [1, 2])
        #expect(packet.marker)
        #expect(packet.payloadType == 96)
        #expect(Array(packet.payload) == [0xCA, 0xFE])
        #expect(Array(packet.padding) == [0, 0, 0, 4])
        #expect(packet.serialized() == bytes)
    }

    @Test(arguments: [
        ("", RTPParseError.tooShort(0)),
        ("80", .tooShort(1)),
        ("800f1234decafbadcafeba", .tooShort(11)),
        ("400f1234decafbadcafebabe", .badVersion(1)),
        ("830f1234decafbadcafebabe00000001", .truncatedCSRCList),
        ("900f1234decafbadcafebabebede0002 00000000", .truncatedExtension),
        ("a00f1234decafbadcafebabe 0000 05", .badPadding(5)),
        ("a00f1234decafbadcafebabe", .badPadding(0)),
        ("a00f1234decafbadcafebabe 00", .badPadding(0)),
    ])
    func rejectsMalformedPackets(input: String, error: RTPParseError) {
        #expect(throws: error) { try RTPPacket(parsing: hex(input)) }
    }

    /// Seeded property: random headers survive serialize → parse → serialize.
    @Test func randomPacketsRoundTrip() throws {
        var rng = SeededGenerator(seed: 0x5EED_0001)
        for _ in 0..<500 {
            let elements = (0..<Int.random(in: 0...3, using: &rng)).map { i in
                RTPExtensionElement(id: UInt8(i + 1), data: rng.bytes(Int.random(in: 1...16, using: &rng))[...])
            }
            let padCount = Int.random(in: 0...3, using: &rng)
            var padding = [UInt8](repeating: 0, count: padCount)
            if padCount > 0 { padding[padCount - 1] = UInt8(padCount) }
            let packet = RTPPacket(
                marker: Bool.random(using: &rng), payloadType: UInt8.random(in: 0...127, using: &rng),
                sequenceNumber: UInt16.random(in: 0...UInt16.max, using: &rng),
                timestamp: UInt32.random(in: 0...UInt32.max, using: &rng),
                ssrc: UInt32.random(in: 0...UInt32.max, using: &rng),
                csrcs: (0..<Int.random(in: 0...15, using: &rng)).map { _ in UInt32.random(in: 0...UInt32.max, using: &rng) },
                headerExtension: elements.isEmpty ? nil : try RTPHeaderExtension(elements: elements),
                payload: rng.bytes(Int.random(in: 0...200, using: &rng))[...], padding: padding[...])
            let bytes = packet.serialized()
            let parsed = try RTPPacket(parsing: bytes)
            #expect(parsed.serialized() == bytes)
            #expect(parsed.headerSize == packet.headerSize)
            if let ext = parsed.headerExtension { #expect(try ext.elements() == elements) }
        }
    }

    @Test func packetizerWritesHeaderAndCounts() throws {
        var packetizer = RTPPacketizer(ssrc: 0xCAFE_BABE, payloadType: 96, clockRate: 90_000,
                                       initialSequenceNumber: 0xFFFF)
        var buffer = PacketBuffer(capacity: 1500)
        let ext = try RTPHeaderExtension(elements: [RTPExtensionElement(id: 3, data: [1, 2, 3, 4, 5, 6, 7, 8])])
        #expect(packetizer.beginPacket(in: &buffer, timestamp: 90_000, marker: true, headerExtension: ext) == 0xFFFF)
        buffer.append(contentsOf: [9, 9])
        packetizer.didSend(payloadSize: 2)
        let parsed = try RTPPacket(parsing: Array(buffer.bytes))
        #expect(parsed.marker && parsed.payloadType == 96 && parsed.timestamp == 90_000)
        #expect(parsed.headerExtension?.element(id: 3).map(Array.init) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(parsed.payload) == [9, 9])
        #expect(packetizer.beginPacket(in: &buffer, timestamp: 0, marker: false) == 0)  // wrapped
        #expect(packetizer.packetCount == 1 && packetizer.octetCount == 2)
    }

    @Test func absCaptureTimeRoundTrips() throws {
        let time = AbsoluteCaptureTime(ntpTimestamp: NTPTimestamp(unixNanoseconds: 1_700_000_000_123_456_789))
        let parsed = try #require(AbsoluteCaptureTime(time.bytes[...]))
        #expect(parsed == time)
        // Q32.32 keeps about 0.23 ns of resolution.
        let back = Int64(parsed.ntpTimestamp.unixNanoseconds) - 1_700_000_000_123_456_789
        #expect(abs(back) <= 1)
        #expect(AbsoluteCaptureTime([1, 2, 3][...]) == nil)
    }

    /// Any NTP time a sender sends, 0 (1900) and the era's last second among
    /// them, is a signed Unix time that scales to nanoseconds without overflow
    /// (the receiver hands `capturedUnixNanoseconds` to its host).
    static let captureTimes: [(raw: UInt64, microseconds: Int64)] = [
        (0, -2_208_988_800_000_000),
        (2_208_988_800 << 32, 0),
        (2_208_988_800 << 32 | 0x8000_0000, 500_000),
        (.max, (0xFFFF_FFFF - 2_208_988_800) * 1_000_000 + 999_999),
    ]

    @Test(arguments: captureTimes)
    func anyCaptureTimeIsASignedUnixTime(raw: UInt64, microseconds: Int64) {
        let time = NTPTimestamp(rawValue: raw).unixMicroseconds
        #expect(time == microseconds)
        #expect(time.multipliedReportingOverflow(by: 1000).overflow == false)
    }
}

@Suite("SDP (RFC 8866, RFC 4568 a=crypto, RFC 5576 a=ssrc)")
struct SDPTests {
    @Test func ourDescriptionRoundTrips() throws {
        let video = MediaDescription(
            kind: .video, port: 5004, payloadType: 96, codec: "H264", clockRate: 90_000,
            formatParameters: [("packetization-mode", "1"), ("sprop-parameter-sets", "Z0LAH9oBQBboQAAAAwBAAAAPI8YMqA==,aM48gA==")],
            crypto: ("AES_CM_128_HMAC_SHA1_80", "tUjbkhgJpzKlw7JozPCxOGK6sQhcbLgcadRCt1lx"),
            extensions: [(1, AbsoluteCaptureTime.uri)], source: (0xDEAD_BEEF, "share"))
        let sdp = SessionDescription(connectionAddress: "127.0.0.1", media: [video])
        let text = sdp.serialized()
        #expect(text.contains("m=video 5004 RTP/SAVP 96\r\n"))
        #expect(text.contains("a=ssrc:3735928559 cname:share\r\n"))
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed == sdp)
        #expect(parsed.video?.parameterSets.map { $0[0] & 0x1F } == [7, 8])
        #expect(parsed.video?.extensionID(AbsoluteCaptureTime.uri) == 1)
    }

    /// What ffmpeg's RTP muxer writes (-sdp_file): RTP/AVP with a=crypto, a=tool, LF endings.
    @Test func parsesFFmpegSDP() throws {
        let text = """
            v=0
            o=- 0 0 IN IP4 127.0.0.1
            s=No Name
            c=IN IP4 127.0.0.1
            t=0 0
            a=tool:libavformat LIBAVFORMAT_VERSION
            m=video 5012 RTP/AVP 96
            a=rtpmap:96 H264/90000
            a=fmtp:96 packetization-mode=1
            a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:tUjbkhgJpzKlw7JozPCxOGK6sQhcbLgcadRCt1lx
            """
        let video = try #require(try SessionDescription(parsing: text).video)
        #expect(video.port == 5012 && video.payloadType == 96 && video.codec == "H264" && video.clockRate == 90_000)
        #expect(video.crypto?.suite == "AES_CM_128_HMAC_SHA1_80")
        #expect(video.parameter("packetization-mode") == "1")
    }

    /// A connection line per media section only (ffmpeg with several
    /// outputs), or none at all: the address is kept, and what we write
    /// from it parses again (found by the sdp fuzz target's corpus).
    @Test(arguments: [("v=0\ns=x\nt=0 0\nm=video 5004 RTP/SAVP 96\nc=IN IP4 10.1.2.3\na=rtpmap:96 H264/90000\n", "10.1.2.3"),
                      ("v=0\ns=x\nt=0 0\nm=video 5004 RTP/SAVP 96\na=rtpmap:96 H264/90000\n", "")])
    func connectionAddressFromTheMediaOrNone(text: String, address: String) throws {
        let parsed = try SessionDescription(parsing: text)
        #expect(parsed.connectionAddress == address)
        let again = try SessionDescription(parsing: parsed.serialized())
        let third = try SessionDescription(parsing: again.serialized())
        #expect(again.video?.port == 5004 && third.serialized() == again.serialized())
    }

    @Test(arguments: ["", "v=0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n", "garbage line\r\n",
                      "v=0\r\nm=video 5004 RTP/SAVP 96\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 nokey\r\n"])
    func rejectsUnusable(text: String) {
        #expect(throws: SDPError.self) { try SessionDescription(parsing: text) }
    }
}
