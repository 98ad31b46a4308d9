import Dispatch
internal import ShareSession
internal import ShareWire
internal import ShareBase
internal import ShareSync

/// What the network thread hands the decode thread.
enum ReceivedWork: Sendable {
    case video(AccessUnit)
    /// The start of the frame still arriving, to decode before it is whole.
    case videoSlices(EarlySlices)
    /// Frames the jitter buffer gave up on: decode again from a keyframe.
    case loss
    case audio(RTPPacket)
    case senderReport(ssrc: UInt32, SenderReport)
    case goodbye(reason: String?)
    /// Another sender's session began: start over (decoder state, recording file).
    case newSession
    /// The sender paused or is live again, or titled its stream.
    case senderState(StreamState, title: String?)
    /// The sender's audio streams, said before the sound arrives.
    case audioLayout([AudioStreamLayout])
    /// The mouse pointer to draw over the picture (`--cursor metadata`).
    case cursor(CursorOverlay)
}

/// The bounded queue between the receiver's network thread and its decode
/// thread. A slow window or recorder fills it; then new items are dropped
/// (counted) rather than queued without bound, and the decode thread is told
/// the picture chain broke, so it waits for a keyframe instead of decoding
/// frames whose references are gone (a frame's early slices dropped only cost
/// the early start: the whole frame still comes). Slices of one frame that
/// follow each other in the queue are handed over as one part. The network
/// thread never waits here.
final class WorkQueue: Sendable {
    private struct State {
        var items: [ReceivedWork] = []
        var head = 0
        var chainBroken = false
        var dropped = 0
    }

    let capacity: Int
    private let state = Locked(State())
    private let ready = DispatchSemaphore(value: 0)

    init(capacity: Int = 120) {
        self.capacity = capacity
    }

    /// Queues `work`; false (and counted) when the queue is full.
    @discardableResult
    func push(_ work: ReceivedWork) -> Bool {
        enum Outcome { case queued, joined, dropped }
        let outcome = state.withLock { state -> Outcome in
            if case .videoSlices(let more) = work, Self.continues(more, state.items[state.head...]),
               case .videoSlices(var queued) = state.items.removeLast() {
                // Not taken yet (and signalled for): it grows instead, taken
                // out of the queue first so its bytes are not copied.
                queued.data += more.data
                state.items.append(.videoSlices(queued))
                return .joined
            }
            guard state.items.count - state.head < capacity else {
                state.dropped += 1
                if case .video = work { state.chainBroken = true }
                return .dropped
            }
            if state.head > 64 {
                state.items.removeFirst(state.head)
                state.head = 0
            }
            state.items.append(work)
            return .queued
        }
        if outcome == .queued { ready.signal() }
        return outcome != .dropped
    }

    /// Whether `slices` carry on the frame whose slices are the last item not taken.
    private static func continues(_ slices: EarlySlices, _ waiting: ArraySlice<ReceivedWork>) -> Bool {
        guard case .videoSlices(let queued) = waiting.last else { return false }
        return queued.timestamp == slices.timestamp && queued.offset + queued.data.count == slices.offset
    }

    /// The next item, waiting up to `timeout`; `chainBroken` says video was
    /// dropped since the last call.
    func pop(timeout: Duration) -> (work: ReceivedWork?, chainBroken: Bool) {
        if let item = take() { return item }
        _ = ready.wait(timeout: .now() + .nanoseconds(Int(timeout.nanoseconds)))
        return take() ?? (nil, state.withLock { state in
            defer { state.chainBroken = false }
            return state.chainBroken
        })
    }

    private func take() -> (ReceivedWork?, Bool)? {
        state.withLock { state in
            guard state.head < state.items.count else { return nil }
            let item = state.items[state.head]
            state.head += 1
            let broken = state.chainBroken
            state.chainBroken = false
            return (item, broken)
        }
    }

    /// Items dropped because the decode thread was behind.
    var dropped: Int { state.withLock { $0.dropped } }

    /// Wakes a waiting `pop` (to stop).
    func wake() { ready.signal() }
}
