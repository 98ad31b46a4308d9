import ShareLatency
import ShareScene
import Testing

@Suite("Stamp reader: what a receiver's shown pictures say of their stamps")
struct StampReaderTests {
    /// New stamps are timed from their drawing to when they were shown; a
    /// picture repeating the last stamp or holding none is counted apart
    /// and times nothing.
    @Test func newRepeatedAndUnreadableStampsAreToldApart() {
        let (width, height) = (640, 360)
        let reader = StampReader()
        let drawnAt: UInt64 = 5_000_000
        let first = stampedLuma(FrameStamp(microseconds: drawnAt), width: width, height: height)
        let second = stampedLuma(FrameStamp(microseconds: drawnAt + 33_000), width: width, height: height)
        let blank = [UInt8](repeating: 120, count: width * height)
        for (luma, shownAt) in [(first, drawnAt + 40_000), (first, drawnAt + 73_000), (second, drawnAt + 33_000 + 25_000),
                                (blank, drawnAt + 100_000)] {
            reader.read(width: width, height: height, now: shownAt) { x, y in luma[y * width + x] }
        }
        let counts = reader.counts
        #expect(counts.stampsNew == 2 && counts.stampsRepeated == 1 && counts.stampsUnreadable == 1, "\(counts)")
        #expect(counts.glassToGlass.samples == 2)
        #expect(counts.glassToGlass.max == 40, "the longer of 40 ms and 25 ms: \(counts.glassToGlass)")
    }
}
