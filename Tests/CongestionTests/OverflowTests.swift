import ShareCongestion
import ShareImpairment
import ShareWire
import Testing
import ShareBase

@Suite("A shallow queue's overflow told from random loss (sans-IO)")
struct OverflowTests {
    /// One packet's result: sent at `sent` ms, arriving `delay` ms later on
    /// the receiver's clock, or lost (nil).
    static func result(_ sequence: UInt16, sent: Double, delay: Double?) -> PacketResult {
        let sendTime = MonotonicTime(nanoseconds: UInt64(1_000_000_000 + sent * 1e6))
        let packet = SentPacket(ssrc: 1, sequence: sequence, size: 1200, sendTime: sendTime)
        return PacketResult(packet: packet, received: delay != nil,
                            arrival: delay.map { .nanoseconds(Int64((1000 + sent + $0) * 1e6)) })
    }

    /// Packets every 4 ms for two seconds, one-way delay from `delay(i)`,
    /// the ones in `lost` lost; how many losses were taken for overflows.
    static func overflows(delay: (Int) -> Double, lost: Set<Int>) -> Int {
        var detector = OverflowDetector()
        var results: [PacketResult] = []
        for i in 0..<500 {
            results.append(result(UInt16(i), sent: Double(i) * 4, delay: lost.contains(i) ? nil : delay(i)))
            if results.count == 10 {
                _ = detector.update(results)
                results.removeAll()
            }
        }
        return detector.overflows
    }

    @Test func lossBehindAFullQueueIsAnOverflowAndRandomLossIsNot() {
        var rng = SplitMix64(seed: 3)
        let jitter = (0..<500).map { _ in rng.unit() * 16 }
        let lost: Set<Int> = [100, 230, 370, 480]
        #expect(Self.overflows(delay: { 20 + jitter[$0] }, lost: lost) == 0, "jitter alone: no queue to overflow")
        // A queue that fills over each 100 packets to 60 ms and empties.
        let sawtooth = { (i: Int) in 20 + Double(i % 100) * 0.6 + jitter[i] / 4 }
        #expect(Self.overflows(delay: sawtooth, lost: [130, 240, 350]) == 0, "loss while the queue is low is random")
        #expect(Self.overflows(delay: sawtooth, lost: [199, 299, 399]) == 3, "loss as it is full is an overflow")
    }

    /// The wifi path of the network benchmark: 2.5 Mbit/s behind a 60 ms
    /// queue, 15 ± 8 ms each way, bursty loss; content that varies frame
    /// to frame around its target. Jitter hides the link's rate from
    /// train dispersion, and the sender used to keep a queue that each
    /// frame's burst overflowed. Paced at what the link delivered when it
    /// overflowed, bursts no longer do.
    @Test func aShallowQueueStopsOverflowingOnceItHas() {
        var sim = NetworkSimulation(link: try! ImpairmentProfile(parsing: "rate=2500kbit,queue=60ms,delay=15ms,jitter=8ms,burst=0.4%/30%"),
                                    start: .kilobitsPerSecond(3000), maximum: .kilobitsPerSecond(3000),
                                    returnDelay: .milliseconds(15))
        let pattern = [1.4, 0.7, 1.0, 1.2, 0.6, 1.1, 0.9, 0.8, 1.3, 0.7, 1.0, 0.9, 1.1, 0.8, 3.0]
        sim.content = { pattern[$0 % pattern.count] }
        sim.run(for: .seconds(5))
        let settled = sim.forward.counters
        var queued: [Double] = []
        for _ in 0..<200 {
            sim.run(for: .milliseconds(100))
            queued.append(sim.controller.estimate.queueDelay ?? 0)
        }
        let meanQueue = queued.reduce(0, +) / Double(queued.count)
        let drops = sim.forward.counters.queueDrops - settled.queueDrops
        let offered = sim.forward.counters.offered - settled.offered
        let mean = sim.meanTarget(from: 5, to: 25)
        #expect(Double(drops) <= Double(offered) * 0.001, "\(drops) of \(offered) packets overflowed the queue")
        #expect(sim.controller.pacingRate <= .kilobitsPerSecond(2500), "paced no faster than the link drains")
        // Bursts no longer stack on the standing queue: it averages under a
        // third of the path's, and a repair waits that much less behind it.
        #expect(meanQueue < 20, "the queue the sender keeps: \(meanQueue) ms")
        // Only the pacing changes: the target is the delay's and the
        // loss's, as high as it settles without the overflow pacing.
        #expect(mean > .kilobitsPerSecond(1600), "and the link is still used: \(mean)")
    }
}
