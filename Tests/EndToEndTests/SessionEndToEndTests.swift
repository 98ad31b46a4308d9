import Foundation
import ShareHandshake
import ShareSRTP
import ShareTransport
import ShareWire
import Synchronization
import Testing
import TestSupport
import ShareBase

extension EndToEndTests {
    /// Sessions between real `share send` and `share recv` processes: the
    /// handshake, both ways to authenticate it, following a restarted
    /// sender or receiver, replay and floods.
    @Suite("Sessions: handshake, identities, restarts", .serialized, .busy)
    struct SessionTests {
        /// Separate config directories: two installs on one machine.
        struct Install {
            let directory: TemporaryDirectory
            var environment: [String: String] { ["XDG_CONFIG_HOME": directory.path("config")] }
            init() throws { directory = try TemporaryDirectory() }
        }

        /// The code printed after "code is:" in a prompt.
        static func code(in output: String) -> String? {
            guard let range = output.range(of: "code is:  ") else { return nil }
            return String(output[range.upperBound...].prefix(5))
        }

        @Test func identitiesConfirmOnceThenConnectWithoutAskingAndRefuseAChangedOne() throws {
            let (sending, receiving) = (try Install(), try Install())
            let dir = try TemporaryDirectory()
            let screen = try Screen(width: 320, height: 240)
            let port = freeUDPPort()
            // First meeting: both ends ask; the people compare the codes and say yes.
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--no-window", "--no-audio", "--name", "viewer",
                                                  "--duration", "6", "--stats-json", dir.path("recv1.json")],
                                                 environment: receiving.environment, input: true)
            usleep(300_000)
            let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                                "--name", "sharer", "--audio", "none", "--duration", "4"],
                                               environment: sending.environment, input: true)
            #expect(receiver.waitForOutput("[y/N]"), "\(receiver.output)")
            #expect(sender.waitForOutput("[y/N]"), "\(sender.output)")
            let (atReceiver, atSender) = (Self.code(in: receiver.output), Self.code(in: sender.output))
            #expect(atReceiver != nil && atReceiver == atSender, "both ends show the same string: \(receiver.output) \(sender.output)")
            #expect(receiver.output.contains("\"sharer\" is new here") && sender.output.contains("\"viewer\" is new here"))
            receiver.type("y\n")
            sender.type("y\n")
            #expect(sender.wait(timeout: 15).status == 0, "\(sender.output)")
            #expect(receiver.wait(timeout: 15).status == 0, "\(receiver.output)")
            #expect((try readStats(dir.path("recv1.json"))["framesDecoded"] as? Int ?? 0) > 0, "\(receiver.output)")
            let remembered = try String(contentsOfFile: receiving.directory.path("config/share/known_peers"), encoding: .utf8)
            #expect(remembered.hasPrefix("sharer ed25519 "))

            // Second time: nobody is asked (standard input is empty), the stream flows.
            let again = try ShareBinary.start(["recv", "--port", "\(port)", "--no-window", "--no-audio", "--name", "viewer",
                                               "--duration", "5", "--stats-json", dir.path("recv2.json")],
                                              environment: receiving.environment)
            usleep(300_000)
            let second = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                              "--name", "sharer", "--audio", "none", "--duration", "3"],
                                             environment: sending.environment)
            #expect(second.status == 0, "\(second.output)")
            let secondReceived = again.wait(timeout: 15)
            #expect(!secondReceived.output.contains("[y/N]") && !second.output.contains("[y/N]"))
            // Nor does the sender show a code to compare for a receiver it knows.
            #expect(!second.output.contains("this screen's code"), "\(second.output)")
            #expect((try readStats(dir.path("recv2.json"))["framesDecoded"] as? Int ?? 0) > 0, "\(secondReceived.output)")

            // The sender's identity changes (a new install under the same name): refused, loudly.
            try FileManager.default.removeItem(atPath: sending.directory.path("config/share/identity"))
            let third = try ShareBinary.start(["recv", "--port", "\(port)", "--no-window", "--no-audio", "--name", "viewer",
                                               "--duration", "4", "--stats-json", dir.path("recv3.json")],
                                              environment: receiving.environment)
            usleep(300_000)
            let changed = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                               "--name", "sharer", "--audio", "none", "--duration", "2"],
                                              environment: sending.environment)
            let thirdReceived = third.wait(timeout: 15)
            #expect(changed.status != 0)
            #expect(changed.output.contains("identity changed"), "\(changed.output)")
            #expect(thirdReceived.output.contains("CHANGED"), "\(thirdReceived.output)")
            #expect((try readStats(dir.path("recv3.json"))["framesDecoded"] as? Int) == 0)
        }

        /// A relay between the two that runs a handshake with each, with keys
        /// of its own: the codes differ, the people say no, and the sender
        /// sends it nothing.
        @Test func aRelayThatSwapsInItsOwnKeysIsRefused() throws {
            let (sending, receiving) = (try Install(), try Install())
            let dir = try TemporaryDirectory()
            let screen = try Screen(width: 320, height: 240)
            let port = freeUDPPort()
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--no-window", "--no-audio", "--name", "viewer",
                                                  "--duration", "6", "--stats-json", dir.path("recv.json")],
                                                 environment: receiving.environment, input: true)
            usleep(300_000)
            let relay = try ManInTheMiddle(receiverPort: port)
            let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(relay.port)", "--display", screen.name,
                                                "--name", "sharer", "--audio", "none", "--duration", "4",
                                                "--stats-json", dir.path("send.json")],
                                               environment: sending.environment, input: true)
            #expect(receiver.waitForOutput("[y/N]"), "\(receiver.output)")
            #expect(sender.waitForOutput("[y/N]"), "\(sender.output)")
            let (atReceiver, atSender) = (Self.code(in: receiver.output), Self.code(in: sender.output))
            #expect(atReceiver != nil && atSender != nil && atReceiver != atSender, "\(receiver.output) \(sender.output)")
            // The people see different codes and refuse.
            receiver.type("n\n")
            sender.type("n\n")
            let sent = sender.wait(timeout: 15)
            let received = receiver.wait(timeout: 15)
            relay.stop()
            #expect(sent.status != 0 && sent.output.contains("not confirmed"), "\(sent.output)")
            #expect(received.output.contains("refused"), "\(received.output)")
            #expect(relay.mediaFromSender.load(ordering: .relaxed) == 0, "the sender sent the relay no media")
            #expect((try readStats(dir.path("recv.json"))["framesDecoded"] as? Int) == 0)
            #expect((try readStats(dir.path("send.json"))["packetsSent"] as? Int) == 0)
        }

        /// Datagrams recorded from session 1, replayed into a fresh receiver
        /// before session 2: nothing of session 1 is shown, session 2 is.
        @Test func aRecordedSessionCannotBeReplayedIntoALaterOne() throws {
            let dir = try TemporaryDirectory()
            let key = try ShareBinary.keyFile(in: dir)
            let screen = try Screen(width: 320, height: 240)
            let (port, recorderPort) = (freeUDPPort(), freeUDPPort())
            let first = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                               "--duration", "4", "--stats-json", dir.path("recv1.json")])
            let recorder = try Recorder(listen: recorderPort, forwardTo: port)
            usleep(300_000)
            let session1 = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(recorderPort)", "--display", screen.name,
                                                "--key-file", key, "--audio", "none", "--duration", "2"])
            #expect(session1.status == 0, "\(session1.output)")
            _ = first.wait(timeout: 10)
            recorder.stop()
            #expect((try readStats(dir.path("recv1.json"))["framesDecoded"] as? Int ?? 0) > 20)
            let recorded = recorder.datagrams
            #expect(recorded.count > 50)

            let fresh = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                               "--duration", "6", "--stats-json", dir.path("recv2.json")])
            // Replayed only once it listens: datagrams sent before are the
            // kernel's to drop, not the receiver's to count.
            #expect(fresh.waitForOutput("listening on UDP port", timeout: 10), "\(fresh.output)")
            let attacker = try UDPSocket(connectedTo: SocketAddress(host: "127.0.0.1", port: port))
            for datagram in recorded {
                attacker.send(datagram[...])
                usleep(200)
            }
            usleep(300_000)
            let session2 = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                                "--key-file", key, "--audio", "none", "--duration", "3",
                                                "--stats-json", dir.path("send2.json")])
            #expect(session2.status == 0, "\(session2.output)")
            let received = fresh.wait(timeout: 15)
            let stats = try readStats(dir.path("recv2.json"))
            let sent2 = try readStats(dir.path("send2.json"))["framesEncoded"] as? Int ?? 0
            let decoded = stats["framesDecoded"] as? Int ?? 0
            #expect(stats["sessions"] as? Int == 1, "only session 2 began: \(stats) \(received.output)")
            #expect(decoded <= sent2 && Double(decoded) >= 0.95 * Double(sent2), "decoded \(decoded) of session 2's \(sent2)")
            #expect((stats["packetsWithoutSession"] as? Int ?? 0) >= recorded.count - 4, "the replayed media was dropped: \(stats)")
            // The replayed commits carry the first receiver's cookie: answered
            // with a cookie, nothing held, no reveal ever taken.
            #expect((stats["handshakeCookiesSent"] as? Int ?? 0) >= 1, "the replayed commit was only given a cookie: \(stats)")
        }

        /// BYE and `kill -9`: the same receiver shows each new sender at once,
        /// and every session's recording plays.
        @Test func aRestartedSenderIsFollowed() throws {
            let dir = try TemporaryDirectory()
            let key = try ShareBinary.keyFile(in: dir)
            let screen = try Screen(width: 320, height: 240)
            let port = freeUDPPort()
            let recording = dir.path("rec.mkv")
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                                  "--record", recording, "--duration", "16",
                                                  "--stats-json", dir.path("recv.json")])
            usleep(300_000)
            func send(_ seconds: Int, _ name: String) throws -> ChildProcess {
                try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                       "--audio", "none", "--every-frame", "--duration", "\(seconds)",
                                       "--stats-json", dir.path("\(name).json")])
            }
            #expect(try send(3, "a").wait(timeout: 10).status == 0)       // ends with BYE
            #expect(try send(3, "b").wait(timeout: 10).status == 0)       // a new sender after a BYE
            let killed = try send(30, "c")
            usleep(3_000_000)
            kill(killed.pid, SIGKILL)                                      // no BYE
            _ = killed.wait(timeout: 5)
            #expect(try send(3, "d").wait(timeout: 10).status == 0)       // takes over the killed one's receiver
            let received = receiver.wait(timeout: 20)
            #expect(received.status == 0, "\(received.output)")
            let stats = try readStats(dir.path("recv.json"))
            #expect(stats["sessions"] as? Int == 4, "\(stats)")
            for (index, name) in ["a", "b", "d"].enumerated() {
                let sent = try readStats(dir.path("\(name).json"))
                let handshake = sent["handshakeMilliseconds"] as? Double ?? 1e9
                #expect(handshake < 1000, "sender \(name) had its session after \(handshake) ms")
                // Each file: its session's pictures, within a second of the start.
                let file = ["rec.mkv", "rec-2.mkv", "rec-4.mkv"][index]
                let probe = try probeVideo(dir.path(file))
                let framesSent = sent["framesEncoded"] as? Int ?? 0
                #expect(probe.videoFrames >= framesSent - 30 && probe.videoFrames > 0,
                        "\(file): \(probe.videoFrames) of \(framesSent) frames; \(probe.errors)")
            }
            // The killed sender's file plays too (the receiver closed it when the next session began).
            #expect(try probeVideo(dir.path("rec-3.mkv")).videoFrames >= 60)
        }

        /// The receiver restarts under a running sender: a fresh handshake
        /// and a keyframe within a second.
        @Test func aRestartedReceiverGetsAFreshSession() throws {
            let dir = try TemporaryDirectory()
            let key = try ShareBinary.keyFile(in: dir)
            let screen = try Screen(width: 320, height: 240)
            let port = freeUDPPort()
            let first = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                               "--duration", "3"])
            usleep(300_000)
            let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                                "--key-file", key, "--audio", "none", "--every-frame", "--duration", "11",
                                                "--stats-json", dir.path("send.json")])
            _ = first.wait(timeout: 10)
            usleep(500_000)
            let second = try ShareBinary.run(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--duration", "5", "--stats-json", dir.path("recv.json")])
            #expect(second.status == 0, "\(second.output)")
            _ = sender.wait(timeout: 15)
            let stats = try readStats(dir.path("recv.json"))
            let decoded = stats["framesDecoded"] as? Int ?? 0
            // 5 s at 30 fps, less at most a second to the first picture.
            #expect(decoded >= 115, "decoded \(decoded) in 5 s: \(stats)")
            #expect((try readStats(dir.path("send.json"))["sessions"] as? Int ?? 0) == 2)
        }

        @Test func theReceiverListensOnIPv6Too() throws {
            let dir = try TemporaryDirectory()
            let key = try ShareBinary.keyFile(in: dir)
            let screen = try Screen(width: 320, height: 240)
            let port = freeUDPPort()
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                                  "--duration", "4", "--stats-json", dir.path("recv.json")])
            usleep(300_000)
            let sent = try ShareBinary.run(["send", "::1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                            "--audio", "none", "--every-frame", "--duration", "2"])
            #expect(sent.status == 0, "\(sent.output)")
            _ = receiver.wait(timeout: 10)
            #expect((try readStats(dir.path("recv.json"))["framesDecoded"] as? Int ?? 0) >= 50)
        }

        /// Thousands of handshake attempts from a stranger during a session:
        /// answered at a bounded rate, the session goes on, the CPU they cost stays small.
        @Test func aFloodOfHandshakesCannotStarveTheSession() throws {
            let dir = try TemporaryDirectory()
            let key = try ShareBinary.keyFile(in: dir)
            let screen = try Screen(width: 320, height: 240)
            let port = freeUDPPort()
            // The flood is made first, so its size does not hang on how fast
            // this (debug) test process builds handshakes on a busy machine.
            let flood = (0..<5400).map { instance in
                var initiator = HandshakeInitiator(configuration: .init(authentication: .preSharedKey(Array(repeating: 1, count: 30)),
                                                                        name: "stranger", profile: .aes128CmHmacSha1_80,
                                                                        instance: UInt64(instance)))
                return initiator.start(now: MonotonicTime(nanoseconds: 1))
            }
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                                  "--duration", "7", "--stats-json", dir.path("recv.json")])
            usleep(300_000)
            let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                                "--key-file", key, "--audio", "none", "--every-frame", "--duration", "5",
                                                "--stats-json", dir.path("send.json")])
            usleep(1_000_000)
            let cpuBefore = processCPUSeconds(receiver.pid)
            let stranger = try UDPSocket(connectedTo: SocketAddress(host: "127.0.0.1", port: port))
            var commits = 0
            let floodStart = Date()
            // Spread over 3 s, 20 at a time.
            for message in flood {
                stranger.send(message[...])
                commits += 1
                guard commits % 20 == 0 else { continue }
                let ahead = 3 * Double(commits) / Double(flood.count) - Date().timeIntervalSince(floodStart)
                if ahead > 0 { usleep(UInt32(ahead * 1e6)) }
            }
            while Date().timeIntervalSince(floodStart) < 3 { usleep(10_000) }
            let cpuDuring = processCPUSeconds(receiver.pid) - cpuBefore
            _ = sender.wait(timeout: 15)
            _ = receiver.wait(timeout: 15)
            let stats = try readStats(dir.path("recv.json"))
            let framesSent = try readStats(dir.path("send.json"))["framesEncoded"] as? Int ?? 0
            let decoded = stats["framesDecoded"] as? Int ?? 0
            #expect(commits > 5000, "the flood sent \(commits)")
            #expect(Double(decoded) >= 0.95 * Double(framesSent), "decoded \(decoded) of \(framesSent) during the flood")
            // None echoed its cookie: each was answered with one, and nothing was held.
            #expect((stats["handshakeCookiesSent"] as? Int ?? 0) >= commits - 100, "\(stats)")
            #expect(stats["sessions"] as? Int == 1)
            #expect(cpuDuring < 3 * 0.5, "the receiver used \(cpuDuring) s of CPU in the 3 s flood")
        }

        @Test func anSDPWithAKeyThatOthersCanReadIsRefused() throws {
            let dir = try TemporaryDirectory()
            let sdp = dir.path("open.sdp")
            try """
                v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=x\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
                m=video \(freeUDPPort()) RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\n\
                a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz\r\n
                """.write(toFile: sdp, atomically: true, encoding: .utf8)
            chmod(sdp, 0o644)
            let refused = try ShareBinary.run(["recv", "--sdp", sdp, "--no-window", "--duration", "1"])
            #expect(refused.status != 0 && refused.output.contains("readable by group or others"), "\(refused.output)")
            chmod(sdp, 0o600)
            let accepted = try ShareBinary.run(["recv", "--sdp", sdp, "--no-window", "--no-audio", "--duration", "0.5"])
            #expect(accepted.status == 0, "\(accepted.output)")
            #expect(!accepted.output.contains("WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz"), "the key is never printed")
        }
    }
}

/// CPU seconds (user + system) a process has used, from /proc.
func processCPUSeconds(_ pid: pid_t) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command: state is field 3; utime and stime are fields 14 and 15.
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A relay that plays receiver to the sender and sender to the receiver,
/// each with a handshake of its own and an identity of its own, accepting
/// everything it is offered: what an attacker in the middle would do.
final class ManInTheMiddle: @unchecked Sendable {
    let port: Int
    private let downstream: UDPSocket
    private let upstream: UDPSocket
    private let running = Atomic<Bool>(true)
    let mediaFromSender = Atomic<Int>(0)
    private let group = DispatchGroup()

    init(receiverPort: Int) throws {
        downstream = try UDPSocket(bindingPort: 0)
        port = downstream.localPort
        upstream = try UDPSocket(connectedTo: SocketAddress(host: "127.0.0.1", port: receiverPort))
        let mallory = try LocalIdentity.generate(name: "viewer")
        let (down, up) = (downstream, upstream)
        group.enter()
        DispatchQueue.global().async { [self] in
            var responder = HandshakeResponder<SocketAddress>(configuration: .init(
                authentication: .identity(mallory, known: KnownPeers()), name: "viewer"))
            var buffer = [UInt8](repeating: 0, count: 2048)
            var count = 0
            while running.load(ordering: .relaxed) {
                guard let source = try? down.receive(into: &buffer, count: &count, timeoutMilliseconds: 10) else { continue }
                guard count > 0, HandshakeMessage.isHandshake(firstByte: buffer[0]),
                      let message = HandshakeMessage(parsing: buffer[0..<count]) else {
                    mediaFromSender.add(1, ordering: .relaxed)
                    continue
                }
                let now = MonotonicTime(nanoseconds: UInt64(Date().timeIntervalSince1970 * 1e9))
                var actions = responder.handle(message, from: source, now: now)
                while !actions.isEmpty {
                    let action = actions.removeFirst()
                    switch action {
                    case .send(let bytes, let to): down.send(bytes[...], to: to)
                    case .confirmationNeeded(let request):
                        actions += responder.answer(handshakeID: request.handshakeID, accept: true, now: now)
                    default: break
                    }
                }
            }
            group.leave()
        }
        group.enter()
        DispatchQueue.global().async { [self] in
            var initiator = HandshakeInitiator(configuration: .init(
                authentication: .identity(mallory, known: KnownPeers()), name: "sharer", profile: .aes128CmHmacSha1_80,
                instance: 99))
            var buffer = [UInt8](repeating: 0, count: 2048)
            var count = 0
            func now() -> MonotonicTime { MonotonicTime(nanoseconds: UInt64(Date().timeIntervalSince1970 * 1e9)) }
            up.send(initiator.start(now: now())[...])
            while running.load(ordering: .relaxed) {
                var actions: [HandshakeInitiator.Action] = initiator.poll(now: now())
                if (try? up.receive(into: &buffer, count: &count, timeoutMilliseconds: 10)) != nil,
                   let message = HandshakeMessage(parsing: buffer[0..<count]) {
                    actions += initiator.handle(message, now: now())
                }
                for case .send(let bytes) in actions { up.send(bytes[...]) }
            }
            group.leave()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        group.wait()
    }
}

/// A forwarder that keeps a copy of every datagram from the sender side:
/// a recording an attacker on the path could make.
final class Recorder: @unchecked Sendable {
    private let listen: UDPSocket
    private let forward: UDPSocket
    private let running = Atomic<Bool>(true)
    private let recorded = Mutex<[[UInt8]]>([])
    private let group = DispatchGroup()

    init(listen port: Int, forwardTo target: Int) throws {
        listen = try UDPSocket(bindingPort: port)
        forward = try UDPSocket(connectedTo: SocketAddress(host: "127.0.0.1", port: target))
        group.enter()
        DispatchQueue.global().async { [self] in
            var buffer = [UInt8](repeating: 0, count: 2048)
            var count = 0
            var sender: SocketAddress?
            while running.load(ordering: .relaxed) {
                guard let ready = try? UDPSocket.waitForInput([listen, forward], timeout: .milliseconds(10)) else { continue }
                if ready[0], let source = try? listen.receive(into: &buffer, count: &count, timeoutMilliseconds: 0) {
                    sender = source
                    recorded.withLock { $0.append(Array(buffer[0..<count])) }
                    forward.send(buffer[0..<count])
                }
                if ready[1], (try? forward.receive(into: &buffer, count: &count, timeoutMilliseconds: 0)) != nil, let sender {
                    listen.send(buffer[0..<count], to: sender)
                }
            }
            group.leave()
        }
    }

    var datagrams: [[UInt8]] { recorded.withLock { $0 } }

    func stop() {
        running.store(false, ordering: .relaxed)
        group.wait()
    }
}

extension EndToEndTests.SessionTests {
    /// Pause, resume and stop through `share ctl`, over a path that loses a
    /// quarter of the packets both ways: the receiver shows each state.
    @Test func pauseResumeAndStopReachTheReceiverOverALossyPath() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let (port, relayPort) = (freeUDPPort(), freeUDPPort())
        let socket = dir.path("send.sock")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--duration", "12", "--stats-json", dir.path("recv.json")])
        let relay = try ShareBinary.start(["relay", "--listen", "\(relayPort)", "--to", "127.0.0.1:\(port)",
                                           "--forward", "loss=25%", "--reverse", "loss=25%", "--seed", "3", "--duration", "13"])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(relayPort)", "--display", screen.name,
                                            "--key-file", key, "--audio", "none", "--duration", "30", "--control", socket])
        #expect(receiver.waitForOutput("receiving 320x240"), "\(receiver.output)")
        _ = try ShareBinary.run(["ctl", "pause", "--socket", socket])
        #expect(receiver.waitForOutput("the sender paused", timeout: 3), "\(receiver.output)")
        _ = try ShareBinary.run(["ctl", "resume", "--socket", socket])
        #expect(receiver.waitForOutput("the sender resumed", timeout: 3), "\(receiver.output)")
        _ = try ShareBinary.run(["ctl", "stop", "--socket", socket])
        #expect(receiver.waitForOutput("the sender ended the stream: sender stopped", timeout: 3), "\(receiver.output)")
        #expect(sender.wait(timeout: 10).status == 0)
        _ = receiver.wait(timeout: 15)
        relay.stop()
    }
}

extension EndToEndTests.SessionTests {
    /// A session that ends before its recording would have opened (it waits
    /// for the audio tracks) still leaves a complete file; so does a receiver
    /// stopped that early.
    @Test func aShortSessionIsStillRecorded() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", dir.path("short.mkv"), "--duration", "4"])
        usleep(300_000)
        let sent = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                        "--audio", "none", "--every-frame", "--duration", "0.6"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(receiver.wait(timeout: 10).status == 0)
        #expect(try probeVideo(dir.path("short.mkv")).videoFrames >= 5, "the 0.6 s session's file plays")

        // The receiver stopped (SIGTERM) half a second into a session.
        let second = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                            "--record", dir.path("stopped.mkv"), "--duration", "30"])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file",
                                            key, "--audio", "none", "--every-frame", "--duration", "5"])
        #expect(second.waitForOutput("receiving 320x240"))
        usleep(400_000)
        second.stop(signal: SIGTERM)
        sender.stop(signal: SIGTERM)
        #expect(try probeVideo(dir.path("stopped.mkv")).videoFrames >= 5)
    }

    /// The sender says which audio streams it sends when the session is up,
    /// so the recording opens at the first keyframe with its audio track: a
    /// receiver killed (-9) 150 ms after its first picture leaves a file that
    /// plays, sound included (it used to wait for the sound to settle, 200 ms
    /// after it began and up to 2 s, and left nothing).
    @Test func aReceiverKilledInItsFirstSecondLeavesAFileWithItsSound() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let port = freeUDPPort()
        let recording = dir.path("killed.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "30"])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file",
                                            key, "--audio-tone", "440", "--every-frame", "--duration", "10"])
        defer { sender.stop() }
        #expect(receiver.waitForOutput("receiving 320x240"))
        usleep(150_000)
        receiver.stop(signal: SIGKILL)
        let probe = try probeVideo(recording)
        #expect(probe.videoFrames >= 2, "the file plays: \(probe.videoFrames) frames, \(probe.errors)")
        let streams = try run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", recording])
        #expect(streams.stdout.split(separator: "\n").map(String.init) == ["video", "audio"], "\(streams.stdout)")
        let sound = try decodeAudio(recording)
        #expect(sound.contains { abs(Int($0)) > 1000 }, "the tone is in it")
    }
}

extension EndToEndTests.SessionTests {
    /// What comes back to the sender that is not the receiver's SRTCP is
    /// counted (and changes nothing): the counter is in its statistics.
    @Test func theSenderCountsWhatItRefuses() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let listener = try UDPSocket(bindingPort: 0)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(listener.localPort)", "--display", screen.name,
                                            "--srtp-key-file", key, "--audio", "none", "--duration", "3",
                                            "--stats-json", dir.path("send.json")])
        var buffer = [UInt8](repeating: 0, count: 2048)
        var count = 0
        let source = try #require(try listener.receive(into: &buffer, count: &count, timeoutMilliseconds: 5000))
        var random = SeededGenerator(seed: 5)
        for index in 0..<200 {
            // Half look like RTCP (and fail authentication), half are not RTCP at all.
            var garbage = (0..<60).map { _ in UInt8.random(in: 0...255, using: &random) }
            garbage[0] = 0x80
            garbage[1] = index % 2 == 0 ? 200 : 96
            listener.send(garbage[...], to: source)
        }
        #expect(sender.wait(timeout: 15).status == 0)
        let stats = try readStats(dir.path("send.json"))
        #expect((stats["rtcpRejected"] as? Int ?? 0) >= 190, "\(stats["rtcpRejected"] ?? "missing")")
        #expect((stats["framesEncoded"] as? Int ?? 0) >= 60, "the stream went on")
    }
}

extension EndToEndTests.SessionTests {
    /// `share send` started before its receiver (or toward a port nothing
    /// answers on) says so after three seconds, why as far as it can tell,
    /// and keeps trying: a receiver started then gets the session.
    @Test func aSenderWhoseHandshakeGoesUnansweredSaysSoAndKeepsTrying() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        // A port held by a socket that never answers: no reply, no ICMP.
        var silent: UDPSocket? = try UDPSocket(bindingPort: 0)
        let port = silent!.localPort
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                            "--key-file", key, "--audio", "none", "--duration", "9"])
        #expect(sender.waitForOutput("no answer from 127.0.0.1 port \(port) in 3 s", timeout: 6), "\(sender.output)")
        silent?.close()
        silent = nil
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--duration", "6", "--stats-json", dir.path("recv.json")])
        #expect(sender.waitForOutput("session with", timeout: 4), "still trying: \(sender.output)")
        _ = receiver.wait(timeout: 15)
        #expect(sender.wait(timeout: 15).status == 0, "\(sender.output)")
        #expect((try readStats(dir.path("recv.json"))["framesDecoded"] as? Int ?? 0) > 0)
        #expect(sender.output.components(separatedBy: "no answer from").count == 2, "said once: \(sender.output)")

        // Nothing bound there at all: the host says the port is unreachable.
        let closed = freeUDPPort()
        let refused = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(closed)", "--display", screen.name,
                                           "--key-file", key, "--audio", "none", "--duration", "4"])
        #expect(refused.output.contains("UDP port \(closed) of 127.0.0.1 was reported unreachable"), "\(refused.output)")
    }
}

extension EndToEndTests.SessionTests {
    /// `--record` never overwrites: an earlier run's file is kept and the
    /// session takes the next free name, which the receiver names.
    @Test func anExistingRecordingIsKeptAndTheSessionTakesTheNextName() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let earlier = Data("yesterday's recording".utf8)
        #expect(FileManager.default.createFile(atPath: dir.path("rec.mkv"), contents: earlier))
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", dir.path("rec.mkv"), "--duration", "4"])
        usleep(300_000)
        let sent = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                        "--audio", "none", "--every-frame", "--duration", "1"])
        #expect(sent.status == 0, "\(sent.output)")
        let received = receiver.wait(timeout: 15)
        #expect(received.status == 0)
        #expect(FileManager.default.contents(atPath: dir.path("rec.mkv")) == earlier, "the earlier file is untouched")
        #expect(received.output.contains("rec.mkv exists (kept): this session records to \(dir.path("rec-2.mkv"))"),
                "\(received.output)")
        #expect(try probeVideo(dir.path("rec-2.mkv")).videoFrames >= 10)
    }
}

extension EndToEndTests.SessionTests {
    /// A second sender while one is live: the last new one wins, and the
    /// one taken over from stops with that reason instead of taking the
    /// receiver back when its feedback stops (they used to take turns,
    /// a new session every two seconds).
    @Test func theLastNewSenderWinsAndTheOneReplacedStops() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let (first, second) = (try EndToEndTests.Screen(width: 320, height: 240), try EndToEndTests.Screen(width: 400, height: 240))
        let port = freeUDPPort()
        // Named on the command line (a key file has no identity to name them).
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--name", "projector", "--duration", "10", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let replaced = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", first.name,
                                              "--key-file", key, "--audio", "none", "--name", "alice", "--duration", "20"])
        #expect(receiver.waitForOutput("session with sender \"alice\""), "\(receiver.output)")
        #expect(receiver.waitForOutput("receiving 320x240"), "\(receiver.output)")
        #expect(replaced.waitForOutput("session with \"projector\" is up"), "\(replaced.output)")
        let taker = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", second.name,
                                           "--key-file", key, "--audio", "none", "--name", "bob", "--duration", "8"])
        #expect(receiver.waitForOutput("session with sender \"bob\""), "\(receiver.output)")
        #expect(receiver.waitForOutput("receiving 400x240"), "\(receiver.output)")
        let ended = replaced.wait(timeout: 8)
        #expect(ended.status != 0 && ended.output.contains("another sender took the receiver over"), "\(ended.output)")
        #expect(taker.wait(timeout: 15).status == 0)
        let received = receiver.wait(timeout: 15)
        let stats = try readStats(dir.path("recv.json"))
        #expect(stats["sessions"] as? Int == 2, "no taking turns: \(received.output)")
        let after = received.output.components(separatedBy: "receiving 400x240").last ?? ""
        #expect(!after.contains("receiving 320x240"), "the second kept the receiver: \(received.output)")
    }
}
