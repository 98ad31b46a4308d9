internal import ShareSession
internal import ShareWire
import Synchronization
internal import ShareGovernor
internal import ShareSync

/// The memory governor as the encode thread drives it: samples the
/// footprint after each frame, reports steps and their settled footprint
/// as events, and says which rung to run at.
final class GovernorControl {
    enum Outcome {
        case stay
        case step(MemoryRung)
        case fail(String)
    }

    private(set) var governor: MemoryGovernor
    /// A step whose settled footprint is still to be reported, and when.
    private var settling: (rung: String, at: UInt64)?

    init(governor: MemoryGovernor) {
        self.governor = governor
    }

    var current: MemoryRung { governor.current }

    /// Tells the host where the governor started, when not at the top.
    func announceStart(_ context: SenderContext) {
        guard governor.rung > 0 else { return }
        context.emit(.memoryStep(from: governor.ladder[0].name, to: governor.current.name,
                                 footprint: governor.account.predicted(governor.ladder[0]), budget: governor.budget.bytes))
        settling = (governor.current.name, Clock.monotonic() + 1_000_000_000)
    }

    func observe(_ context: SenderContext) -> Outcome {
        let footprint = ProcessFootprint.current().footprintBytes
        // Only this thread writes the peak.
        if footprint > context.peakFootprint.load(ordering: .relaxed) {
            context.peakFootprint.store(footprint, ordering: .relaxed)
        }
        let decision = governor.observe(footprint: footprint, now: MonotonicTime(nanoseconds: Clock.monotonic()))
        if let pending = settling, Clock.monotonic() >= pending.at {
            settling = nil
            context.emit(.memorySettled(rung: pending.rung, footprint: footprint, budget: governor.budget.bytes))
        }
        switch decision {
        case .stay:
            return .stay
        case .fail(let message):
            return .fail(message)
        case .step(let from, let to):
            let rung = governor.ladder[to]
            context.stats.withLock { s in
                s.memorySteps += 1
                s.memoryRung = rung.name
            }
            context.emit(.memoryStep(from: governor.ladder[from].name, to: rung.name, footprint: footprint,
                                     budget: governor.budget.bytes))
            settling = (rung.name, Clock.monotonic() + 1_000_000_000)
            return .step(rung)
        }
    }
}
