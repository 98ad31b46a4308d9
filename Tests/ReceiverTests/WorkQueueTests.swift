@testable import ShareReceiver
@testable import ShareWire
import Testing
import ShareBase

/// The receiver's queue between its network and decode threads: a frame's
/// early slices that follow each other while the decode thread is busy are
/// handed over as one part, and nothing else is joined.
@Suite("The receiver's work queue")
struct WorkQueueTests {
    private func slices(_ timestamp: UInt32, at offset: Int, _ bytes: [UInt8]) -> ReceivedWork {
        .videoSlices(EarlySlices(timestamp: timestamp, offset: offset, data: bytes))
    }

    private func taken(_ queue: WorkQueue) -> EarlySlices? {
        guard case .videoSlices(let part)? = queue.pop(timeout: .milliseconds(1)).work else { return nil }
        return part
    }

    @Test func slicesOfOneFrameWaitingTogetherAreOnePart() {
        let queue = WorkQueue(capacity: 4)
        #expect(queue.push(slices(900, at: 0, [1, 2, 3])))
        #expect(queue.push(slices(900, at: 3, [4, 5])))
        #expect(queue.push(slices(900, at: 5, [6])))
        #expect(taken(queue) == EarlySlices(timestamp: 900, offset: 0, data: [1, 2, 3, 4, 5, 6]))
        #expect(queue.pop(timeout: .milliseconds(1)).work == nil, "nothing else was queued")
    }

    @Test func aPartAlreadyTakenIsNotGrown() {
        let queue = WorkQueue(capacity: 4)
        queue.push(slices(900, at: 0, [1, 2]))
        #expect(taken(queue) == EarlySlices(timestamp: 900, offset: 0, data: [1, 2]))
        queue.push(slices(900, at: 2, [3]))
        #expect(taken(queue) == EarlySlices(timestamp: 900, offset: 2, data: [3]), "the rest comes as a part of its own")
    }

    @Test func anotherFrameOrAGapIsNeverJoined() {
        let queue = WorkQueue(capacity: 8)
        queue.push(slices(900, at: 0, [1, 2]))
        queue.push(slices(1800, at: 2, [3]))
        queue.push(slices(1800, at: 4, [4]))
        #expect(taken(queue)?.data == [1, 2])
        #expect(taken(queue) == EarlySlices(timestamp: 1800, offset: 2, data: [3]), "another frame's timestamp")
        #expect(taken(queue) == EarlySlices(timestamp: 1800, offset: 4, data: [4]), "a part that skips ahead")
    }

    @Test func aJoinTakesNoRoomButAFullQueueDropsAndBreaksTheChain() {
        let queue = WorkQueue(capacity: 2)
        #expect(queue.push(.loss))
        #expect(queue.push(slices(900, at: 0, [1])))
        #expect(queue.push(slices(900, at: 1, [2])), "joined, though the queue is full")
        let frame = AccessUnit(timestamp: 1800, data: [0, 0, 0, 1, 0x41], sequenceRange: 5...5, headerExtension: nil,
                               completedAt: MonotonicTime(nanoseconds: 0))
        #expect(!queue.push(.video(frame)), "no room for a new item")
        #expect(queue.dropped == 1)
        let first = queue.pop(timeout: .milliseconds(1))
        #expect(first.chainBroken, "the decode thread learns that video was dropped")
        #expect(taken(queue)?.data == [1, 2])
    }
}
