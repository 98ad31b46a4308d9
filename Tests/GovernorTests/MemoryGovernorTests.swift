import ShareSession
import ShareWire
import Testing
import ShareGovernor
import ShareBase

@Suite("Memory-budget governor (pure state machine)")
struct MemoryGovernorTests {
    func governor(budget: String = "50M", fixed: ByteCount = .mebibytes(12)) -> MemoryGovernor {
        MemoryGovernor(budget: MemoryBudget(budget)!, ladder: MemoryGovernor.ladder(fps: 30, sourceHeight: 1080, history: 1024),
                       account: MemoryAccount(fixed: fixed, sourceWidth: 1920, sourceHeight: 1080))
    }

    func at(_ seconds: Double) -> MonotonicTime { MonotonicTime(nanoseconds: UInt64(seconds * 1e9)) }

    @Test(arguments: [("50MiB", 50 << 20), ("32M", 32 << 20), ("8m", 8 << 20), ("1.5G", 1_610_612_736),
                      ("4096", 4096), ("512k", 512 << 10)])
    func parsesBudgets(text: String, bytes: Int) {
        #expect(MemoryBudget(text)?.bytes == bytes)
    }

    @Test(arguments: ["", "fifty", "-3M", "10 parsecs", "0", "99999999999999999999G", "2T", "inf", "nan"])
    func refusesNonsenseBudgets(text: String) { #expect(MemoryBudget(text) == nil) }

    @Test func ladderGoesCheapestFirst() {
        let names = MemoryGovernor.ladder(fps: 30, sourceHeight: 1080, history: 1024).map(\.name)
        #expect(names == ["full", "short history", "15 fps", "5 fps", "720p at 5 fps", "540p at 5 fps", "360p at 5 fps",
                          "360p at 5 fps, half bitrate"])
    }

    /// Above 1080 lines the picture is brought to 1080 before the rate is
    /// cut; a 4K screen in 50 MiB starts there, at full rate.
    @Test func aFourKSourceIsEncodedAt1080pBeforeTheRateIsCut() {
        let ladder = MemoryGovernor.ladder(fps: 30, sourceHeight: 2160, history: 1024)
        #expect(ladder.map(\.name).prefix(4) == ["full", "short history", "1080p", "15 fps"])
        #expect(ladder[2].height == 1080 && ladder[2].fps == 30 && ladder[3].height == 1080)
        var g = MemoryGovernor(budget: .default, ladder: ladder,
                               account: MemoryAccount(fixed: .mebibytes(12), sourceWidth: 3840, sourceHeight: 2160, pictureSlots: 2))
        #expect(g.chooseStart() == .step(from: 0, to: 2), "\(g.current)")
    }

    /// The captured picture changes size (a screen resized, a window
    /// grown): the ladder is made for the new size, the rung keeps its name.
    @Test func aNewSourceSizeRemakesTheLadder() {
        var g = governor()
        g.setSource(width: 2560, height: 1440)
        #expect(g.current.name == "full" && g.current.height == 1440 && g.ladder.contains { $0.name == "1080p" })
        #expect(g.observe(footprint: .mebibytes(48), now: at(0)) != .stay, "over the high-water mark: a step")
        let stepped = g.current
        #expect(stepped.name != "full")
        g.setSource(width: 1024, height: 768)
        #expect(g.current.height <= 768 && !g.ladder.contains { $0.name == "1080p" }, "\(stepped) -> \(g.current)")
        g.setSource(width: 1920, height: 1080)
        #expect(g.ladder[0].height == 1080 && g.ladder[0].fps == 30 && g.ladder[0].historyPackets == 1024)
    }

    /// A new budget while running (`share ctl budget`): lowered, the next
    /// sample steps down at once; raised, it climbs back with the usual
    /// patience (10 s below the low-water mark), one rung at a time.
    @Test func aBudgetChangedWhileRunningIsFollowed() {
        var g = governor()
        #expect(g.observe(footprint: .mebibytes(30), now: at(0)) == .stay)
        g.setBudget(MemoryBudget("20M")!)
        guard case .step(0, let down) = g.observe(footprint: .mebibytes(30), now: at(0.1)) else {
            Issue.record("no step down")
            return
        }
        #expect(down > 0 && g.budget == MemoryBudget("20M")!)
        g.setBudget(.default)
        var climbed: [Double] = []
        var t = 0.2
        while t < 40 {
            if case .step(let from, let to) = g.observe(footprint: .mebibytes(14), now: at(t)) {
                #expect(to == from - 1, "one rung at a time")
                climbed.append(t)
            }
            t += 0.1
        }
        #expect(climbed.first.map { $0 >= 10 } == true, "not before ten seconds: \(climbed)")
        #expect(climbed.count >= 2, "\(climbed)")
    }

    @Test func staysPutWellUnderTheBudget() {
        var g = governor()
        for t in 0..<100 { #expect(g.observe(footprint: .mebibytes(30), now: at(Double(t) * 0.1)) == .stay) }
        #expect(g.rung == 0)
    }

    /// Near the budget it steps down; the prediction skips steps that would
    /// not be enough (history and fps barely change memory; downscaling does).
    @Test func stepsDownToTheFirstRungPredictedToFit() {
        var g = governor(budget: "32M")
        // Measured 40 MiB at full 1080p: the fixed part is learnt from it.
        let decision = g.observe(footprint: .mebibytes(40), now: at(0))
        guard case .step(from: 0, let to) = decision else { Issue.record("no step: \(decision)"); return }
        #expect(g.current.height < 1080, "downscaled, at \(g.current.name)")
        #expect(to == g.rung)
        #expect(g.account.predicted(g.current) <= ByteCount.mebibytes(32) * 0.92)
    }

    @Test func waitsForAStepToSettleUnlessOverBudget() {
        var g = governor(budget: "50M", fixed: .mebibytes(20))
        _ = g.observe(footprint: .mebibytes(47), now: at(0))  // near: one step
        let rung = g.rung
        #expect(rung > 0)
        #expect(g.observe(footprint: .mebibytes(47), now: at(0.2)) == .stay, "settling")
        // Over the budget there is no waiting.
        guard case .step = g.observe(footprint: .mebibytes(51), now: at(0.3)) else { Issue.record("did not react"); return }
        #expect(g.rung > rung)
    }

    /// Hysteresis: climbing back needs 10 s well below, one rung at a time,
    /// and never flaps around the threshold.
    @Test func climbsBackSlowlyWithoutOscillating() {
        var g = governor(budget: "50M", fixed: .mebibytes(20))
        _ = g.observe(footprint: .mebibytes(48), now: at(0))
        let low = g.rung
        #expect(low > 0)
        var steps: [MemoryGovernor.Decision] = []
        for t in stride(from: 1.0, through: 9.5, by: 0.5) { steps.append(g.observe(footprint: .mebibytes(30), now: at(t))) }
        #expect(steps.allSatisfy { $0 == .stay }, "no climb before 10 s")
        var climbed = false
        for t in stride(from: 10.0, through: 25, by: 0.5) {
            if case .step(from: low, to: low - 1) = g.observe(footprint: .mebibytes(30), now: at(t)) { climbed = true; break }
        }
        #expect(climbed)
        // Footprint between the marks: nothing moves either way.
        let rung = g.rung
        for t in stride(from: 40.0, through: 80, by: 1) { #expect(g.observe(footprint: .mebibytes(40), now: at(t)) == .stay) }
        #expect(g.rung == rung)
    }

    @Test func failsWithASpecificMessageWhenNothingFits() {
        var g = governor(budget: "8M")
        guard case .fail(let message) = g.checkFeasible() else { Issue.record("8 MiB accepted"); return }
        #expect(message.hasPrefix("cannot run within 8 MiB: needs at least "))
        #expect(message.hasSuffix("MiB at 360p"))
        // Fed footprints, it walks down and then fails rather than overrunning.
        var outcome: MemoryGovernor.Decision = .stay
        for t in 0..<20 {
            outcome = g.observe(footprint: .mebibytes(20), now: at(Double(t)))
            if case .fail = outcome { break }
        }
        guard case .fail = outcome else { Issue.record("never failed"); return }
    }
}
