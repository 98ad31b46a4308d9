import Foundation
import ShareHandshake
import ShareSRTP
import ShareWire
import Testing
import TestSupport

/// Runs an initiator and a responder against each other in memory, with
/// time passed by hand, and lets a test drop, record or replace messages.
struct HandshakePair {
    var initiator: HandshakeInitiator
    var responder: HandshakeResponder<Int>
    var now = MonotonicTime(nanoseconds: 1_000_000_000)
    var initiatorOutcome: [HandshakeInitiator.Action] = []
    var responderEvents: [HandshakeResponder<Int>.Action] = []
    /// Every message on the wire, in order, with who sent it.
    var wire: [(fromInitiator: Bool, bytes: [UInt8])] = []

    init(initiator: HandshakeAuthentication, responder: HandshakeAuthentication, initiatorName: String = "alice@a",
         responderName: String = "bob@b", instance: UInt64 = 7, profile: SRTPProfile = .aes128CmHmacSha1_80) {
        self.initiator = HandshakeInitiator(configuration: .init(authentication: initiator, name: initiatorName,
                                                                 profile: profile, instance: instance))
        self.responder = HandshakeResponder(configuration: .init(authentication: responder, name: responderName))
    }

    /// Starts and delivers messages until nothing is in flight.
    mutating func run(answer: Bool? = nil) {
        var toResponder = [initiator.start(now: now)]
        var toInitiator: [[UInt8]] = []
        for _ in 0..<20 {
            guard !toResponder.isEmpty || !toInitiator.isEmpty else { break }
            for bytes in toResponder {
                wire.append((true, bytes))
                for action in responder.handle(HandshakeMessage(parsing: bytes[...])!, from: 1, now: now) {
                    responderEvents.append(action)
                    switch action {
                    case .send(let reply, _): toInitiator.append(reply)
                    case .confirmationNeeded(let request):
                        if let answer {
                            for next in responder.answer(handshakeID: request.handshakeID, accept: answer, now: now) {
                                responderEvents.append(next)
                                if case .send(let reply, _) = next { toInitiator.append(reply) }
                            }
                        }
                    default: break
                    }
                }
            }
            toResponder = []
            for bytes in toInitiator {
                wire.append((false, bytes))
                for action in initiator.handle(HandshakeMessage(parsing: bytes[...])!, now: now) {
                    initiatorOutcome.append(action)
                    if case .send(let next) = action { toResponder.append(next) }
                }
            }
            toInitiator = []
            now = now + .milliseconds(1)
        }
    }

    var initiatorSession: EstablishedSession? {
        initiatorOutcome.compactMap { if case .established(let s) = $0 { s } else { nil } }.first
    }

    var initiatorFailure: HandshakeFailure? {
        initiatorOutcome.compactMap { if case .failed(let f) = $0 { f } else { nil } }.first
    }

    var responderSession: EstablishedSession? {
        responderEvents.compactMap { if case .established(let s, _) = $0 { s } else { nil } }.first
    }

    var confirmationRequest: PeerConfirmationRequest? {
        responderEvents.compactMap { if case .confirmationNeeded(let r) = $0 { r } else { nil } }.first
    }

    var responderFailure: HandshakeFailure? {
        responderEvents.compactMap { if case .refused(_, let f) = $0 { f } else { nil } }.first
    }
}

func identity(_ name: String) throws -> LocalIdentity { try LocalIdentity.generate(name: name) }

@Suite struct HandshakeTests {
    let secret = Array("a key file's secret, 30 bytes!".utf8)

    @Test func preSharedKeyAgreesOnMirroredKeysPerDirection() throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        pair.run()
        let sender = try #require(pair.initiatorSession)
        let receiver = try #require(pair.responderSession)
        #expect(sender.keys.outbound == receiver.keys.inbound)
        #expect(sender.keys.inbound == receiver.keys.outbound)
        #expect(sender.keys.outbound != sender.keys.inbound, "each direction has its own key")
        #expect(sender.shortAuthenticationString == receiver.shortAuthenticationString)
        #expect(receiver.instance == 7 && receiver.peerName == "alice@a" && sender.peerName == "bob@b")
        #expect(pair.wire.count == 4, "commit, reply, reveal, confirm")
    }

    /// The profile the sender asks for is the one both ends key: AES-128 or
    /// AES-256, counter mode or GCM; what one end protects the other opens.
    @Test(arguments: SRTPProfile.allCases)
    func theProfileTheSenderAsksForIsTheOneBothEndsKey(profile: SRTPProfile) throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret), profile: profile)
        pair.run()
        let sender = try #require(pair.initiatorSession)
        let receiver = try #require(pair.responderSession)
        #expect(sender.keys.profile == profile && receiver.keys.profile == profile)
        #expect(sender.keys.outbound.inlineKeySalt().count == (profile.masterLength + 2) / 3 * 4)
        let protecting = try SRTPContext(keying: sender.keys.outbound, direction: .outbound)
        let opening = try SRTPContext(keying: receiver.keys.inbound, direction: .inbound)
        var packet = PacketBuffer(RTPPacket(payloadType: 96, sequenceNumber: 9, timestamp: 1, ssrc: 5, payload: [1, 2, 3][...])
            .serialized())
        try protecting.protect(&packet)
        try opening.unprotect(&packet)
        #expect(try RTPPacket(parsing: packet.bytes).payload.elementsEqual([1, 2, 3]))
    }

    @Test func everySessionHasFreshKeys() throws {
        var first = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        var second = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        first.run()
        second.run()
        let a = try #require(first.initiatorSession), b = try #require(second.initiatorSession)
        #expect(a.keys.outbound != b.keys.outbound && a.keys.inbound != b.keys.inbound)
    }

    @Test func differentKeyFilesAreRefusedAtBothEnds() {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(Array("another secret of 30 bytes!!!!".utf8)))
        pair.run()
        #expect(pair.initiatorSession == nil && pair.responderSession == nil)
        #expect(pair.responderFailure == .authenticationFailed)
        #expect(pair.initiatorFailure == .rejected(.authenticationFailed))
    }

    @Test func modesThatDifferAreRefused() throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .identity(try identity("bob@b"), known: KnownPeers()))
        pair.run()
        #expect(pair.initiatorFailure == .rejected(.modeMismatch))
    }

    @Test func firstMeetingAsksAndBothEndsShowTheSameString() throws {
        let alice = try identity("alice@a"), bob = try identity("bob@b")
        var pair = HandshakePair(initiator: .identity(alice, known: KnownPeers()), responder: .identity(bob, known: KnownPeers()))
        pair.run(answer: true)
        let request = try #require(pair.confirmationRequest)
        #expect(request.peerName == "alice@a" && request.fingerprint == PeerFingerprint(alice.publicKey))
        #expect(pair.initiator.shortAuthenticationString == nil, "finished")
        let sender = try #require(pair.initiatorSession), receiver = try #require(pair.responderSession)
        #expect(request.shortAuthenticationString == sender.shortAuthenticationString)
        #expect(sender.shortAuthenticationString.count == 4)
        #expect(sender.trust == .new && receiver.trust == .new)
        #expect(receiver.peerIdentity == alice.publicKey && sender.peerIdentity == bob.publicKey)
    }

    @Test func aPersonsNoRefusesTheSession() throws {
        var pair = HandshakePair(initiator: .identity(try identity("alice@a"), known: KnownPeers()),
                                 responder: .identity(try identity("bob@b"), known: KnownPeers()))
        pair.run(answer: false)
        #expect(pair.initiatorFailure == .rejected(.refused) && pair.responderSession == nil)
    }

    @Test func knownPeersConnectWithoutAsking() throws {
        let alice = try identity("alice@a"), bob = try identity("bob@b")
        var pair = HandshakePair(initiator: .identity(alice, known: KnownPeers(["bob@b": bob.publicKey])),
                                 responder: .identity(bob, known: KnownPeers(["alice@a": alice.publicKey])))
        pair.run(answer: nil)
        #expect(pair.confirmationRequest == nil)
        #expect(pair.initiatorSession?.trust == .known && pair.responderSession?.trust == .known)
    }

    @Test func aChangedIdentityIsRefusedAtEitherEnd() throws {
        let alice = try identity("alice@a"), bob = try identity("bob@b"), mallory = try identity("alice@a")
        // The receiver knows alice@a by another key.
        var atReceiver = HandshakePair(initiator: .identity(mallory, known: KnownPeers(["bob@b": bob.publicKey])),
                                       responder: .identity(bob, known: KnownPeers(["alice@a": alice.publicKey])))
        atReceiver.run(answer: true)
        guard case .identityChanged(let name, let remembered, let presented) = atReceiver.responderFailure else {
            Issue.record("expected a changed identity, got \(String(describing: atReceiver.responderFailure))")
            return
        }
        #expect(name == "alice@a" && remembered == PeerFingerprint(alice.publicKey) && presented == PeerFingerprint(mallory.publicKey))
        #expect(atReceiver.initiatorFailure == .rejected(.identityChanged))
        #expect("\(atReceiver.responderFailure!)".contains("CHANGED"))
        // The sender knows bob@b by another key.
        let impostor = try identity("bob@b")
        var atSender = HandshakePair(initiator: .identity(alice, known: KnownPeers(["bob@b": bob.publicKey])),
                                     responder: .identity(impostor, known: KnownPeers(["alice@a": alice.publicKey])))
        atSender.run(answer: true)
        guard case .identityChanged = atSender.initiatorFailure else {
            Issue.record("expected a changed identity at the sender")
            return
        }
        #expect(atSender.responderSession == nil)
    }

    /// A relay that answers the sender as a receiver and calls the receiver as
    /// a sender, with keys of its own: the two strings differ.
    @Test func aManInTheMiddleShowsDifferentStrings() throws {
        var differing = 0
        for _ in 0..<8 {
            let alice = try identity("alice@a"), bob = try identity("bob@b"), mallory = try identity("mallory@m")
            var toSender = HandshakePair(initiator: .identity(alice, known: KnownPeers()),
                                         responder: .identity(mallory, known: KnownPeers()), responderName: "bob@b")
            var toReceiver = HandshakePair(initiator: .identity(mallory, known: KnownPeers()),
                                           responder: .identity(bob, known: KnownPeers()), initiatorName: "alice@a")
            toSender.run(answer: true)
            toReceiver.run(answer: true)
            let atSender = try #require(toSender.initiatorSession?.shortAuthenticationString)
            let atReceiver = try #require(toReceiver.confirmationRequest?.shortAuthenticationString)
            if atSender != atReceiver { differing += 1 }
        }
        #expect(differing == 8)
    }

    @Test func aRevealThatBreaksItsCommitmentIsRefused() throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        let commit = pair.initiator.start(now: pair.now)
        var replies: [[UInt8]] = []
        for case .send(let bytes, _) in pair.responder.handle(HandshakeMessage(parsing: commit[...])!, from: 1, now: pair.now) {
            replies.append(bytes)
        }
        var reveal: HandshakeMessage?
        for case .send(let bytes) in pair.initiator.handle(HandshakeMessage(parsing: replies[0][...])!, now: pair.now) {
            reveal = HandshakeMessage(parsing: bytes[...])
        }
        guard case .reveal(var changed) = reveal else {
            Issue.record("no reveal")
            return
        }
        changed.ephemeral[0] ^= 1
        let actions = pair.responder.handle(.reveal(changed), from: 1, now: pair.now)
        #expect(actions.contains { if case .refused(_, .authenticationFailed) = $0 { true } else { false } })
        #expect(!actions.contains { if case .established = $0 { true } else { false } })
    }

    /// A recorded handshake replayed to a fresh responder gets a new reply
    /// (a new nonce and key) and the recorded reveal then fails.
    @Test func aRecordedHandshakeCannotBeReplayed() {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        pair.run()
        var fresh = HandshakeResponder<Int>(configuration: .init(authentication: .preSharedKey(secret), name: "bob@b"))
        var established = false
        for (fromInitiator, bytes) in pair.wire where fromInitiator {
            for action in fresh.handle(HandshakeMessage(parsing: bytes[...])!, from: 1, now: pair.now) {
                if case .established = action { established = true }
            }
        }
        #expect(!established)
        #expect(fresh.statistics.refused == 1)
    }

    /// The initiator times the path before any media flows: commit to
    /// reply; when the commit went twice, from its last copy (the reply may
    /// answer the first: the round trip is at least that, and never
    /// overstated).
    @Test func theInitiatorTimesTheRoundTripOfItsCommit() throws {
        /// The commit leaves at 0 (again at `repeatAt`, if given); the reply
        /// reaches the initiator at `replyAt` (ms).
        func establish(repeatAt: Int64?, replyAt: Int64) throws -> EstablishedSession {
            var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
            let start = pair.now
            let commit = pair.initiator.start(now: start)
            if let repeatAt {
                guard case .send = pair.initiator.poll(now: start + .milliseconds(repeatAt)).first
                else { throw TestEnvironmentError("no retransmission") }
            }
            guard case .send(let reply, _) = pair.responder.handle(HandshakeMessage(parsing: commit[...])!, from: 1,
                                                                   now: start + .milliseconds(replyAt / 2)).first
            else { throw TestEnvironmentError("no reply") }
            var now = start + .milliseconds(replyAt)
            guard case .send(let reveal) = pair.initiator.handle(HandshakeMessage(parsing: reply[...])!, now: now).first
            else { throw TestEnvironmentError("no reveal") }
            now = now + .milliseconds(40)
            let confirm = pair.responder.handle(HandshakeMessage(parsing: reveal[...])!, from: 1, now: now)
            guard case .send(let confirmBytes, _) = confirm.first else { throw TestEnvironmentError("no confirm") }
            // The confirm comes back late (it may wait for a person): the
            // commit's round trip is the one kept.
            now = now + .milliseconds(300)
            let outcome = pair.initiator.handle(HandshakeMessage(parsing: confirmBytes[...])!, now: now)
            guard let session = outcome.compactMap({ if case .established(let s) = $0 { s } else { nil } }).first
            else { throw TestEnvironmentError("not established") }
            return session
        }
        #expect(try establish(repeatAt: nil, replyAt: 80).roundTrip == .milliseconds(80))
        // The first copy lost, the second answered after 80 ms.
        #expect(try establish(repeatAt: 200, replyAt: 280).roundTrip == .milliseconds(80))
        // A 300 ms path: the reply to the first copy comes after the repeat;
        // what is known is that the round trip is at least 100 ms.
        #expect(try establish(repeatAt: 200, replyAt: 300).roundTrip == .milliseconds(100))
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        pair.run()
        #expect(pair.responderSession?.roundTrip == nil, "the responder times nothing")
    }

    /// A sender instance another one took the receiver over from is refused
    /// as replaced at its commit (it stops instead of taking it back); any
    /// other instance handshakes as before.
    @Test func aReplacedInstanceIsRefusedAtItsCommit() throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret), instance: 41)
        pair.responder.replacedInstances = [41]
        pair.run()
        #expect(pair.initiatorSession == nil)
        #expect(pair.initiatorFailure == .rejected(.replaced), "\(String(describing: pair.initiatorFailure))")
        #expect(pair.responderFailure == .rejected(.replaced))
        #expect(pair.responder.statistics.refused == 1 && pair.wire.count == 2, "commit, reject")
        var other = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret), instance: 42)
        other.responder.replacedInstances = [41]
        other.run()
        #expect(other.initiatorSession != nil)
    }

    @Test func lostMessagesAreRetransmittedAndAnsweredFromWhatWasStored() throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        var now = pair.now
        let commit = pair.initiator.start(now: now)
        // The commit is lost; the retransmission comes after 200 ms.
        #expect(pair.initiator.poll(now: now + .milliseconds(100)).isEmpty)
        now = now + .milliseconds(200)
        guard case .send(let again) = pair.initiator.poll(now: now).first else {
            Issue.record("no retransmission")
            return
        }
        #expect(again == commit)
        let reply = pair.responder.handle(HandshakeMessage(parsing: again[...])!, from: 1, now: now)
        let replyAgain = pair.responder.handle(HandshakeMessage(parsing: again[...])!, from: 1, now: now)
        guard case .send(let first, _) = reply.first, case .send(let second, _) = replyAgain.first else {
            Issue.record("no reply")
            return
        }
        #expect(first == second, "a repeated commit gets the stored reply")
        guard case .send(let reveal) = pair.initiator.handle(HandshakeMessage(parsing: first[...])!, now: now).first else {
            Issue.record("no reveal")
            return
        }
        let confirm = pair.responder.handle(HandshakeMessage(parsing: reveal[...])!, from: 1, now: now)
        #expect(confirm.count == 2)
        // The confirm is lost: the reveal comes again and gets the same confirm, no second session.
        let repeated = pair.responder.handle(HandshakeMessage(parsing: reveal[...])!, from: 1, now: now)
        #expect(repeated.count == 1)
        guard case .send(let confirmBytes, _) = repeated.first else { return }
        let outcome = pair.initiator.handle(HandshakeMessage(parsing: confirmBytes[...])!, now: now)
        #expect(outcome.contains { if case .established = $0 { true } else { false } })
        #expect(pair.responder.statistics.established == 1)
    }

    @Test func messagesFromAnotherAddressOrHandshakeChangeNothing() throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        let commit = pair.initiator.start(now: pair.now)
        guard case .send(let reply, _) = pair.responder.handle(HandshakeMessage(parsing: commit[...])!, from: 1, now: pair.now).first,
              case .send(let reveal) = pair.initiator.handle(HandshakeMessage(parsing: reply[...])!, now: pair.now).first
        else {
            Issue.record("no handshake")
            return
        }
        #expect(pair.responder.handle(HandshakeMessage(parsing: reveal[...])!, from: 2, now: pair.now).isEmpty,
                "the reveal from another address is ignored")
        #expect(pair.initiator.handle(.reject(id: 12345, reason: .refused), now: pair.now).isEmpty)
        #expect(pair.initiator.isInProgress)
    }

    @Test func aFloodOfCommitsIsRateLimited() {
        var responder = HandshakeResponder<Int>(configuration: .init(authentication: .preSharedKey(secret), name: "bob@b"))
        var answered = 0
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        for index in 0..<2000 {
            var initiator = HandshakeInitiator(configuration: .init(authentication: .preSharedKey(secret), name: "x",
                                                                    profile: .aes128CmHmacSha1_80, instance: UInt64(index)))
            let commit = initiator.start(now: now)
            answered += responder.handle(HandshakeMessage(parsing: commit[...])!, from: index, now: now).count
            now = now + .milliseconds(1)  // 1000 a second, for 2 s
        }
        // 20 at once, then 20 a second.
        #expect(answered <= 20 + 2 * 20 + 1)
        #expect(answered >= 50)
        #expect(responder.statistics.rateLimited == 2000 - answered)
        #expect(responder.pendingCount <= 16)
    }

    @Test func messagesRoundTripAndMalformedOnesAreRefused() throws {
        var pair = HandshakePair(initiator: .identity(try identity("alice@a"), known: KnownPeers()),
                                 responder: .identity(try identity("bob@b"), known: KnownPeers()))
        pair.run(answer: true)
        #expect(pair.wire.count == 4)
        for (_, bytes) in pair.wire {
            let message = try #require(HandshakeMessage(parsing: bytes[...]))
            #expect(message.serialized() == bytes)
            for cut in [1, 4, 12, bytes.count - 1] where cut < bytes.count {
                #expect(HandshakeMessage(parsing: bytes[..<cut]) == nil)
            }
            #expect(HandshakeMessage(parsing: (bytes + [0])[...]) == nil, "trailing bytes")
            var version = bytes
            version[2] = 9
            #expect(HandshakeMessage(parsing: version[...]) == nil)
        }
        #expect(HandshakeMessage.retry.serialized().count == 12)
        // No answer is larger than the message that asked for it.
        let sizes = pair.wire.map(\.bytes.count)
        #expect(sizes[1] <= sizes[0] && sizes[3] <= sizes[2])
        var random = SeededGenerator(seed: 11)
        for _ in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if !bytes.isEmpty { bytes[0] = HandshakeMessage.marker }
            if bytes.count > 3 { bytes[1] = 0x48; bytes[2] = 1; bytes[3] = UInt8.random(in: 1...6, using: &random) }
            if let message = HandshakeMessage(parsing: bytes[...]) { #expect(message.serialized() == bytes) }
        }
    }

    @Test func theIdentityStoreKeepsItsFilesPrivate() throws {
        let dir = try TemporaryDirectory()
        let store = IdentityStore(directory: dir.path("config/share"))
        let first = try store.identity(name: "alice@a")
        let again = try store.identity()
        #expect(first.publicKey == again.publicKey && again.name == "alice@a")
        #expect(try store.identity(name: "other@a").name == "other@a")
        var info = stat()
        stat(dir.path("config/share"), &info)
        #expect(info.st_mode & 0o777 == 0o700)
        stat(dir.path("config/share/identity"), &info)
        #expect(info.st_mode & 0o777 == 0o600)
        try store.remember(name: "bob@b", key: [UInt8](repeating: 5, count: 32))
        try store.remember(name: "carol@c", key: [UInt8](repeating: 6, count: 32))
        try store.remember(name: "bob@b", key: [UInt8](repeating: 7, count: 32))
        let known = try store.knownPeers()
        #expect(known.keys.count == 2 && known.trust(name: "bob@b", key: [UInt8](repeating: 7, count: 32)) == .known)
        stat(store.knownPeersPath, &info)
        #expect(info.st_mode & 0o777 == 0o600)
        chmod(dir.path("config/share/identity"), 0o644)
        #expect(throws: IdentityError.self) { try store.identity() }
        chmod(store.knownPeersPath, 0o666)
        #expect(throws: IdentityError.self) { try store.knownPeers() }
    }

    @Test func descriptionsNeverShowKeys() throws {
        var pair = HandshakePair(initiator: .preSharedKey(secret), responder: .preSharedKey(secret))
        pair.run()
        let session = try #require(pair.initiatorSession)
        let inline = session.keys.outbound.inlineKeySalt()
        for text in ["\(session)", String(reflecting: session), "\(session.keys)", "\(try identity("alice@a"))"] {
            #expect(!text.contains(inline) && !text.contains("inline"), "\(text)")
        }
        var dumped = ""
        dump(session, to: &dumped)
        #expect(!dumped.contains(inline))
        // The key file's secret and the identity's private key: printed or dumped, never shown.
        let dir = try TemporaryDirectory()
        let store = IdentityStore(directory: dir.path("share"))
        let alice = try store.identity(name: "alice@a")
        let file = try String(contentsOfFile: dir.path("share/identity"), encoding: .utf8)
        let privateText = try #require(file.split(separator: "\n").first { $0.hasPrefix("ed25519 ") }).dropFirst(8)
        let secretText = Base64.encode(secret)
        for keying in [SessionKeying.handshake(.preSharedKey(secret), store: nil),
                       .handshake(.identity(alice, known: KnownPeers()), store: nil)] {
            var text = ""
            dump(keying, to: &text)
            for printed in [text, "\(keying)", String(reflecting: keying)] {
                #expect(!printed.contains(secretText) && !printed.contains(privateText) && !printed.contains("97, 32, 107"), "\(printed)")
            }
        }
    }
}
