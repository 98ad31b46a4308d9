internal import Crypto
internal import Foundation
public import ShareSRTP
internal import ShareWire
import Dispatch
import Synchronization
internal import ShareBase

/// This install's long-term identity: a name and an Ed25519 key pair. Its
/// description never shows the private key.
public struct LocalIdentity: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The name this end gives itself (`--name`, else user@host).
    public let name: String
    /// For the identity file only.
    let privateKeyBytes: [UInt8]
    /// The Ed25519 public key peers remember it by.
    public let publicKey: [UInt8]

    /// Wraps a stored private key (32 bytes).
    public init(name: String, privateKey: [UInt8]) throws(IdentityError) {
        guard PeerName.isValid(name) else { throw IdentityError("the name \"\(name)\" is not 1-48 printable bytes without spaces") }
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: privateKey) else {
            throw IdentityError("the identity key is not a 32-byte Ed25519 key")
        }
        self.name = name
        privateKeyBytes = privateKey
        publicKey = Array(key.publicKey.rawRepresentation)
    }

    /// A fresh identity.
    public static func generate(name: String) throws(IdentityError) -> LocalIdentity {
        try LocalIdentity(name: name, privateKey: Array(Curve25519.Signing.PrivateKey().rawRepresentation))
    }

    func sign(_ message: [UInt8]) -> [UInt8] {
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: privateKeyBytes),
              let signature = try? key.signature(for: message) else { return [] }
        return Array(signature)
    }

    static func verify(signature: [UInt8], of message: [UInt8], by publicKey: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    public var description: String { "LocalIdentity(\(name), \(PeerFingerprint(publicKey)))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["name": name, "fingerprint": PeerFingerprint(publicKey)]) }
}

/// Why an identity or the known-peers file cannot be used.
public struct IdentityError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, for people.
    public var description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// A short printable form of an identity key: `SHA256:` and the first 12
/// bytes of its hash in base64, like ssh's fingerprints.
public struct PeerFingerprint: Sendable, Equatable, CustomStringConvertible {
    /// The printable form.
    public let description: String
    /// The fingerprint of an Ed25519 public key.
    public init(_ publicKey: [UInt8]) {
        description = "SHA256:" + Base64.encode(Array(SHA256.hash(data: publicKey).prefix(12)))
    }
}

/// The peers this install has met: name → identity key (trust on first use).
public struct KnownPeers: Sendable, Equatable {
    /// Each peer's name and identity key.
    public private(set) var keys: [String: [UInt8]]

    /// The peers `keys` names (none by default).
    public init(_ keys: [String: [UInt8]] = [:]) { self.keys = keys }

    /// Whether a peer calling itself `name` with `key` is new, known, or
    /// known with another key (a changed identity, refused).
    public func trust(name: String, key: [UInt8]) -> PeerTrust {
        guard let remembered = keys[name] else { return .new }
        return KeySchedule.constantTimeEqual(remembered, key) ? .known : .changed(remembered: remembered)
    }

    /// Remembers `key` as `name`'s identity.
    public mutating func remember(name: String, key: [UInt8]) { keys[name] = key }
}

/// What this end knows of the other's identity.
public enum PeerTrust: Sendable, Equatable {
    /// Met before with this very key.
    case known
    /// Never met: confirm by comparing the short authentication string.
    case new
    /// Met before with another key: refused.
    case changed(remembered: [UInt8])
}

/// How a handshake is authenticated at one end. Printed or dumped, it
/// shows its mode and identity, never the secret or private key.
public enum HandshakeAuthentication: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret of a key file both ends hold.
    case preSharedKey([UInt8])
    /// This end's identity and the peers it has met.
    case identity(LocalIdentity, known: KnownPeers)

    /// Which way the handshake is authenticated.
    public var mode: HandshakeMode {
        switch self {
        case .preSharedKey: .preSharedKey
        case .identity: .identity
        }
    }

    public var description: String {
        switch self {
        case .preSharedKey: "pre-shared key (redacted)"
        case .identity(let identity, let known): "\(identity), \(known.keys.count) known peers"
        }
    }

    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["authentication": description]) }

    var preSharedKey: [UInt8]? {
        if case .preSharedKey(let key) = self { return key }
        return nil
    }

    var identity: LocalIdentity? {
        if case .identity(let identity, _) = self { return identity }
        return nil
    }

    var known: KnownPeers? {
        if case .identity(_, let known) = self { return known }
        return nil
    }

    /// With identities, remembers a peer met for the first time: in `store`
    /// (when there is one) and in the peers this end checks from now on.
    public mutating func rememberNewPeer(of session: EstablishedSession, in store: IdentityStore?) {
        guard session.trust == .new, let key = session.peerIdentity, case .identity(let identity, var known) = self
        else { return }
        try? store?.remember(name: session.peerName, key: key)
        known.remember(name: session.peerName, key: key)
        self = .identity(identity, known: known)
    }
}

/// A session both ends agreed on.
public struct EstablishedSession: Sendable, CustomStringConvertible {
    /// This end's SRTP keys (outbound and inbound).
    public let keys: SRTPSessionKeys
    /// The sender process the session belongs to.
    public let instance: UInt64
    /// The handshake this session came from.
    public let handshakeID: UInt64
    /// How it was authenticated.
    public let mode: HandshakeMode
    /// The name the other end gave.
    public let peerName: String
    /// The peer's identity key (identity mode only).
    public let peerIdentity: [UInt8]?
    /// `.new` when the two people compared the string (or `--accept` took it).
    public let trust: PeerTrust
    /// The code both ends show, for people to compare (identities).
    public let shortAuthenticationString: String
    /// The path's round trip before any media has flowed, as the initiator
    /// timed it: from the commit's last copy to the reply, so the round trip
    /// itself, or less when the commit went more than once (the reply may
    /// answer an earlier copy), never more. nil on the responder's side.
    public internal(set) var roundTrip: Duration? = nil

    public var description: String {
        "EstablishedSession(\(peerName), \(mode), \(keys))"
    }
}

/// Why a handshake ended without a session.
public enum HandshakeFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The other end refused it, and why.
    case rejected(RejectReason)
    /// The other end's identity key changed since it was remembered.
    case identityChanged(name: String, remembered: PeerFingerprint, presented: PeerFingerprint)
    /// The other end's proof did not verify.
    case authenticationFailed
    /// No answer within the time allowed.
    case timedOut
    /// This end's person did not confirm the peer (the codes differed?).
    case declined(peer: String)

    public var description: String {
        switch self {
        case .rejected(let reason): "the receiver refused the session: \(reason)"
        case .identityChanged(let name, let remembered, let presented):
            "the identity of \"\(name)\" CHANGED: it was \(remembered), now it is \(presented). Someone may be "
                + "in the middle. If \(name) was reinstalled, remove its line from known_peers and try again"
        case .authenticationFailed: "the other end could not prove it holds the key (are the key files the same?)"
        case .timedOut: "no answer to the handshake"
        case .declined(let peer): "\"\(peer)\" was not confirmed here (did the codes differ?): nothing was sent to it"
        }
    }
}

/// How a sender or receiver gets its SRTP keys.
public enum SessionKeying: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// One static SDES key for every session and both directions, no
    /// handshake: the interop mode, for ffmpeg, ffplay, GStreamer, VLC and
    /// Janus. It does not give fresh keys per session, so a recorded session
    /// can be replayed into a later receiver that holds the same key.
    case staticKey(SRTPKeyingMaterial)
    /// A handshake on the media port before any media, authenticated as
    /// given; new peers are remembered in `store` (nil: not remembered).
    case handshake(HandshakeAuthentication, store: IdentityStore?)

    /// The name this end gives itself in a handshake.
    public var localName: String {
        if case .handshake(.identity(let identity, _), _) = self { return identity.name }
        return IdentityStore.defaultName()
    }

    public var description: String {
        switch self {
        case .staticKey(let keying): "static \(keying)"
        case .handshake(.preSharedKey, _): "handshake with a pre-shared key"
        case .handshake(.identity(let identity, _), _): "handshake as \(identity)"
        }
    }

    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["keying": description]) }
}

/// Whether a peer never met before may have a session (identities only).
/// Both ends ask on a first meeting: the receiver before it confirms, the
/// sender before it sends anything, so a man in the middle, whose codes
/// differ at the two ends, gets nothing when either person says no.
public enum ConfirmationPolicy: Sendable {
    /// Accept it (and remember it): unattended use, `--accept`.
    case acceptNew
    /// Refuse it: only peers met before (the default without a person to ask).
    case refuseNew
    /// Ask: called on a thread of its own, may block for a person's answer.
    case ask(@Sendable (PeerConfirmationRequest) -> Bool)
}

/// Puts one question to a person at a time, each on a thread of its own
/// (an answer may take minutes). A question asked while another is still
/// open is not put: the caller hears `false` at once. Without this, every
/// stranger that finished a handshake while nobody answered parked a
/// thread on the terminal.
public final class OneQuestionAtATime: Sendable {
    private let open = Atomic<Bool>(false)

    public init() {}

    /// Asks `request` with `ask` on a thread of its own and hands the answer
    /// to `answer` there; false (nothing asked) when a question is open.
    public func put(_ request: PeerConfirmationRequest, to ask: @escaping @Sendable (PeerConfirmationRequest) -> Bool,
                    answer: @escaping @Sendable (Bool) -> Void) -> Bool {
        guard open.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return false }
        DispatchQueue.global().async { [self] in
            let accepted = ask(request)
            open.store(false, ordering: .releasing)
            answer(accepted)
        }
        return true
    }
}
