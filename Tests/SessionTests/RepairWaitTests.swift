import ShareSession
import TestSupport
import Testing
import ShareBase

@Suite("How long the jitter buffer waits for a repair (sans-IO)")
struct RepairWaitTests {
    @Test func triesGrowWithTheLossSoFewPacketsAreGivenUp() {
        var wait = RepairWait()
        #expect(wait.tries == 2, "nothing reported yet")
        for (loss, tries) in [(0.0, 2), (0.01, 2), (0.03, 2), (0.05, 3), (0.10, 3), (0.15, 4), (0.30, 4), (1.0, 4)] {
            wait = RepairWait()
            wait.reported(fractionLost: loss)
            #expect(wait.tries == tries, "at \(loss)")
        }
    }

    @Test func lossRisesAtOnceAndFallsByHalfAReport() {
        var wait = RepairWait()
        wait.reported(fractionLost: 0.09)
        #expect(wait.tries == 3)
        wait.reported(fractionLost: 0)
        #expect(wait.loss == 0.045)
        #expect(wait.tries == 3, "one clean report does not forget the loss")
        wait.reported(fractionLost: 0)
        #expect(wait.tries == 2)
        wait.reported(fractionLost: -1)
        wait.reported(fractionLost: 7)
        #expect(wait.loss == 1, "out of range reads are clamped")
    }

    @Test func depthIsTheReorderingAndOneRoundTripAndMarginPerTry() {
        var wait = RepairWait()
        let depth = { wait.depth(reorderWait: .milliseconds(5), roundTrip: .milliseconds(40), retryMargin: .milliseconds(10)) }
        #expect(depth() == .milliseconds(5 + 80 + 10 + 20))
        wait.reported(fractionLost: 0.1)
        #expect(depth() == .milliseconds(5 + 120 + 20 + 20))
    }

    /// The loss10 failure replayed: on a path losing one original in ten,
    /// the receiver's own reports raise its wait to three tries, so a packet
    /// whose first two repairs are lost is still in time; on a clean path
    /// the wait stays at two.
    @Test func aLossyPathIsGivenAThirdTry() throws {
        func streamed(droppingEvery step: Int?) throws -> (depth: Duration, rtt: Duration, losses: Int) {
            let link = try RepairTests.repairing()
            var originals = 0
            for n in 0..<45 {
                try link.send(n, size: n == 0 ? 20_000 : 5000, keyframe: n == 0)
                link.deliver { _, bytes in
                    guard n > 0, bytes.count >= 12, bytes[1] & 0x7F == 96, ssrc(of: bytes) == 0xAAAA else { return false }
                    originals += 1
                    return step.map { originals % $0 == 0 } ?? false
                }
                for _ in 0..<3 {
                    link.advance(.milliseconds(11))
                    link.deliver()
                }
            }
            return (link.receiver.jitterBufferDelay, try #require(link.receiver.roundTrip), link.losses)
        }
        let lossy = try streamed(droppingEvery: 10)
        #expect(lossy.losses == 0, "every drop repaired")
        #expect(lossy.depth >= lossy.rtt * 3 + .milliseconds(40), "three tries: \(lossy.depth), round trip \(lossy.rtt)")
        let clean = try streamed(droppingEvery: nil)
        #expect(clean.depth <= clean.rtt * 2 + .milliseconds(40), "two tries: \(clean.depth), round trip \(clean.rtt)")
    }
}
