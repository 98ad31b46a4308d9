internal import CSRTP
internal import CSRTPCrypto
public import ShareWire

/// One direction of an SRTP/SRTCP session (RFC 3711) over libsrtp2: an
/// outbound context protects, an inbound one unprotects. Protection works in
/// place, using the `PacketBuffer`'s tailroom for the trailer. Not thread
/// safe: one context belongs to one sending or receiving loop.
public final class SRTPContext {
    public enum Direction: Sendable {
        case outbound
        case inbound
    }

    public let profile: SRTPProfile
    public let direction: Direction
    private let session: srtp_t
    /// Inbound only: checks the tags of packets libsrtp2 refused as repeats
    /// before it looked at their tags.
    private let verifier: OpaquePointer?

    /// The master key, read in place (never copied) when creating the
    /// session and, inbound, by `resume`; wiped when its last holder goes.
    private let masterKey: SecretBytes
    private let replayWindow: Int

    /// Replay window for inbound contexts: wide enough that packets
    /// retransmitted after a NACK still fall inside it.
    public static let defaultReplayWindow = 1024

    public init(keying: SRTPKeyingMaterial, direction: Direction,
                replayWindow: Int = SRTPContext.defaultReplayWindow) throws(SRTPError) {
        try SRTPLibrary.ensureInitialized()
        profile = keying.profile
        self.direction = direction
        var policy = Self.policy(keying.profile, direction: direction, replayWindow: replayWindow)
        share_srtp_policy_set_ssrc_any(&policy, direction == .inbound ? 1 : 0)
        var created: srtp_t?
        let (status, verifier) = keying.secret.withUnsafeBytes { key in
            policy.key = key.baseAddress
            let status = srtp_create(&created, &policy)
            let verifier = direction == .inbound
                ? share_srtp_verifier_new(keying.profile.verifierProfile, key.baseAddress, Int32(key.count)) : nil
            return (status, verifier)
        }
        guard status == srtp_err_status_ok, let created, direction == .outbound || verifier != nil else {
            share_srtp_verifier_free(verifier)
            if let created { srtp_dealloc(created) }
            throw SRTPLibrary.error(status == srtp_err_status_ok ? srtp_err_status_init_fail : status,
                                    detail: status == srtp_err_status_ok ? "deriving the verification keys" : "srtp_create")
        }
        session = created
        self.verifier = verifier
        self.replayWindow = replayWindow
        masterKey = keying.secret
    }

    /// The policy for `profile` in `direction`, without key or SSRC.
    private static func policy(_ profile: SRTPProfile, direction: Direction, replayWindow: Int) -> srtp_policy_t {
        var policy = srtp_policy_t()
        switch profile {
        case .aes128CmHmacSha1_80:
            // The _sha1_80 setter is a function-like macro for rtp_default.
            srtp_crypto_policy_set_rtp_default(&policy.rtp)
            srtp_crypto_policy_set_rtp_default(&policy.rtcp)
        case .aes128CmHmacSha1_32:
            // RFC 4568 §6.2.1: SRTCP keeps the 80-bit tag with this suite.
            srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32(&policy.rtp)
            srtp_crypto_policy_set_rtp_default(&policy.rtcp)
        case .aeadAes128Gcm:
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
        case .aes256CmHmacSha1_80:
            srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&policy.rtp)
            srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&policy.rtcp)
        case .aes256CmHmacSha1_32:
            // SRTCP keeps the 80-bit tag, as with AES-128 (RFC 4568 §6.2.1).
            srtp_crypto_policy_set_aes_cm_256_hmac_sha1_32(&policy.rtp)
            srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80(&policy.rtcp)
        case .aeadAes256Gcm:
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtp)
            srtp_crypto_policy_set_aes_gcm_256_16_auth(&policy.rtcp)
        }
        policy.window_size = UInt(max(64, min(replayWindow, 0x7FFF)))
        // Retransmissions reuse the original sequence number and payload.
        policy.allow_repeat_tx = direction == .outbound ? 1 : 0
        return policy
    }

    deinit {
        srtp_dealloc(session)
        share_srtp_verifier_free(verifier)
    }

    /// Whether a packet of this SSRC has been authenticated yet (libsrtp2
    /// keeps a stream for it from then on).
    public func knows(ssrc: UInt32) -> Bool {
        var roc: UInt32 = 0
        return srtp_get_stream_roc(session, ssrc, &roc) == srtp_err_status_ok
    }

    /// The rollover counter (RFC 3711 §3.3.1) under which this RTP packet's
    /// tag is genuine, among `candidates`; nil when none. A receiver that
    /// starts listening after the sender's sequence numbers wrapped cannot
    /// know it (a static key carries none): libsrtp2 assumes 0 and refuses
    /// every packet. With an HMAC profile the packet is hashed once and each
    /// candidate costs a small constant; with GCM each candidate is a tag
    /// computation over the packet (`searchCost`), so a caller bounds how
    /// much it asks. The packet is left as it is.
    public func rolloverCounter(of packet: PacketBuffer, among candidates: ClosedRange<UInt32>) -> UInt32? {
        guard let verifier, packet.count >= RTPPacket.fixedHeaderSize else { return nil }
        let found = packet.bytes.withUnsafeBufferPointer { buffer in
            share_srtp_search_rtp_roc(verifier, buffer.baseAddress!, Int32(buffer.count), candidates.lowerBound,
                                      candidates.upperBound)
        }
        return found < 0 ? nil : UInt32(found)
    }

    /// About how many bytes a search of `candidates` over a packet of
    /// `length` bytes hashes: the packet once and a SHA-1 finalisation (two
    /// 64-byte blocks) per candidate, or with GCM the whole packet per
    /// candidate.
    public func searchCost(length: Int, candidates: Int) -> Int {
        profile.isGCM ? length * candidates : length + 128 * candidates
    }

    /// Receives the stream of `ssrc` from rollover counter
    /// `rolloverCounter` on (found by `rolloverCounter(of:among:)`): a
    /// stream of its own under the same key, its counter set. Inbound only,
    /// for an SSRC not `knows` yet.
    public func resume(ssrc: UInt32, rolloverCounter: UInt32) throws(SRTPError) {
        guard direction == .inbound, !knows(ssrc: ssrc) else {
            throw SRTPError(.library, detail: "a stream can be resumed only inbound, before its first packet")
        }
        var policy = Self.policy(profile, direction: direction, replayWindow: replayWindow)
        share_srtp_policy_set_ssrc(&policy, ssrc)
        var status = masterKey.withUnsafeBytes { buffer in
            policy.key = buffer.baseAddress
            return srtp_add_stream(session, &policy)
        }
        if status == srtp_err_status_ok { status = srtp_set_stream_roc(session, ssrc, rolloverCounter) }
        guard status == srtp_err_status_ok else { throw SRTPLibrary.error(status, detail: "resuming a stream") }
    }

    /// Drops the stream of `ssrc` (its keys and replay window); a later
    /// packet of it starts a new one. Inbound only.
    public func forget(ssrc: UInt32) {
        guard direction == .inbound, knows(ssrc: ssrc) else { return }
        _ = srtp_remove_stream(session, ssrc.bigEndian)
    }

    /// Whether an SRTP packet that `unprotect` refused as replayed or too old
    /// carries a genuine tag: a real repeat (a duplicate, a late copy) rather
    /// than a forgery that only looks old. libsrtp2 checks its replay window
    /// before the tag, so it cannot tell the two apart. The packet is left
    /// as it is. The rollover counter is this stream's current one or the one
    /// before (a packet from before the last sequence wrap).
    public func carriesGenuineTag(rtp packet: PacketBuffer) -> Bool {
        guard let verifier, packet.count >= RTPPacket.fixedHeaderSize else { return false }
        let bytes = packet.bytes
        let start = bytes.startIndex
        let ssrc = bytes[start + 8 ..< start + 12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var roc: UInt32 = 0
        guard srtp_get_stream_roc(session, ssrc, &roc) == srtp_err_status_ok else { return false }
        return bytes.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            let length = Int32(buffer.count)
            return share_srtp_verify_rtp(verifier, base, length, roc) == 1
                || (roc > 0 && share_srtp_verify_rtp(verifier, base, length, roc - 1) == 1)
        }
    }

    /// The same for an SRTCP packet (its index travels in the packet).
    public func carriesGenuineTag(rtcp packet: PacketBuffer) -> Bool {
        guard let verifier, packet.count > 0 else { return false }
        return packet.bytes.withUnsafeBufferPointer {
            share_srtp_verify_rtcp(verifier, $0.baseAddress!, Int32($0.count)) == 1
        }
    }

    /// Encrypts and authenticates the RTP packet in `packet`, in place.
    public func protect(_ packet: inout PacketBuffer) throws(SRTPError) {
        try transform(&packet, minimum: RTPPacket.fixedHeaderSize, protecting: true, srtp_protect)
    }

    /// Verifies and decrypts the SRTP packet in `packet`, in place.
    public func unprotect(_ packet: inout PacketBuffer) throws(SRTPError) {
        try transform(&packet, minimum: RTPPacket.fixedHeaderSize + profile.rtpOverhead, protecting: false,
                      srtp_unprotect)
    }

    /// Protects an RTCP compound packet (adds the SRTCP index and tag).
    public func protectRTCP(_ packet: inout PacketBuffer) throws(SRTPError) {
        try transform(&packet, minimum: 8, protecting: true, srtp_protect_rtcp)
    }

    /// Verifies and decrypts an SRTCP packet.
    public func unprotectRTCP(_ packet: inout PacketBuffer) throws(SRTPError) {
        // Header, sender SSRC, the 4-byte SRTCP index and at least a 10-byte tag.
        try transform(&packet, minimum: 8 + 4 + 10, protecting: false, srtp_unprotect_rtcp)
    }

    private func transform(
        _ packet: inout PacketBuffer, minimum: Int, protecting: Bool,
        _ operation: (srtp_t?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?) -> srtp_err_status_t
    ) throws(SRTPError) {
        let length = packet.count
        guard length >= minimum else {
            throw SRTPError(.badLength, detail: "\(length) bytes, need at least \(minimum)")
        }
        guard length <= Int(Int32.max) - 256 else { throw SRTPError(.badLength, detail: "\(length) bytes") }
        guard !protecting || packet.capacity - length >= SRTPLibrary.trailerRoom else {
            throw SRTPError(.noTailroom, detail: "\(packet.capacity - length) bytes after the packet")
        }
        let status: srtp_err_status_t = packet.withMutableStorage { storage, count in
            var length32 = Int32(count)
            let status = storage.withUnsafeMutableBytes { raw in operation(session, raw.baseAddress, &length32) }
            if status == srtp_err_status_ok { count = Int(length32) }
            return status
        }
        guard status == srtp_err_status_ok else {
            var error = SRTPLibrary.error(status, detail: "")
            if !protecting && error.kind == .badLength {
                // The packet is long enough, but its header (CSRC count,
                // extension length) claims more than it holds, so libsrtp
                // stops before the tag. A genuine packet never does this: it
                // is as unauthenticated as a forged one.
                error.kind = .authenticationFailed
                error.detail = "header inconsistent with packet length; tag not verifiable"
            }
            throw error
        }
    }
}

/// The process-wide libsrtp2 state and its status-code funnel.
enum SRTPLibrary {
    /// Bytes an in-place protect may write past the packet (SRTCP adds a
    /// 4-byte index to the largest trailer).
    static let trailerRoom = Int(share_srtp_max_trailer_len()) + 4

    /// srtp_init, then share's allocation-free AES-ICM and HMAC-SHA1 in
    /// place of the NSS-backed built-ins (each passes libsrtp2's known-answer
    /// test first). The GCM profiles still use libsrtp2's own GCM.
    private static let initStatus: (status: srtp_err_status_t, step: String) = {
        let status = srtp_init()
        guard status == srtp_err_status_ok else { return (status, "srtp_init") }
        return (srtp_err_status_t(UInt32(share_srtp_install_crypto())), "installing share's AES-ICM and HMAC-SHA1")
    }()

    static func ensureInitialized() throws(SRTPError) {
        let (status, step) = initStatus
        guard status == srtp_err_status_ok else { throw error(status, detail: step) }
    }

    /// Maps a libsrtp2 status to an `SRTPError`, keeping the raw code.
    static func error(_ status: srtp_err_status_t, detail: String) -> SRTPError {
        let kind: SRTPError.Kind = switch status {
        case srtp_err_status_auth_fail: .authenticationFailed
        case srtp_err_status_replay_fail: .replayed
        case srtp_err_status_replay_old: .tooOld
        case srtp_err_status_bad_param, srtp_err_status_parse_err: .badLength
        default: .library
        }
        return SRTPError(kind, libraryStatus: Int32(bitPattern: status.rawValue), detail: detail)
    }
}
