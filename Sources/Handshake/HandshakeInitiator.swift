internal import Crypto
internal import Foundation
public import ShareSRTP
internal import ShareWire
public import ShareBase

/// The sender's side of the handshake, sans-IO: `start` gives the commit to
/// send, `handle` takes what came back, `poll` retransmits on time.
///
/// commit (→ cookie → commit again) → reply → reveal → open → finish →
/// confirm, after which both ends hold the same per-direction SRTP keys.
///
/// Nothing unauthenticated ends anything for good. Stray or forged messages
/// (another handshake's id, keys that break a commitment, a proof that does
/// not verify) change nothing. A reject without the session's MAC ends the
/// attempt only if nothing genuine follows it within `rejectGrace` (a forged
/// one sent ahead of the genuine answer changes nothing); then, as for an
/// identity that changed or an attempt that stalls, it is a `setback`: this
/// attempt is over, and the owner starts another. Only a reject carrying
/// the session's MAC (a person refused, or the receiver saw this end's
/// identity change) is a `failure`.
public struct HandshakeInitiator: @unchecked Sendable {
    // Safe: the ephemeral private key is a value only this struct uses.
    public enum Action: Sendable {
        case send([UInt8])
        case established(EstablishedSession)
        /// Authenticated: the receiver refused this sender. Final.
        case failed(HandshakeFailure)
        /// Not authenticated, or the attempt stalled: try again later.
        case setback(HandshakeFailure)
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
        /// How long an attempt may wait for the receiver's keys once it has
        /// its reply (a receiver that answers at all answers in a round trip).
        public var openTimeout: Duration = .seconds(5)
        /// How long a reject without the session's MAC waits for something
        /// genuine to overtake it before it ends the attempt.
        public var rejectGrace: Duration = .seconds(1)

        public init(authentication: HandshakeAuthentication, name: String, profile: SRTPProfile, instance: UInt64) {
            self.authentication = authentication
            self.name = name
            self.profile = profile
            self.instance = instance
        }
    }

    /// One attempt's progress; each step keeps what the next needs.
    private enum State {
        case idle
        case committed
        case revealed(HandshakeMessage.Reply)
        case proved(session: EstablishedSession, responderIdentity: [UInt8], schedule: KeySchedule)
        case finished
    }

    /// What one attempt chose: its id, keys, nonce and commit.
    private struct Attempt {
        var id: UInt64 = 0
        var ephemeral = Curve25519.KeyAgreement.PrivateKey()
        var nonce: [UInt8] = []
        var keys: [UInt8] = []
        var commit = HandshakeMessage.Commit(id: 0, instance: 0, suite: 0, mode: .preSharedKey, nonce: [], commitment: [],
                                             cookie: HandshakeMessage.noCookie)
        /// When a cookie was last taken: at most one every `cookieInterval`
        /// (a forged cookie only costs one more commit; a flood of them, no more).
        var cookieTakenAt: MonotonicTime?
        var roundTrip: Duration?
    }

    /// Retransmission of the last message sent.
    private struct Retransmission {
        var message: [UInt8] = []
        var sentAt = MonotonicTime(nanoseconds: 0)
        var interval: Duration = .zero
    }

    /// Its known peers may be updated between attempts (a new peer remembered).
    public var configuration: Configuration
    private var state = State.idle
    private var attempt = Attempt()
    private var retransmission = Retransmission()
    private var stepAt = MonotonicTime(nanoseconds: 0)
    /// A reject without the session's MAC: the setback it becomes at `due`
    /// unless the attempt succeeds first.
    private var unverifiedReject: (failure: HandshakeFailure, due: MonotonicTime)?
    /// Messages ignored: another handshake's, unverifiable, out of turn.
    public private(set) var ignored = 0

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The shortest time between two cookies taken in one attempt: a commit
    /// that waits long (a busy receiver) takes the fresh cookie it is given
    /// when its old one has expired.
    static let cookieInterval: Duration = .milliseconds(500)

    /// This attempt's id.
    public var id: UInt64 { attempt.id }

    /// The short authentication string, once the receiver's keys arrived.
    public var shortAuthenticationString: String? {
        if case .proved(let session, _, _) = state { return session.shortAuthenticationString }
        return nil
    }

    /// The responder's name and whether it is new to us, once its keys arrived.
    public var responder: (name: String, trust: PeerTrust)? {
        if case .proved(let session, _, _) = state { return (session.peerName, session.trust) }
        return nil
    }

    /// With identities, a responder never met before: what to ask this
    /// end's person (compare the code) before sending it anything.
    public var confirmationRequest: PeerConfirmationRequest? {
        guard case .proved(let session, let identity, _) = state, session.mode == .identity, session.trust == .new
        else { return nil }
        return PeerConfirmationRequest(handshakeID: id, peerName: session.peerName, fingerprint: PeerFingerprint(identity),
                                       shortAuthenticationString: session.shortAuthenticationString)
    }

    /// True from `start` until the session is established or the attempt ended.
    public var isInProgress: Bool {
        switch state {
        case .committed, .revealed, .proved: true
        case .idle, .finished: false
        }
    }

    /// Begins a new attempt (fresh id, ephemeral key and nonce) and returns the commit.
    public mutating func start(now: MonotonicTime) -> [UInt8] {
        var fresh = Attempt()
        fresh.id = UInt64.random(in: 1...UInt64.max)
        fresh.nonce = randomBytes(32)
        let identity = configuration.authentication.identity?.publicKey ?? [UInt8](repeating: 0, count: 32)
        fresh.keys = HandshakeMessage.keys(Array(fresh.ephemeral.publicKey.rawRepresentation), identity, configuration.name)
        fresh.commit = .init(id: fresh.id, instance: configuration.instance, suite: configuration.profile.handshakeCode,
                             mode: configuration.authentication.mode, nonce: fresh.nonce,
                             commitment: KeySchedule.commitment(of: fresh.keys, by: .initiator), cookie: HandshakeMessage.noCookie)
        attempt = fresh
        state = .committed
        stepAt = now
        unverifiedReject = nil
        return send(HandshakeMessage.commit(fresh.commit).serialized(), now: now)
    }

    private mutating func send(_ bytes: [UInt8], now: MonotonicTime) -> [UInt8] {
        retransmission = Retransmission(message: bytes, sentAt: now, interval: configuration.firstRetransmit)
        return bytes
    }

    /// The next instant `poll` has work.
    public var nextDeadline: MonotonicTime? {
        let resend = min(retransmission.sentAt + retransmission.interval, unverifiedReject?.due ?? .init(nanoseconds: .max))
        switch state {
        case .committed: return resend
        case .revealed: return min(resend, stepAt + configuration.openTimeout)
        case .proved: return min(resend, stepAt + configuration.confirmationTimeout)
        case .idle, .finished: return nil
        }
    }

    /// Retransmits what is unanswered; ends an attempt that stalled.
    public mutating func poll(now: MonotonicTime) -> [Action] {
        if isInProgress, let reject = unverifiedReject, now >= reject.due {
            state = .finished
            return [.setback(reject.failure)]
        }
        switch state {
        case .idle, .finished: return []
        case .revealed where now >= stepAt + configuration.openTimeout:
            state = .finished
            return [.setback(.timedOut)]
        case .proved where now >= stepAt + configuration.confirmationTimeout:
            state = .finished
            return [.setback(.timedOut)]
        default: break
        }
        guard now >= retransmission.sentAt + retransmission.interval else { return [] }
        retransmission.sentAt = now
        retransmission.interval = min(retransmission.interval * 2, configuration.longestRetransmit)
        return [.send(retransmission.message)]
    }

    public mutating func handle(_ message: HandshakeMessage, now: MonotonicTime) -> [Action] {
        guard message.id == id, isInProgress else {
            if case .retry = message {} else { ignored += 1 }
            return []
        }
        switch (message, state) {
        case (.cookie(_, let cookie), .committed):
            guard cookie != attempt.commit.cookie,
                  attempt.cookieTakenAt.map({ now.since($0) >= Self.cookieInterval }) ?? true else { break }
            attempt.cookieTakenAt = now
            attempt.commit.cookie = cookie
            return [.send(send(HandshakeMessage.commit(attempt.commit).serialized(), now: now))]
        case (.reply(let reply), .committed):
            // The round trip is timed from the commit's last copy: never overstated.
            attempt.roundTrip = now.since(retransmission.sentAt)
            state = .revealed(reply)
            stepAt = now
            let reveal = HandshakeMessage.Keys(id: id, ephemeral: Array(attempt.ephemeral.publicKey.rawRepresentation),
                                               identity: configuration.authentication.identity?.publicKey
                                                   ?? [UInt8](repeating: 0, count: 32),
                                               name: configuration.name)
            return [.send(send(HandshakeMessage.reveal(reveal).serialized(), now: now))]
        case (.open(let keys), .revealed(let reply)):
            return open(keys, reply: reply, now: now)
        case (.confirm(let confirm), .proved(let session, let responderIdentity, let schedule)):
            guard KeySchedule.constantTimeEqual(confirm.proof.mac, schedule.mac(.responder)),
                  session.mode == .preSharedKey
                    || LocalIdentity.verify(signature: confirm.proof.signature, of: schedule.signed(.responder),
                                            by: responderIdentity)
            else { break }
            state = .finished
            return [.established(session)]
        case (.reject(_, let reason, let mac), let current):
            // Only a reject bearing this session's MAC says more than "try again".
            if case .proved(_, _, let schedule) = current, let mac, KeySchedule.constantTimeEqual(mac, schedule.rejectMAC(reason)) {
                state = .finished
                return [reason == .busy ? .setback(.rejected(reason)) : .failed(.rejected(reason))]
            }
            if unverifiedReject == nil { unverifiedReject = (.rejected(reason), now + configuration.rejectGrace) }
            return []
        default:
            break
        }
        ignored += 1
        return []
    }

    /// The responder's keys: checked against its commitment, then the
    /// session's keys and this end's proof.
    private mutating func open(_ keys: HandshakeMessage.Keys, reply: HandshakeMessage.Reply, now: MonotonicTime) -> [Action] {
        guard KeySchedule.constantTimeEqual(KeySchedule.commitment(of: keys.covered, by: .responder), reply.commitment),
              let peer = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: keys.ephemeral),
              let shared = try? attempt.ephemeral.sharedSecretFromKeyAgreement(with: peer)
        else {
            ignored += 1
            return []
        }
        var trust = PeerTrust.new
        if let known = configuration.authentication.known {
            trust = known.trust(name: keys.name, key: keys.identity)
            if case .changed(let remembered) = trust {
                // Nothing proves who sent this: refuse it, and try again.
                state = .finished
                return [.send(HandshakeMessage.reject(id: id, reason: .identityChanged, mac: nil).serialized()),
                        .setback(.identityChanged(name: keys.name, remembered: PeerFingerprint(remembered),
                                                  presented: PeerFingerprint(keys.identity)))]
            }
        }
        let transcript = KeySchedule.transcript(commit: attempt.commit, reply: reply, initiatorKeys: attempt.keys,
                                                responderKeys: keys.covered)
        let schedule = KeySchedule(sharedSecret: shared, preSharedKey: configuration.authentication.preSharedKey,
                                   initiatorNonce: attempt.nonce, responderNonce: reply.nonce, transcript: transcript)
        let signature = configuration.authentication.identity?.sign(schedule.signed(.initiator)) ?? []
        let srtp = schedule.srtpKeys(profile: configuration.profile)
        let session = EstablishedSession(
            keys: SRTPSessionKeys(outbound: srtp.initiator, inbound: srtp.responder), instance: configuration.instance,
            handshakeID: id, mode: configuration.authentication.mode, peerName: keys.name,
            peerIdentity: configuration.authentication.mode == .identity ? keys.identity : nil, trust: trust,
            shortAuthenticationString: schedule.shortAuthenticationString, roundTrip: attempt.roundTrip)
        state = .proved(session: session, responderIdentity: keys.identity, schedule: schedule)
        stepAt = now
        let finish = HandshakeMessage.finish(.init(id: id, proof: .init(signature: signature, mac: schedule.mac(.initiator))))
        return [.send(send(finish.serialized(), now: now))]
    }
}
