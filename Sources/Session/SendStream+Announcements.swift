public import ShareBase
public import ShareWire

/// What a stream says beside its media: its state (paused, live, finished,
/// with the audio layout), repeated until the receiver answers, and the
/// pointer for receivers that draw it themselves.
extension SendStream {
    /// Whether the compound holds `ssrc`'s word that it draws the pointer.
    static func saysItDrawsThePointer(_ ssrc: UInt32, in packets: [RTCPPacket]) -> Bool {
        packets.contains { packet in
            guard case .application(let app) = packet, app.ssrc == ssrc else { return false }
            return PointerDrawing(app)?.drawsPointer == true
        }
    }

    /// Whether every receiver reporting now draws the pointer itself (and
    /// one does): `--cursor auto` then sends it apart (`PointerAudience`).
    public func pointerDrawnApart(now: MonotonicTime) -> Bool { audience.drawnApart(now: now) }

    /// Tells the receiver (again, reliably) the state with the audio layout.
    public func describe(audio: [AudioStreamLayout], now: MonotonicTime) {
        announcer.describe(audio: audio, now: now)
    }

    /// Tells the receiver the stream is paused, live again or finished (with
    /// why), repeated by `poll` until it answers.
    public func announce(_ state: StreamState, reason: String? = nil, now: MonotonicTime) {
        announcer.announce(state, reason: reason, now: now)
    }

    /// Whether the receiver answered the state announced last.
    public var stateAcknowledged: Bool { announcer.acknowledged }

    /// The mouse pointer for a receiver that draws it (`--cursor metadata`):
    /// what is new is sent at once, the rest repeated by `poll`.
    public func updateCursor(_ position: CursorPosition, shape: CursorShape?, now: MonotonicTime,
                             emit: (ArraySlice<UInt8>) -> Void) {
        cursor.update(position: position, shape: shape, now: now)
        sendCursor(now: now, emit: emit)
    }

    /// Each cursor packet in a datagram of its own (a shape's parts are a
    /// kilobyte each).
    func sendCursor(now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) {
        for packet in cursor.poll(now: now, ssrc: configuration.ssrc) { sendRTCP([packet], emit: emit) }
    }
}
