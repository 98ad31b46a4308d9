internal import Crypto
internal import Foundation
public import ShareSRTP
public import ShareWire

/// The receiver's side of the handshake, sans-IO and generic over how a
/// peer's address is written. Answers commits (at most `commitsPerSecond`
/// new ones, so a flood of strangers costs bounded CPU), checks each reveal
/// against its commitment and its proof, and says when a person must
/// confirm a new peer. Answers to retransmissions are replayed from what was
/// stored, never computed again.
public struct HandshakeResponder<Peer: Hashable & Sendable>: @unchecked Sendable {
    // Safe: the ephemeral private keys are values only this struct uses.
    public enum Action: Sendable {
        case send([UInt8], to: Peer)
        /// A new peer: ask a person to compare the string, then `answer`.
        case confirmationNeeded(PeerConfirmationRequest)
        case established(EstablishedSession, from: Peer)
        /// A handshake that failed here (for logs; the peer was told).
        case refused(from: Peer, HandshakeFailure)
    }

    public struct Configuration: Sendable {
        public var authentication: HandshakeAuthentication
        public var name: String
        public var profiles: Set<SRTPProfile> = Set(SRTPProfile.allCases)
        /// New handshakes answered per second, and the burst allowed.
        public var commitsPerSecond = 20.0
        public var commitBurst = 20.0
        /// Handshakes held at once; the oldest not waiting for a person goes first.
        public var maximumPending = 16
        public var confirmationTimeout: Duration = .seconds(120)

        public init(authentication: HandshakeAuthentication, name: String) {
            self.authentication = authentication
            self.name = name
        }
    }

    /// Sender instances whose handshakes are refused as `.replaced` (set by
    /// the owner: those another sender has taken over from, while it sends).
    public var replacedInstances: Set<UInt64> = []

    public struct Statistics: Sendable, Equatable {
        public var commits = 0
        /// Commits not answered because of the rate limit.
        public var rateLimited = 0
        public var refused = 0
        public var established = 0
        /// Out of turn, unknown id, wrong peer.
        public var ignored = 0
    }

    private enum Stage {
        case replied
        case awaitingConfirmation(EstablishedSession, schedule: KeySchedule)
        /// Answered for good: the confirm or reject to repeat.
        case answered([UInt8])
    }

    private struct Entry {
        var peer: Peer
        var commit: HandshakeMessage.Commit
        var commitBytes: [UInt8]
        var ephemeral: Curve25519.KeyAgreement.PrivateKey
        var nonce: [UInt8]
        var replyBytes: [UInt8]
        var createdAt: MonotonicTime
        var stage: Stage
    }

    public var configuration: Configuration
    public private(set) var statistics = Statistics()
    private var entries: [UInt64: Entry] = [:]
    private var commits: RateLimiter

    public init(configuration: Configuration) {
        self.configuration = configuration
        commits = RateLimiter(rate: configuration.commitsPerSecond, burst: configuration.commitBurst)
    }

    /// Handshakes held now.
    public var pendingCount: Int { entries.count }

    public mutating func handle(_ message: HandshakeMessage, from peer: Peer, now: MonotonicTime) -> [Action] {
        if case .commit(let commit) = message { return handle(commit, from: peer, now: now) }
        guard var entry = entries[message.id], entry.peer == peer else {
            statistics.ignored += 1
            return []
        }
        switch (message, entry.stage) {
        case (.reveal(let reveal), .replied):
            return handle(reveal, entry: &entry, now: now)
        case (.reveal, .answered(let bytes)):
            return [.send(bytes, to: peer)]
        case (.reject, _):
            // The initiator refused us (our identity changed, to it).
            entries[message.id] = nil
            return []
        default:
            statistics.ignored += 1
            return []
        }
    }

    private mutating func handle(_ commit: HandshakeMessage.Commit, from peer: Peer, now: MonotonicTime) -> [Action] {
        if let entry = entries[commit.id] {
            guard entry.peer == peer, entry.commit == commit else {
                statistics.ignored += 1
                return []
            }
            return [.send(entry.replyBytes, to: peer)]
        }
        commits.rate = configuration.commitsPerSecond
        commits.burst = configuration.commitBurst
        guard commits.take(now: now) else {
            statistics.rateLimited += 1
            return []
        }
        statistics.commits += 1
        if commit.mode != configuration.authentication.mode {
            return refuse(commit.id, peer: peer, reason: .modeMismatch, failure: .rejected(.modeMismatch))
        }
        guard let profile = SRTPProfile(handshakeCode: commit.suite), configuration.profiles.contains(profile) else {
            return refuse(commit.id, peer: peer, reason: .unsupportedSuite, failure: .rejected(.unsupportedSuite))
        }
        if replacedInstances.contains(commit.instance) {
            return refuse(commit.id, peer: peer, reason: .replaced, failure: .rejected(.replaced))
        }
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let nonce = randomBytes(32)
        let identity = configuration.authentication.identity?.publicKey ?? [UInt8](repeating: 0, count: 32)
        let reply = HandshakeMessage.reply(.init(id: commit.id, nonce: nonce, ephemeral: Array(ephemeral.publicKey.rawRepresentation),
                                                 identity: identity, name: configuration.name)).serialized()
        makeRoom()
        entries[commit.id] = Entry(peer: peer, commit: commit, commitBytes: HandshakeMessage.commit(commit).serialized(),
                                   ephemeral: ephemeral, nonce: nonce, replyBytes: reply, createdAt: now, stage: .replied)
        return [.send(reply, to: peer)]
    }

    private mutating func handle(_ reveal: HandshakeMessage.Reveal, entry: inout Entry, now: MonotonicTime) -> [Action] {
        let keys = HandshakeMessage.keys(reveal.ephemeral, reveal.identity, reveal.name)
        guard KeySchedule.constantTimeEqual(KeySchedule.commitment(of: keys), entry.commit.commitment),
              let peerKey = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: reveal.ephemeral),
              let shared = try? entry.ephemeral.sharedSecretFromKeyAgreement(with: peerKey)
        else {
            return refuse(entry.commit.id, peer: entry.peer, reason: .authenticationFailed, failure: .authenticationFailed)
        }
        let schedule = KeySchedule(
            sharedSecret: shared, preSharedKey: configuration.authentication.preSharedKey, initiatorNonce: entry.commit.nonce,
            responderNonce: entry.nonce,
            transcript: KeySchedule.transcript(commit: entry.commitBytes, reply: entry.replyBytes, revealKeys: keys))
        let identityMode = entry.commit.mode == .identity
        guard KeySchedule.constantTimeEqual(reveal.proof.mac, schedule.mac(.initiator)),
              !identityMode || LocalIdentity.verify(signature: reveal.proof.signature, of: schedule.signed(.initiator),
                                                    by: reveal.identity)
        else {
            return refuse(entry.commit.id, peer: entry.peer, reason: .authenticationFailed, failure: .authenticationFailed)
        }
        let trust = configuration.authentication.known?.trust(name: reveal.name, key: reveal.identity) ?? .known
        if case .changed(let remembered) = trust {
            return refuse(entry.commit.id, peer: entry.peer, reason: .identityChanged,
                          failure: .identityChanged(name: reveal.name, remembered: PeerFingerprint(remembered),
                                                    presented: PeerFingerprint(reveal.identity)))
        }
        let profile = SRTPProfile(handshakeCode: entry.commit.suite)!
        let srtp = schedule.srtpKeys(profile: profile)
        let session = EstablishedSession(
            keys: SRTPSessionKeys(outbound: srtp.responder, inbound: srtp.initiator), instance: entry.commit.instance,
            handshakeID: entry.commit.id, mode: entry.commit.mode, peerName: reveal.name,
            peerIdentity: identityMode ? reveal.identity : nil, trust: trust,
            shortAuthenticationString: schedule.shortAuthenticationString)
        if trust == .new {
            entry.stage = .awaitingConfirmation(session, schedule: schedule)
            entries[entry.commit.id] = entry
            return [.confirmationNeeded(PeerConfirmationRequest(
                handshakeID: entry.commit.id, peerName: reveal.name, fingerprint: PeerFingerprint(reveal.identity),
                shortAuthenticationString: session.shortAuthenticationString))]
        }
        return confirm(&entry, session: session, schedule: schedule)
    }

    /// A person's answer to `confirmationNeeded`.
    public mutating func answer(handshakeID: UInt64, accept: Bool, now: MonotonicTime) -> [Action] {
        guard var entry = entries[handshakeID], case .awaitingConfirmation(let session, let schedule) = entry.stage else {
            return []
        }
        guard accept else {
            return refuse(handshakeID, peer: entry.peer, reason: .refused, failure: .rejected(.refused))
        }
        return confirm(&entry, session: session, schedule: schedule)
    }

    private mutating func confirm(_ entry: inout Entry, session: EstablishedSession, schedule: KeySchedule) -> [Action] {
        let signature = configuration.authentication.identity?.sign(schedule.signed(.responder)) ?? []
        let bytes = HandshakeMessage.confirm(.init(id: entry.commit.id, proof: .init(signature: signature,
                                                                                      mac: schedule.mac(.responder))))
            .serialized()
        entry.stage = .answered(bytes)
        entries[entry.commit.id] = entry
        statistics.established += 1
        return [.send(bytes, to: entry.peer), .established(session, from: entry.peer)]
    }

    /// Refuses a handshake: the reject is sent (and repeated to retransmissions).
    private mutating func refuse(_ id: UInt64, peer: Peer, reason: RejectReason, failure: HandshakeFailure) -> [Action] {
        statistics.refused += 1
        let bytes = HandshakeMessage.reject(id: id, reason: reason).serialized()
        if var entry = entries[id] {
            entry.stage = .answered(bytes)
            entries[id] = entry
        }
        return [.send(bytes, to: peer), .refused(from: peer, failure)]
    }

    /// Forgets handshakes that were abandoned, answered long ago, or waited
    /// too long for a person.
    public mutating func poll(now: MonotonicTime) {
        entries = entries.filter { _, entry in
            switch entry.stage {
            case .replied: now.since(entry.createdAt) < .seconds(10)
            case .awaitingConfirmation: now.since(entry.createdAt) < configuration.confirmationTimeout
            case .answered: now.since(entry.createdAt) < .seconds(30)
            }
        }
    }

    private mutating func makeRoom() {
        guard entries.count >= configuration.maximumPending else { return }
        let waiting = { (entry: Entry) -> Bool in
            if case .awaitingConfirmation = entry.stage { return true }
            return false
        }
        let victim = entries.filter { !waiting($0.value) }.min { $0.value.createdAt < $1.value.createdAt }
            ?? entries.min { $0.value.createdAt < $1.value.createdAt }
        if let victim { entries[victim.key] = nil }
    }

    /// The hint for a peer whose SRTP this end cannot authenticate.
    public static var retry: [UInt8] { HandshakeMessage.retry.serialized() }
}

/// A new peer waiting for a person to compare the short authentication
/// string shown at both ends.
public struct PeerConfirmationRequest: Sendable, Equatable {
    /// The handshake asking (to answer the right one).
    public let handshakeID: UInt64
    /// The name the new peer gives.
    public let peerName: String
    /// Its identity key's fingerprint.
    public let fingerprint: PeerFingerprint
    /// The code both ends show, for people to compare.
    public let shortAuthenticationString: String
}
