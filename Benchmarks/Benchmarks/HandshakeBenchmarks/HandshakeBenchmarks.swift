import Benchmark
import ShareHandshake
import ShareWire
import ShareBase

/// One complete handshake, both ends in memory: commit, cookie, commit,
/// reply, reveal, open, finish, confirm, with the X25519, HKDF and (with
/// identities) Ed25519 work of each end. Returns whether both ends agreed.
func handshake(_ initiatorAuthentication: HandshakeAuthentication, _ responderAuthentication: HandshakeAuthentication) -> Bool {
    var initiator = HandshakeInitiator(configuration: .init(authentication: initiatorAuthentication, name: "sender",
                                                            profile: .aes128CmHmacSha1_80, instance: 1))
    var responder = HandshakeResponder<Int>(configuration: .init(authentication: responderAuthentication, name: "receiver"))
    let now = MonotonicTime(nanoseconds: 1)
    var toResponder = [initiator.start(now: now)]
    var established = 0
    while let bytes = toResponder.popLast() {
        for case .send(let reply, _) in responder.handle(HandshakeMessage(parsing: bytes[...])!, from: 0, now: now) {
            for action in initiator.handle(HandshakeMessage(parsing: reply[...])!, now: now) {
                switch action {
                case .send(let next): toResponder.append(next)
                case .established: established += 1
                case .failed, .setback: return false
                }
            }
        }
    }
    return established == 1
}

let benchmarks: @Sendable () -> Void = {
    /// p90s are committed under `Thresholds/`; `make bench` fails past these
    /// tolerances (the machine is shared: wall time +60%). All of it runs on
    /// one thread, so wall time is its CPU time (the CPU metric ticks in 10 ms).
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(3), maxIterations: 10_000,
        thresholds: [.wallClock: .init(relative: [.p90: 60]),
                     .mallocCountTotal: .init(relative: [.p90: 20], absolute: [.p90: 50])])
    let secret = [UInt8](repeating: 42, count: 30)
    let sender = try! LocalIdentity.generate(name: "sender"), receiver = try! LocalIdentity.generate(name: "receiver")

    Benchmark("handshake-pre-shared-key-both-ends", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(handshake(.preSharedKey(secret), .preSharedKey(secret)))
        }
    }

    Benchmark("handshake-known-identities-both-ends", configuration: configuration) { benchmark in
        let knownBySender = KnownPeers(["receiver": receiver.publicKey])
        let knownByReceiver = KnownPeers(["sender": sender.publicKey])
        for _ in benchmark.scaledIterations {
            blackHole(handshake(.identity(sender, known: knownBySender), .identity(receiver, known: knownByReceiver)))
        }
    }

    /// What a commit from a forged address costs the receiver: parse, one
    /// HMAC and the cookie sent back, no state (what a flood of them pays for,
    /// with no limit).
    Benchmark("handshake-cookie-for-one-commit", configuration: configuration) { benchmark in
        let responder = HandshakeResponder<Int>(configuration: .init(authentication: .preSharedKey(secret), name: "receiver"))
        let commits = strangersCommits(1000, secret: secret)
        var index = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var answering = responder
            let bytes = commits[index % commits.count]
            index += 1
            blackHole(answering.handle(HandshakeMessage(parsing: bytes[...])!, from: index, now: MonotonicTime(nanoseconds: 2)))
        }
    }

    /// What a commit that echoes its cookie costs the receiver: parse, the
    /// cookie checked, a fresh X25519 key pair, a commitment and the reply
    /// (4 a second from one host and 20 in all at most).
    Benchmark("handshake-answer-one-cookied-commit", configuration: configuration) { benchmark in
        var responder = HandshakeResponder<Int>(configuration: .init(authentication: .preSharedKey(secret), name: "receiver"))
        responder.configuration.commitsPerSecond = 1e9
        responder.configuration.commitBurst = 1e9
        responder.configuration.commitsPerSourcePerSecond = 1e9
        let now = MonotonicTime(nanoseconds: 2)
        let commits = strangersCommits(1000, secret: secret).enumerated().map { index, bytes -> [UInt8] in
            guard case .commit(var commit)? = HandshakeMessage(parsing: bytes[...]),
                  case .send(let answer, _)? = responder.handle(.commit(commit), from: index, now: now).first,
                  case .cookie(_, let cookie)? = HandshakeMessage(parsing: answer[...]) else { fatalError("no cookie") }
            commit.cookie = cookie
            return HandshakeMessage.commit(commit).serialized()
        }
        var index = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            // A copy holding nothing yet (the same cookie secret), so every commit is answered in full.
            var answering = responder
            let bytes = commits[index % commits.count]
            blackHole(answering.handle(HandshakeMessage(parsing: bytes[...])!, from: index % commits.count, now: now))
            index += 1
        }
    }
}

/// `count` strangers' first commits (without a cookie).
func strangersCommits(_ count: Int, secret: [UInt8]) -> [[UInt8]] {
    (0..<count).map { index in
        var initiator = HandshakeInitiator(configuration: .init(authentication: .preSharedKey(secret), name: "x",
                                                                profile: .aes128CmHmacSha1_80, instance: UInt64(index)))
        return initiator.start(now: MonotonicTime(nanoseconds: 1))
    }
}
