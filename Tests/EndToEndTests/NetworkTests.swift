import Foundation
import TestSupport
import Testing

extension EndToEndTests {
/// `share send` -> `share relay` (a simulated network) -> `share recv`, the
/// real binaries on loopback with moving content at 720p30: congestion
/// control, loss recovery and FEC against the conditions they are for.
/// The bounds are looser than the harness's targets (CI shares two cores
/// with other suites) but each fails without the mechanism it checks.
/// Nested in the end-to-end suite, so these runs take their turn with the
/// other real-binary runs instead of loading the machine beside them.
@Suite("Networks: share through the impairment relay", .alone)
struct NetworkTests {
    /// What one run measured.
    struct Run {
        var sent: [String: Any]
        var received: [String: Any]
        var relay: [String: Any]
        /// Where the sender's timeline starts on the receiver's (seconds).
        var offset: Double

        var rate: [[String: Any]] { sent["rateTimeline"] as? [[String: Any]] ?? [] }
        var samples: [[String: Any]] { received["timeline"] as? [[String: Any]] ?? [] }
        func sent(_ key: String) -> Double { (sent[key] as? NSNumber)?.doubleValue ?? 0 }
        func received(_ key: String) -> Double { (received[key] as? NSNumber)?.doubleValue ?? 0 }

        /// `key` at `seconds`, interpolated between the samples around it.
        static func value(_ timeline: [[String: Any]], at seconds: Double, _ key: String) -> Double {
            var previous = (t: 0.0, v: 0.0)
            for sample in timeline {
                let t = (sample["seconds"] as? NSNumber)?.doubleValue ?? 0
                let v = (sample[key] as? NSNumber)?.doubleValue ?? 0
                if t >= seconds {
                    guard t > previous.t else { return v }
                    return previous.v + (v - previous.v) * (seconds - previous.t) / (t - previous.t)
                }
                previous = (t, v)
            }
            return previous.v
        }

        /// A frame encoded at `seconds` on the sender's timeline is shown
        /// about one capture-to-display latency later on the receiver's.
        func receiverTime(_ seconds: Double) -> Double {
            let latency = ((received["captureToDisplay"] as? [String: Any])?["p50"] as? NSNumber)?.doubleValue ?? 0
            return seconds + offset + latency / 1000
        }

        /// Frames shown per frame encoded after `settle` seconds.
        func shown(after settle: Double) -> Double {
            let encoded = sent("framesEncoded") - Self.value(rate, at: settle, "framesEncoded")
            let shown = received("framesDecoded") - Self.value(samples, at: receiverTime(settle), "framesDecoded")
            return shown / max(encoded, 1)
        }

        /// The share of the time after `settle` spent frozen.
        func frozen(after settle: Double, of seconds: Double) -> Double {
            (received("freezeSeconds") - Self.value(samples, at: receiverTime(settle), "freezeSeconds")) / (seconds - settle)
        }

        /// The sender's mean of `key` between two instants.
        func mean(_ key: String, from start: Double, to end: Double) -> Double {
            let values = rate.compactMap { sample -> Double? in
                guard let t = (sample["seconds"] as? NSNumber)?.doubleValue, t >= start, t <= end else { return nil }
                return (sample[key] as? NSNumber)?.doubleValue
            }
            return values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
        }

        var summary: String {
            "sent \(Int(sent("framesEncoded"))) frames, \(Int(sent("keyframes"))) keyframes, \(Int(sent("packetsRetransmitted"))) "
                + "retransmitted of \(Int(sent("packetsSent"))), \(Int(sent("fecPackets"))) FEC; received "
                + "\(Int(received("framesDecoded"))) decoded, \(Int(received("freezes"))) freezes "
                + "(\(received("freezeSeconds")) s), \(Int(received("fecRecovered"))) rebuilt by FEC; targets "
                + rate.map { "\(Int(($0["targetKbps"] as? NSNumber)?.doubleValue ?? 0))" }.joined(separator: " ")
        }
    }

    static func run(network: String, seconds: Double, sendArguments: [String] = [], relayArguments: [String] = [],
                    sceneArguments: [String] = []) throws -> Run {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let display = try VirtualDisplay(width: 1280, height: 720)
        let scene = try ShareBinary.start(["scene", "--display", display.display] + sceneArguments)
        defer { scene.stop() }
        let port = freeUDPPort()
        let relayPort = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--duration", "\(seconds + 4)", "--stats-json", dir.path("recv.json")])
        let relay = try ShareBinary.start(["relay", "--listen", "\(relayPort)", "--to", "127.0.0.1:\(port)", "--network",
                                           network, "--duration", "\(seconds + 5)", "--stats-json", dir.path("relay.json")]
                                          + relayArguments)
        usleep(500_000)
        let sender = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(relayPort)", "--display", display.display,
                                          "--key-file", key, "--audio", "none", "--duration", "\(seconds)",
                                          "--stats-json", dir.path("send.json")] + sendArguments, timeout: seconds + 30)
        #expect(sender.status == 0, "\(sender.output)")
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let relayed = relay.wait(timeout: 20)
        let sent = try readStats(dir.path("send.json"))
        let got = try readStats(dir.path("recv.json"))
        let origin = { (stats: [String: Any]) in (stats["timelineOriginUnix"] as? NSNumber)?.doubleValue ?? 0 }
        guard let relayStats = try? readStats(dir.path("relay.json")) else {
            throw TestEnvironmentError("the relay wrote no statistics (exit status \(relayed.status)): \(relayed.output)")
        }
        return Run(sent: sent, received: got, relay: relayStats, offset: origin(sent) - origin(got))
    }

    /// 1 Mbit/s with a 200 ms queue, starting at 3.2 Mbit/s: under the cap
    /// within seconds, then the picture keeps coming.
    @Test func followsA1MbitBottleneck() throws {
        let run = try Self.run(network: "cap1m", seconds: 15)
        let firstUnder = run.rate.first { ($0["targetKbps"] as? NSNumber)?.doubleValue ?? .infinity <= 1000 }
        let underAt = (firstUnder?["seconds"] as? NSNumber)?.doubleValue ?? .infinity
        #expect(underAt <= 3, "under the cap after \(underAt) s; \(run.summary)")
        #expect(run.mean("sentKbps", from: 5, to: 15) <= 1000, "sends within the cap; \(run.summary)")
        #expect(run.shown(after: 3) >= 0.90, "shown \(run.shown(after: 3)); \(run.summary)")
        #expect(run.frozen(after: 3, of: 15) < 0.05, "frozen \(run.frozen(after: 3, of: 15)); \(run.summary)")
        // The timeline says why: the delay detector saw the queue the start
        // rate built (growing, then draining), and from then on the target is
        // held by what the path shows: the bottleneck measured, which is the
        // cap's, or the delay-based rate climbing back after a cut. (It was
        // the bottleneck in at least half the samples while the scene, with
        // refresh sweeps, took more than the cap; at 0.9 Mbit/s it presses
        // the cap less, and the delay-based rate is often the lower.)
        let verdicts = run.rate.compactMap { $0["delayVerdict"] as? String }
        let limits = run.rate.map { $0["limitedBy"] as? String ?? "none" }
        let story = zip(verdicts, limits).map { "\($0)/\($1)" }
        #expect(verdicts.count == run.rate.count && Set(verdicts).isSubset(of: ["normal", "overusing", "underusing"])
                && verdicts.contains { $0 != "normal" }, "delay verdicts / limits: \(story)")
        let steady = limits.suffix(from: min(limits.count, 20))
        #expect(steady.contains("bottleneck") && steady.allSatisfy { $0 == "bottleneck" || $0 == "delay" },
                "delay verdicts / limits: \(story)")
        let bottlenecks = run.rate.compactMap { ($0["bottleneckKbps"] as? NSNumber)?.doubleValue }.sorted()
        let bottleneck = bottlenecks.isEmpty ? 0 : bottlenecks[bottlenecks.count / 2]
        #expect(bottleneck > 800 && bottleneck < 1300, "median bottleneck \(bottleneck) kbit/s of \(bottlenecks.count) samples")
        // And what it costs the picture: nothing. Without refresh sweeps the
        // scene takes about 0.9 Mbit/s at the finest quantizer (18), so
        // under the cap it stays there (with sweeps it took 1.1 Mbit/s and
        // went coarser).
        let quantizers = run.rate.filter { (($0["seconds"] as? NSNumber)?.doubleValue ?? 0) >= 5 }
            .compactMap { ($0["quantizer"] as? NSNumber)?.intValue }.sorted()
        #expect(!quantizers.isEmpty && quantizers.allSatisfy { (18...51).contains($0) }
                && quantizers[quantizers.count / 2] == 18, "quantizers after 5 s: \(quantizers)")
    }

    /// 3 Mbit/s with a 50 ms queue: paced and without keyframe bursts, the
    /// stream fits without a keyframe storm.
    @Test func fitsA3MbitPathWithAShortQueue() throws {
        let run = try Self.run(network: "cap3m", seconds: 12)
        #expect(run.shown(after: 3) >= 0.97, "shown \(run.shown(after: 3)); \(run.summary)")
        #expect(run.sent("keyframes") <= 2, "no keyframe storm; \(run.summary)")
        #expect(run.frozen(after: 3, of: 12) < 0.03, "\(run.summary)")
    }

    /// 100 ms round trip with 1% loss: NACK repairs would arrive after a
    /// freeze, so FEC rebuilds the losses at once, across its groups too
    /// once the loss is seen (two losses in one group).
    @Test func hidesLossOnALongRoundTripWithFEC() throws {
        let run = try Self.run(network: "rtt100", seconds: 15)
        #expect(run.received("fecRecovered") > 0, "FEC rebuilt losses; \(run.summary)")
        let crossing = run.rate.map { ($0["protectionCrossing"] as? NSNumber)?.boolValue == true }
        #expect(crossing.suffix(20).allSatisfy { $0 }, "crossing the groups by the end: \(crossing)")
        #expect(run.shown(after: 3) >= 0.97, "shown \(run.shown(after: 3)); \(run.summary)")
        #expect(run.frozen(after: 3, of: 15) < 0.03, "frozen \(run.frozen(after: 3, of: 15)); \(run.summary)")
        let rtt = (run.received["roundTripMilliseconds"] as? NSNumber)?.doubleValue ?? 0
        #expect(rtt > 90 && rtt < 130, "the receiver measured the round trip: \(rtt)")
    }

    /// A 400 ms round trip without loss: the handshake timed the path, so
    /// the first picture is protected by FEC before any feedback could say
    /// how lossy the path is (a loss then would freeze it for a round
    /// trip); five seconds without loss turn FEC off.
    @Test func protectsASlowPathFromItsFirstPictureUntilItProvesClean() throws {
        let run = try Self.run(network: "clean", seconds: 9,
                               relayArguments: ["--forward", "delay=200ms", "--reverse", "delay=200ms"])
        func value(_ sample: [String: Any], _ key: String) -> Double? { (sample[key] as? NSNumber)?.doubleValue }
        // The timeline starts when the session is up: feedback cannot have
        // timed a round trip by its first sample (the first packets' reports
        // come back 400 ms after they leave, the sample is at most 250 ms
        // after the session began), the handshake has. Its commit goes again
        // after 200 ms and the reply may answer either copy, so it counts
        // from the copy sent last: about 200 ms here, less by however late
        // a loaded machine sent that copy.
        let first = try #require(run.rate.first)
        let rtt = value(first, "roundTripMilliseconds") ?? 0
        #expect(rtt >= 100 && rtt < 600, "the handshake's round trip at the first sample: \(first)")
        #expect(value(first, "protectionGroup") != nil, "protected from the first sample: \(first)")
        let late = run.rate.filter { (value($0, "seconds") ?? 0) >= 7.5 }
        #expect(!late.isEmpty && late.allSatisfy { value($0, "protectionGroup") == nil },
                "off after five seconds without loss: \(run.rate.map { value($0, "protectionGroup") ?? 0 })")
        #expect(run.received("fecPacketsReceived") > 0 && run.received("fecRecovered") == 0, "\(run.summary)")
        #expect(run.rate.allSatisfy { $0["protectionCrossing"] == nil }, "no loss seen: one repair per group")
        // One repair per group of at most 11 packets, a group closing early
        // at each frame's end so the frame's repair leaves right behind it:
        // no more repairs than that while protected. (Against all packets
        // sent this was once "under 12%"; a screen with no refresh sweep
        // takes about four packets a frame, so a repair a frame is more.)
        var protectedFrames = 0.0
        // (An interval that begins or ends protected counts whole.)
        for (earlier, sample) in zip(run.rate, run.rate.dropFirst())
        where value(sample, "protectionGroup") != nil || value(earlier, "protectionGroup") != nil {
            protectedFrames += (value(sample, "framesEncoded") ?? 0) - (value(earlier, "framesEncoded") ?? 0)
        }
        if let first = run.rate.first, value(first, "protectionGroup") != nil { protectedFrames += value(first, "framesEncoded") ?? 0 }
        #expect(protectedFrames > 0 && run.sent("fecPackets") <= protectedFrames + run.sent("packetsSent") / 11,
                "\(protectedFrames) frames protected; \(run.summary)")
        #expect(run.shown(after: 1.5) >= 0.98, "\(run.summary)")
    }

    /// ±20 ms of jitter with reordering: late packets are waited for, not
    /// retransmitted, and jitter is not mistaken for congestion.
    @Test func waitsOutReorderingInsteadOfRetransmitting() throws {
        let run = try Self.run(network: "jitter20", seconds: 10)
        let share = run.sent("packetsRetransmitted") / max(run.sent("packetsSent"), 1)
        #expect(share < 0.05, "retransmitted \(share); \(run.summary)")
        #expect(run.shown(after: 3) >= 0.98, "\(run.summary)")
        #expect(run.mean("targetKbps", from: 3, to: 10) > 2000, "no false congestion; \(run.summary)")
    }

    /// 5% random loss on a fast path: every frame still shown, repairs
    /// close to the loss rate, the rate not cut for loss that is not congestion.
    @Test func repairsRandomLossWithLittleOverhead() throws {
        let run = try Self.run(network: "loss5", seconds: 10)
        let lost = (run.relay["forward"] as? [String: Any])?["lost"] as? Int ?? 0
        let share = run.sent("packetsRetransmitted") / max(run.sent("packetsSent"), 1)
        #expect(share < 0.08, "retransmitted \(share) for 5% loss; \(run.summary)")
        #expect(Double(run.sent("packetsRetransmitted")) <= 1.3 * Double(lost), "one repair per loss, about")
        #expect(run.shown(after: 3) >= 0.99, "\(run.summary)")
    }

    /// A cap that halves mid-stream (4 -> 2 Mbit/s at 8 s) and lifts at 20 s.
    @Test func followsACapThatHalvesAndComesBack() throws {
        let run = try Self.run(network: "halving", seconds: 30, sendArguments: ["--bitrate", "3500"])
        #expect(run.mean("sentKbps", from: 11, to: 19.5) < 2100, "within the halved cap; \(run.summary)")
        // Back up: within 10 s of the lift, the encoder is allowed what it
        // was before the cap halved (what it sends varies with the content).
        let before = run.mean("encoderKbps", from: 3, to: 7.5)
        let after = run.mean("encoderKbps", from: 27, to: 30)
        #expect(after > 0.85 * before, "back up after the lift: \(after) vs \(before) before; \(run.summary)")
        #expect(run.frozen(after: 3, of: 30) < 0.03, "\(run.summary)")
        let longest = run.received("freezeSeconds")
        #expect(longest < 1.5, "freezes add up to \(longest) s; \(run.summary)")
    }

    /// The benchmark's drop path (4 Mbit/s falling to 400 kbit/s at 8 s, a
    /// 100 ms queue) with a video playing: the target is under the new cap
    /// within 0.6 s (the timeline's quarter-second samples put the two-report
    /// detection at 0.27 or 0.52 s), the keyframe sent at the fall is the one
    /// the receiver decodes on from (before, it passed that keyframe over and
    /// asked for another a round trip later), and the timeline says how fast
    /// the pacer may send.
    @Test func followsALinkThatFallsToATenthWithTheKeyframeItSendsAtOnce() throws {
        let run = try Self.run(network: "drop", seconds: 12, sceneArguments: ["--video"])
        let target = { (sample: [String: Any]) in (sample["targetKbps"] as? NSNumber)?.doubleValue ?? .infinity }
        let seconds = { (sample: [String: Any]) in (sample["seconds"] as? NSNumber)?.doubleValue ?? 0 }
        let under = run.rate.first { seconds($0) >= 8 && target($0) <= 400 }.map(seconds) ?? .infinity
        #expect(under <= 8.6, "under the new cap at \(under) s; \(run.summary)")
        #expect(run.sent("keyframes") >= 2, "a keyframe at the fall; \(run.summary)")
        #expect(run.received("keyframeRequests") <= 1, "none asked for after joining; \(run.summary)")
        let pacing = run.rate.compactMap { sample -> Double? in
            guard seconds(sample) >= 3, seconds(sample) < 7.5 else { return nil }
            return (sample["pacingKbps"] as? NSNumber).map { $0.doubleValue / target(sample) }
        }
        #expect(!pacing.isEmpty && pacing.allSatisfy { $0 >= 1.09 && $0 <= 2.51 }, "pacing / target before the fall: \(pacing)")
    }
}
}

/// The relay itself, as a program: what it delays, it delays by the
/// millisecond, and it forwards both ways.
@Suite("share relay", .alone)
struct RelayTests {
    @Test func delaysToTheMillisecondBothWays() throws {
        let dir = try TemporaryDirectory()
        let target = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let client = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(target); close(client) }
        let targetPort = bindLoopback(target)
        _ = bindLoopback(client)
        let relayPort = freeUDPPort()
        let relay = try ShareBinary.start(["relay", "--listen", "\(relayPort)", "--to", "127.0.0.1:\(targetPort)",
                                           "--forward", "delay=30ms", "--reverse", "delay=10ms", "--duration", "8",
                                           "--stats-json", dir.path("relay.json")])
        defer { relay.stop() }
        usleep(400_000)
        var there: [Double] = []
        var back: [Double] = []
        for round in 0..<40 {
            let started = Date()
            Self.send(client, to: Self.loopback(port: relayPort), bytes: [UInt8(round)])
            // The relay forwards from its own socket; answer that address.
            guard let relayAddress = Self.receive(target, timeout: 1) else { continue }
            there.append(Date().timeIntervalSince(started) * 1000)
            let answered = Date()
            Self.send(target, to: relayAddress, bytes: [UInt8(round)])
            if Self.receive(client, timeout: 1) != nil { back.append(Date().timeIntervalSince(answered) * 1000) }
            usleep(20_000)
        }
        #expect(there.count >= 38 && back.count >= 38, "\(there.count) there, \(back.count) back")
        let sortedThere = there.sorted()
        let sortedBack = back.sorted()
        #expect(sortedThere[sortedThere.count / 2] > 29.5 && sortedThere[sortedThere.count / 2] < 31.5, "there: \(sortedThere)")
        #expect(sortedBack[sortedBack.count / 2] > 9.5 && sortedBack[sortedBack.count / 2] < 11.5, "back: \(sortedBack)")
        #expect(sortedThere[sortedThere.count * 9 / 10] < 33, "p90 within a few ms: \(sortedThere)")
    }

    @Test func refusesAProfileItCannotRead() throws {
        let result = try ShareBinary.run(["relay", "--listen", "\(freeUDPPort())", "--to", "127.0.0.1:9",
                                          "--forward", "loss=150%"])
        #expect(result.status != 0)
        #expect(result.output.contains("loss 150% is outside 0-100%"), "\(result.output)")
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    static func send(_ fd: Int32, to address: sockaddr_in, bytes: [UInt8]) {
        var target = address
        _ = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// Waits up to `timeout` seconds for a datagram; returns who sent it.
    static func receive(_ fd: Int32, timeout: Double) -> sockaddr_in? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 64)
        var from = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &from) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
        }
        return count >= 0 ? from : nil
    }
}
