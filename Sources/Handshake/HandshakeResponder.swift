internal import Crypto
internal import Foundation
public import ShareSRTP
internal import ShareWire
public import ShareBase

/// The receiver's side of the handshake, sans-IO and generic over how a
/// peer's address is written.
///
/// What a stranger can make it do is bounded at each step:
/// - a commit is answered with a stateless cookie until it echoes one, so
///   commits from forged addresses hold nothing; commits that do are
///   limited per source host and in all, and the handshakes held are
///   bounded (one younger than a round trip is never pushed out);
/// - its keys are opened only to an initiator that revealed keys matching
///   its commitment, and to a new identity only a few times a minute: each
///   such opening lets the other end compute the short code, so one that is
///   then abandoned is counted and reported (`abandoned`);
/// - keys that break a commitment, or a proof that does not verify, change
///   nothing: the genuine message can still follow;
/// - at most one person is asked at a time.
/// Answers to retransmissions are replayed from what was stored, never
/// computed again.
public struct HandshakeResponder<Peer: Hashable & Sendable>: @unchecked Sendable {
    // Safe: the ephemeral private keys are values only this struct uses.
    public enum Action: Sendable {
        case send([UInt8], to: Peer)
        /// A new peer: ask a person to compare the string, then `answer`.
        case confirmationNeeded(PeerConfirmationRequest)
        case established(EstablishedSession, from: Peer)
        /// A handshake that failed here (for logs; the peer was told).
        case refused(from: Peer, HandshakeFailure)
        /// A new peer that could compute the code stopped there: someone
        /// may be trying codes. `count` such so far.
        case abandoned(peerName: String, from: Peer, count: Int)
    }

    public struct Configuration: Sendable {
        public var authentication: HandshakeAuthentication
        public var name: String
        public var profiles: Set<SRTPProfile> = Set(SRTPProfile.allCases)
        /// New handshakes kept per second in all, and the burst allowed.
        public var commitsPerSecond = 20.0
        public var commitBurst = 20.0
        /// New handshakes kept per second from one source host.
        public var commitsPerSourcePerSecond = 4.0
        /// Handshakes held at once.
        public var maximumPending = 16
        /// A handshake younger than this is never pushed out for another:
        /// it is waiting for its next message, a round trip away.
        public var protectedAge: Duration = .seconds(1)
        public var confirmationTimeout: Duration = .seconds(120)
        /// Openings to new identities: a burst, then one per `firstMeetingInterval`.
        public var firstMeetingBurst = 3.0
        public var firstMeetingInterval: Duration = .seconds(10)
        /// How long after opening to a new identity its proof may take.
        public var abandonAfter: Duration = .seconds(5)
        /// The bytes a cookie binds (the whole address) and the source host
        /// a limit counts (the address without its port).
        public var address: @Sendable (Peer) -> [UInt8] = { Array(String(describing: $0).utf8) }
        public var host: @Sendable (Peer) -> [UInt8] = { Array(String(describing: $0).utf8) }

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
        /// Commits answered with a cookie (no state kept).
        public var cookiesSent = 0
        /// Commits not answered: over a rate limit, or no room.
        public var rateLimited = 0
        public var refused = 0
        public var established = 0
        /// Out of turn, unknown id, wrong peer, keys that break a commitment.
        public var ignored = 0
        /// New identities that stopped after the code could be computed.
        public var abandoned = 0
        /// New identities turned away because they came too often.
        public var firstMeetingsLimited = 0
    }

    private enum Stage {
        case replied
        /// Keys opened; waiting for the initiator's proof.
        case opened(open: [UInt8], schedule: KeySchedule, session: EstablishedSession, initiatorKeys: [UInt8])
        case awaitingConfirmation(EstablishedSession, schedule: KeySchedule)
        /// Answered for good: the confirm or reject to repeat.
        case answered([UInt8])
    }

    private struct Entry {
        var peer: Peer
        var commit: HandshakeMessage.Commit
        var reply: HandshakeMessage.Reply
        var ephemeral: Curve25519.KeyAgreement.PrivateKey
        /// This end's keys and name, as its open carries them.
        var keys: HandshakeMessage.Keys
        var createdAt: MonotonicTime
        var stage: Stage
        var stageAt: MonotonicTime
        /// Whether the initiator's identity is new here (with identities).
        var firstMeeting = false
        /// Whether a bad proof was refused already (reported once).
        var refusedProof = false

        var isWaitingForAPerson: Bool {
            if case .awaitingConfirmation = stage { return true }
            return false
        }
    }

    public var configuration: Configuration
    public private(set) var statistics = Statistics()
    private var entries: [UInt64: Entry] = [:]
    private var admission: CommitAdmission
    private var firstMeetings: RateLimiter

    public init(configuration: Configuration) {
        self.configuration = configuration
        admission = CommitAdmission(.init(perSecond: configuration.commitsPerSecond, burst: configuration.commitBurst,
                                          perSourcePerSecond: configuration.commitsPerSourcePerSecond))
        firstMeetings = RateLimiter(rate: 1 / configuration.firstMeetingInterval.seconds, burst: configuration.firstMeetingBurst)
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
        case (.reveal(let keys), .replied):
            return reveal(keys, entry: &entry, now: now)
        case (.reveal(let keys), .opened(let open, _, _, let initiatorKeys)) where keys.covered == initiatorKeys:
            return [.send(open, to: peer)]
        case (.finish(let finish), .opened(_, let schedule, let session, _)):
            return self.finish(finish, entry: &entry, schedule: schedule, session: session)
        case (.finish, .answered(let bytes)):
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
            guard entry.peer == peer, entry.commit.canonical == commit.canonical else {
                statistics.ignored += 1
                return []
            }
            return [.send(HandshakeMessage.reply(entry.reply).serialized(), to: peer)]
        }
        let limits = CommitAdmission.Limits(perSecond: configuration.commitsPerSecond, burst: configuration.commitBurst,
                                            perSourcePerSecond: configuration.commitsPerSourcePerSecond)
        switch admission.consider(id: commit.id, cookie: commit.cookie, address: configuration.address(peer),
                                  host: configuration.host(peer), limits: limits, now: now) {
        case .cookie(let cookie):
            statistics.cookiesSent += 1
            return [.send(HandshakeMessage.cookie(id: commit.id, cookie: cookie).serialized(), to: peer)]
        case .limited:
            statistics.rateLimited += 1
            return []
        case .admitted:
            statistics.commits += 1
        }
        if commit.mode != configuration.authentication.mode {
            return refuse(commit.id, peer: peer, reason: .modeMismatch, failure: .rejected(.modeMismatch))
        }
        guard let profile = SRTPProfile(handshakeCode: commit.suite), configuration.profiles.contains(profile) else {
            return refuse(commit.id, peer: peer, reason: .unsupportedSuite, failure: .rejected(.unsupportedSuite))
        }
        guard makeRoom(now: now) else {
            statistics.rateLimited += 1
            return []
        }
        let ephemeral = Curve25519.KeyAgreement.PrivateKey()
        let keys = HandshakeMessage.Keys(id: commit.id, ephemeral: Array(ephemeral.publicKey.rawRepresentation),
                                         identity: configuration.authentication.identity?.publicKey
                                             ?? [UInt8](repeating: 0, count: 32),
                                         name: configuration.name)
        let reply = HandshakeMessage.Reply(id: commit.id, nonce: randomBytes(32),
                                           commitment: KeySchedule.commitment(of: keys.covered, by: .responder))
        entries[commit.id] = Entry(peer: peer, commit: commit, reply: reply, ephemeral: ephemeral, keys: keys, createdAt: now,
                                   stage: .replied, stageAt: now)
        return [.send(HandshakeMessage.reply(reply).serialized(), to: peer)]
    }

    /// The initiator's keys: checked against its commitment, then this end's opened.
    private mutating func reveal(_ keys: HandshakeMessage.Keys, entry: inout Entry, now: MonotonicTime) -> [Action] {
        guard KeySchedule.constantTimeEqual(KeySchedule.commitment(of: keys.covered, by: .initiator), entry.commit.commitment),
              let peerKey = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: keys.ephemeral),
              let shared = try? entry.ephemeral.sharedSecretFromKeyAgreement(with: peerKey)
        else {
            // Not the keys committed to: a forgery changes nothing.
            statistics.ignored += 1
            return []
        }
        let trust = configuration.authentication.known?.trust(name: keys.name, key: keys.identity) ?? .known
        entry.firstMeeting = entry.commit.mode == .identity && trust == .new
        if entry.firstMeeting, !firstMeetings.take(now: now) {
            statistics.firstMeetingsLimited += 1
            entries[entry.commit.id] = nil
            return [.send(HandshakeMessage.reject(id: entry.commit.id, reason: .busy, mac: nil).serialized(), to: entry.peer)]
        }
        let schedule = KeySchedule(
            sharedSecret: shared, preSharedKey: configuration.authentication.preSharedKey, initiatorNonce: entry.commit.nonce,
            responderNonce: entry.reply.nonce,
            transcript: KeySchedule.transcript(commit: entry.commit, reply: entry.reply, initiatorKeys: keys.covered,
                                               responderKeys: entry.keys.covered))
        let profile = SRTPProfile(handshakeCode: entry.commit.suite)!
        let srtp = schedule.srtpKeys(profile: profile)
        let identityMode = entry.commit.mode == .identity
        let session = EstablishedSession(
            keys: SRTPSessionKeys(outbound: srtp.responder, inbound: srtp.initiator), instance: entry.commit.instance,
            handshakeID: entry.commit.id, mode: entry.commit.mode, peerName: keys.name,
            peerIdentity: identityMode ? keys.identity : nil, trust: trust,
            shortAuthenticationString: schedule.shortAuthenticationString)
        let open = HandshakeMessage.open(entry.keys).serialized()
        entry.stage = .opened(open: open, schedule: schedule, session: session, initiatorKeys: keys.covered)
        entry.stageAt = now
        entries[entry.commit.id] = entry
        return [.send(open, to: entry.peer)]
    }

    /// The initiator's proof: the session, once a person agrees to a new peer.
    private mutating func finish(_ finish: HandshakeMessage.Proved, entry: inout Entry, schedule: KeySchedule,
                                 session: EstablishedSession) -> [Action] {
        let identityMode = entry.commit.mode == .identity
        guard KeySchedule.constantTimeEqual(finish.proof.mac, schedule.mac(.initiator)),
              !identityMode || (session.peerIdentity.map {
                  LocalIdentity.verify(signature: finish.proof.signature, of: schedule.signed(.initiator), by: $0)
              } ?? false)
        else {
            // Either the key files differ or this is a forgery: say so, but
            // keep waiting for a proof that verifies.
            statistics.ignored += 1
            let reject = HandshakeMessage.reject(id: entry.commit.id, reason: .authenticationFailed, mac: nil).serialized()
            guard !entry.refusedProof else { return [.send(reject, to: entry.peer)] }
            entry.refusedProof = true
            entries[entry.commit.id] = entry
            statistics.refused += 1
            return [.send(reject, to: entry.peer), .refused(from: entry.peer, .authenticationFailed)]
        }
        if replacedInstances.contains(entry.commit.instance) {
            // Told once the sender has proved itself, with the MAC: it stops
            // rather than take the receiver back, and no forgery can stop it.
            return refuse(entry.commit.id, peer: entry.peer, reason: .replaced, schedule: schedule, failure: .rejected(.replaced))
        }
        if case .changed(let remembered) = configuration.authentication.known?.trust(name: session.peerName,
                                                                                     key: session.peerIdentity ?? []) {
            return refuse(entry.commit.id, peer: entry.peer, reason: .identityChanged, schedule: schedule,
                          failure: .identityChanged(name: session.peerName, remembered: PeerFingerprint(remembered),
                                                    presented: PeerFingerprint(session.peerIdentity ?? [])))
        }
        guard session.trust == .new else { return confirm(&entry, session: session, schedule: schedule) }
        if entries.values.contains(where: \.isWaitingForAPerson) {
            return refuse(entry.commit.id, peer: entry.peer, reason: .busy, schedule: schedule, failure: .rejected(.busy))
        }
        entry.stage = .awaitingConfirmation(session, schedule: schedule)
        entries[entry.commit.id] = entry
        return [.confirmationNeeded(PeerConfirmationRequest(
            handshakeID: entry.commit.id, peerName: session.peerName, fingerprint: PeerFingerprint(session.peerIdentity ?? []),
            shortAuthenticationString: session.shortAuthenticationString))]
    }

    /// A person's answer to `confirmationNeeded`.
    public mutating func answer(handshakeID: UInt64, accept: Bool, now: MonotonicTime) -> [Action] {
        guard var entry = entries[handshakeID], case .awaitingConfirmation(let session, let schedule) = entry.stage else {
            return []
        }
        guard accept else {
            return refuse(handshakeID, peer: entry.peer, reason: .refused, schedule: schedule, failure: .rejected(.refused))
        }
        return confirm(&entry, session: session, schedule: schedule)
    }

    /// No person could be asked now (another question is still open): the
    /// sender is told the receiver is busy and tries again later.
    public mutating func postpone(handshakeID: UInt64, now: MonotonicTime) -> [Action] {
        guard let entry = entries[handshakeID], case .awaitingConfirmation(_, let schedule) = entry.stage else { return [] }
        return refuse(handshakeID, peer: entry.peer, reason: .busy, schedule: schedule, failure: .rejected(.busy))
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

    /// Refuses a handshake: the reject is sent (and repeated to
    /// retransmissions), with the session's MAC when `schedule` is known, so
    /// the initiator can tell it from a forgery.
    private mutating func refuse(_ id: UInt64, peer: Peer, reason: RejectReason, schedule: KeySchedule? = nil,
                                 failure: HandshakeFailure) -> [Action] {
        statistics.refused += 1
        let bytes = HandshakeMessage.reject(id: id, reason: reason, mac: schedule?.rejectMAC(reason)).serialized()
        if var entry = entries[id] {
            entry.stage = .answered(bytes)
            entries[id] = entry
        }
        return [.send(bytes, to: peer), .refused(from: peer, failure)]
    }

    /// Forgets handshakes that were abandoned, answered long ago, or waited
    /// too long for a person; reports new identities that stopped once they
    /// could compute the code.
    public mutating func poll(now: MonotonicTime) -> [Action] {
        var actions: [Action] = []
        for (id, entry) in entries {
            let keep: Bool
            switch entry.stage {
            case .replied: keep = now.since(entry.createdAt) < .seconds(10)
            case .opened(_, _, let session, _):
                keep = now.since(entry.stageAt) < configuration.abandonAfter
                if !keep, entry.firstMeeting {
                    statistics.abandoned += 1
                    actions.append(.abandoned(peerName: session.peerName, from: entry.peer, count: statistics.abandoned))
                }
            case .awaitingConfirmation: keep = now.since(entry.createdAt) < configuration.confirmationTimeout
            case .answered: keep = now.since(entry.createdAt) < .seconds(30)
            }
            if !keep { entries[id] = nil }
        }
        return actions
    }

    /// The earliest instant `poll` may have something to report.
    public var nextDeadline: MonotonicTime? {
        entries.values.compactMap { entry -> MonotonicTime? in
            if case .opened = entry.stage, entry.firstMeeting { return entry.stageAt + configuration.abandonAfter }
            return nil
        }.min()
    }

    /// Makes room for one more handshake: the oldest that is neither
    /// waiting for a person nor younger than a round trip goes. False when
    /// none may go.
    private mutating func makeRoom(now: MonotonicTime) -> Bool {
        guard entries.count >= configuration.maximumPending else { return true }
        let victim = entries.filter { !$0.value.isWaitingForAPerson && now.since($0.value.createdAt) >= configuration.protectedAge }
            .min { $0.value.createdAt < $1.value.createdAt }
        guard let victim else { return false }
        entries[victim.key] = nil
        return true
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

    /// A request as a responder (or initiator) makes it; public for hosts that test their prompts.
    public init(handshakeID: UInt64, peerName: String, fingerprint: PeerFingerprint, shortAuthenticationString: String) {
        self.handshakeID = handshakeID
        self.peerName = peerName
        self.fingerprint = fingerprint
        self.shortAuthenticationString = shortAuthenticationString
    }
}
