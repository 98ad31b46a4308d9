import ShareBase
@testable import ShareReceiver
import Testing

/// Freezes and interruptions from synthetic pictures: told the time, the
/// timestamps and the packets' sequence numbers.
@Suite("Gaps between pictures shown (sans-IO)")
struct ShownGapsTests {
    private func at(_ milliseconds: Int) -> MonotonicTime { MonotonicTime(nanoseconds: UInt64(milliseconds) * 1_000_000 + 1_000_000_000) }

    /// 30 fps for a second: frame n at 33n ms, timestamp 3000n, packets 3n..3n+2.
    private func steady(_ gaps: inout ShownGaps, frames: Range<Int>) -> [(seconds: Double, interrupted: Bool)] {
        frames.compactMap { n in
            gaps.arrived(UInt32(3000 * n))
            return gaps.shown(at: at(33 * n), timestamp: UInt32(3000 * n), sequence: Int64(3 * n)...Int64(3 * n + 2))
        }
    }

    @Test func aSteadyStreamHasNoGaps() {
        var gaps = ShownGaps()
        #expect(steady(&gaps, frames: 0..<30).isEmpty)
        #expect(gaps.spacing == 3000)
    }

    @Test func aStillScreensPausesAreFreezesButNoInterruptions() throws {
        var gaps = ShownGaps()
        _ = steady(&gaps, frames: 0..<30)
        // The sender sends one picture a second: next packets, a second's timestamps later.
        gaps.arrived(3000 * 59)
        let shown = gaps.shown(at: at(33 * 29 + 1000), timestamp: 3000 * 59, sequence: 90...92)
        let gap = try #require(shown)
        #expect(abs(gap.seconds - 1) < 0.01 && !gap.interrupted)
    }

    @Test func missingPicturesOrLatePicturesInterrupt() throws {
        var lost = ShownGaps()
        _ = steady(&lost, frames: 0..<30)
        // Ten frames' packets never made a picture.
        lost.arrived(3000 * 40)
        let afterLoss = lost.shown(at: at(33 * 40), timestamp: 3000 * 40, sequence: 120...122)
        let skipped = try #require(afterLoss)
        #expect(skipped.interrupted)

        var late = ShownGaps()
        _ = steady(&late, frames: 0..<30)
        // The next frame, nothing missing, shown 400 ms after the last.
        late.arrived(3000 * 30)
        let afterWait = late.shown(at: at(33 * 29 + 400), timestamp: 3000 * 30, sequence: 90...92)
        let held = try #require(afterWait)
        #expect(held.interrupted)
    }

    @Test func afterAPauseTheFirstPictureHasNoGapBeforeIt() {
        var gaps = ShownGaps()
        _ = steady(&gaps, frames: 0..<30)
        gaps.startOver()
        let first = gaps.shown(at: at(10_000), timestamp: 3000 * 300, sequence: 500...501)
        #expect(first == nil)
    }
}
