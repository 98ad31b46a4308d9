internal import ShareWire

/// One message of the session handshake, as it travels on the media port.
///
/// Every message starts with `S` `H`, the version and the type. RFC 7983 §7
/// demultiplexes a port by the first byte (0-3 STUN, 16-19 ZRTP, 20-63 DTLS,
/// 64-79 TURN, 128-191 RTP/RTCP); `S` (83) is in none of those ranges, so
/// a packet is a handshake message exactly when its first byte is 83.
///
/// ```
/// header   'S' 'H' version type  handshake-id(8)
/// commit   instance(8) suite(1) mode(1) nonce(32) commitment(32) zero padding to 192 bytes
/// reply    nonce(32) ephemeral(32) identity(32) name-length(1) name
/// reveal   ephemeral(32) identity(32) name-length(1) name  signature-length(1) signature mac(32)
/// confirm  signature-length(1) signature mac(32)
/// reject   reason(1)
/// retry    (nothing; handshake-id zero): "I hold no session for what you send"
/// ```
/// The commit is padded so that no answer is larger than the message that
/// asked for it: the port cannot be used to amplify a flood.
public enum HandshakeMessage: Equatable, Sendable {
    case commit(Commit)
    case reply(Reply)
    case reveal(Reveal)
    case confirm(Confirm)
    case reject(id: UInt64, reason: RejectReason)
    case retry

    public static let version: UInt8 = 1
    /// The first byte of every handshake message.
    public static let marker: UInt8 = 0x53
    static let commitSize = 192
    static let headerSize = 12
    /// Longest peer name carried (bytes of UTF-8).
    public static let maximumNameLength = 48

    /// True when `first` (a datagram's first byte) starts a handshake message.
    public static func isHandshake(firstByte first: UInt8) -> Bool { first == marker }

    public struct Commit: Equatable, Sendable {
        public var id: UInt64
        /// The sender process: a new instance is a new session, the same
        /// instance handshaking again only renews its keys.
        public var instance: UInt64
        public var suite: UInt8
        public var mode: HandshakeMode
        public var nonce: [UInt8]
        /// SHA-256 of the initiator's reveal (its keys and name): it is fixed
        /// before the responder shows its own (ZRTP's hash commitment,
        /// RFC 6189 §4.4.1.1), so neither end can choose keys to steer the
        /// short authentication string.
        public var commitment: [UInt8]
    }

    public struct Reply: Equatable, Sendable {
        public var id: UInt64
        public var nonce: [UInt8]
        public var ephemeral: [UInt8]
        /// Ed25519 identity key; zeros with a pre-shared key.
        public var identity: [UInt8]
        public var name: String
    }

    public struct Reveal: Equatable, Sendable {
        public var id: UInt64
        public var ephemeral: [UInt8]
        public var identity: [UInt8]
        public var name: String
        public var proof: Proof
    }

    public struct Confirm: Equatable, Sendable {
        public var id: UInt64
        public var proof: Proof
    }

    /// What an end shows to prove it holds the session's keys (the MAC) and,
    /// with identities, its identity key (the signature).
    public struct Proof: Equatable, Sendable {
        public var signature: [UInt8]
        public var mac: [UInt8]
    }

    public var id: UInt64 {
        switch self {
        case .commit(let m): m.id
        case .reply(let m): m.id
        case .reveal(let m): m.id
        case .confirm(let m): m.id
        case .reject(let id, _): id
        case .retry: 0
        }
    }

    enum Kind: UInt8 {
        case commit = 1, reply, reveal, confirm, reject, retry
    }

    // MARK: parsing

    /// Parses a datagram; nil for anything malformed (wrong marker, version,
    /// type, length, a name that is not UTF-8, a bad mode or reason).
    public init?(parsing bytes: ArraySlice<UInt8>) {
        var reader = ByteReader(bytes)
        guard reader.readUInt8() == Self.marker, reader.readUInt8() == 0x48, reader.readUInt8() == Self.version,
              let kind = reader.readUInt8().flatMap(Kind.init(rawValue:)), let id = reader.readUInt64()
        else { return nil }
        switch kind {
        case .commit:
            guard bytes.count == Self.commitSize, let instance = reader.readUInt64(), let suite = reader.readUInt8(),
                  let mode = reader.readUInt8().flatMap(HandshakeMode.init(rawValue:)),
                  let nonce = reader.readSlice(32), let commitment = reader.readSlice(32),
                  reader.readRest().allSatisfy({ $0 == 0 })
            else { return nil }
            self = .commit(Commit(id: id, instance: instance, suite: suite, mode: mode, nonce: Array(nonce),
                                  commitment: Array(commitment)))
        case .reply:
            guard let nonce = reader.readSlice(32), let keys = Self.readKeys(&reader), reader.isAtEnd else { return nil }
            self = .reply(Reply(id: id, nonce: Array(nonce), ephemeral: keys.ephemeral, identity: keys.identity,
                                name: keys.name))
        case .reveal:
            guard let keys = Self.readKeys(&reader), let proof = Self.readProof(&reader), reader.isAtEnd else { return nil }
            self = .reveal(Reveal(id: id, ephemeral: keys.ephemeral, identity: keys.identity, name: keys.name, proof: proof))
        case .confirm:
            guard let proof = Self.readProof(&reader), reader.isAtEnd else { return nil }
            self = .confirm(Confirm(id: id, proof: proof))
        case .reject:
            guard let reason = reader.readUInt8().flatMap(RejectReason.init(rawValue:)), reader.isAtEnd else { return nil }
            self = .reject(id: id, reason: reason)
        case .retry:
            guard id == 0, reader.isAtEnd else { return nil }
            self = .retry
        }
    }

    private static func readKeys(_ reader: inout ByteReader) -> (ephemeral: [UInt8], identity: [UInt8], name: String)? {
        guard let ephemeral = reader.readSlice(32), let identity = reader.readSlice(32),
              let length = reader.readUInt8(), Int(length) <= maximumNameLength,
              let raw = reader.readSlice(Int(length)), let name = String(validating: raw, as: UTF8.self),
              PeerName.isValid(name)
        else { return nil }
        return (Array(ephemeral), Array(identity), name)
    }

    private static func readProof(_ reader: inout ByteReader) -> Proof? {
        guard let length = reader.readUInt8(), length == 0 || length == 64,
              let signature = reader.readSlice(Int(length)), let mac = reader.readSlice(32)
        else { return nil }
        return Proof(signature: Array(signature), mac: Array(mac))
    }

    // MARK: serializing

    public func serialized() -> [UInt8] {
        var out: [UInt8] = [Self.marker, 0x48, Self.version]
        switch self {
        case .commit(let m):
            out.append(Kind.commit.rawValue)
            out.appendUInt64(m.id)
            out.appendUInt64(m.instance)
            out.append(m.suite)
            out.append(m.mode.rawValue)
            out += m.nonce + m.commitment
            out.appendZeros(Self.commitSize - out.count)
        case .reply(let m):
            out.append(Kind.reply.rawValue)
            out.appendUInt64(m.id)
            out += m.nonce
            out += Self.keys(m.ephemeral, m.identity, m.name)
        case .reveal(let m):
            out.append(Kind.reveal.rawValue)
            out.appendUInt64(m.id)
            out += Self.keys(m.ephemeral, m.identity, m.name)
            out += Self.proof(m.proof)
        case .confirm(let m):
            out.append(Kind.confirm.rawValue)
            out.appendUInt64(m.id)
            out += Self.proof(m.proof)
        case .reject(let id, let reason):
            out.append(Kind.reject.rawValue)
            out.appendUInt64(id)
            out.append(reason.rawValue)
        case .retry:
            out.append(Kind.retry.rawValue)
            out.appendUInt64(0)
        }
        return out
    }

    /// The keys-and-name part of a reply or reveal: what the commitment and
    /// the transcript cover.
    static func keys(_ ephemeral: [UInt8], _ identity: [UInt8], _ name: String) -> [UInt8] {
        let name = Array(name.utf8.prefix(maximumNameLength))
        return ephemeral + identity + [UInt8(name.count)] + name
    }

    private static func proof(_ proof: Proof) -> [UInt8] {
        [UInt8(proof.signature.count)] + proof.signature + proof.mac
    }
}

/// How the handshake is authenticated.
public enum HandshakeMode: UInt8, Sendable {
    /// Both ends hold the same key file; its secret authenticates the exchange.
    case preSharedKey = 1
    /// Each end has a long-term identity key; a first meeting is confirmed by
    /// comparing the short authentication string, later ones by the keys remembered.
    case identity = 2
}

/// Why a responder (or an initiator) refused a handshake.
public enum RejectReason: UInt8, Sendable, Equatable, CustomStringConvertible {
    /// The other end's key or proof did not verify (a different key file).
    case authenticationFailed = 1
    /// A person refused the session when asked.
    case refused = 2
    /// The identity key behind a known name is not the one remembered.
    case identityChanged = 3
    /// The two ends were started in different modes (key file and identities).
    case modeMismatch = 4
    /// The SRTP suite asked for is not one this end speaks.
    case unsupportedSuite = 5
    /// Another sender took the receiver over from this sender instance,
    /// and is still sending.
    case replaced = 6

    public var description: String {
        switch self {
        case .authenticationFailed: "authentication failed (the key files differ?)"
        case .refused: "refused when asked to confirm"
        case .identityChanged: "the other end's identity changed since it was last seen"
        case .modeMismatch: "one end uses a key file and the other identities"
        case .unsupportedSuite: "unsupported SRTP suite"
        case .replaced: "another sender took the receiver over"
        }
    }
}

/// Names peers call themselves by (`user@host` by default): printable,
/// without spaces, 1 to 48 bytes of UTF-8.
public enum PeerName {
    /// Why `name` cannot name an end (as `--name` gives it); nil when it can.
    public static func problem(_ name: String) -> String? {
        isValid(name) ? nil : "--name \(name) is not 1-48 printable bytes without spaces"
    }

    public static func isValid(_ name: String) -> Bool {
        let count = name.utf8.count
        return count >= 1 && count <= HandshakeMessage.maximumNameLength
            && name.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && !($0.value >= 0x80 && $0.value < 0xA0) }
    }
}
