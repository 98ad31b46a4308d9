import ShareCongestion
import ShareImpairment
import ShareWire
import Testing
import ShareBase

@Suite("The impairment relay's model of a path (sans-IO)")
struct ImpairmentTests {
    /// Offers `count` packets of `size` bytes every `spacing`; returns the link and every release time.
    static func offer(_ text: String, count: Int = 20_000, size: Int = 1200, spacing: Duration = .microseconds(500),
                      seed: UInt64 = 1) throws -> (ImpairedLink, [(sent: MonotonicTime, released: MonotonicTime)]) {
        var link = ImpairedLink(profile: try ImpairmentProfile(parsing: text), seed: seed)
        var releases: [(MonotonicTime, MonotonicTime)] = []
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        for _ in 0..<count {
            for at in link.submit(size: size, now: now) { releases.append((now, at)) }
            now = now + spacing
        }
        return (link, releases)
    }

    @Test func randomLossMatchesItsRate() throws {
        let (link, _) = try Self.offer("loss=5%")
        let rate = Double(link.counters.lost) / Double(link.counters.offered)
        #expect(abs(rate - 0.05) < 0.005, "lost \(rate)")
    }

    @Test func burstsLoseRunsOfPackets() throws {
        // Enter the bad state 1% of the time, leave it 25%: mean burst 4 packets, ~3.8% loss.
        let (link, releases) = try Self.offer("burst=1%/25%")
        let rate = Double(link.counters.lost) / Double(link.counters.offered)
        #expect(rate > 0.025 && rate < 0.05, "lost \(rate)")
        // Runs: the gaps between delivered packets' send times.
        var runs: [Int] = []
        for (a, b) in zip(releases, releases.dropFirst()) {
            let gap = Int(b.sent.since(a.sent) / .microseconds(500)) - 1
            if gap > 0 { runs.append(gap) }
        }
        let mean = Double(runs.reduce(0, +)) / Double(max(runs.count, 1))
        #expect(mean > 3 && mean < 5, "mean burst \(mean) packets")
    }

    @Test func delayAndJitterWithoutReorderingKeepOrder() throws {
        let (_, ordered) = try Self.offer("delay=30ms,jitter=20ms", count: 2000)
        #expect(zip(ordered, ordered.dropFirst()).allSatisfy { $0.released <= $1.released })
        let delays = ordered.map { $0.released.since($0.sent) / .milliseconds(1) }
        #expect(delays.min()! >= 10 - 0.01)
        let (_, reordered) = try Self.offer("delay=30ms,jitter=20ms,reorder", count: 2000)
        let overtaken = zip(reordered, reordered.dropFirst()).filter { $0.released > $1.released }.count
        #expect(overtaken > 100, "with reorder, packets overtake (\(overtaken))")
        let spread = reordered.map { $0.released.since($0.sent) / .milliseconds(1) }
        #expect(spread.min()! >= 10 - 0.01 && spread.max()! <= 50 + 0.01)
    }

    @Test func duplicationCopiesPackets() throws {
        let (link, releases) = try Self.offer("duplicate=10%")
        #expect(releases.count == link.counters.delivered)
        let rate = Double(link.counters.duplicated) / Double(link.counters.offered)
        #expect(abs(rate - 0.1) < 0.01)
    }

    @Test func bottleneckDeliversItsRateAndDropsWhatItsQueueCannotHold() throws {
        // 19.2 Mbit/s offered into 4 Mbit/s with a 50 ms queue, for 10 s.
        let (link, releases) = try Self.offer("rate=4mbit,queue=50ms")
        let span = releases.last!.released.since(releases.first!.released).seconds
        let rate = Double(releases.count * 1200 * 8) / span
        #expect(abs(rate - 4_000_000) < 100_000, "delivered \(rate) bit/s")
        #expect(link.counters.queueDrops > 15_000)
        #expect(link.counters.maxQueueMilliseconds <= 50 + 2.4 + 0.01, "never more than the queue and one packet")
        // Under the rate, nothing waits.
        let (calm, _) = try Self.offer("rate=40mbit,queue=50ms")
        #expect(calm.counters.queueDrops == 0 && calm.counters.maxQueueMilliseconds < 0.3)
    }

    @Test func bottleneckRateFollowsItsSchedule() throws {
        let profile = try ImpairmentProfile(parsing: "rate=4mbit/2mbit@10s/off@25s,queue=200ms")
        #expect(profile.rate(at: .seconds(5)) == 4_000_000)
        #expect(profile.rate(at: .seconds(10)) == 2_000_000)
        #expect(profile.rate(at: .seconds(30)) == nil)
        #expect(profile.description == "rate=4000kbit/2000kbit@10000ms/off@25000ms,queue=200ms")
        #expect(try ImpairmentProfile(parsing: profile.description) == profile)
    }

    @Test(arguments: ["loss=120%", "delay=fast", "rate=lots", "burst=1%", "wobble=3", "queue=-5ms"])
    func badProfilesAreRefusedWithTheReason(text: String) {
        #expect(throws: ImpairmentError.self) { try ImpairmentProfile(parsing: text) }
    }

    @Test func everyNamedNetworkParses() throws {
        for name in NetworkProfile.names { _ = try NetworkProfile.named(name) }
        #expect(throws: ImpairmentError.self) { try NetworkProfile.named("dialup") }
    }

    @Test func protectionStartsOnSlowLossyPathsAndStopsWhenLossEnds() {
        var policy = ProtectionPolicy()
        var now = MonotonicTime.zero
        func feed(_ loss: Double, rtt: Int, seconds: Double) -> Int? {
            var group: Int?
            for _ in 0..<Int(seconds * 4) {
                group = policy.update(lossFraction: loss, roundTrip: .milliseconds(Int64(rtt)), now: now)
                now = now + .milliseconds(250)
            }
            return group
        }
        #expect(feed(0.02, rtt: 5, seconds: 5) == nil, "a fast path repairs by NACK")
        #expect(feed(0.01, rtt: 100, seconds: 3) == 5, "1% loss at 100 ms: one repair per five packets")
        #expect(feed(0.03, rtt: 100, seconds: 3) == 3)
        #expect(feed(0.0, rtt: 100, seconds: 2) != nil, "not off at the first quiet moment")
        #expect(feed(0.0, rtt: 100, seconds: 10) == nil, "off after five quiet seconds")
    }

    /// On a path whose round trip a viewer would see as a freeze, repairs
    /// also cross the groups (two losses in one group rebuilt), costing
    /// their share of the video's bitrate; the crossing stops when the
    /// round trip falls well back, or protection ends.
    @Test func protectionCrossesTheGroupsWhereARoundTripIsAFreeze() {
        var policy = ProtectionPolicy()
        var now = MonotonicTime.zero
        func feed(_ loss: Double, rtt: Int, seconds: Double = 2) -> (group: Int?, crossing: Bool) {
            var group: Int?
            for _ in 0..<Int(seconds * 4) {
                group = policy.update(lossFraction: loss, roundTrip: .milliseconds(Int64(rtt)), now: now)
                now = now + .milliseconds(250)
            }
            return (group, policy.crossing)
        }
        #expect(feed(0.01, rtt: 65, seconds: 4) == (5, false), "65 ms: a NACK's repair comes before a freeze shows")
        #expect(ProtectionPolicy.overhead(group: 5) == 1.0 / 6)
        #expect(feed(0.01, rtt: 400) == (5, true), "400 ms: a second repair per group, across them")
        #expect(policy.overhead == 2.0 / 7)
        #expect(feed(0.01, rtt: 100) == (5, true), "100 ms: a repair a round trip later comes as a freeze shows")
        #expect(feed(0.01, rtt: 80) == (5, true), "kept between the marks")
        #expect(feed(0.01, rtt: 65) == (5, false), "stopped under the lower mark")
        _ = feed(0.01, rtt: 400)
        #expect(feed(0.0, rtt: 400, seconds: 10) == (nil, false), "ended with the protection")
        var unproven = ProtectionPolicy()
        #expect(unproven.update(lossFraction: 0, roundTrip: .milliseconds(400), now: now) == unproven.unprovenGroup)
        #expect(!unproven.crossing, "a path protected before its loss is known does not cross")
    }

    /// Heavy loss is protected on a fast path too (NACK alone keeps few
    /// frames whole), sized to the loss; moderate loss on a fast path is
    /// not, and protection there ends once loss falls well under the mark.
    @Test func heavyLossIsProtectedWhateverTheRoundTrip() {
        var policy = ProtectionPolicy()
        var now = MonotonicTime.zero
        func feed(_ loss: Double, rtt: Int, seconds: Double) -> [Int?] {
            (0..<Int(seconds * 4)).map { _ in
                defer { now = now + .milliseconds(250) }
                return policy.update(lossFraction: loss, roundTrip: .milliseconds(Int64(rtt)), now: now)
            }
        }
        #expect(feed(0.05, rtt: 5, seconds: 5).allSatisfy { $0 == nil }, "5% at 5 ms: NACK")
        let heavy = feed(0.10, rtt: 30, seconds: 4)
        #expect(heavy.last == 3, "10% at 30 ms: one repair per three packets: \(heavy)")
        #expect(heavy.firstIndex { $0 != nil }.map { $0 >= 8 } == true, "after lasting two seconds: \(heavy)")
        #expect(feed(0.05, rtt: 30, seconds: 3).allSatisfy { $0 != nil }, "kept while loss stays near the mark")
        #expect(feed(0.01, rtt: 30, seconds: 3).last! == nil, "off once loss is well under it")
        #expect(feed(0.12, rtt: 5, seconds: 3).last == 3, "on a path of a few milliseconds too")
    }

    /// A path slow at its first round trip is protected before its loss is
    /// known (the first keyframe's packets are the likeliest to meet a
    /// loss), and without loss the protection ends like any; a path fast at
    /// first that slows later waits for loss as before.
    @Test func aSlowPathStartsProtectedUntilItsLossIsKnown() {
        func run(_ steps: [(loss: Double, rtt: Int?, seconds: Double)]) -> [Int?] {
            var policy = ProtectionPolicy()
            var now = MonotonicTime.zero
            var groups: [Int?] = []
            for step in steps {
                for _ in 0..<Int(step.seconds * 4) {
                    groups.append(policy.update(lossFraction: step.loss, roundTrip: step.rtt.map { .milliseconds(Int64($0)) },
                                                now: now))
                    now = now + .milliseconds(250)
                }
            }
            return groups
        }
        let slow = ProtectionPolicy().unprovenGroup
        // Nothing known yet (no round trip), then 100 ms without loss.
        let quiet = run([(0, nil, 1), (0, 100, 8)])
        #expect(quiet.prefix(4).allSatisfy { $0 == nil }, "no round trip, no judgement: \(quiet)")
        #expect(quiet[4] == slow, "protected at the first round trip: \(quiet)")
        #expect(quiet[4..<(4 + 19)].allSatisfy { $0 == slow }, "for five seconds: \(quiet)")
        #expect(quiet.suffix(8).allSatisfy { $0 == nil }, "then off, no loss having come: \(quiet)")
        // Loss comes: the group follows it, as on any slow path.
        let lossy = run([(0, 100, 1), (0.01, 100, 3)])
        #expect(lossy.first == slow && lossy.last == 5, "\(lossy)")
        // Fast at first: never protected for want of knowledge, even if it slows.
        let fast = run([(0, 10, 2), (0, 100, 8)])
        #expect(fast.allSatisfy { $0 == nil }, "\(fast)")
        // A fast path's first round trip never protects it.
        #expect(run([(0, 20, 3)]).allSatisfy { $0 == nil })
    }
}
