/// Events handed to any number of `AsyncStream`s as well as a callback:
/// each `stream()` gets every event from then on (the newest `buffer` kept
/// while its reader is behind); `finish()` ends every stream, and a stream
/// asked for afterwards ends at once.
public final class EventBroadcast<Event: Sendable>: Sendable {
    private let state = Locked<(continuations: [Int: AsyncStream<Event>.Continuation], next: Int, finished: Bool)>(([:], 0, false))
    private let buffer: Int

    public init(buffer: Int = 256) {
        self.buffer = buffer
    }

    public func stream() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .bufferingNewest(buffer))
        let added = state.withLock { state -> Int? in
            guard !state.finished else { return nil }
            state.next += 1
            state.continuations[state.next] = continuation
            return state.next
        }
        guard let id = added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    public func yield(_ event: Event) {
        for continuation in state.withLock({ Array($0.continuations.values) }) { continuation.yield(event) }
    }

    public func finish() {
        let ended = state.withLock { state -> [AsyncStream<Event>.Continuation] in
            state.finished = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in ended { continuation.finish() }
    }
}
