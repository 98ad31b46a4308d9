public import ShareWire

/// Tells the receiver the sender's state reliably, sans-IO: a new state is
/// sent at once and again every `repeatInterval` until the receiver answers
/// with its sequence number (RTCP APP `SHST`/`SHAK`, see `StateAnnouncement`).
public struct StateAnnouncer: Sendable {
    public private(set) var current = StateAnnouncement(state: .live, sequence: 0)
    /// Whether the receiver answered the current state (the start needs no telling).
    public private(set) var acknowledged = true
    private var due: MonotonicTime?
    public var repeatInterval: Duration = .milliseconds(100)

    public init() {}

    /// A new state to tell; a repeat of the current one changes nothing.
    public mutating func announce(_ state: StreamState, reason: String? = nil, now: MonotonicTime) {
        guard state != current.state || reason != current.reason else { return }
        current = StateAnnouncement(state: state, sequence: current.sequence &+ 1, reason: reason, audio: current.audio)
        acknowledged = false
        due = now
    }

    /// Tells a (new) receiver the current state again with the audio streams
    /// the sender sends, which every later announcement carries too.
    public mutating func describe(audio: [AudioStreamLayout], now: MonotonicTime) {
        current = StateAnnouncement(state: current.state, sequence: current.sequence &+ 1, reason: current.reason,
                                    audio: audio)
        acknowledged = false
        due = now
    }

    /// The announcement to send now, if one is due.
    public mutating func poll(now: MonotonicTime) -> StateAnnouncement? {
        guard !acknowledged, let due, now >= due else { return nil }
        self.due = now + repeatInterval
        return current
    }

    /// When `poll` next has something.
    public var deadline: MonotonicTime? { acknowledged ? nil : due }

    /// The receiver's answer; true when it answered the current state.
    public mutating func received(_ answer: StateAcknowledgement) -> Bool {
        guard !acknowledged, answer.sequence == current.sequence else { return false }
        acknowledged = true
        return true
    }
}
