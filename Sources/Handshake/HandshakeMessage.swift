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
/// commit   instance(8) suite(1) mode(1) nonce(32) commitment(32) cookie(32) zero padding to 192 bytes
/// cookie   cookie(32)                    "ask again with this": the responder keeps nothing yet
/// reply    nonce(32) commitment(32)      the responder's keys, committed to
/// reveal   keys, zero padding to 128 bytes   (keys: ephemeral(32) identity(32) name-length(1) name)
/// open     keys                          the responder's, matching its commitment
/// finish   signature-length(1) signature mac(32)   the initiator's proof
/// confirm  signature-length(1) signature mac(32)   the responder's proof
/// reject   reason(1) [mac(32)]           with a MAC once the responder holds the session's keys
/// retry    (nothing; handshake-id zero): "I hold no session for what you send"
/// ```
/// Both ends commit to their keys before either sees the other's (ZRTP's
/// hash commitment, RFC 6189 §4.4.1.1, made two-sided), so neither can
/// steer the short authentication string, and no end can compute it before
/// it has revealed its own keys: an end that learns the code and then
/// abandons the handshake has shown itself (the responder counts those).
/// Messages are padded so that no answer is larger than the message that
/// asked for it: the port cannot be used to amplify a flood.
public enum HandshakeMessage: Equatable, Sendable {
    case commit(Commit)
    case cookie(id: UInt64, cookie: [UInt8])
    case reply(Reply)
    case reveal(Keys)
    case open(Keys)
    case finish(Proved)
    case confirm(Proved)
    case reject(id: UInt64, reason: RejectReason, mac: [UInt8]?)
    case retry

    public static let version: UInt8 = 2
    /// The first byte of every handshake message.
    public static let marker: UInt8 = 0x53
    static let commitSize = 192
    static let revealSize = 128
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
        /// SHA-256 of the initiator's keys and name (what its reveal carries).
        public var commitment: [UInt8]
        /// The responder's cookie, echoed (zeros in the first commit).
        public var cookie: [UInt8]

        /// The commit as the transcript covers it: without its cookie, which
        /// changes between copies of the same commit.
        var canonical: Commit {
            var commit = self
            commit.cookie = HandshakeMessage.noCookie
            return commit
        }
    }

    /// A cookie of all zeros: none.
    static let noCookie = [UInt8](repeating: 0, count: 32)

    public struct Reply: Equatable, Sendable {
        public var id: UInt64
        public var nonce: [UInt8]
        /// SHA-256 of the responder's keys and name (what its open carries).
        public var commitment: [UInt8]
    }

    /// An end's keys and name: its ephemeral X25519 key, its Ed25519
    /// identity key (zeros with a pre-shared key) and the name it gives.
    public struct Keys: Equatable, Sendable {
        public var id: UInt64
        public var ephemeral: [UInt8]
        public var identity: [UInt8]
        public var name: String

        /// The bytes the commitment and the transcript cover.
        var covered: [UInt8] { HandshakeMessage.keys(ephemeral, identity, name) }
    }

    /// A message that carries an end's proof.
    public struct Proved: Equatable, Sendable {
        public var id: UInt64
        public var proof: Proof
        public init(id: UInt64, proof: Proof) {
            self.id = id
            self.proof = proof
        }
    }

    /// What an end shows to prove it holds the session's keys (the MAC) and,
    /// with identities, its identity key (the signature).
    public struct Proof: Equatable, Sendable {
        public var signature: [UInt8]
        public var mac: [UInt8]
        public init(signature: [UInt8], mac: [UInt8]) {
            self.signature = signature
            self.mac = mac
        }
    }

    public var id: UInt64 {
        switch self {
        case .commit(let m): m.id
        case .cookie(let id, _): id
        case .reply(let m): m.id
        case .reveal(let m), .open(let m): m.id
        case .finish(let m), .confirm(let m): m.id
        case .reject(let id, _, _): id
        case .retry: 0
        }
    }

    enum Kind: UInt8 {
        case commit = 1, cookie, reply, reveal, open, finish, confirm, reject, retry
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
                  let nonce = reader.readSlice(32), let commitment = reader.readSlice(32), let cookie = reader.readSlice(32),
                  reader.readRest().allSatisfy({ $0 == 0 })
            else { return nil }
            self = .commit(Commit(id: id, instance: instance, suite: suite, mode: mode, nonce: Array(nonce),
                                  commitment: Array(commitment), cookie: Array(cookie)))
        case .cookie:
            guard let cookie = reader.readSlice(32), reader.isAtEnd else { return nil }
            self = .cookie(id: id, cookie: Array(cookie))
        case .reply:
            guard let nonce = reader.readSlice(32), let commitment = reader.readSlice(32), reader.isAtEnd else { return nil }
            self = .reply(Reply(id: id, nonce: Array(nonce), commitment: Array(commitment)))
        case .reveal:
            guard bytes.count == Self.revealSize, let keys = Self.readKeys(&reader, id: id),
                  reader.readRest().allSatisfy({ $0 == 0 })
            else { return nil }
            self = .reveal(keys)
        case .open:
            guard let keys = Self.readKeys(&reader, id: id), reader.isAtEnd else { return nil }
            self = .open(keys)
        case .finish, .confirm:
            guard let proof = Self.readProof(&reader), reader.isAtEnd else { return nil }
            self = kind == .finish ? .finish(Proved(id: id, proof: proof)) : .confirm(Proved(id: id, proof: proof))
        case .reject:
            guard let reason = reader.readUInt8().flatMap(RejectReason.init(rawValue:)) else { return nil }
            var mac: [UInt8]?
            if !reader.isAtEnd {
                guard let tag = reader.readSlice(32), reader.isAtEnd else { return nil }
                mac = Array(tag)
            }
            self = .reject(id: id, reason: reason, mac: mac)
        case .retry:
            guard id == 0, reader.isAtEnd else { return nil }
            self = .retry
        }
    }

    private static func readKeys(_ reader: inout ByteReader, id: UInt64) -> Keys? {
        guard let ephemeral = reader.readSlice(32), let identity = reader.readSlice(32),
              let length = reader.readUInt8(), Int(length) <= maximumNameLength,
              let raw = reader.readSlice(Int(length)), let name = String(validating: raw, as: UTF8.self),
              PeerName.isValid(name)
        else { return nil }
        return Keys(id: id, ephemeral: Array(ephemeral), identity: Array(identity), name: name)
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
            out += m.nonce + m.commitment + m.cookie
            out.appendZeros(Self.commitSize - out.count)
        case .cookie(let id, let cookie):
            out.append(Kind.cookie.rawValue)
            out.appendUInt64(id)
            out += cookie
        case .reply(let m):
            out.append(Kind.reply.rawValue)
            out.appendUInt64(m.id)
            out += m.nonce + m.commitment
        case .reveal(let m):
            out.append(Kind.reveal.rawValue)
            out.appendUInt64(m.id)
            out += m.covered
            out.appendZeros(Self.revealSize - out.count)
        case .open(let m):
            out.append(Kind.open.rawValue)
            out.appendUInt64(m.id)
            out += m.covered
        case .finish(let m), .confirm(let m):
            out.append((self.isFinish ? Kind.finish : Kind.confirm).rawValue)
            out.appendUInt64(m.id)
            out += [UInt8(m.proof.signature.count)] + m.proof.signature + m.proof.mac
        case .reject(let id, let reason, let mac):
            out.append(Kind.reject.rawValue)
            out.appendUInt64(id)
            out.append(reason.rawValue)
            out += mac ?? []
        case .retry:
            out.append(Kind.retry.rawValue)
            out.appendUInt64(0)
        }
        return out
    }

    private var isFinish: Bool {
        if case .finish = self { return true }
        return false
    }

    /// The keys-and-name part of a reveal or open: what the commitments and
    /// the transcript cover.
    static func keys(_ ephemeral: [UInt8], _ identity: [UInt8], _ name: String) -> [UInt8] {
        let name = Array(name.utf8.prefix(maximumNameLength))
        return ephemeral + identity + [UInt8(name.count)] + name
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
    /// The receiver cannot take this handshake now (a person is already
    /// being asked about another new sender, or new senders came too
    /// often): try again later.
    case busy = 7

    public var description: String {
        switch self {
        case .authenticationFailed: "authentication failed (the key files differ?)"
        case .refused: "refused when asked to confirm"
        case .identityChanged: "the other end's identity changed since it was last seen"
        case .modeMismatch: "one end uses a key file and the other identities"
        case .unsupportedSuite: "unsupported SRTP suite"
        case .replaced: "another sender took the receiver over"
        case .busy: "busy with another new sender"
        }
    }
}

/// Names peers call themselves by (`user@host` by default): 1 to 48 of
/// ASCII letters, digits and `. _ - @ +`, starting with a letter or digit.
/// Nothing else: a name is shown to people who decide whether to trust it,
/// so no character may make it look like another (bidirectional overrides,
/// zero-width or combining characters, look-alike scripts), join the space
/// after it (a Unicode "prepend" mark), or start a comment in `known_peers`.
public enum PeerName {
    /// Why `name` cannot name an end (as `--name` gives it); nil when it can.
    public static func problem(_ name: String) -> String? {
        isValid(name) ? nil
            : "--name \(name) is not a name: use 1-48 letters, digits and . _ - @ + (starting with a letter or digit)"
    }

    public static func isValid(_ name: String) -> Bool { isValid(bytes: Array(name.utf8)) }

    /// The same test on the name's bytes (as `known_peers` is read).
    public static func isValid(bytes: some Collection<UInt8>) -> Bool {
        guard (1...HandshakeMessage.maximumNameLength).contains(bytes.count), let first = bytes.first,
              isAlphanumeric(first) else { return false }
        return bytes.allSatisfy(isNameByte)
    }

    /// `text` made into a valid name where it can be: characters outside the
    /// set become `-`, leading ones that are not a letter or digit go; nil
    /// when nothing usable is left.
    public static func sanitized(_ text: String) -> String? {
        var bytes = text.unicodeScalars.prefix(HandshakeMessage.maximumNameLength).map { scalar -> UInt8 in
            scalar.isASCII && isNameByte(UInt8(scalar.value)) ? UInt8(scalar.value) : UInt8(ascii: "-")
        }
        while let first = bytes.first, !isAlphanumeric(first) { bytes.removeFirst() }
        return isValid(bytes: bytes) ? String(decoding: bytes, as: UTF8.self) : nil
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "+")
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }
}
