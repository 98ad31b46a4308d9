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
final class SessionLink: Sendable {
    enum Outcome {
        case established(EstablishedSession)
        case verifying(receiver: String, code: String)
        case failed(HandshakeFailure)
        /// An attempt ended on something unauthenticated (or stalled): the
        /// next begins after `retryIn`.
        case setback(HandshakeFailure, retryIn: Duration)
    }

    /// How media gets its keys: one static key, ready from the start, or a
    /// handshake with each receiver, run by the feedback thread.
    private enum Keying {
        case staticKey
        case handshake(ThreadBound<HandshakeRun>)
    }

    private let keying: Keying
    /// Media may flow: a session is (or the static key was) established.
    let ready: Atomic<Bool>

    /// How long the first handshake goes unanswered before the host hears of it.
    static let unansweredNotice: Duration = .seconds(3)
    /// Feedback silent this long (with a session up): handshake again.
    static let silenceLimit: Duration = .seconds(2)
    /// The least time between handshakes begun on a receiver's unauthenticated `retry`.
    static let retryHoldoff: Duration = .seconds(1)
    /// The wait after a setback: doubling from the first to the longest.
    static let firstSetbackWait: Duration = .seconds(1)
    static let longestSetbackWait: Duration = .seconds(8)

    init(keying: SessionKeying, name: String? = nil, profile: SRTPProfile, instance: UInt64, confirmation: ConfirmationPolicy) {
        switch keying {
        case .staticKey:
            self.keying = .staticKey
            ready = Atomic(true)
        case .handshake(let authentication, let store):
            let configuration = HandshakeInitiator.Configuration(authentication: authentication, name: name ?? keying.localName,
                                                                 profile: profile, instance: instance)
            self.keying = .handshake(ThreadBound(HandshakeRun(initiator: HandshakeInitiator(configuration: configuration),
                                                              store: store, confirmation: confirmation)))
            ready = Atomic(false)
        }
    }

    /// The handshakes, the feedback thread's alone.
    private var run: ThreadBound<HandshakeRun>? {
        guard case .handshake(let run) = keying else { return nil }
        return run
    }

    /// False with a static key (the interop mode).
    var usesHandshake: Bool { run != nil }

    /// Whether a handshake is under way or waits for this end's person:
    /// its retransmissions and answers need polling often (feedback thread).
    var isBusy: Bool {
        let ready = ready.load(ordering: .relaxed)
        return run?.withValue { $0.isBusy(ready: ready) } ?? false
    }

    /// A new handshake (the first, or after the receiver went quiet).
    func begin(now: MonotonicTime, send: ([UInt8]) -> Void) { run?.withValue { $0.begin(now: now, send: send) } }

    /// Authenticated RTCP arrived: the receiver holds our session.
    func heardFeedback(at now: MonotonicTime) { run?.withValue { $0.lastFeedback = now } }

    /// A handshake message from the receiver.
    func handle(_ bytes: ArraySlice<UInt8>, now: MonotonicTime, send: ([UInt8]) -> Void) -> Outcome? {
        let ready = ready.load(ordering: .relaxed)
        return run?.withValue { $0.handle(bytes, now: now, ready: ready, send: send) }
    }

    /// True once, when nothing has answered the first handshake for
    /// `unansweredNotice`: the receiver is not running, or the path drops
    /// UDP (the handshake goes on being retried either way).
    func firstHandshakeUnanswered(now: MonotonicTime) -> Bool {
        !ready.load(ordering: .relaxed) && run?.withValue({ $0.firstUnanswered(now: now) }) == true
    }

    /// Retransmissions, people's answers, and a new handshake after a long silence.
    func poll(now: MonotonicTime, send: ([UInt8]) -> Void) -> Outcome? {
        let ready = ready.load(ordering: .relaxed)
        return run?.withValue { $0.poll(now: now, ready: ready, send: send) }
    }
}

/// One receiver's handshakes, as the feedback thread runs them: the
/// initiator, when attempts began and were answered, the confirmations
/// asked for and given, and the waits after setbacks.
private struct HandshakeRun {
    private var initiator: HandshakeInitiator
    private let store: IdentityStore?
    private let confirmation: ConfirmationPolicy
    private var lastAttempt = MonotonicTime.zero
    /// When the first handshake began, whether the receiver has answered
    /// any, and whether the host was told it has not.
    private var firstAttempt: MonotonicTime?
    private var answered = false
    private var toldUnanswered = false
    /// When authenticated RTCP last came from the receiver.
    var lastFeedback = MonotonicTime.zero
    private var announced = false
    /// The handshake whose confirmation was asked for, those confirmed, and
    /// a session agreed on the wire that waits for its confirmation.
    private var asked: UInt64?
    private var confirmed: Set<UInt64> = []
    private var held: EstablishedSession?
    /// A person's replies, from whichever thread asked them.
    private let answers = Locked<[(id: UInt64, accept: Bool)]>([])
    private let questions = OneQuestionAtATime()
    /// After a setback: when the next attempt begins, and the wait after the
    /// next setback (doubling from 1 s to 8 s, back to 1 s on a session).
    private var nextAttemptAt: MonotonicTime?
    private var setbackWait = SessionLink.firstSetbackWait

    init(initiator: HandshakeInitiator, store: IdentityStore?, confirmation: ConfirmationPolicy) {
        self.initiator = initiator
        self.store = store
        self.confirmation = confirmation
    }

    func isBusy(ready: Bool) -> Bool { !ready || initiator.isInProgress || held != nil }

    mutating func begin(now: MonotonicTime, send: ([UInt8]) -> Void) {
        lastAttempt = now
        if firstAttempt == nil { firstAttempt = now }
        announced = false
        send(initiator.start(now: now))
    }

    mutating func handle(_ bytes: ArraySlice<UInt8>, now: MonotonicTime, ready: Bool, send: ([UInt8]) -> Void) -> SessionLink.Outcome? {
        guard let message = HandshakeMessage(parsing: bytes) else { return nil }
        answered = true
        if case .retry = message {
            // Unauthenticated: acted on only when the receiver's feedback has
            // stopped too, and at most once a second.
            if ready, !initiator.isInProgress, now.since(lastFeedback) > .milliseconds(300),
               now.since(lastAttempt) > SessionLink.retryHoldoff {
                begin(now: now, send: send)
            }
            return nil
        }
        return apply(initiator.handle(message, now: now), now: now, send: send)
    }

    mutating func firstUnanswered(now: MonotonicTime) -> Bool {
        guard !answered, !toldUnanswered, let firstAttempt,
              now.since(firstAttempt) >= SessionLink.unansweredNotice else { return false }
        toldUnanswered = true
        return true
    }

    mutating func poll(now: MonotonicTime, ready: Bool, send: ([UInt8]) -> Void) -> SessionLink.Outcome? {
        for answer in answers.withLock({ list in defer { list.removeAll() }; return list }) {
            guard answer.accept else {
                if let held, held.handshakeID == answer.id { self.held = nil }
                return .failed(.declined(peer: initiator.responder?.name ?? "the receiver"))
            }
            confirmed.insert(answer.id)
            if let session = held, session.handshakeID == answer.id {
                held = nil
                return established(session, now: now)
            }
        }
        if !initiator.isInProgress, let due = nextAttemptAt, now >= due {
            nextAttemptAt = nil
            begin(now: now, send: send)
            return nil
        }
        if ready, !initiator.isInProgress, nextAttemptAt == nil, now.since(max(lastFeedback, lastAttempt)) > SessionLink.silenceLimit {
            begin(now: now, send: send)
            return nil
        }
        return apply(initiator.poll(now: now), now: now, send: send)
    }

    private mutating func apply(_ actions: [HandshakeInitiator.Action], now: MonotonicTime, send: ([UInt8]) -> Void) -> SessionLink.Outcome? {
        var outcome: SessionLink.Outcome?
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
                nextAttemptAt = now + setbackWait
                outcome = .setback(failure, retryIn: setbackWait)
                setbackWait = min(setbackWait * 2, SessionLink.longestSetbackWait)
            }
        }
        if let request = initiator.confirmationRequest, asked != request.handshakeID {
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
        // The code is shown for a receiver new to this sender (one it
        // already knows knows it too, and asks nobody).
        if outcome == nil, !announced, initiator.confirmationRequest != nil, let responder = initiator.responder,
           let code = initiator.shortAuthenticationString, initiator.configuration.authentication.mode == .identity {
            announced = true
            return .verifying(receiver: responder.name, code: code)
        }
        return outcome
    }

    private mutating func established(_ session: EstablishedSession, now: MonotonicTime) -> SessionLink.Outcome {
        initiator.configuration.authentication.rememberNewPeer(of: session, in: store)
        lastFeedback = now
        setbackWait = SessionLink.firstSetbackWait
        return .established(session)
    }
}
