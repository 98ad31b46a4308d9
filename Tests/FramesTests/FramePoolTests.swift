import ShareBase
import ShareColor
import ShareFrames
import Testing

private struct NoFreeSlot: Error {}

@Suite struct FramePoolTests {
    private func lease(_ pool: FramePool, besideNewest: Bool = false) throws -> FrameLease {
        guard let lease = pool.lease(time: CaptureTime(monotonic: .zero, unixNanoseconds: 0), sequence: 0,
                                     sourceWidth: 32, sourceHeight: 32, besideNewest: besideNewest) else { throw NoFreeSlot() }
        return lease
    }

    @Test func theNewestSlotComesBackFirstSoOnlyChangesAreWritten() throws {
        let pool = FramePool(width: 32, height: 32, slots: 3)
        let first = try lease(pool)
        first.written()
        _ = consume first
        let again = try lease(pool)
        let (holds, hasPrevious) = (again.holdsNewest, again.hasPrevious)
        #expect(holds)
        #expect(!hasPrevious)
    }

    /// A writer that compares with the picture before gets another slot,
    /// and so the picture before stays to be read.
    @Test func besideTheNewestLeavesThePictureBeforeToCompareWith() throws {
        let pool = FramePool(width: 32, height: 32, slots: 3)
        let first = try lease(pool)
        first.planes.y.update(repeating: 7, count: 32)
        first.written()
        _ = consume first
        let next = try lease(pool, besideNewest: true)
        let (holds, previousPlanes) = (next.holdsNewest, next.previousPlanes)
        #expect(!holds)
        let previous = try #require(previousPlanes)
        #expect(previous.y[0] == 7)
    }

    /// With only the newest slot free, that one is all there is.
    @Test func besideTheNewestTakesTheNewestWhenNothingElseIsFree() throws {
        let pool = FramePool(width: 32, height: 32, slots: 2)
        let first = try lease(pool)
        first.written()
        let held = try lease(pool)
        _ = consume first
        let only = try lease(pool, besideNewest: true)
        let holds = only.holdsNewest
        #expect(holds)
        #expect(throws: NoFreeSlot.self) { _ = try lease(pool, besideNewest: true) }
        _ = consume held
    }
}
