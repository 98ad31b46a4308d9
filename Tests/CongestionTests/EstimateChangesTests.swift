import ShareCongestion
import ShareWire
import Testing
import ShareBase

@Suite("Which estimates the host is told")
struct EstimateChangesTests {
    private func estimate(_ kbps: Double, loss: Double = 0, usage: BandwidthUsage = .normal) -> CongestionController.Estimate {
        CongestionController.Estimate(target: .kilobitsPerSecond(kbps), delayBased: .kilobitsPerSecond(kbps),
                                      lossBased: .kilobitsPerSecond(kbps), queueDelay: nil,
                                      bottleneck: nil, acknowledged: nil, lossFraction: loss, roundTrip: nil, usage: usage)
    }

    private func at(_ ms: UInt64) -> MonotonicTime { MonotonicTime(nanoseconds: ms * 1_000_000) }

    @Test func theFirstThenRealChangesOnly() {
        var changes = EstimateChanges()
        #expect(changes.check(estimate(2000), now: at(0)) != nil)
        // Small moves are not news; 10% is.
        #expect(changes.check(estimate(2150), now: at(600)) == nil)
        #expect(changes.check(estimate(1850), now: at(700)) == nil)
        #expect(changes.check(estimate(1790), now: at(800))?.target == .kilobitsPerSecond(1790))
        // Loss into another 2% band, and a new delay verdict, are news.
        #expect(changes.check(estimate(1790, loss: 0.01), now: at(1400)) == nil)
        #expect(changes.check(estimate(1790, loss: 0.03), now: at(1500)) != nil)
        #expect(changes.check(estimate(1790, loss: 0.03, usage: .overusing), now: at(2100)) != nil)
    }

    @Test func neverMoreOftenThanTheInterval() {
        var changes = EstimateChanges()
        var told = 0
        for step in 0..<100 {
            // The target halves and doubles every 10 ms for a second.
            if changes.check(estimate(step % 2 == 0 ? 1000 : 2000), now: at(UInt64(step) * 10)) != nil { told += 1 }
        }
        #expect(told == 2, "\(told) told in one second")
    }
}
