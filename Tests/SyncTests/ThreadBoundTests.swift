import Foundation
import ShareSync
import Testing

@Suite("ThreadBound: a value one thread owns")
struct ThreadBoundTests {
    /// Made on one thread and handed to another, which then owns it: what a
    /// sender does with each worker's state.
    @Test func theFirstThreadToReachItOwnsIt() {
        let bound = ThreadBound(0)
        let seen = Locked(0)
        let done = DispatchSemaphore(value: 0)
        let worker = Thread {
            for _ in 0..<1000 { bound.withValue { $0 += 1 } }
            seen.withLock { $0 = bound.withValue { $0 } }
            done.signal()
        }
        worker.start()
        done.wait()
        #expect(seen.withLock { $0 } == 1000)
    }

    /// A second thread reaching in traps at once (debug builds, as the tests
    /// run), instead of racing.
    @Test func aSecondThreadReachingInTraps() async {
        await #expect(processExitsWith: .failure) {
            let bound = ThreadBound(0)
            bound.withValue { $0 += 1 }
            let done = DispatchSemaphore(value: 0)
            let intruder = Thread {
                bound.withValue { $0 += 1 }
                done.signal()
            }
            intruder.start()
            done.wait()
        }
    }
}
