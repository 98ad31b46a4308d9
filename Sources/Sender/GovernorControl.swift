internal import ShareSession
internal import ShareWire
import Synchronization
internal import ShareGovernor
internal import ShareSync
internal import ShareBase

/// The memory governor as the encode thread drives it: samples the
/// footprint after a frame (ten times a second at most), reports steps and
/// their settled footprint as events, and says which rung to run at.
final class GovernorControl: @unchecked Sendable {
    // Safe: the governor, `settling` and `historyBytes` are set up on the
    // calling thread before the threads start and belong to the encode
    // thread from then on; what other threads touch is atomic.
    enum Outcome {
        case stay
        case step(MemoryRung)
        case fail(String)
    }

    private(set) var governor: MemoryGovernor
    let accounting: MemoryAccounting
    /// A step whose settled footprint is still to be reported, and when.
    private var settling: (rung: String, at: MonotonicTime)?
    /// The retransmission histories' bytes as filled now (set before the
    /// threads start; read by the encode thread).
    var historyBytes: () -> Int = { 0 }
    /// The footprint, sampled after a frame at most every `sampleInterval`
    /// (encode thread).
    private let footprint = FootprintReader()
    /// Reading /proc/self/status costs about 25 µs, 1% of a 720p frame's
    /// CPU: ten times a second keeps a reaction within 100 ms (a step takes
    /// a second to settle), and a budget the host asks for is applied at
    /// the next frame.
    static let sampleInterval = Duration.milliseconds(100)
    private var sampledAt: MonotonicTime?
    /// The last measure (read by the statistics on any thread: atomic).
    let accounted = Atomic<Int>(0)
    /// A budget the host asked for, applied at the next sample (0: none).
    let requestedBudget = Atomic<Int>(0)

    /// The sender's own fixed part as accounted at the start (slots, rings,
    /// audio). The governor re-learns its fixed part from each measure; the
    /// measure itself must start from this, or it would drift.
    private let ownFixed: ByteCount

    init(governor: MemoryGovernor, accounting: MemoryAccounting) {
        self.governor = governor
        self.accounting = accounting
        ownFixed = governor.account.fixed
    }

    /// What the budget is measured against now: the process's footprint,
    /// or the sender's own account at the current rung with the histories
    /// as they are filled (not their capacity).
    func measure() -> ByteCount {
        switch accounting {
        case .process:
            return .bytes(footprint.sample().footprintBytes)
        case .sender:
            let rung = governor.current
            return ownFixed + governor.account.variable(rung) - MemoryAccount.historyPacket * rung.historyPackets
                + .bytes(historyBytes())
        }
    }

    var current: MemoryRung { governor.current }

    func sourceChanged(width: Int, height: Int) { governor.setSource(width: width, height: height) }

    /// Tells the host where the governor started, when not at the top.
    func announceStart(_ context: SenderContext) {
        guard governor.rung > 0 else { return }
        context.emit(.memoryStep(from: governor.ladder[0].name, to: governor.current.name,
                                 footprint: governor.account.predicted(governor.ladder[0]).bytes, budget: governor.budget.bytes))
        settling = (governor.current.name, SystemClock.now() + .seconds(1))
    }

    func observe(_ context: SenderContext) -> Outcome {
        let now = SystemClock.now()
        let requested = requestedBudget.exchange(0, ordering: .relaxed)
        if requested == 0, let sampledAt, now.since(sampledAt) < Self.sampleInterval { return .stay }
        sampledAt = now
        let process = footprint.sample().footprintBytes
        // Only this thread writes the peak (of the process, whatever the accounting).
        if process > context.peakFootprint.load(ordering: .relaxed) {
            context.peakFootprint.store(process, ordering: .relaxed)
        }
        if requested > 0 {
            governor.setBudget(MemoryBudget(bytes: requested))
            context.stats.withLock { $0.memoryBudgetBytes = requested }
        }
        let footprint = accounting == .process ? .bytes(process) : measure()
        accounted.store(footprint.bytes, ordering: .relaxed)
        let decision = governor.observe(footprint: footprint, now: now)
        if let pending = settling, now >= pending.at {
            settling = nil
            context.emit(.memorySettled(rung: pending.rung, footprint: footprint.bytes, budget: governor.budget.bytes))
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
            context.emit(.memoryStep(from: governor.ladder[from].name, to: rung.name, footprint: footprint.bytes,
                                     budget: governor.budget.bytes))
            settling = (rung.name, SystemClock.now() + .seconds(1))
            return .step(rung)
        }
    }
}
