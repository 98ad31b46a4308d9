public import ShareWire
public import ShareBase

/// Tells the receiver the sender's state reliably, sans-IO: a new state is
/// sent at once and again until the receiver answers with its sequence
/// number (RTCP APP `SHST`/`SHAK`, see `StateAnnouncement`): after
/// `repeatInterval`, then twice as long each time up to `longestRepeat`. A
/// lost announcement is sent again soon; one nobody answers (players of a
/// static-key stream, ffmpeg, GStreamer, a browser through Janus) settles to
/// one every two seconds instead of ten a second, each a wake-up of the
/// sender. A receiver that joins hurries it (`hurry`).
public struct StateAnnouncer: Sendable {
    public private(set) var current = StateAnnouncement(state: .live, sequence: 0)
    /// Whether the receiver answered the current state (the start needs no telling).
    public private(set) var acknowledged = true
    private var due: MonotonicTime?
    public var repeatInterval: Duration = .milliseconds(100)
    public var longestRepeat: Duration = .seconds(2)
    /// The wait before the next repeat.
    private var backoff: Duration = .zero

    public init() {}

    /// A new state to tell; a repeat of the current one changes nothing.
    public mutating func announce(_ state: StreamState, reason: String? = nil, now: MonotonicTime) {
        guard state != current.state || reason != current.reason else { return }
        current = StateAnnouncement(state: state, sequence: current.sequence &+ 1, reason: reason, audio: current.audio)
        tell(now: now)
    }

    /// Tells a (new) receiver the current state again with the audio streams
    /// the sender sends, which every later announcement carries too.
    public mutating func describe(audio: [AudioStreamLayout], now: MonotonicTime) {
        current = StateAnnouncement(state: current.state, sequence: current.sequence &+ 1, reason: current.reason,
                                    audio: audio)
        tell(now: now)
    }

    /// A receiver joined: an announcement not yet answered goes at once,
    /// and again soon, as a new one does.
    public mutating func hurry(now: MonotonicTime) {
        guard !acknowledged else { return }
        due = now
        backoff = repeatInterval
    }

    private mutating func tell(now: MonotonicTime) {
        acknowledged = false
        due = now
        backoff = repeatInterval
    }

    /// The announcement to send now, if one is due.
    public mutating func poll(now: MonotonicTime) -> StateAnnouncement? {
        guard !acknowledged, let due, now >= due else { return nil }
        self.due = now + backoff
        backoff = min(backoff * 2, longestRepeat)
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
