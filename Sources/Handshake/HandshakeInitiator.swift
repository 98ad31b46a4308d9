internal import Crypto
internal import Foundation
public import ShareSRTP
public import ShareWire

/// The sender's side of the handshake, sans-IO: `start` gives the commit to
/// send, `handle` takes what came back, `poll` retransmits on time. Hostile
/// or stray messages (another handshake's id, a bad key, a proof that does
/// not verify) change nothing; only the responder's reject or a changed
/// identity ends an attempt.
///
/// commit → reply → reveal with proof → confirm with proof, after which
/// both ends hold the same per-direction SRTP keys.
public struct HandshakeInitiator: @unchecked Sendable {
    // Safe: the ephemeral private key is a value only this struct uses.
    public enum Action: Sendable {
        case send([UInt8])
        case established(EstablishedSession)
        case failed(HandshakeFailure)
    }

    public struct Configuration: Sendable {
        public var authentication: HandshakeAuthentication
        public var name: String
        public var profile: SRTPProfile
        public var instance: UInt64
        /// First retransmission; doubles up to `longestRetransmit`.
        public var firstRetransmit: Duration = .milliseconds(200)
        public var longestRetransmit: Duration = .milliseconds(500)
        /// How long the receiver's person may take to confirm.
        public var confirmationTimeout: Duration = .seconds(120)

        public init(authentication: HandshakeAuthentication, name: String, profile: SRTPProfile, instance: UInt64) {
            self.authentication = authentication
            self.name = name
            self.profile = profile
            self.instance = instance
        }
    }

    private enum State {
        case idle
        case committed
        case revealed(session: EstablishedSession, responderIdentity: [UInt8], schedule: KeySchedule)
        case finished
    }

    /// Its known peers may be updated between attempts (a new peer remembered).
    public var configuration: Configuration
    private var state = State.idle
    public private(set) var id: UInt64 = 0
    private var ephemeral = Curve25519.KeyAgreement.PrivateKey()
    private var nonce: [UInt8] = []
    private var revealKeys: [UInt8] = []
    private var commitBytes: [UInt8] = []
    private var lastMessage: [UInt8] = []
    private var sentAt = MonotonicTime(nanoseconds: 0)
    private var interval: Duration = .zero
    private var revealedAt = MonotonicTime(nanoseconds: 0)
    /// Messages ignored: another handshake's, unverifiable, out of turn.
    public private(set) var ignored = 0

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The short authentication string, once the reply arrived.
    public var shortAuthenticationString: String? {
        if case .revealed(let session, _, _) = state { return session.shortAuthenticationString }
        return nil
    }

    /// The responder's name and whether it is new to us, once it replied.
    public var responder: (name: String, trust: PeerTrust)? {
        if case .revealed(let session, _, _) = state { return (session.peerName, session.trust) }
        return nil
    }

    /// With identities, a responder never met before: what to ask this
    /// end's person (compare the code) before sending it anything.
    public var confirmationRequest: PeerConfirmationRequest? {
        guard case .revealed(let session, let identity, _) = state, session.mode == .identity, session.trust == .new
        else { return nil }
        return PeerConfirmationRequest(handshakeID: id, peerName: session.peerName, fingerprint: PeerFingerprint(identity),
                                       shortAuthenticationString: session.shortAuthenticationString)
    }

    /// True from `start` until the session is established or has failed.
    public var isInProgress: Bool {
        switch state {
        case .committed, .revealed: true
        case .idle, .finished: false
        }
    }

    /// Begins a new attempt (fresh id, ephemeral key and nonce) and returns the commit.
    public mutating func start(now: MonotonicTime) -> [UInt8] {
        id = UInt64.random(in: 1...UInt64.max)
        ephemeral = Curve25519.KeyAgreement.PrivateKey()
        nonce = randomBytes(32)
        let identity = configuration.authentication.identity?.publicKey ?? [UInt8](repeating: 0, count: 32)
        revealKeys = HandshakeMessage.keys(Array(ephemeral.publicKey.rawRepresentation), identity, configuration.name)
        let commit = HandshakeMessage.commit(.init(
            id: id, instance: configuration.instance, suite: configuration.profile.handshakeCode,
            mode: configuration.authentication.mode, nonce: nonce, commitment: KeySchedule.commitment(of: revealKeys)))
        state = .committed
        commitBytes = commit.serialized()
        return send(commitBytes, now: now)
    }

    private mutating func send(_ bytes: [UInt8], now: MonotonicTime) -> [UInt8] {
        lastMessage = bytes
        sentAt = now
        interval = configuration.firstRetransmit
        return bytes
    }

    /// The next instant `poll` has work.
    public var nextDeadline: MonotonicTime? {
        switch state {
        case .committed: sentAt + interval
        case .revealed: min(sentAt + interval, revealedAt + configuration.confirmationTimeout)
        case .idle, .finished: nil
        }
    }

    /// Retransmits what is unanswered; gives up waiting for a confirmation.
    public mutating func poll(now: MonotonicTime) -> [Action] {
        guard isInProgress else { return [] }
        if case .revealed = state, now >= revealedAt + configuration.confirmationTimeout {
            state = .finished
            return [.failed(.timedOut)]
        }
        guard now >= sentAt + interval else { return [] }
        sentAt = now
        interval = min(interval * 2, configuration.longestRetransmit)
        return [.send(lastMessage)]
    }

    public mutating func handle(_ message: HandshakeMessage, now: MonotonicTime) -> [Action] {
        guard message.id == id, isInProgress else {
            if case .retry = message {} else { ignored += 1 }
            return []
        }
        switch (message, state) {
        case (.reply(let reply), .committed):
            return handle(reply, now: now)
        case (.confirm(let confirm), .revealed(let session, let responderIdentity, let schedule)):
            guard KeySchedule.constantTimeEqual(confirm.proof.mac, schedule.mac(.responder)),
                  session.mode == .preSharedKey
                    || LocalIdentity.verify(signature: confirm.proof.signature, of: schedule.signed(.responder),
                                            by: responderIdentity)
            else {
                ignored += 1
                return []
            }
            state = .finished
            return [.established(session)]
        case (.reject(_, let reason), _):
            state = .finished
            return [.failed(.rejected(reason))]
        default:
            ignored += 1
            return []
        }
    }

    private mutating func handle(_ reply: HandshakeMessage.Reply, now: MonotonicTime) -> [Action] {
        var trust = PeerTrust.new
        if let known = configuration.authentication.known {
            trust = known.trust(name: reply.name, key: reply.identity)
            if case .changed(let remembered) = trust {
                state = .finished
                return [.send(HandshakeMessage.reject(id: id, reason: .identityChanged).serialized()),
                        .failed(.identityChanged(name: reply.name, remembered: PeerFingerprint(remembered),
                                                 presented: PeerFingerprint(reply.identity)))]
            }
        }
        guard let peer = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: reply.ephemeral),
              let shared = try? ephemeral.sharedSecretFromKeyAgreement(with: peer)
        else {
            ignored += 1
            return []
        }
        let transcript = KeySchedule.transcript(commit: commitBytes, reply: HandshakeMessage.reply(reply).serialized(),
                                                revealKeys: revealKeys)
        let schedule = KeySchedule(sharedSecret: shared, preSharedKey: configuration.authentication.preSharedKey,
                                   initiatorNonce: nonce, responderNonce: reply.nonce, transcript: transcript)
        let signature = configuration.authentication.identity?.sign(schedule.signed(.initiator)) ?? []
        let identity = configuration.authentication.identity?.publicKey ?? [UInt8](repeating: 0, count: 32)
        let reveal = HandshakeMessage.reveal(.init(
            id: id, ephemeral: Array(ephemeral.publicKey.rawRepresentation), identity: identity, name: configuration.name,
            proof: .init(signature: signature, mac: schedule.mac(.initiator))))
        let keys = schedule.srtpKeys(profile: configuration.profile)
        let session = EstablishedSession(
            keys: SRTPSessionKeys(outbound: keys.initiator, inbound: keys.responder), instance: configuration.instance,
            handshakeID: id, mode: configuration.authentication.mode, peerName: reply.name,
            peerIdentity: configuration.authentication.mode == .identity ? reply.identity : nil, trust: trust,
            shortAuthenticationString: schedule.shortAuthenticationString,
            roundTrip: now.since(sentAt))
        state = .revealed(session: session, responderIdentity: reply.identity, schedule: schedule)
        revealedAt = now
        return [.send(send(reveal.serialized(), now: now))]
    }
}
