internal import ShareWire
public import ShareBase

/// Whether a receiver is listening, as the sender sees it, sans-IO: it
/// joins with the first feedback it sends, and leaves when it says BYE or
/// falls silent for `silenceLimit` (share's receivers report several times
/// a second). Each change is reported once.
public struct ReceiverPresence: Sendable {
    public enum Change: Equatable, Sendable {
        case joined
        case left(reason: String)
    }

    public private(set) var present = false
    private var lastHeard: MonotonicTime?
    public var silenceLimit: Duration

    public init(silenceLimit: Duration = .seconds(3)) {
        self.silenceLimit = silenceLimit
    }

    /// Feedback came from the receiver.
    public mutating func heard(at now: MonotonicTime) -> Change? {
        lastHeard = now
        guard !present else { return nil }
        present = true
        return .joined
    }

    /// The receiver said BYE.
    public mutating func saidGoodbye(reason: String?) -> Change? {
        guard present else { return nil }
        present = false
        return .left(reason: reason.map { "it said goodbye (\($0))" } ?? "it said goodbye")
    }

    /// Whether the receiver has been silent too long, at `now`.
    public mutating func poll(now: MonotonicTime) -> Change? {
        guard present, let lastHeard, now.since(lastHeard) >= silenceLimit else { return nil }
        present = false
        return .left(reason: "nothing heard from it for \(silenceLimit)")
    }
}
