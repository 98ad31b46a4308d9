public import Testing

/// An SRTP suite as an SDP names it and as GStreamer's srtpenc and srtpdec
/// take it: a cipher and an RTP tag (none apart with GCM); SRTCP keeps the
/// 80-bit tag with the 32-bit suites (RFC 4568 §6.2.1).
public struct GStreamerSRTP: Sendable, CustomTestStringConvertible {
    public let name: String
    let cipher: String
    let auth: String

    public static let aes128 = GStreamerSRTP(name: "AES_CM_128_HMAC_SHA1_80", cipher: "aes-128-icm", auth: "hmac-sha1-80")
    public static let aes256 = GStreamerSRTP(name: "AES_256_CM_HMAC_SHA1_80", cipher: "aes-256-icm", auth: "hmac-sha1-80")
    public static let aes256ShortTag = GStreamerSRTP(name: "AES_256_CM_HMAC_SHA1_32", cipher: "aes-256-icm",
                                                     auth: "hmac-sha1-32")
    public static let aes128GCM = GStreamerSRTP(name: "AEAD_AES_128_GCM", cipher: "aes-128-gcm", auth: "null")
    public static let aes256GCM = GStreamerSRTP(name: "AEAD_AES_256_GCM", cipher: "aes-256-gcm", auth: "null")

    public var testDescription: String { name }

    private var rtcpAuth: String { auth == "hmac-sha1-32" ? "hmac-sha1-80" : auth }

    /// srtpenc's properties, with the key and salt in hexadecimal.
    public func encoder(key: String) -> [String] {
        ["srtpenc", "key=\(key)", "rtp-cipher=\(cipher)", "rtp-auth=\(auth)", "rtcp-cipher=\(cipher)", "rtcp-auth=\(rtcpAuth)"]
    }

    /// The fields of srtpdec's `application/x-srtp` caps for this suite and key.
    public func decoderCaps(key: String) -> String {
        "srtp-key=(buffer)\(key),srtp-cipher=(string)\(cipher),srtp-auth=(string)\(auth),"
            + "srtcp-cipher=(string)\(cipher),srtcp-auth=(string)\(rtcpAuth)"
    }
}
