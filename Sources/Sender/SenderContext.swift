import Dispatch
internal import ShareLatency
internal import ShareWire
import Synchronization
internal import ShareSync

/// What the sender's parts share: the lifecycle state, the counters, the
/// host's event handler, the keyframe flag and the way to end the run.
final class SenderContext: Sendable {
    enum State: Int {
        case idle, running, paused, stopping, finished
    }

    let state = Atomic<Int>(State.idle.rawValue)
    let stats = Locked(SenderStatistics())
    /// Set by a keyframe request, a resume or the start; taken by the encoder.
    let keyframeRequested = Atomic<Bool>(true)
    /// Ends the capture thread's wait for the screen to change when it has
    /// news (a keyframe asked for, the state changed, the pointer goes apart
    /// or back in, the picture sharpens): it need not wake to look for them.
    let captureWakeup = Wakeup()
    /// The threads that sleep while paused (the audio channels), each
    /// woken by its semaphore at every state change.
    private let pauseSleepers = Locked<[DispatchSemaphore]>([])
    /// The highest footprint the governor sampled (ten times a second): the
    /// statistics' peak, however rarely they are read.
    let peakFootprint = Atomic<Int>(0)
    /// Each frame's capture-to-send time, encode time and how far its first
    /// packet left ahead of the encode's end: recorded by the encode thread,
    /// summarized when the statistics are read.
    let captureToSend = LatencyLog()
    let encodeTime = LatencyLog()
    let firstPacketLead = LatencyLog()
    private let handlers = Locked<(events: (@Sendable (SenderEvent) -> Void)?, fail: (@Sendable (SenderError) -> Void)?)>((nil, nil))

    /// Capturing or paused: the threads keep going.
    var isActive: Bool {
        let current = state.load(ordering: .relaxed)
        return current == State.running.rawValue || current == State.paused.rawValue
    }

    var isRunning: Bool { state.load(ordering: .relaxed) == State.running.rawValue }

    func transition(from: State, to: State) -> Bool {
        let changed = state.compareExchange(expected: from.rawValue, desired: to.rawValue, ordering: .sequentiallyConsistent).exchanged
        if changed { tellStateChanged() }
        return changed
    }

    /// Wakes the threads that wait for news of the state: the capture
    /// thread and those sleeping out a pause.
    func tellStateChanged() {
        captureWakeup.signal()
        for sleeper in pauseSleepers.withLock({ $0 }) { sleeper.signal() }
    }

    /// A semaphore signalled at every state change, for a thread that
    /// sleeps while the sender is paused.
    func pauseSleeper() -> DispatchSemaphore {
        let sleeper = DispatchSemaphore(value: 0)
        pauseSleepers.withLock { $0.append(sleeper) }
        return sleeper
    }

    /// Asks the encoder for a keyframe (of a fresh picture, at once).
    func requestKeyframe() {
        keyframeRequested.store(true, ordering: .relaxed)
        captureWakeup.signal()
    }

    func install(events: @escaping @Sendable (SenderEvent) -> Void, fail: @escaping @Sendable (SenderError) -> Void) {
        handlers.withLock { $0 = (events, fail) }
    }

    /// The hosts' `AsyncStream`s of events (`ScreenSender.events`).
    let broadcast = EventBroadcast<SenderEvent>()

    func emit(_ event: SenderEvent) {
        handlers.withLock { $0.events }?(event)
        broadcast.yield(event)
        if case .finished = event { broadcast.finish() }
    }

    /// Ends the run with `error` (the first one wins).
    func fail(_ error: SenderError) {
        handlers.withLock { $0.fail }?(error)
    }
}
