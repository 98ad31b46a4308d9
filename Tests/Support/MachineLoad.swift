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
        defer { Self.log(test, lanes: lanes, since: start) }
        do {
            try await MachineLoad.$held.withValue(lanes) { try await function() }
        } catch {
            await MachineLanes.shared.give(lanes)
            throw error
        }
        await MachineLanes.shared.give(lanes)
    }

    /// With SHARE_TEST_LANES set, how long each test held its lanes (the
    /// test's own time, without its wait for them): what to look at when a
    /// run grows long.
    private static func log(_ test: Test, lanes: Int, since start: ContinuousClock.Instant) {
        guard getenv("SHARE_TEST_LANES") != nil else { return }
        let elapsed = (ContinuousClock.now - start).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        print("lanes \(lanes) for \(String(format: "%.1f", seconds)) s: \(test.id)")
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

/// The lanes `MachineLoad` hands out, in the order they were asked for (a
/// test wanting both is not overtaken forever by ones wanting one).
actor MachineLanes {
    static let count = 2
    static let shared = MachineLanes()

    private var free = count
    private var waiting: [(lanes: Int, resume: CheckedContinuation<Void, Never>)] = []

    func take(_ lanes: Int) async {
        if waiting.isEmpty && free >= lanes {
            free -= lanes
            return
        }
        await withCheckedContinuation { waiting.append((lanes, $0)) }
    }

    func give(_ lanes: Int) {
        free += lanes
        while let next = waiting.first, next.lanes <= free {
            free -= next.lanes
            waiting.removeFirst()
            next.resume.resume()
        }
    }
}
