@testable import TestSupport
import Testing

/// The lanes the machine-bound tests share, which CI's run time rests on.
/// Every request is a task of its own, so a scheduler that kept one waiting
/// fails a check here instead of hanging the run.
@Suite struct MachineLanesTests {
    /// Asks for `count` lanes on a task of its own.
    private static func ask(_ lanes: MachineLanes, _ count: Int) {
        Task { await lanes.take(count) }
    }

    /// Whether, within 5 s, `granted` tests in all were let in and `waiting` wait.
    private static func settles(_ lanes: MachineLanes, granted: Int, waiting: Int) async -> Bool {
        for _ in 0..<5000 {
            let now = await (lanes.granted, lanes.waitingCount)
            if now == (granted, waiting) { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return false
    }

    /// One lane taken and a test wanting both waiting: a test wanting one,
    /// asking after it, takes the free lane at once instead of leaving it
    /// idle; the test wanting both starts once both lanes are free.
    @Test func aLaneTheFirstInLineCannotUseGoesToTheNextThatCan() async {
        let lanes = MachineLanes()
        Self.ask(lanes, 1)
        #expect(await Self.settles(lanes, granted: 1, waiting: 0))
        Self.ask(lanes, 2)
        #expect(await Self.settles(lanes, granted: 1, waiting: 1))
        Self.ask(lanes, 1)
        #expect(await Self.settles(lanes, granted: 2, waiting: 1), "the free lane went past the test wanting both")
        await lanes.give(1)
        #expect(await Self.settles(lanes, granted: 2, waiting: 1), "one lane free is not enough for it")
        await lanes.give(1)
        #expect(await Self.settles(lanes, granted: 3, waiting: 0), "both free: it starts")
    }

    /// Both lanes given back at once go in the order asked: to the test
    /// wanting both, not to the test wanting one that asked after it.
    @Test func bothLanesFreeGoToTheFirstInLine() async {
        let lanes = MachineLanes()
        Self.ask(lanes, 2)
        #expect(await Self.settles(lanes, granted: 1, waiting: 0))
        Self.ask(lanes, 2)
        #expect(await Self.settles(lanes, granted: 1, waiting: 1))
        Self.ask(lanes, 1)
        #expect(await Self.settles(lanes, granted: 1, waiting: 2))
        await lanes.give(2)
        #expect(await Self.settles(lanes, granted: 2, waiting: 1), "the test wanting both went first")
        await lanes.give(2)
        #expect(await Self.settles(lanes, granted: 3, waiting: 0))
    }
}
