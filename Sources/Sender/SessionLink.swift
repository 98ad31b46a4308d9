import Dispatch
internal import ShareHandshake
internal import ShareSRTP
internal import ShareWire
import Synchronization
internal import ShareSync
internal import ShareBase

/// The sender's end of the session: runs the handshake (feedback thread
/// only), says whether media may flow (any thread), and decides when to
/// handshake again: when the receiver says it holds no session for what we
/// send (it restarted) and its feedback has stopped, or when feedback has
/// been silent for `silenceLimit`. Until the first session is up nothing is
/// sent but the handshake; the old keys go on while a new one is made. A
/// receiver never met before gets nothing until this end's person (or the
/// policy) confirms it.
final class SessionLink: @unchecked Sendable {
    // Safe: `initiator`, the times and the held session belong to the
    // feedback thread; `ready` is atomic and `answers` a mutex.
    enum Outcome {
        case established(EstablishedSession)
        case verifying(receiver: String, code: String)
        case failed(HandshakeFailure)
        /// An attempt ended on something unauthenticated (or stalled): the
        /// next begins after `retryIn`.
        case setback(HandshakeFailure, retryIn: Duration)
    }

    private var initiator: HandshakeInitiator?
    private let store: IdentityStore?
    private let confirmation: ConfirmationPolicy
    /// Media may flow: a session is (or the static key was) established.
    let ready: Atomic<Bool>
    private var lastAttempt: UInt64 = 0
    /// When the first handshake began, whether the receiver has answered
    /// any, and whether the host was told it has not.
    private var firstAttempt: UInt64?
    private var answered = false
    private var toldUnanswered = false
    /// How long the first handshake goes unanswered before the host hears of it.
    static let unansweredNotice: UInt64 = 3_000_000_000
    /// When authenticated RTCP last came from the receiver (monotonic ns).
    private var lastFeedback: UInt64 = 0
    private var announced = false
    /// The handshake whose confirmation was asked for, those confirmed, and
    /// a session agreed on the wire that waits for its confirmation.
    private var asked: UInt64?
    private var confirmed: Set<UInt64> = []
    private var held: EstablishedSession?
    private let answers = Locked<[(id: UInt64, accept: Bool)]>([])
    private let questions = OneQuestionAtATime()
    static let silenceLimit: UInt64 = 2_000_000_000
    static let retryHoldoff: UInt64 = 1_000_000_000
    /// After a setback: when the next attempt begins, and the wait after the
    /// next setback (doubling from 1 s to 8 s, back to 1 s on a session).
    private var nextAttemptAt: UInt64?
    private var setbackWait: UInt64 = SessionLink.firstSetbackWait
    static let firstSetbackWait: UInt64 = 1_000_000_000
    static let longestSetbackWait: UInt64 = 8_000_000_000

    init(keying: SessionKeying, name: String? = nil, profile: SRTPProfile, instance: UInt64, confirmation: ConfirmationPolicy) {
        self.confirmation = confirmation
        switch keying {
        case .staticKey:
            initiator = nil
            store = nil
            ready = Atomic(true)
        case .handshake(let authentication, let store):
            let configuration = HandshakeInitiator.Configuration(authentication: authentication, name: name ?? keying.localName,
                                                                 profile: profile, instance: instance)
            initiator = HandshakeInitiator(configuration: configuration)
            self.store = store
            ready = Atomic(false)
        }
    }

    /// False with a static key (the interop mode).
    var usesHandshake: Bool { initiator != nil }

    /// Whether a handshake is under way or waits for this end's person:
    /// its retransmissions and answers need polling often (feedback thread).
    var isBusy: Bool {
        guard let initiator else { return false }
        return !ready.load(ordering: .relaxed) || initiator.isInProgress || held != nil
    }

    /// A new handshake (the first, or after the receiver went quiet).
    func begin(now: UInt64, send: ([UInt8]) -> Void) {
        guard initiator != nil else { return }
        lastAttempt = now
        if firstAttempt == nil { firstAttempt = now }
        announced = false
        send(initiator!.start(now: MonotonicTime(nanoseconds: now)))
    }

    /// Authenticated RTCP arrived: the receiver holds our session.
    func heardFeedback(at now: UInt64) { lastFeedback = now }

    /// A handshake message from the receiver.
    func handle(_ bytes: ArraySlice<UInt8>, now: UInt64, send: ([UInt8]) -> Void) -> Outcome? {
        guard initiator != nil, let message = HandshakeMessage(parsing: bytes) else { return nil }
        answered = true
        if case .retry = message {
            // Unauthenticated: acted on only when the receiver's feedback has
            // stopped too, and at most once a second.
            if ready.load(ordering: .relaxed), !initiator!.isInProgress, now &- lastFeedback > 300_000_000,
               now &- lastAttempt > Self.retryHoldoff {
                begin(now: now, send: send)
            }
            return nil
        }
        return apply(initiator!.handle(message, now: MonotonicTime(nanoseconds: now)), now: now, send: send)
    }

    /// True once, when nothing has answered the first handshake for
    /// `unansweredNotice`: the receiver is not running, or the path drops
    /// UDP (the handshake goes on being retried either way).
    func firstHandshakeUnanswered(now: UInt64) -> Bool {
        guard initiator != nil, !answered, !toldUnanswered, !ready.load(ordering: .relaxed), let firstAttempt,
              now &- firstAttempt >= Self.unansweredNotice else { return false }
        toldUnanswered = true
        return true
    }

    /// Retransmissions, people's answers, and a new handshake after a long silence.
    func poll(now: UInt64, send: ([UInt8]) -> Void) -> Outcome? {
        guard initiator != nil else { return nil }
        for answer in answers.withLock({ list in defer { list.removeAll() }; return list }) {
            guard answer.accept else {
                if let held, held.handshakeID == answer.id { self.held = nil }
                return .failed(.declined(peer: initiator!.responder?.name ?? "the receiver"))
            }
            confirmed.insert(answer.id)
            if let session = held, session.handshakeID == answer.id {
                held = nil
                return established(session, now: now)
            }
        }
        if !initiator!.isInProgress, let due = nextAttemptAt, now >= due {
            nextAttemptAt = nil
            begin(now: now, send: send)
            return nil
        }
        if ready.load(ordering: .relaxed), !initiator!.isInProgress, nextAttemptAt == nil,
           now &- max(lastFeedback, lastAttempt) > Self.silenceLimit {
            begin(now: now, send: send)
            return nil
        }
        return apply(initiator!.poll(now: MonotonicTime(nanoseconds: now)), now: now, send: send)
    }

    private func apply(_ actions: [HandshakeInitiator.Action], now: UInt64, send: ([UInt8]) -> Void) -> Outcome? {
        var outcome: Outcome?
        for action in actions {
            switch action {
            case .send(let bytes): send(bytes)
            case .established(let session):
                if session.mode == .identity, session.trust == .new, !confirmed.contains(session.handshakeID) {
                    held = session
                } else {
                    outcome = established(session, now: now)
                }
            case .failed(let failure): outcome = .failed(failure)
            case .setback(let failure):
                nextAttemptAt = now &+ setbackWait
                outcome = .setback(failure, retryIn: .nanoseconds(Int64(setbackWait)))
                setbackWait = min(setbackWait * 2, Self.longestSetbackWait)
            }
        }
        if let request = initiator!.confirmationRequest, asked != request.handshakeID {
            asked = request.handshakeID
            switch confirmation {
            case .acceptNew: confirmed.insert(request.handshakeID)
            case .refuseNew: return .failed(.declined(peer: request.peerName))
            case .ask(let ask):
                // One question at a time: while one is open, a later
                // attempt's session is held unconfirmed (and times out).
                _ = questions.put(request, to: ask) { [answers] accept in
                    answers.withLock { $0.append((request.handshakeID, accept)) }
                }
            }
        }
        if outcome == nil, !announced, let responder = initiator!.responder, let code = initiator!.shortAuthenticationString,
           initiator!.configuration.authentication.mode == .identity {
            announced = true
            return .verifying(receiver: responder.name, code: code)
        }
        return outcome
    }

    private func established(_ session: EstablishedSession, now: UInt64) -> Outcome {
        initiator!.configuration.authentication.rememberNewPeer(of: session, in: store)
        lastFeedback = now
        setbackWait = Self.firstSetbackWait
        return .established(session)
    }
}
