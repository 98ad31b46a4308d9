#if canImport(Glibc)
internal import Glibc
#endif
internal import CSRTPCrypto
internal import ShareWire
internal import ShareBase

/// The SRTP protection profiles `share` speaks (RFC 4568 §6.2 crypto-suite
/// names; RFC 6188 for AES-256 in counter mode, RFC 7714 for GCM).
public enum SRTPProfile: String, CaseIterable, Sendable {
    /// AES-128 in counter mode with an 80-bit HMAC-SHA1 tag (RFC 3711's default; WebRTC's and Janus's).
    case aes128CmHmacSha1_80 = "AES_CM_128_HMAC_SHA1_80"
    /// AES-128 in counter mode with a 32-bit HMAC-SHA1 tag (smaller packets, weaker authentication).
    case aes128CmHmacSha1_32 = "AES_CM_128_HMAC_SHA1_32"
    /// AES-128 in GCM (RFC 7714): authenticated encryption in one pass.
    case aeadAes128Gcm = "AEAD_AES_128_GCM"
    /// AES-256 in counter mode with an 80-bit HMAC-SHA1 tag (RFC 6188; GStreamer's `aes-256-icm`).
    case aes256CmHmacSha1_80 = "AES_256_CM_HMAC_SHA1_80"
    /// AES-256 in counter mode with a 32-bit HMAC-SHA1 tag (RFC 6188).
    case aes256CmHmacSha1_32 = "AES_256_CM_HMAC_SHA1_32"
    /// AES-256 in GCM (RFC 7714).
    case aeadAes256Gcm = "AEAD_AES_256_GCM"

    /// Master key length in bytes: 16 for AES-128, 32 for AES-256.
    public var keyLength: Int {
        switch self {
        case .aes128CmHmacSha1_80, .aes128CmHmacSha1_32, .aeadAes128Gcm: 16
        case .aes256CmHmacSha1_80, .aes256CmHmacSha1_32, .aeadAes256Gcm: 32
        }
    }

    /// Whether it is one of the GCM profiles (RFC 7714): authenticated
    /// encryption in one pass, a 16-byte tag.
    public var isGCM: Bool { self == .aeadAes128Gcm || self == .aeadAes256Gcm }

    /// Master salt length in bytes: 112 bits for AES-CM (RFC 3711 §8.2,
    /// RFC 6188), 96 bits for GCM (RFC 7714 §12).
    public var saltLength: Int { isGCM ? 12 : 14 }

    /// Key and salt together, as carried by SDES `inline:`.
    public var masterLength: Int { keyLength + saltLength }

    /// Bytes SRTP adds to each RTP packet (the authentication tag).
    public var rtpOverhead: Int {
        switch self {
        case .aes128CmHmacSha1_80, .aes256CmHmacSha1_80: 10
        case .aes128CmHmacSha1_32, .aes256CmHmacSha1_32: 4
        case .aeadAes128Gcm, .aeadAes256Gcm: 16
        }
    }

    /// The profile's number for share's own tag verifier (share_srtp_verify.h).
    var verifierProfile: Int32 {
        switch self {
        case .aes128CmHmacSha1_80: Int32(SHARE_SRTP_VERIFY_AES_CM_HMAC_SHA1_80)
        case .aes128CmHmacSha1_32: Int32(SHARE_SRTP_VERIFY_AES_CM_HMAC_SHA1_32)
        case .aeadAes128Gcm: Int32(SHARE_SRTP_VERIFY_AEAD_AES_128_GCM)
        case .aes256CmHmacSha1_80: Int32(SHARE_SRTP_VERIFY_AES_256_CM_HMAC_SHA1_80)
        case .aes256CmHmacSha1_32: Int32(SHARE_SRTP_VERIFY_AES_256_CM_HMAC_SHA1_32)
        case .aeadAes256Gcm: Int32(SHARE_SRTP_VERIFY_AEAD_AES_256_GCM)
        }
    }

    /// Every profile's name, for help and error messages.
    public static var allNames: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// Parses an SDES crypto-suite name, case-insensitively.
    public init?(name: some StringProtocol) {
        guard let profile = Self.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
            return nil
        }
        self = profile
    }
}

/// A master key and salt for one profile. Its `description`, debug
/// description and mirror never show the key.
public struct SRTPKeyingMaterial: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The protection profile the key is for.
    public let profile: SRTPProfile
    /// Key followed by salt, in one allocation shared by every copy and
    /// wiped when the last goes.
    package let secret: SecretBytes

    /// Key followed by salt, copied out (package-wide: a key file's secret is
    /// a handshake's pre-shared key).
    package var bytes: [UInt8] { secret.array }

    /// Wraps `bytes` (key then salt) after checking their length.
    public init(profile: SRTPProfile, bytes: [UInt8]) throws(SRTPError) {
        guard bytes.count == profile.masterLength else {
            throw SRTPError(.badKey, detail: "\(profile.rawValue) needs \(profile.masterLength) bytes of key and salt, got \(bytes.count)")
        }
        self.profile = profile
        secret = SecretBytes(bytes)
    }

    /// Whether both are for one profile and hold the same key and salt
    /// (compared in time that does not depend on where they differ).
    public static func == (a: Self, b: Self) -> Bool { a.profile == b.profile && a.secret.hasSameBytes(as: b.secret) }

    /// Parses the base64 key-salt of an SDES `inline:` parameter (RFC 4568
    /// §6.1); a `|lifetime` or `|MKI:length` suffix is accepted and ignored.
    public init(profile: SRTPProfile, inline: some StringProtocol) throws(SRTPError) {
        let text = inline.hasPrefix("inline:") ? inline.dropFirst("inline:".count) : inline[...]
        let keySalt = text.split(separator: "|", omittingEmptySubsequences: false).first ?? ""
        guard let decoded = Base64.decode(keySalt.trimmingCharacters()) else {
            throw SRTPError(.badKey, detail: "the key is not valid base64")
        }
        try self.init(profile: profile, bytes: decoded)
    }

    /// Fresh random keying material from the system's CSPRNG (getrandom).
    public static func random(profile: SRTPProfile) -> SRTPKeyingMaterial {
        var bytes = randomBytes(profile.masterLength)
        defer { bytes.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
        return try! SRTPKeyingMaterial(profile: profile, bytes: bytes)
    }

    /// The base64 key-salt for writing an SDES `a=crypto` line or a key
    /// file. The only way to get the key out, and never called by logging.
    public func inlineKeySalt() -> String { secret.withUnsafeBytes { Base64.encode(Array($0)) } }

    public var description: String { "SRTPKeyingMaterial(\(profile.rawValue), key redacted)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["profile": profile]) }
}

/// The keys of one session at one end: what it protects with and what it
/// expects the other end to have protected with. A handshake derives one per
/// direction; the interop mode (a static SDES key) uses one for both.
public struct SRTPSessionKeys: Sendable, Equatable, CustomStringConvertible {
    /// The key this end protects with.
    public let outbound: SRTPKeyingMaterial
    /// The key this end verifies and decrypts with.
    public let inbound: SRTPKeyingMaterial

    /// Keys for each direction (of one profile).
    public init(outbound: SRTPKeyingMaterial, inbound: SRTPKeyingMaterial) {
        self.outbound = outbound
        self.inbound = inbound
    }

    /// One static key for both directions (SDES, RFC 4568).
    public static func symmetric(_ keying: SRTPKeyingMaterial) -> SRTPSessionKeys {
        SRTPSessionKeys(outbound: keying, inbound: keying)
    }

    /// The profile of both keys.
    public var profile: SRTPProfile { outbound.profile }
    public var description: String { "SRTPSessionKeys(\(outbound.profile.rawValue), keys redacted)" }
}

/// Random bytes from the system's CSPRNG, eight to a call (each call is a
/// getrandom system call: a byte at a time made a 46-byte key 46 of them).
/// The one place keys, nonces and pins are drawn (package-wide).
package func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
        withUnsafeBytes(of: generator.next()) { word in
            for byte in word.prefix(count - filled) {
                bytes[filled] = byte
                filled += 1
            }
        }
    }
    return bytes
}
