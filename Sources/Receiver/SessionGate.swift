internal import ShareHandshake
internal import ShareSRTP
internal import ShareSession
internal import ShareTransport
internal import ShareWire
internal import ShareSync
internal import ShareBase

/// Which sender the receiver listens to (network thread only). With a
/// handshake: answers handshakes, and after one is authenticated gives its
/// keys to the session and pins the sender's address; media from anywhere
/// else, or before any session, is counted and dropped (and the source told,
/// at a bounded rate, that it should handshake). A new sender instance
/// starts a new session; the same instance handshaking again only renews
/// the keys. The last new sender wins: one taken over from is refused
/// (`replaced`, so it stops instead of taking the receiver back when its
/// feedback stops) while the sender that took over is still sending. With
/// a static key: the sender's address is learned from the
/// first authenticated packet, and forgotten at its BYE.
final class SessionGate {
    enum Event {
        /// A session began (`renewed`: the same sender's new keys).
        case started(EstablishedSession, renewed: Bool)
        case refused(sender: String?, reason: String)
        case confirm(PeerConfirmationRequest)
        /// A new sender stopped once it could compute the code.
        case abandoned(sender: String, count: Int)
    }

    struct Counters {
        /// Media with no session, or from an address other than the session's.
        var withoutSession = 0
        var foreignSource = 0
        var hintsSent = 0
        var malformedHandshakes = 0
        /// Sessions begun (a new sender instance each), and key renewals.
        var sessions = 0
        var renewals = 0
    }

    private let session: ReceiveSession
    private var responder: HandshakeResponder<SocketAddress>?
    private let store: IdentityStore?
    /// The pinned sender, and its instance (nil with a static key).
    private(set) var peer: SocketAddress?
    private var instance: UInt64?
    /// Instances a newer one took over from (the last 16), and when the
    /// pinned sender's media last came: a taken-over instance is refused
    /// while that is under `liveness` ago.
    private var replaced: [UInt64] = []
    private var lastFromPeer: MonotonicTime?
    static let liveness: Duration = .seconds(3)
    private(set) var counters = Counters()
    /// Answers of people to confirmation requests, handed in from their thread.
    /// (nil: no one could be asked now; the sender is told to try again later.)
    /// (The gate is the network thread's; this mutex is the one part of it
    /// other threads reach.)
    let answers = Locked<[(id: UInt64, accept: Bool?)]>([])
    /// The static key, to start over with after a BYE.
    private var staticKeys: SRTPSessionKeys?
    /// Hints to strangers: five a second at most.
    private var hints = RateLimiter(rate: 5, burst: 5)

    init(session: ReceiveSession, keying: SessionKeying, name: String? = nil) {
        self.session = session
        switch keying {
        case .staticKey(let keying):
            responder = nil
            store = nil
            staticKeys = .symmetric(keying)
        case .handshake(let authentication, let store):
            var configuration = HandshakeResponder<SocketAddress>.Configuration(authentication: authentication,
                                                                                name: name ?? keying.localName)
            configuration.address = { $0.bytes }
            configuration.host = { $0.hostBytes }
            responder = HandshakeResponder(configuration: configuration)
            self.store = store
        }
    }

    var hasSession: Bool { responder == nil || instance != nil }

    /// A handshake message from `source`.
    func handshake(_ bytes: ArraySlice<UInt8>, from source: SocketAddress, now: MonotonicTime,
                   send: ([UInt8], SocketAddress) -> Void) -> [Event] {
        // With a static key a handshake is not RTP: malformed, like any stray datagram.
        guard responder != nil, let message = HandshakeMessage(parsing: bytes) else {
            counters.malformedHandshakes += 1
            return []
        }
        let live = lastFromPeer.map { now.since($0) < Self.liveness } ?? false
        responder!.replacedInstances = live ? Set(replaced) : []
        return apply(responder!.handle(message, from: source, now: now), now: now, send: send)
    }

    /// Answers from people, and forgetting of stale handshakes.
    func poll(now: MonotonicTime, send: ([UInt8], SocketAddress) -> Void) -> [Event] {
        guard responder != nil else { return [] }
        var events = apply(responder!.poll(now: now), now: now, send: send)
        let answered = answers.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for answer in answered {
            let actions = answer.accept.map { responder!.answer(handshakeID: answer.id, accept: $0, now: now) }
                ?? responder!.postpone(handshakeID: answer.id, now: now)
            events += apply(actions, now: now, send: send)
        }
        return events
    }

    private func apply(_ actions: [HandshakeResponder<SocketAddress>.Action], now: MonotonicTime,
                       send: ([UInt8], SocketAddress) -> Void) -> [Event] {
        var events: [Event] = []
        for action in actions {
            switch action {
            case .send(let bytes, let to): send(bytes, to)
            case .confirmationNeeded(let request): events.append(.confirm(request))
            case .abandoned(let name, _, let count): events.append(.abandoned(sender: name, count: count))
            case .refused(_, let failure):
                events.append(.refused(sender: nil, reason: failure.description))
            case .established(let established, let from):
                responder!.configuration.authentication.rememberNewPeer(of: established, in: store)
                let renewed = instance == established.instance
                do {
                    if renewed { try session.rekey(established.keys) } else { try session.restart(established.keys) }
                } catch {
                    events.append(.refused(sender: established.peerName, reason: "\(error)"))
                    continue
                }
                if !renewed, let old = instance {
                    replaced.removeAll { $0 == old }
                    replaced.append(old)
                    if replaced.count > 16 { replaced.removeFirst() }
                }
                replaced.removeAll { $0 == established.instance }
                instance = established.instance
                peer = from
                lastFromPeer = now
                if renewed { counters.renewals += 1 } else { counters.sessions += 1 }
                events.append(.started(established, renewed: renewed))
            }
        }
        return events
    }

    /// Whether a media datagram from `source` goes to the session. A
    /// stranger (or anyone before a session) is told, at most five times a
    /// second, that it should handshake.
    func admits(_ source: SocketAddress, now: MonotonicTime, send: ([UInt8], SocketAddress) -> Void) -> Bool {
        // A static key pins nothing: other tools send each stream from a
        // socket of its own (ffmpeg does); authentication is the filter.
        guard responder != nil else { return true }
        if instance != nil, peer == source {
            lastFromPeer = now
            return true
        }
        if instance == nil { counters.withoutSession += 1 } else { counters.foreignSource += 1 }
        if hints.take(now: now) {
            counters.hintsSent += 1
            send(HandshakeMessage.retry.serialized(), source)
        }
        return false
    }

    /// With a static key: the first authenticated packet names the sender.
    func authenticated(_ source: SocketAddress) {
        if responder == nil, peer == nil { peer = source }
    }

    /// The sender said BYE: its session is over; wait for the next.
    func senderLeft() throws(SRTPError) {
        peer = nil
        instance = nil
        lastFromPeer = nil
        if responder == nil, let keys = staticKeys { try session.restart(keys) }
    }


    /// Handshakes refused here, commits not answered for the rate limit,
    /// and new senders that stopped once they could compute the code.
    var handshakes: (refused: Int, rateLimited: Int, abandoned: Int, cookies: Int) {
        let s = responder?.statistics
        return (s?.refused ?? 0, s?.rateLimited ?? 0, s?.abandoned ?? 0, s?.cookiesSent ?? 0)
    }
}
