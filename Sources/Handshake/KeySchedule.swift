internal import Crypto
internal import Foundation
internal import ShareSRTP
internal import ShareWire
internal import ShareBase

/// The secrets of one handshake, all derived with HKDF-SHA256 (RFC 5869)
/// from the X25519 shared secret (and the pre-shared key, when there is one),
/// salted with both nonces and bound to the transcript: SRTP master keys and
/// salts for each direction, a MAC key for each end's proof, and the short
/// authentication string.
struct KeySchedule {
    let transcript: [UInt8]
    private let pseudoRandomKey: HashedAuthenticationCode<SHA256>

    /// `transcript` is SHA-256 over the commit, the reply and both ends' keys.
    init(sharedSecret: SharedSecret, preSharedKey: [UInt8]?, initiatorNonce: [UInt8], responderNonce: [UInt8],
         transcript: [UInt8]) {
        self.transcript = transcript
        var input = sharedSecret.withUnsafeBytes { Array($0) }
        // The key file's secret is hashed into the input: a man in the middle
        // without it derives other keys and fails the proofs.
        input += preSharedKey.map { Array(SHA256.hash(data: Array("share psk".utf8) + $0)) } ?? [UInt8](repeating: 0, count: 32)
        pseudoRandomKey = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: input),
                                               salt: initiatorNonce + responderNonce)
    }

    private func expand(_ label: String, count: Int) -> [UInt8] {
        let key = HKDF<SHA256>.expand(pseudoRandomKey: pseudoRandomKey, info: Array("share v2 \(label)".utf8) + transcript,
                                      outputByteCount: count)
        return key.withUnsafeBytes { Array($0) }
    }

    /// SRTP keys: the initiator (sender) protects with `initiator`, the
    /// responder with `responder`.
    func srtpKeys(profile: SRTPProfile) -> (initiator: SRTPKeyingMaterial, responder: SRTPKeyingMaterial) {
        (try! SRTPKeyingMaterial(profile: profile, bytes: expand("srtp initiator", count: profile.masterLength)),
         try! SRTPKeyingMaterial(profile: profile, bytes: expand("srtp responder", count: profile.masterLength)))
    }

    /// The MAC over the transcript that proves an end derived these keys.
    func mac(_ role: HandshakeRole) -> [UInt8] {
        let key = SymmetricKey(data: expand("confirm \(role)", count: 32))
        return Array(HMAC<SHA256>.authenticationCode(for: transcript, using: key))
    }

    /// The MAC a responder puts on a reject once it holds these keys: the
    /// initiator acts on such a reject (a person said no, an identity
    /// changed), and treats any other as "try again".
    func rejectMAC(_ reason: RejectReason) -> [UInt8] {
        let key = SymmetricKey(data: expand("reject", count: 32))
        return Array(HMAC<SHA256>.authenticationCode(for: transcript + [reason.rawValue], using: key))
    }

    /// What an end's identity key signs: its role and the transcript.
    func signed(_ role: HandshakeRole) -> [UInt8] { Array("share v2 sign \(role)".utf8) + transcript }

    /// The short authentication string: 25 bits as five characters of
    /// ZRTP's base-32 alphabet (RFC 6189 §5.1.6), chosen to be easy to read
    /// aloud. A relay that tries handshake after handshake until the codes
    /// match must reveal its keys in each before it learns the code there,
    /// and the responder rations and counts those tries; 25 bits leave it a
    /// chance of one in 33 million a try.
    var shortAuthenticationString: String {
        let bits = expand("sas", count: 4)
        let value = UInt32(bits[0]) << 17 | UInt32(bits[1]) << 9 | UInt32(bits[2]) << 1 | UInt32(bits[3]) >> 7
        let alphabet = Array("ybndrfg8ejkmcpqxot1uwisza345h769")
        return String((0..<Self.codeLength).map { alphabet[Int(value >> (20 - 5 * $0) & 0x1F)] })
    }

    /// Characters in the short authentication string.
    static let codeLength = 5

    /// SHA-256 of an end's keys and name, as its commit or reply carries it.
    static func commitment(of keys: [UInt8], by role: HandshakeRole) -> [UInt8] {
        Array(SHA256.hash(data: Array("share commit \(role)".utf8) + keys))
    }

    /// SHA-256 over the commit (without its cookie), the reply and both ends' keys.
    static func transcript(commit: HandshakeMessage.Commit, reply: HandshakeMessage.Reply, initiatorKeys: [UInt8],
                           responderKeys: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: HandshakeMessage.commit(commit.canonical).serialized()
                            + HandshakeMessage.reply(reply).serialized() + initiatorKeys + responderKeys))
    }

    /// Equality in time that does not depend on where the bytes differ.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}

/// Which end of the handshake: the sender initiates, the receiver responds.
enum HandshakeRole: String, CustomStringConvertible {
    case initiator, responder
    var description: String { rawValue }
}

/// The SRTP suites on the wire, one byte each.
extension SRTPProfile {
    var handshakeCode: UInt8 {
        switch self {
        case .aes128CmHmacSha1_80: 1
        case .aes128CmHmacSha1_32: 2
        case .aeadAes128Gcm: 3
        case .aes256CmHmacSha1_80: 4
        case .aes256CmHmacSha1_32: 5
        case .aeadAes256Gcm: 6
        }
    }

    init?(handshakeCode: UInt8) {
        guard let profile = Self.allCases.first(where: { $0.handshakeCode == handshakeCode }) else { return nil }
        self = profile
    }
}


/// Stateless cookies for the responder's first answer (as DTLS's
/// HelloVerifyRequest, RFC 6347 §4.2.1): a commit is answered with a cookie
/// bound to its source address and id, and state is kept only for a commit
/// that echoes a valid one, so a flood from forged addresses holds nothing.
/// Its secret is new each run; a cookie is good for 10 to 20 seconds.
struct CookieJar {
    private let secret = SymmetricKey(size: .bits256)
    static let period: Duration = .seconds(10)

    func cookie(address: [UInt8], id: UInt64, now: MonotonicTime) -> [UInt8] {
        cookie(address: address, id: id, bucket: now.nanoseconds / UInt64(Self.period.nanoseconds))
    }

    func isValid(_ cookie: [UInt8], address: [UInt8], id: UInt64, now: MonotonicTime) -> Bool {
        let bucket = now.nanoseconds / UInt64(Self.period.nanoseconds)
        return [bucket, bucket &- 1].contains { KeySchedule.constantTimeEqual(cookie, self.cookie(address: address, id: id, bucket: $0)) }
    }

    private func cookie(address: [UInt8], id: UInt64, bucket: UInt64) -> [UInt8] {
        var input = address
        for value in [id, bucket] { withUnsafeBytes(of: value.bigEndian) { input += $0 } }
        return Array(HMAC<SHA256>.authenticationCode(for: input, using: secret))
    }
}
