import ShareCongestion
import ShareImpairment
import ShareSession
import ShareWire
import TestSupport
import Testing
import ShareBase

@Suite("Congestion control: estimators, controller, pacer, ladder (sans-IO)")
struct CongestionTests {
    static let ssrc: UInt32 = 0xABCD

    /// `count` packets of `size` bytes sent every `spacing` from `start`.
    static func sent(_ count: Int, size: Int = 1200, spacing: Duration, start: MonotonicTime = .zero,
                     first: UInt16 = 0) -> [SentPacket] {
        (0..<count).map { i in
            SentPacket(ssrc: ssrc, sequence: first &+ UInt16(i), size: size,
                       sendTime: start + .nanoseconds(spacing.nanoseconds.int64 * Int64(i)))
        }
    }

    /// A report stamped at `reportAt` (receiver clock) for packets that
    /// arrived at `arrivals` (nil: lost).
    static func report(first: UInt16, arrivals: [Duration?], reportAt: Duration) -> CongestionControlFeedback {
        let metrics = arrivals.map { arrival -> CongestionControlFeedback.Metric in
            guard let arrival else { return .lost }
            let offset = (reportAt - arrival) / .microseconds(1) * 1024 / 1e6
            return .init(received: true, ecn: 0, arrivalOffset: UInt16(offset.rounded()))
        }
        let stamp = UInt32(truncatingIfNeeded: Int64((reportAt / .microseconds(1)) * 65536 / 1e6))
        return CongestionControlFeedback(senderSSRC: 1, blocks: [.init(ssrc: ssrc, beginSequence: first, metrics: metrics)],
                                         reportTimestamp: stamp)
    }

    @Test func feedbackHistoryMatchesReportsToWhatWasSentAndMeasuresTheRoundTrip() {
        var history = FeedbackHistory()
        for packet in Self.sent(10, spacing: .milliseconds(1), start: MonotonicTime(nanoseconds: 1_000_000_000)) {
            history.sent(packet)
        }
        // Packets 0-9 arrive 20 ms after they left (receiver clock: +5 s), 4 and 7 lost;
        // the report is made 10 ms after the last arrival and reaches us 20 ms later.
        let arrivals: [Duration?] = (0..<10).map { i in i == 4 || i == 7 ? nil : .seconds(5) + .milliseconds(20 + i) }
        let report = Self.report(first: 0, arrivals: arrivals, reportAt: .seconds(5) + .milliseconds(39))
        var now = MonotonicTime(nanoseconds: 1_000_000_000) + .milliseconds(59)
        let feedback = history.handle(report, now: now, lossDelay: .milliseconds(100))
        #expect(feedback.results.count == 8, "the missing two are not given up yet: they may be late")
        #expect(feedback.results.allSatisfy { $0.received })
        let rtt = feedback.roundTrip.map { $0 / .milliseconds(1) } ?? -1
        #expect(abs(rtt - 40) < 2, "round trip \(rtt) ms: 20 ms there, 20 ms back, 10 ms held out")
        // The same report again teaches nothing new; a late arrival of 4 is reported once.
        #expect(history.handle(report, now: now, lossDelay: .milliseconds(100)).results.isEmpty)
        var late = arrivals
        late[4] = .seconds(5) + .milliseconds(38)
        let second = history.handle(Self.report(first: 0, arrivals: late, reportAt: .seconds(5) + .milliseconds(45)),
                                    now: now, lossDelay: .milliseconds(100))
        #expect(second.results.map(\.packet.sequence) == [4])
        #expect(second.results.allSatisfy { $0.received })
        // Once 100 ms have passed since it was sent, 7 is lost for good.
        now = now + .milliseconds(50)
        let verdict = history.handle(Self.report(first: 0, arrivals: late, reportAt: .seconds(5) + .milliseconds(95)),
                                     now: now, lossDelay: .milliseconds(100))
        #expect(verdict.results.map(\.packet.sequence) == [7])
        #expect(verdict.results.allSatisfy { !$0.received })
        // Reports about packets never sent are ignored.
        let forged = Self.report(first: 5000, arrivals: [.seconds(1), .seconds(1)], reportAt: .seconds(2))
        #expect(history.handle(forged, now: now).results.isEmpty)
    }

    /// Groups of packets sent every 10 ms whose one-way delay grows by
    /// `growth` per group (a filling queue) or stays constant.
    static func trendline(growth: Double, groups: Int = 60) -> BandwidthUsage {
        var estimator = TrendlineEstimator()
        var verdicts: [BandwidthUsage] = []
        for g in 0..<groups {
            let send = MonotonicTime(nanoseconds: UInt64(g) * 10_000_000)
            let delay = 20 + growth * Double(g)
            let arrival = Duration.nanoseconds(Int64((Double(g) * 10 + max(delay, 0)) * 1e6))
            let packet = SentPacket(ssrc: ssrc, sequence: UInt16(g), size: 1200, sendTime: send)
            verdicts.append(estimator.update([PacketResult(packet: packet, received: true, arrival: arrival)]))
        }
        return verdicts.suffix(10).contains(.overusing) ? .overusing
            : (verdicts.suffix(10).allSatisfy { $0 == .underusing } ? .underusing : verdicts.last!)
    }

    @Test func trendlineSeesAGrowingQueueAndNotAConstantDelay() {
        #expect(Self.trendline(growth: 0) == .normal)
        #expect(Self.trendline(growth: 2) == .overusing, "2 ms more delay every 10 ms: a queue filling at 20%")
        #expect(Self.trendline(growth: -0.5, groups: 40) != .overusing)
    }

    @Test func acknowledgedBitrateMeasuresWhatArrives() {
        var acknowledged = AcknowledgedBitrate()
        // 1200 bytes every 4.8 ms: 2 Mbit/s.
        let results = Self.sent(300, spacing: .microseconds(4800)).enumerated().map { i, packet in
            PacketResult(packet: packet, received: true, arrival: .microseconds(Int64(i) * 4800))
        }
        acknowledged.update(Array(results.prefix(150)))
        acknowledged.update(Array(results.suffix(150)))
        let rate = acknowledged.rate ?? .zero
        #expect(abs(rate.bitsPerSecond - 2_000_000) < 100_000, "measured \(rate)")
    }

    /// Half a second at 4 Mbit/s, then 1 Mbit/s: the window follows the
    /// quiet within its half second, the peak remembers the burst for a
    /// second longer.
    @Test func acknowledgedPeakRemembersTheLastSecondsBurst() {
        var acknowledged = AcknowledgedBitrate()
        var arrival = Duration.zero
        var sequence: UInt16 = 0
        func feed(_ seconds: Double, spacing: Duration) {
            let count = Int(seconds / spacing.seconds)
            let packets = Self.sent(count, spacing: spacing, start: MonotonicTime(nanoseconds: arrival.nanoseconds),
                                    first: sequence)
            for chunk in stride(from: 0, to: count, by: 10) {  // a report every 10 packets
                acknowledged.update(packets[chunk..<min(chunk + 10, count)].map {
                    PacketResult(packet: $0, received: true, arrival: .nanoseconds(Int64($0.sendTime.nanoseconds)))
                })
            }
            arrival += spacing * count
            sequence &+= UInt16(count)
        }
        feed(0.5, spacing: .microseconds(2400))  // 4 Mbit/s
        feed(0.7, spacing: .microseconds(9600))  // 1 Mbit/s
        let rate = acknowledged.rate ?? .zero
        #expect(abs(rate.bitsPerSecond - 1_000_000) < 100_000, "\(rate)")
        #expect((acknowledged.peak ?? .zero) > .kilobitsPerSecond(3000), "the burst 0.7 s ago: \(acknowledged.peak ?? .zero)")
        feed(0.9, spacing: .microseconds(9600))  // the burst left the window 1.1 s ago
        #expect((acknowledged.peak ?? .zero) < .kilobitsPerSecond(1200), "forgotten after a second: \(acknowledged.peak ?? .zero)")
    }

    /// Trains of 10 packets sent back to back every 33 ms, arriving spread
    /// by a link of `rate` bit/s, or with random jitter, or as they left.
    static func trains(arrivalGap: (Int) -> Double, count: Int = 30) -> [PacketResult] {
        var results: [PacketResult] = []
        for train in 0..<count {
            let start = Double(train) * 33
            for i in 0..<10 {
                let packet = SentPacket(ssrc: ssrc, sequence: UInt16(train * 10 + i), size: 1200,
                                        sendTime: MonotonicTime(nanoseconds: UInt64((start + Double(i) * 0.01) * 1e6)))
                let arrival = start + 5 + (0..<i).reduce(0) { $0 + arrivalGap($1) }
                results.append(PacketResult(packet: packet, received: true, arrival: .microseconds(Int64(arrival * 1000))))
            }
        }
        return results
    }

    @Test func bottleneckEstimatorMeasuresTrainDispersionAndNotJitter() {
        var link = BottleneckEstimator()
        link.update(Self.trains { _ in 1200 * 8 / 3_000_000 * 1000 })  // 3.2 ms a packet: 3 Mbit/s
        let rate = link.rate ?? .zero
        #expect(abs(rate.bitsPerSecond - 3_000_000) < 150_000, "measured \(rate)")
        var jitter = BottleneckEstimator()
        var rng = SeededGenerator(seed: 3)
        jitter.update(Self.trains { _ in Double.random(in: 0...8, using: &rng) })
        #expect(jitter.rate == nil, "uneven spreading is jitter, not a link")
        // Trains that arrive as tightly as they left clear the estimate.
        link.update(Self.trains(arrivalGap: { _ in 0.01 }, count: 5))
        #expect(link.rate == nil)
        let widened = link.takeWidened()
        #expect(widened)
    }

    @Test func lossBasedEstimatorCutsOnHeavyLossHoldsOnModerateAndGrowsOnLittle() {
        func run(loss: Int) -> Bitrate {
            var estimator = LossBasedEstimator(start: .kilobitsPerSecond(1000), minimum: .kilobitsPerSecond(100), maximum: .kilobitsPerSecond(4000))
            var now = MonotonicTime.zero
            for round in 0..<10 {
                let results = Self.sent(100, spacing: .milliseconds(1), first: UInt16(round * 100)).enumerated().map { i, p in
                    PacketResult(packet: p, received: i >= loss, arrival: i >= loss ? .milliseconds(Int64(i)) : nil)
                }
                now = now + .milliseconds(500)
                _ = estimator.update(results, roundTrip: .milliseconds(50), now: now)
            }
            return estimator.bitrate
        }
        #expect(run(loss: 20) < .kilobitsPerSecond(500))
        #expect(run(loss: 5) == .kilobitsPerSecond(1000))
        #expect(run(loss: 0) > .kilobitsPerSecond(1400))
    }

    @Test func controllerGetsUnderABottleneckWithinThreeSeconds() {
        // 1 Mbit/s with a 200 ms drop-tail queue; we start at 3 Mbit/s.
        var sim = NetworkSimulation(link: try! ImpairmentProfile(parsing: "rate=1mbit,queue=200ms"))
        sim.run(for: .seconds(20))
        #expect(sim.target(at: 3) < .kilobitsPerSecond(1000), "target at 3 s: \(sim.target(at: 3))")
        let after = sim.maxTarget(from: 5, to: 20)
        #expect(after < .kilobitsPerSecond(1150), "stays near the cap: \(after)")
        #expect(sim.target(at: 20) > .kilobitsPerSecond(600), "and uses it: \(sim.target(at: 20))")
    }

    /// A path with no bottleneck but 30 ± 20 ms of delay, reordering or
    /// not (Wi-Fi, a busy uplink): a few trains arrive in order and spread
    /// by chance, at random rates. They must not be taken for a slow link,
    /// or the target drops to a fraction of what the path carries (and a
    /// large frame then waits a second in the pacer). Content that fills
    /// its target and screen-like content (small frames, an occasional
    /// large one), in full-size packets and in small slices.
    @Test(arguments: Array(1...10) as [UInt64])
    func jitterIsNotTakenForABottleneck(seed: UInt64) {
        let pattern = [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 2.5, 0.1, 0.1, 0.1, 0.1, 0.1]
        let contents: [(name: String, share: @Sendable (Int) -> Double)] = [("full", { _ in 1 }),
                                                                         ("screen", { pattern[$0 % pattern.count] })]
        for (name, content) in contents {
            for packetBytes in [1200, 300] {
                for path in ["delay=30ms,jitter=20ms,reorder", "delay=30ms,jitter=20ms"] {
                    var sim = NetworkSimulation(link: try! ImpairmentProfile(parsing: path), start: .kilobitsPerSecond(3000),
                                                maximum: .kilobitsPerSecond(3000), returnDelay: .milliseconds(30), seed: seed)
                    sim.content = content
                    sim.packetBytes = packetBytes
                    var lowest = Bitrate.bitsPerSecond(.infinity)
                    var limits: Set<String> = []
                    for _ in 0..<300 {
                        sim.run(for: .milliseconds(100))
                        lowest = min(lowest, sim.controller.target)
                        limits.insert(sim.controller.limit.rawValue)
                    }
                    let which = "seed \(seed), \(name) content in \(packetBytes)-byte packets, \(path)"
                    #expect(!limits.contains(CongestionController.Limit.bottleneck.rawValue), "\(which): \(limits)")
                    #expect(lowest > .kilobitsPerSecond(2000), "\(which): the target fell to \(lowest)")
                }
            }
        }
    }

    @Test func controllerFollowsACapThatHalvesAndComesBackWhenItLifts() {
        var sim = NetworkSimulation(link: try! ImpairmentProfile(parsing: "rate=4mbit/2mbit@10s/off@20s,queue=100ms"),
                                    start: .kilobitsPerSecond(3000), maximum: .kilobitsPerSecond(5000))
        sim.run(for: .seconds(32))
        let before = sim.meanTarget(from: 5, to: 10)
        #expect(before > .kilobitsPerSecond(3300), "uses the 4 Mbit/s: \(before)")
        #expect(sim.target(at: 12) < .kilobitsPerSecond(2000), "under the halved cap within 2 s: \(sim.target(at: 12))")
        // GCC probes just past the capacity and backs off: a sawtooth around it.
        #expect(sim.meanTarget(from: 12, to: 20) < .kilobitsPerSecond(2000), "on average under the cap: \(sim.meanTarget(from: 12, to: 20))")
        #expect(sim.maxTarget(from: 12, to: 19.5) < .kilobitsPerSecond(2300), "peaks near it: \(sim.maxTarget(from: 12, to: 19.5))")
        #expect(sim.target(at: 30) > 0.9 * before, "back up within 10 s of the lift: \(sim.target(at: 30)) vs \(before)")
    }

    /// Screen content does not fill its target evenly: a large frame, then
    /// small ones (a scroll, then a pause), about 60% of the target over
    /// all. Never going above 1.5x what gets through must not keep such a
    /// sender from climbing back once a cap lifts: what the path carried
    /// in the last bursts counts, not the quiet between them.
    @Test func burstyContentClimbsBackAsFastAfterTheCapLifts() {
        var sim = NetworkSimulation(link: try! ImpairmentProfile(parsing: "rate=4mbit/2mbit@10s/off@20s,queue=100ms"),
                                    start: .kilobitsPerSecond(3000), maximum: .kilobitsPerSecond(3500))
        let pattern = [2.4, 0.2, 0.2, 0.8, 0.2, 0.2, 1.4, 0.2, 0.2, 0.2]  // 0.6 of the target, in bursts
        sim.content = { pattern[$0 % pattern.count] }
        sim.run(for: .seconds(30))
        let before = sim.meanTarget(from: 5, to: 10)
        #expect(before > .kilobitsPerSecond(3300), "allowed the most before the cap: \(before)")
        #expect(sim.meanTarget(from: 12, to: 20) < .kilobitsPerSecond(2000), "under the halved cap: \(sim.meanTarget(from: 12, to: 20))")
        #expect(sim.meanTarget(from: 27, to: 30) > 0.9 * before,
                "back up within 10 s of the lift: \(sim.meanTarget(from: 27, to: 30)) vs \(before); \(sim.targets.filter { $0.seconds >= 20 }.map { Int($0.rate.kilobitsPerSecond) })")
    }

    /// The controller says which rule holds its target, and counts the
    /// reports whose delay verdict was overuse or underuse (the sender's
    /// rate timeline shows both).
    @Test func controllerSaysWhatHoldsItsTarget() {
        var open = NetworkSimulation(link: try! ImpairmentProfile(parsing: "delay=5ms"), start: .kilobitsPerSecond(2000))
        open.run(for: .seconds(6))
        #expect(open.controller.limit == .ceiling && open.controller.overuseReports == 0)

        var capped = NetworkSimulation(link: try! ImpairmentProfile(parsing: "rate=1mbit,queue=200ms"))
        capped.run(for: .seconds(8))
        #expect(capped.controller.limit == .bottleneck, "\(capped.controller.limit)")
        #expect(capped.controller.overuseReports > 0 && capped.controller.underuseReports > 0,
                "the start rate's queue grew, then drained: \(capped.controller.overuseReports), \(capped.controller.underuseReports)")

        var lossy = NetworkSimulation(link: try! ImpairmentProfile(parsing: "loss=25%"), start: .kilobitsPerSecond(2000))
        lossy.run(for: .seconds(6))
        #expect(lossy.controller.limit == .loss, "\(lossy.controller.limit)")

        // Sending and hearing nothing for longer than the feedback timeout.
        var silent = CongestionController(configuration: .init(start: .kilobitsPerSecond(2000), minimum: .kilobitsPerSecond(300), maximum: .kilobitsPerSecond(3000)))
        let start = MonotonicTime(nanoseconds: 1_000_000_000)
        for packet in Self.sent(10, spacing: .milliseconds(1), start: start) { silent.sent(packet) }
        silent.handle(Self.report(first: 0, arrivals: Array(repeating: .milliseconds(5), count: 10), reportAt: .milliseconds(60)),
                      now: start + .milliseconds(60))
        for packet in Self.sent(10, spacing: .milliseconds(1), start: start + .milliseconds(100), first: 10) { silent.sent(packet) }
        silent.poll(now: start + .seconds(3))
        #expect(silent.limit == .feedbackTimeout && silent.target == .kilobitsPerSecond(1000), "\(silent.limit), \(silent.target)")
    }

    @Test func controllerHoldsOnRandomLossWithoutAQueue() {
        var sim = NetworkSimulation(link: try! ImpairmentProfile(parsing: "loss=2%"), start: .kilobitsPerSecond(2000))
        sim.run(for: .seconds(10))
        #expect(sim.maxTarget(from: 2, to: 10) >= .kilobitsPerSecond(1900), "2% random loss is not congestion")
    }

    @Test func forgedOrAbsurdFeedbackStaysWithinTheBounds() {
        var controller = CongestionController(configuration: .init(start: .kilobitsPerSecond(2000), minimum: .kilobitsPerSecond(300), maximum: .kilobitsPerSecond(3000)))
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        for round in 0..<50 {
            let packets = Self.sent(50, spacing: .milliseconds(1), start: now, first: UInt16(round * 50))
            for packet in packets { controller.sent(packet) }
            now = now + .milliseconds(100)
            // Everything lost, or arrival times all over the place.
            let arrivals: [Duration?] = round % 2 == 0 ? Array(repeating: nil, count: 50)
                : (0..<50).map { _ in .milliseconds(Int64.random(in: 0...8000)) }
            controller.handle(Self.report(first: UInt16(round * 50), arrivals: arrivals, reportAt: .seconds(9)), now: now)
            #expect(controller.target >= .kilobitsPerSecond(300) && controller.target <= .kilobitsPerSecond(3000))
        }
        // Silence while sending halves the rate, never below the floor.
        for _ in 0..<20 {
            now = now + .seconds(2)
            controller.sent(SentPacket(ssrc: Self.ssrc, sequence: 1, size: 100, sendTime: now))
            controller.poll(now: now)
        }
        #expect(controller.target == .kilobitsPerSecond(300))
    }

    @Test func pacerSendsOrdinaryFramesAtOnceAndSpreadsLargeOnes() {
        var pacer = PacketPacer(targetBitrate: .kilobitsPerSecond(2000))  // paced at 5 Mbit/s, 12.5 KB burst
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        let packet = [UInt8](repeating: 0, count: 1200)
        for _ in 0..<8 { pacer.enqueue(packet[...], kind: .media, now: now) }
        var sent = 0
        pacer.release(now: now) { _, _ in sent += 1 }
        #expect(sent == 8, "a 9.6 KB frame leaves at once")
        now = now + .milliseconds(100)
        for _ in 0..<50 { pacer.enqueue(packet[...], kind: .media, now: now) }  // a 60 KB frame
        var times: [MonotonicTime] = []
        while pacer.queued > 0 {
            pacer.release(now: now) { _, _ in times.append(now) }
            now = max(now + .microseconds(100), pacer.nextRelease(now: now) ?? now)
        }
        let spread = times.last!.since(times.first!) / .milliseconds(1)
        // 60 KB at 5 Mbit/s is 96 ms, less the 12.5 KB that may leave at once.
        #expect(spread > 60 && spread < 90, "spread over \(spread) ms")
    }

    /// A probe's padding leaves at the times it was queued for, outside
    /// the pacing budget (it is sent faster than the target on purpose),
    /// and the pacer wakes for each; repairs made useless by a keyframe go.
    @Test func probePaddingLeavesOnItsScheduleAndSupersededRepairsGo() {
        var pacer = PacketPacer(targetBitrate: .kilobitsPerSecond(300))
        let start = MonotonicTime(nanoseconds: 1_000_000_000)
        let padding = [UInt8](repeating: 0, count: 250)
        for index in 0..<6 { pacer.enqueue(padding[...], kind: .probe, now: start + .milliseconds(2 * index)) }
        var now = start
        var times: [(MonotonicTime, PacketPacer.Kind)] = []
        while pacer.queued > 0 {
            pacer.release(now: now) { _, kind in times.append((now, kind)) }
            guard let next = pacer.nextRelease(now: now) else { break }
            now = max(next, now + .microseconds(10))
        }
        #expect(times.map(\.1) == Array(repeating: .probe, count: 6))
        #expect(times.map { $0.0.since(start) / .milliseconds(1) } == [0, 2, 4, 6, 8, 10],
                "each at its time, though 1.5 KB in 10 ms is 1.2 Mbit/s against a 750 kbit/s pacing rate")
        let packet = [UInt8](repeating: 0, count: 1200)
        for _ in 0..<5 { pacer.enqueue(packet[...], kind: .retransmission, now: now) }
        #expect(pacer.dropRepairs() == 5)
        #expect(pacer.queued == 0)
        #expect(pacer.counters.repairsSuperseded == 5)
    }

    /// A keyframe queued behind a frame coded for a rate the path no longer
    /// has: the media queued before it and not yet sent goes (counted), what
    /// already left and what came after the mark stay, and the keyframe
    /// leaves first at the slow pacing rate.
    @Test func mediaQueuedBeforeAKeyframeIsDroppedUnsent() {
        var pacer = PacketPacer(targetBitrate: .kilobitsPerSecond(400), configuration: {
            var configuration = PacketPacer.Configuration()
            configuration.pacingFactor = 1
            return configuration
        }())
        let now = MonotonicTime(nanoseconds: 1_000_000_000)
        var sent: [UInt8] = []
        // A 12-packet frame of the old rate: the burst allowance lets a few go at once.
        for index in 0..<12 { pacer.enqueue([UInt8](repeating: UInt8(index), count: 1000)[...], kind: .media, now: now) }
        pacer.release(now: now) { bytes, _ in sent.append(bytes.first!) }
        let leftAtOnce = sent.count
        #expect(leftAtOnce > 0 && leftAtOnce < 12)
        let mark = pacer.mediaMark
        for index in 100..<103 { pacer.enqueue([UInt8](repeating: UInt8(index), count: 1000)[...], kind: .media, now: now) }
        #expect(pacer.dropMedia(before: mark) == 12 - leftAtOnce)
        #expect(pacer.dropMedia(before: mark) == 0, "nothing before the mark is left")
        #expect(pacer.counters.mediaSuperseded == 12 - leftAtOnce)
        var later = now
        while pacer.queued > 0, let next = pacer.nextRelease(now: later) {
            later = max(next, later + .microseconds(10))
            pacer.release(now: later) { bytes, _ in sent.append(bytes.first!) }
        }
        #expect(Array(sent.dropFirst(leftAtOnce)) == [100, 101, 102])
        #expect(later.since(now) < .milliseconds(70), "three packets at 400 kbit/s, not fifteen")
    }

    @Test func retransmissionsGoFirstButWithinTheirBudget() {
        var pacer = PacketPacer(targetBitrate: .kilobitsPerSecond(1000))  // repairs: 300 kbit/s
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        let packet = [UInt8](repeating: 0, count: 1000)
        var repairs = 0
        var media = 0
        for _ in 0..<1000 {
            // Offer far more of both than fits.
            if pacer.queued < 200 {
                pacer.enqueue(packet[...], kind: .retransmission, now: now)
                pacer.enqueue(packet[...], kind: .media, now: now)
            }
            pacer.release(now: now) { _, kind in if kind == .retransmission { repairs += 1 } else { media += 1 } }
            now = now + .milliseconds(1)
        }
        let repairBits = Double(repairs * 8000)
        #expect(repairBits < 400_000 && repairBits > 200_000, "repairs \(repairBits) bit/s within the 30% budget")
        #expect(Double((repairs + media) * 8000) < 2_700_000, "all within 2.5x the target")
    }

    /// A burst of loss (twenty packets in a row, a Wi-Fi fade) is asked
    /// for in one NACK: its repairs must all leave well within the
    /// receiver's shortest wait (50 ms), not one per budget refill.
    @Test func aLossBurstsRepairsLeaveTogether() {
        var pacer = PacketPacer(targetBitrate: .kilobitsPerSecond(3000))
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        let packet = [UInt8](repeating: 0, count: 1000)
        // A second of ordinary frames first: the budgets are in their steady state.
        for _ in 0..<1000 {
            if now.nanoseconds % 33_000_000 == 0 { for _ in 0..<12 { pacer.enqueue(packet[...], kind: .media, now: now) } }
            pacer.release(now: now) { _, _ in }
            now = now + .milliseconds(1)
        }
        for _ in 0..<20 { pacer.enqueue(packet[...], kind: .retransmission, now: now) }
        let asked = now
        var last = now
        var repairs = 0
        while repairs < 20 && now.since(asked) < .seconds(1) {
            pacer.release(now: now) { _, kind in
                if kind == .retransmission { repairs += 1; last = now }
            }
            now = now + .milliseconds(1)
        }
        #expect(repairs == 20)
        #expect(last.since(asked) < .milliseconds(20), "the last repair left \(last.since(asked)) after the NACK")
    }

    /// With the bottleneck measured (pacing at 3.3 Mbit/s for a 3 Mbit/s
    /// target), repairs asked for together still leave no faster than it
    /// drains: the pacer's burst allowance, then the pacing rate.
    @Test func repairsNeverOutrunAMeasuredBottleneck() {
        var pacer = PacketPacer(targetBitrate: .kilobitsPerSecond(3000))
        pacer.setTarget(.kilobitsPerSecond(3000), pacingRate: .kilobitsPerSecond(3300))
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        pacer.release(now: now) { _, _ in }
        now = now + .seconds(1)
        let packet = [UInt8](repeating: 0, count: 1000)
        for _ in 0..<30 { pacer.enqueue(packet[...], kind: .retransmission, now: now) }
        var bytes = 0
        for _ in 0..<10 {
            pacer.release(now: now) { sent, _ in bytes += sent.count }
            now = now + .milliseconds(1)
        }
        // 20 ms of the pacing rate at once, then 10 ms more of it.
        let allowed = 3_300_000.0 / 8 * 0.030
        #expect(Double(bytes) <= allowed + 1000, "\(bytes) bytes of repairs in 10 ms; the link drains \(Int(allowed))")
    }

    @Test func qualityLadderStepsRateThenSizeWithHysteresis() {
        var ladder = QualityLadder(fps: 30, height: 720, bitrate: .kilobitsPerSecond(2800))
        #expect(ladder.rungs.map(\.fps) == [30, 15, 15, 15])
        #expect(ladder.rungs.map(\.height) == [720, 720, 540, 360])
        var now = MonotonicTime.zero
        func hold(_ bitsPerSecond: Double, _ seconds: Int) -> Int {
            for _ in 0..<(seconds * 10) {
                _ = ladder.update(target: .bitsPerSecond(bitsPerSecond), now: now)
                now = now + .milliseconds(100)
            }
            return ladder.index
        }
        #expect(hold(2_500_000, 5) == 0)
        #expect(hold(900_000, 2) == 1, "below the floor: half the frame rate first")
        #expect(hold(1_300_000, 10) == 1, "just above the floor is not enough to climb back")
        #expect(hold(300_000, 2) == 3, "far below: straight to the smallest picture")
        #expect(hold(2_500_000, 2) == 3, "no climb before 3 s")
        #expect(hold(2_500_000, 9) == 2, "a larger picture (a new encoder, an IDR) waits 8 s")
        #expect(hold(2_500_000, 8) == 1)
        #expect(hold(2_500_000, 4) == 0, "a higher frame rate 3 s")
    }

    /// The floors are for content that needs the whole bitrate: a simple
    /// screen that takes a sixth of a target under the floor, at a fine
    /// quantizer, keeps its frame rate; content that needs the target (a
    /// coarse quantizer) does not; at half the frame rate, content that
    /// would fit at the full rate goes back up after the usual wait; and a
    /// fall to a fraction steps down at once whatever the content.
    @Test func theLadderKeepsTheFrameRateOfContentThatFits() {
        var ladder = QualityLadder(fps: 30, height: 720, bitrate: .kilobitsPerSecond(2800))
        var now = MonotonicTime.zero
        func hold(_ kbps: Double, _ seconds: Int, _ content: Double, fine: Bool = true) -> Int {
            for _ in 0..<(seconds * 10) {
                let taken = QualityLadder.Content(bitrate: .kilobitsPerSecond(content), fine: fine)
                _ = ladder.update(target: .kilobitsPerSecond(kbps), now: now, content: taken)
                now = now + .milliseconds(100)
            }
            return ladder.index
        }
        #expect(hold(1100, 5, 450) == 0, "a simple screen under the floor")
        #expect(hold(1100, 2, 1000, fine: false) == 1, "content that needs the target")
        #expect(hold(1100, 2, 600) == 1, "twice 600 kbit/s would not fit")
        #expect(hold(1300, 4, 450) == 0, "twice 450 kbit/s would: back up after 3 s")
        #expect(hold(500, 1, 300) == 2, "a fall to a fraction")
    }
}

extension UInt64 {
    var int64: Int64 { Int64(clamping: self) }
}

@Suite("The pacer's packet queue")
struct PacketQueueTests {
    /// Packets of random sizes pushed and popped at random keep their bytes
    /// and order through every wrap of the arena, and a full queue refuses
    /// rather than overwrites.
    @Test func keepsEveryPacketIntactThroughWraps() {
        var pacer = PacketPacer(targetBitrate: .kilobitsPerSecond(1000), configuration: {
            var configuration = PacketPacer.Configuration()
            configuration.capacity = 64
            configuration.capacityBytes = 20_000
            configuration.maxQueueDelay = .seconds(3600)
            return configuration
        }())
        var rng = SeededGenerator(seed: 42)
        var expected: [[UInt8]] = []
        var refused = 0
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        var popped = 0
        for round in 0..<3000 {
            let size = Int.random(in: 12...1500, using: &rng)
            let packet = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ round) }
            if pacer.enqueue(packet[...], kind: .media, now: now) { expected.append(packet) } else { refused += 1 }
            if Int.random(in: 0..<4, using: &rng) == 0 {
                now = now + .milliseconds(Int64.random(in: 0...15, using: &rng))
                pacer.release(now: now) { bytes, _ in
                    #expect(Array(bytes) == expected[popped], "packet \(popped) changed in the queue")
                    popped += 1
                }
            }
        }
        #expect(refused > 0, "the queue filled at times and refused")
        #expect(popped > 1000)
        #expect(pacer.counters.dropped == refused)
    }
}
