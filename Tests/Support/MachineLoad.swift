public import Testing
import Foundation

/// How much of the machine a test takes while it runs, so that tests judged
/// against the clock (frames shown in a second, a gap in played sound, a
/// latency percentile) never run beside another test that encodes video or
/// starts real peers. CI has two cores: two such tests at once starve each
/// other, and each then fails a bound that holds when it runs alone.
///
/// Swift Testing runs suites side by side; this trait makes every test it
/// covers first take its share of two lanes, first come first served:
/// `.alone` takes both, `.busy` one. Tests without it (sans-IO, parsers,
/// small round trips) take none and run whenever a thread is free.
public struct MachineLoad: TestTrait, SuiteTrait, TestScoping {
    let lanes: Int

    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        // A suite's own scope takes nothing: each of its test cases asks, and
        // asks once, for the share the innermost trait over it names (a suite
        // inside a `.busy` suite may say it runs `.alone`, or the reverse;
        // a test's traits list its suites' first).
        guard testCase != nil, MachineLoad.held == 0 else { return try await function() }
        let lanes = test.traits.compactMap { ($0 as? MachineLoad)?.lanes }.last ?? self.lanes
        await MachineLanes.shared.take(lanes)
        let start = ContinuousClock.now
        let outcome: Result<Void, any Error>
        do {
            try await MachineLoad.$held.withValue(lanes) { try await function() }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await MachineLanes.shared.give(lanes)
        await Self.log(test, lanes: lanes, since: start)
        try outcome.get()
    }

    /// With SHARE_TEST_LANES set, how long each test held its lanes (the
    /// test's own time, without its wait for them): what to look at when a
    /// run grows long.
    private static func log(_ test: Test, lanes: Int, since start: ContinuousClock.Instant) async {
        guard getenv("SHARE_TEST_LANES") != nil else { return }
        let elapsed = (ContinuousClock.now - start).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        let idle = await MachineLanes.shared.idleWhileWaiting.components
        print("lanes \(lanes) for \(String(format: "%.1f", seconds)) s: \(test.id) "
              + "(lanes idle while tests waited so far: \(idle.seconds) s)")
    }

    @TaskLocal static var held = 0
}

extension Trait where Self == MachineLoad {
    /// Real time and real peers, judged against the clock: nothing else that
    /// loads the machine runs beside it.
    public static var alone: MachineLoad { MachineLoad(lanes: MachineLanes.count) }
    /// Busy (encodes, runs ffmpeg) but judged on what comes out, not when:
    /// may run beside one other like it.
    public static var busy: MachineLoad { MachineLoad(lanes: 1) }
}

/// The lanes `MachineLoad` hands out, in the order they were asked for,
/// but for one thing: a lane that the first in line cannot use yet (it
/// wants both, one is taken) goes to the first test behind it that wants
/// only one, instead of standing idle until the test on the other lane ends.
/// A test wanting both starts as soon as both are free at once; the tests
/// are finite, so it always does.
actor MachineLanes {
    static let count = 2
    static let shared = MachineLanes()

    private var free = count
    private var waiting: [(lanes: Int, resume: CheckedContinuation<Void, Never>)] = []
    /// How many tests wait for lanes, and how many were let in so far.
    var waitingCount: Int { waiting.count }
    private(set) var granted = 0
    /// Lane-seconds spent free while a test waited (SHARE_TEST_LANES logs it).
    private(set) var idleWhileWaiting: Duration = .zero
    private var since = ContinuousClock.now

    func take(_ lanes: Int) async {
        await withCheckedContinuation { resume in
            account()
            waiting.append((lanes, resume))
            hand()
        }
    }

    func give(_ lanes: Int) {
        account()
        free += lanes
        hand()
    }

    /// Resumes, in order, every waiting test whose lanes are free.
    private func hand() {
        var index = waiting.startIndex
        while free > 0 && index < waiting.endIndex {
            guard waiting[index].lanes <= free else {
                index += 1
                continue
            }
            let next = waiting.remove(at: index)
            free -= next.lanes
            granted += 1
            next.resume.resume()
        }
    }

    /// Adds the lanes left free since the last change while a test waited.
    private func account() {
        let now = ContinuousClock.now
        if !waiting.isEmpty { idleWhileWaiting += (now - since) * free }
        since = now
    }
}
