internal import CPulse

/// A PulseAudio failure with libpulse's message.
public struct PulseError: Error, Equatable, Sendable, CustomStringConvertible {
    public var operation: String
    public var code: Int32
    public var description: String { "PulseAudio \(operation): \(String(cString: pa_strerror(code)))" }
}

/// Where audio comes from or goes to on the PulseAudio server.
public enum PulseDevice: Sendable, Equatable {
    /// The monitor of the default sink: what the machine is playing.
    case systemOutput
    /// The default source: the microphone.
    case microphone
    case named(String)
    case defaultSink

    var name: String? {
        switch self {
        case .systemOutput: "@DEFAULT_MONITOR@"
        case .microphone: nil
        case .named(let name): name
        case .defaultSink: nil
        }
    }
}

/// 48 kHz 16-bit capture in 20 ms reads, driven from the reading thread
/// itself: its own PulseAudio main loop, context and record stream, turned
/// by `read` until a frame is in. No thread of libpulse's own (pa_simple
/// runs one, and each fragment then costs a wake-up of it, a condition
/// broadcast, priority-inheriting locks and a pipe write to hand over): the
/// thread that reads sleeps in poll until the server's data arrives, takes
/// it and encodes. The same connection answers the default sink's latency.
/// Call everything from one thread.
public final class PulseCapture {
    public let channels: Int
    private let loop: OpaquePointer
    private let context: OpaquePointer
    private let stream: OpaquePointer
    /// Samples taken from the stream and not yet returned, and the frame returned.
    private var pending: [Int16]
    private var filled = 0
    private var frame: [Int16]
    /// Whether the stream is held (`suspend`): the server sends nothing.
    private var corked = false

    public init(device: PulseDevice, channels: Int, name: String = "share") throws(PulseError) {
        let what = "record from \(device.name ?? "the default source")"
        guard let loop = pa_mainloop_new() else { throw PulseError(operation: what, code: Int32(PA_ERR_INTERNAL.rawValue)) }
        guard let context = pa_context_new(pa_mainloop_get_api(loop), name) else {
            pa_mainloop_free(loop)
            throw PulseError(operation: what, code: Int32(PA_ERR_INTERNAL.rawValue))
        }
        self.loop = loop
        self.context = context
        self.channels = channels
        let frameSamples = OpusFormat.frameSamples * channels
        pending = [Int16](repeating: 0, count: frameSamples * 8)
        frame = [Int16](repeating: 0, count: frameSamples)
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(OpusFormat.sampleRate), channels: UInt8(channels))
        var stream: OpaquePointer?
        do throws(PulseError) {
            guard pa_context_connect(context, nil, PA_CONTEXT_NOFLAGS, nil) >= 0 else { throw Self.failure(what, context) }
            try Self.turn(loop, until: { () throws(PulseError) -> Bool in
                switch pa_context_get_state(context) {
                case PA_CONTEXT_READY: true
                case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED: throw Self.failure(what, context)
                default: false
                }
            })
            guard let made = pa_stream_new(context, "screen share audio", &spec, nil) else { throw Self.failure(what, context) }
            stream = made
            // Fragments of 20 ms: one wake-up per Opus frame.
            var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max,
                                            minreq: UInt32.max, fragsize: UInt32(frameSamples * 2))
            guard pa_stream_connect_record(made, device.name, &attributes, PA_STREAM_ADJUST_LATENCY) >= 0 else {
                throw Self.failure(what, context)
            }
            try Self.turn(loop, until: { () throws(PulseError) -> Bool in
                switch pa_stream_get_state(made) {
                case PA_STREAM_READY: true
                case PA_STREAM_FAILED, PA_STREAM_TERMINATED: throw Self.failure(what, context)
                default: false
                }
            })
        } catch {
            if let stream { pa_stream_unref(stream) }
            pa_context_disconnect(context)
            pa_context_unref(context)
            pa_mainloop_free(loop)
            throw error
        }
        self.stream = stream!
    }

    deinit {
        pa_stream_disconnect(stream)
        pa_stream_unref(stream)
        pa_context_disconnect(context)
        pa_context_unref(context)
        pa_mainloop_free(loop)
    }

    private static func failure(_ operation: String, _ context: OpaquePointer) -> PulseError {
        PulseError(operation: operation, code: pa_context_errno(context))
    }

    /// Turns the loop (blocking in poll) until `done` says so.
    private static func turn(_ loop: OpaquePointer, until done: () throws(PulseError) -> Bool) throws(PulseError) {
        while try !done() {
            guard pa_mainloop_iterate(loop, 1, nil) >= 0 else {
                throw PulseError(operation: "main loop", code: Int32(PA_ERR_INTERNAL.rawValue))
            }
        }
    }

    /// Blocks for the next 20 ms of interleaved samples; after `suspend`,
    /// of sound captured from now on.
    public func read() throws(PulseError) -> [Int16] {
        if corked {
            corked = false
            hold(false)
            flush()
        }
        let want = frame.count
        try Self.turn(loop) { () throws(PulseError) -> Bool in
            try take()
            return filled >= want
        }
        frame.withUnsafeMutableBufferPointer { out in
            pending.withUnsafeBufferPointer { out.baseAddress!.update(from: $0.baseAddress!, count: want) }
        }
        pending.withUnsafeMutableBufferPointer { all in
            let rest = filled - want
            if rest > 0 { all.baseAddress!.update(from: all.baseAddress! + want, count: rest) }
        }
        filled -= want
        return frame
    }

    /// Moves what the stream holds into `pending` (the oldest give way if
    /// it ever held more than 160 ms).
    private func take() throws(PulseError) {
        guard pa_stream_get_state(stream) == PA_STREAM_READY else { throw Self.failure("read", context) }
        while pa_stream_readable_size(stream) > 0 {
            var data: UnsafeRawPointer?
            var bytes = 0
            guard pa_stream_peek(stream, &data, &bytes) >= 0 else { throw Self.failure("read", context) }
            if bytes == 0 { break }
            if let data {
                let samples = data.assumingMemoryBound(to: Int16.self)
                var count = bytes / 2
                var from = samples
                if count > pending.count { from += count - pending.count; count = pending.count }
                let overflow = filled + count - pending.count
                if overflow > 0 { drop(overflow) }
                pending.withUnsafeMutableBufferPointer { ($0.baseAddress! + filled).update(from: from, count: count) }
                filled += count
            }
            pa_stream_drop(stream)
        }
    }

    /// Forgets the oldest `count` samples of `pending`.
    private func drop(_ count: Int) {
        let count = min(count, filled) & ~(channels - 1)
        pending.withUnsafeMutableBufferPointer { all in
            all.baseAddress!.update(from: all.baseAddress! + count, count: filled - count)
        }
        filled -= count
    }

    /// Holds the stream (a paused sender): the server sends nothing until
    /// the next `read`, so the reading thread can sleep instead of waking
    /// every 20 ms to throw sound away.
    public func suspend() {
        guard !corked else { return }
        corked = true
        hold(true)
    }

    /// Corks or uncorks the stream; the request leaves with the loop's turns.
    private func hold(_ on: Bool) {
        if let operation = pa_stream_cork(stream, on ? 1 : 0, nil, nil) { pa_operation_unref(operation) }
        while pa_mainloop_iterate(loop, 0, nil) > 0 {}
    }

    /// Drops whatever the server buffered since the stream opened, so the
    /// next read is fresh audio.
    public func flush() {
        while pa_mainloop_iterate(loop, 0, nil) > 0 {}
        try? take()
        filled = 0
    }

    /// The default sink's latency now (microseconds): how far ahead of being
    /// heard a sample is rendered, so how early a monitor source delivers it
    /// (about a second when idle or for a heavily buffered player,
    /// milliseconds for a low-latency one). Nil when the server does not answer.
    public func sinkLatencyMicroseconds() -> UInt64? {
        final class Answer { var latency: UInt64?; var done = false }
        let answer = Answer()
        guard let operation = pa_context_get_sink_info_by_name(context, "@DEFAULT_SINK@", { _, info, eol, userdata in
            let answer = Unmanaged<Answer>.fromOpaque(userdata!).takeUnretainedValue()
            if eol != 0 { answer.done = true; return }
            if let info { answer.latency = info.pointee.latency }
        }, Unmanaged.passUnretained(answer).toOpaque()) else { return nil }
        defer { pa_operation_unref(operation) }
        // The stream's data arriving meanwhile waits in the stream for `read`.
        while !answer.done && pa_context_get_state(context) == PA_CONTEXT_READY
            && pa_operation_get_state(operation) == PA_OPERATION_RUNNING {
            guard pa_mainloop_iterate(loop, 1, nil) >= 0 else { return nil }
        }
        return answer.latency
    }
}

/// Blocking 48 kHz 16-bit playback through pa_simple with a short buffer.
public final class PulsePlayback {
    public let channels: Int
    private let stream: OpaquePointer

    public init(channels: Int, targetLatencyMilliseconds: Int = 60, name: String = "share") throws(PulseError) {
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(OpusFormat.sampleRate), channels: UInt8(channels))
        let bytesPerMillisecond = UInt32(OpusFormat.sampleRate / 1000 * channels * 2)
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: bytesPerMillisecond * UInt32(targetLatencyMilliseconds),
                                        prebuf: UInt32.max, minreq: UInt32.max, fragsize: UInt32.max)
        var error: Int32 = 0
        guard let stream = pa_simple_new(nil, name, PA_STREAM_PLAYBACK, nil, "shared screen audio", &spec, nil,
                                         &attributes, &error) else {
            throw PulseError(operation: "play to the default sink", code: error)
        }
        self.stream = stream
        self.channels = channels
    }

    deinit { pa_simple_free(stream) }

    /// Blocks until `pcm` is queued.
    public func write(_ pcm: ArraySlice<Int16>) throws(PulseError) {
        var error: Int32 = 0
        let status = pcm.withUnsafeBytes { pa_simple_write(stream, $0.baseAddress, $0.count, &error) }
        guard status >= 0 else { throw PulseError(operation: "write", code: error) }
    }

    public var latencyMicroseconds: UInt64 {
        var error: Int32 = 0
        return pa_simple_get_latency(stream, &error)
    }
}

/// Whether a PulseAudio server answers (PULSE_SERVER or the user's default).
public func pulseAudioIsReachable() -> Bool {
    (try? PulseCapture(device: .systemOutput, channels: 2, name: "share-probe")) != nil
}
