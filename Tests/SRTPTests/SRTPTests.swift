import ShareSRTP
import ShareWire
import TestSupport
import Testing
import ShareBase

/// Known-answer vectors from libsrtp's own test driver (test/srtp_driver.c,
/// srtp_validate, srtp_validate_gcm and srtp_validate_aes_256): master key
/// e1f97a0d..., salt 0ec675ad... for AES-CM; key 00..0f, salt a0..ab for
/// GCM; key f0f04914..., salt 3b04803d... for AES-256 (RFC 6188's key
/// derivation). The plaintext is RTP V=2 PT=15 seq 0x1234 ts 0xdecafbad
/// SSRC 0xcafebabe + 16 × 0xab.
struct KnownAnswer: Sendable, CustomStringConvertible {
    let profile: SRTPProfile
    let key: String
    let plaintext: String
    let ciphertext: String
    let rtcp: Bool
    var description: String { "\(profile.rawValue) \(rtcp ? "SRTCP" : "SRTP")" }

    static let aesKey = "e1f97a0d3e018be0d64fa32c06de4139 0ec675ad498afeebb6960b3aabe6"
    static let gcmKey = "000102030405060708090a0b0c0d0e0f a0a1a2a3a4a5a6a7a8a9aaab"
    static let aes256Key = "f0f04914b513f2763a1b1fa130f10e2998f6f6e43e4309d1e622a0e332b9f1b6 3b04803de51ee7c96423ab5b78d2"
    static let rtpPlain = "800f1234decafbadcafebabe abababababababababababababababab"
    static let rtcpPlain = "81c8000bcafebabe abababababababababababababababab"

    static let all: [KnownAnswer] = [
        KnownAnswer(profile: .aes128CmHmacSha1_80, key: aesKey, plaintext: rtpPlain,
                    ciphertext: "800f1234decafbadcafebabe 4e55dc4ce79978d88ca4d215949d2402 b78d6acc99ea179b8dbb",
                    rtcp: false),
        KnownAnswer(profile: .aes128CmHmacSha1_32, key: aesKey, plaintext: rtpPlain,
                    ciphertext: "800f1234decafbadcafebabe 4e55dc4ce79978d88ca4d215949d2402 b78d6acc",
                    rtcp: false),
        KnownAnswer(profile: .aes128CmHmacSha1_80, key: aesKey, plaintext: rtcpPlain,
                    ciphertext: "81c8000bcafebabe 7128035be487b9bdbef89041f977a5a8 80000001 993e08cd54d6c1230798",
                    rtcp: true),
        KnownAnswer(profile: .aeadAes128Gcm, key: gcmKey, plaintext: rtpPlain,
                    ciphertext: "800f1234decafbadcafebabe c5002ede04cfdd2eb91159e0880aa06e d2976826f796b201df3131a127e8a392",
                    rtcp: false),
        KnownAnswer(profile: .aeadAes128Gcm, key: gcmKey, plaintext: rtcpPlain,
                    ciphertext: "81c8000bcafebabe c98b8b5df0392a55852b6c21ac8e7025 c52c6fbea2b3b446ea31123ba88ce61e 80000001",
                    rtcp: true),
        KnownAnswer(profile: .aes256CmHmacSha1_80, key: aes256Key, plaintext: rtpPlain,
                    ciphertext: "800f1234decafbadcafebabe f1d9de17ff251ff1aa007774b0b4b40d a08d9d9a5b3a55d8873b",
                    rtcp: false),
    ]
}

@Suite("SRTP over libsrtp2 (RFC 3711, RFC 6188, RFC 7714)")
struct SRTPTests {
    func contexts(_ profile: SRTPProfile, key: [UInt8]? = nil) throws -> (SRTPContext, SRTPContext) {
        let keying = try key.map { try SRTPKeyingMaterial(profile: profile, bytes: $0) } ?? .random(profile: profile)
        return (try SRTPContext(keying: keying, direction: .outbound), try SRTPContext(keying: keying, direction: .inbound))
    }

    func rtp(sequence: UInt16, payload: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]) -> PacketBuffer {
        PacketBuffer(RTPPacket(payloadType: 96, sequenceNumber: sequence, timestamp: 1, ssrc: 0x1111,
                               payload: payload[...]).serialized())
    }

    @Test(arguments: KnownAnswer.all)
    func knownAnswer(vector: KnownAnswer) throws {
        let (sender, receiver) = try contexts(vector.profile, key: hex(vector.key))
        var packet = PacketBuffer(hex(vector.plaintext))
        if vector.rtcp { try sender.protectRTCP(&packet) } else { try sender.protect(&packet) }
        #expect(Array(packet.bytes) == hex(vector.ciphertext))
        if vector.rtcp { try receiver.unprotectRTCP(&packet) } else { try receiver.unprotect(&packet) }
        #expect(Array(packet.bytes) == hex(vector.plaintext))
    }

    @Test(arguments: SRTPProfile.allCases)
    func roundTripAndOverhead(profile: SRTPProfile) throws {
        let (sender, receiver) = try contexts(profile)
        for sequence: UInt16 in 65530...65535 {
            var packet = rtp(sequence: sequence)
            let plain = Array(packet.bytes)
            try sender.protect(&packet)
            #expect(packet.count == plain.count + profile.rtpOverhead)
            #expect(Array(packet.bytes) != plain)
            try receiver.unprotect(&packet)
            #expect(Array(packet.bytes) == plain)
        }
        var rtcp = PacketBuffer(RTCPPacket.receiverReport(ReceiverReport(ssrc: 5)).serialized())
        let plainRTCP = Array(rtcp.bytes)
        try sender.protectRTCP(&rtcp)
        try receiver.unprotectRTCP(&rtcp)
        #expect(Array(rtcp.bytes) == plainRTCP)
    }

    /// libsrtp2 refuses a packet that looks old before it checks the tag;
    /// the context then tells a genuine repeat from a forgery, for every
    /// profile, for packets from before a sequence wrap (the previous
    /// rollover counter) and for SRTCP.
    @Test(arguments: SRTPProfile.allCases)
    func repeatsAreToldFromForgeriesThatLookOld(profile: SRTPProfile) throws {
        let (sender, receiver) = try contexts(profile)
        var sent: [[UInt8]] = []
        for step in 0..<40 {
            var packet = rtp(sequence: 65_520 &+ UInt16(step), payload: [UInt8](repeating: UInt8(step), count: 100))
            try sender.protect(&packet)
            sent.append(Array(packet.bytes))
            try receiver.unprotect(&packet)
        }
        for (index, bytes) in sent.enumerated() {
            let repeated = PacketBuffer(bytes)
            var attempt = repeated
            #expect(throws: SRTPError.self) { try receiver.unprotect(&attempt) }
            #expect(receiver.carriesGenuineTag(rtp: repeated), "packet \(index) (sequence \(65_520 &+ index))")
            for position in [12, bytes.count - 1] {  // the payload, the tag
                var forged = bytes
                forged[position] ^= 0x20
                #expect(!receiver.carriesGenuineTag(rtp: PacketBuffer(forged)), "packet \(index) altered at \(position)")
            }
        }
        var rtcp = PacketBuffer(RTCPPacket.receiverReport(ReceiverReport(ssrc: 5)).serialized())
        try sender.protectRTCP(&rtcp)
        let protectedRTCP = Array(rtcp.bytes)
        try receiver.unprotectRTCP(&rtcp)
        var again = PacketBuffer(protectedRTCP)
        do { try receiver.unprotectRTCP(&again); Issue.record("repeat accepted") } catch { #expect(error.kind == .replayed) }
        #expect(receiver.carriesGenuineTag(rtcp: PacketBuffer(protectedRTCP)))
        var forgedRTCP = protectedRTCP
        forgedRTCP[9] ^= 0x01
        #expect(!receiver.carriesGenuineTag(rtcp: PacketBuffer(forgedRTCP)))
        // An outbound context has nothing to check with; nothing is no packet.
        #expect(!sender.carriesGenuineTag(rtp: PacketBuffer(sent[0])))
        #expect(!receiver.carriesGenuineTag(rtcp: PacketBuffer([])) && !receiver.carriesGenuineTag(rtp: PacketBuffer([])))
    }

    /// A receiver that starts listening after the sender's sequence numbers
    /// wrapped (a static key carries no rollover counter) refuses every
    /// packet; it finds the counter from a packet's tag and, its stream
    /// resumed there, receives from then on, replays still refused, for
    /// every profile. A forged packet matches no counter.
    @Test(arguments: SRTPProfile.allCases)
    func aReceiverJoiningAfterTheSequenceWrappedFindsTheRolloverCounter(profile: SRTPProfile) throws {
        let (sender, receiver) = try contexts(profile)
        // Two wraps, in steps of a quarter of the sequence space (libsrtp2 follows steps under half).
        for step in 0..<8 {
            var packet = rtp(sequence: UInt16(step % 4) * 16_384)
            try sender.protect(&packet)
        }
        var sent: [[UInt8]] = []
        for sequence: UInt16 in 1...20 {
            var packet = rtp(sequence: sequence, payload: [UInt8](repeating: UInt8(sequence), count: 60))
            try sender.protect(&packet)
            sent.append(Array(packet.bytes))
        }
        var refused = PacketBuffer(sent[0])
        #expect(throws: SRTPError.self) { try receiver.unprotect(&refused) }
        #expect(!receiver.knows(ssrc: 0x1111))
        #expect(receiver.rolloverCounter(of: PacketBuffer(sent[0]), among: 0...1) == nil)
        #expect(receiver.rolloverCounter(of: PacketBuffer(sent[0]), among: 0...1023) == 2)
        var forged = sent[0]
        forged[14] ^= 0x01
        #expect(receiver.rolloverCounter(of: PacketBuffer(forged), among: 0...1023) == nil)
        #expect(sender.rolloverCounter(of: PacketBuffer(sent[0]), among: 0...1023) == nil, "outbound has nothing to check with")

        try receiver.resume(ssrc: 0x1111, rolloverCounter: 2)
        #expect(receiver.knows(ssrc: 0x1111))
        for (index, bytes) in sent.enumerated() {
            var packet = PacketBuffer(bytes)
            try receiver.unprotect(&packet)
            #expect(try RTPPacket(parsing: packet.bytes).payload.elementsEqual(repeatElement(UInt8(index + 1), count: 60)))
        }
        var replay = PacketBuffer(sent[7])
        do { try receiver.unprotect(&replay); Issue.record("replay accepted") } catch { #expect(error.kind == .replayed) }
        #expect(throws: SRTPError.self) { try receiver.resume(ssrc: 0x1111, rolloverCounter: 3) }
        #expect(throws: SRTPError.self) { try sender.resume(ssrc: 0x2222, rolloverCounter: 1) }
    }

    /// Every single flipped bit, header or payload or tag, fails authentication.
    @Test(arguments: SRTPProfile.allCases)
    func everyFlippedBitFailsAuthentication(profile: SRTPProfile) throws {
        var rng = SeededGenerator(seed: 0xF11B)
        let key = rng.bytes(profile.masterLength)
        let (sender, _) = try contexts(profile, key: key)
        var packet = rtp(sequence: 100)
        try sender.protect(&packet)
        let protected = Array(packet.bytes)
        for bit in 0..<(protected.count * 8) {
            var tampered = protected
            tampered[bit / 8] ^= 0x80 >> (bit % 8)
            // A fresh receiver each time so the replay window never interferes.
            let (_, receiver) = try contexts(profile, key: key)
            var buffer = PacketBuffer(tampered)
            do {
                try receiver.unprotect(&buffer)
                Issue.record("bit \(bit) flipped and still accepted")
            } catch {
                // The first two bits are the RTP version; any other flip must fail authentication.
                if bit >= 2 { #expect(error.kind == .authenticationFailed, "bit \(bit): \(error)") }
            }
        }
    }

    @Test func replayIsRejectedButRetransmissionInsideWindowPasses() throws {
        let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound)
        var protectedPackets: [[UInt8]] = []
        for sequence: UInt16 in 0..<600 {
            var packet = rtp(sequence: sequence)
            try sender.protect(&packet)
            protectedPackets.append(Array(packet.bytes))
        }
        // Packet 10 is "lost"; everything else arrives.
        for (index, bytes) in protectedPackets.enumerated() where index != 10 {
            var buffer = PacketBuffer(bytes)
            try receiver.unprotect(&buffer)
        }
        // A replay of packet 500 is refused.
        var replay = PacketBuffer(protectedPackets[500])
        #expect(throws: SRTPError.self) { try receiver.unprotect(&replay) }
        do { try receiver.unprotect(&replay) } catch { #expect(error.kind == .replayed) }
        // The sender retransmits packet 10 (same sequence, allow_repeat_tx)
        // 590 packets later: still inside the 1024-packet window, accepted once.
        var retransmission = rtp(sequence: 10)
        try sender.protect(&retransmission)
        var copy = retransmission
        try receiver.unprotect(&retransmission)
        #expect(Array(retransmission.bytes) == Array(rtp(sequence: 10).bytes))
        do { try receiver.unprotect(&copy); Issue.record("second copy accepted") } catch {
            #expect(error.kind == .replayed)
        }
    }

    @Test func packetOlderThanWindowIsTooOld() throws {
        let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        let sender = try SRTPContext(keying: keying, direction: .outbound)
        let receiver = try SRTPContext(keying: keying, direction: .inbound, replayWindow: 128)
        var old = rtp(sequence: 1)
        try sender.protect(&old)
        for sequence: UInt16 in 2...300 {
            var packet = rtp(sequence: sequence)
            try sender.protect(&packet)
            try receiver.unprotect(&packet)
        }
        do { try receiver.unprotect(&old); Issue.record("accepted") } catch { #expect(error.kind == .tooOld) }
    }

    @Test func wrongKeyFailsAuthentication() throws {
        let sender = try SRTPContext(keying: .random(profile: .aeadAes128Gcm), direction: .outbound)
        let stranger = try SRTPContext(keying: .random(profile: .aeadAes128Gcm), direction: .inbound)
        var packet = rtp(sequence: 7)
        try sender.protect(&packet)
        do { try stranger.unprotect(&packet); Issue.record("accepted") } catch {
            #expect(error.kind == .authenticationFailed)
        }
    }

    @Test(arguments: [0, 5, 11, 12, 21])
    func shortPacketsAreBadLength(length: Int) throws {
        let receiver = try SRTPContext(keying: .random(profile: .aes128CmHmacSha1_80), direction: .inbound)
        var packet = PacketBuffer([UInt8](repeating: 0x80, count: length))
        do { try receiver.unprotect(&packet); Issue.record("accepted") } catch { #expect(error.kind == .badLength) }
        var rtcp = PacketBuffer([UInt8](repeating: 0x80, count: length))
        do { try receiver.unprotectRTCP(&rtcp); Issue.record("accepted") } catch { #expect(error.kind == .badLength) }
    }

    @Test func missingTailroomIsReported() throws {
        let sender = try SRTPContext(keying: .random(profile: .aes128CmHmacSha1_80), direction: .outbound)
        var packet = PacketBuffer(Array(rtp(sequence: 1).bytes), tailroom: 4)
        do { try sender.protect(&packet); Issue.record("accepted") } catch { #expect(error.kind == .noTailroom) }
    }

    @Test func badKeysAreRejected() {
        #expect(throws: SRTPError.self) { try SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80, bytes: [1, 2, 3]) }
        #expect(throws: SRTPError.self) { try SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80, inline: "inline:not*base64") }
        // A GCM-sized key (28 bytes) is the wrong size for AES-CM (30).
        let gcm = Base64.encode([UInt8](repeating: 1, count: 28))
        do { _ = try SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80, inline: gcm); Issue.record("accepted") } catch {
            #expect(error.kind == .badKey)
        }
    }

    /// RFC 4568 §9.1's example crypto attribute key parses, lifetime ignored.
    @Test func sdesInlineKeyFromRFC4568() throws {
        let keying = try SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80,
                                            inline: "inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20|1:32")
        #expect(keying.inlineKeySalt() == "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR")
    }

    @Test func keyNeverAppearsInDescriptions() throws {
        let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        let secret = keying.inlineKeySalt()
        let rendered = [String(describing: keying), String(reflecting: keying), "\(keying)",
                        String(describing: Mirror(reflecting: keying).children.map { "\($0.label ?? ""): \($0.value)" })]
        for text in rendered {
            #expect(!text.contains(secret))
            #expect(!text.contains(secret.prefix(8)))
        }
    }
}


@Suite("Keys in memory")
struct SecretBytesTests {
    /// Every copy of a key, and every context made from it, reads one
    /// allocation; wiping it zeroes what they all read. With the key in an
    /// array, the context's "wipe" zeroed a copy made on write and left the
    /// key where it was.
    @Test func copiesShareOneAllocationThatWipes() throws {
        let key = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        let copy = key
        #expect(copy.secret === key.secret)
        let bytes = key.bytes
        #expect(bytes.contains { $0 != 0 })
        let address = key.secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let context = try SRTPContext(keying: copy, direction: .inbound)
        #expect(key.secret.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } == address)
        key.secret.wipe()
        #expect(key.secret.array == [UInt8](repeating: 0, count: bytes.count))
        _ = context
    }

    @Test func equalityComparesTheBytes() throws {
        let key = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        let same = try SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80, bytes: key.bytes)
        #expect(key == same && key.secret !== same.secret)
        var other = key.bytes
        other[other.count - 1] ^= 1
        #expect(try key != SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80, bytes: other))
    }
}
