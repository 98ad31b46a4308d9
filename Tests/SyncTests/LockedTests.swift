import Dispatch
import ShareSync
import Testing

/// `Locked` over no value: a mutex for side effects, such as the question
/// `share` asks on the terminal about a new peer.
@Suite struct LockedTests {
    /// Four threads through a lock over nothing: never two inside at once,
    /// and every unguarded increment counted. `make tsan` runs this too, so
    /// it also checks that such a lock reads as no race there.
    @Test func aLockOverNothingLetsOneThreadInAtATime() {
        final class Tally: @unchecked Sendable {
            // Safe: touched only inside the lock under test.
            var count = 0
            var inside = 0
            var most = 0
        }
        let lock = Locked()
        let tally = Tally()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<20_000 {
                lock.withLock {
                    tally.inside += 1
                    tally.most = max(tally.most, tally.inside)
                    tally.count += 1
                    tally.inside -= 1
                }
            }
        }
        #expect(tally.most == 1)
        #expect(tally.count == 80_000)
    }
}
