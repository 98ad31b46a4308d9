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

/// Blocking 48 kHz 16-bit capture through pa_simple, in 20 ms reads. Owns
/// its own thread's worth of blocking: call `read` from a dedicated thread.
public final class PulseCapture {
    public let channels: Int
    private let stream: OpaquePointer
    private var buffer: [Int16]

    public init(device: PulseDevice, channels: Int, name: String = "share") throws(PulseError) {
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(OpusFormat.sampleRate), channels: UInt8(channels))
        let fragment = UInt32(OpusFormat.frameSamples * channels * 2)
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32.max, prebuf: UInt32.max, minreq: UInt32.max,
                                        fragsize: fragment)
        var error: Int32 = 0
        guard let stream = pa_simple_new(nil, name, PA_STREAM_RECORD, device.name, "screen share audio", &spec, nil,
                                         &attributes, &error) else {
            throw PulseError(operation: "record from \(device.name ?? "the default source")", code: error)
        }
        self.stream = stream
        self.channels = channels
        buffer = [Int16](repeating: 0, count: OpusFormat.frameSamples * channels)
    }

    deinit { pa_simple_free(stream) }

    /// Blocks for the next 20 ms of interleaved samples.
    public func read() throws(PulseError) -> [Int16] {
        var error: Int32 = 0
        let status = buffer.withUnsafeMutableBytes { pa_simple_read(stream, $0.baseAddress, $0.count, &error) }
        guard status >= 0 else { throw PulseError(operation: "read", code: error) }
        return buffer
    }

    /// Drops whatever the server buffered since the stream opened, so the
    /// next read is fresh audio.
    public func flush() {
        var error: Int32 = 0
        _ = pa_simple_flush(stream, &error)
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

/// Asks the server for the default sink's current latency (microseconds):
/// how far ahead of being heard a sample is rendered, and so how early a
/// monitor source delivers it. It follows the clients playing (about a
/// second when idle or for a heavily buffered player, milliseconds for a
/// low-latency one). Keeps one connection, so a query is one round trip.
public final class SinkLatencyProbe {
    private let loop: OpaquePointer
    private let context: OpaquePointer

    public init?() {
        guard let loop = pa_mainloop_new() else { return nil }
        guard let context = pa_context_new(pa_mainloop_get_api(loop), "share-latency"),
              pa_context_connect(context, nil, PA_CONTEXT_NOFLAGS, nil) >= 0 else {
            pa_mainloop_free(loop)
            return nil
        }
        self.loop = loop
        self.context = context
        // Connecting is asynchronous: turn the loop until it is done.
        for _ in 0..<200 {
            let state = pa_context_get_state(context)
            if state == PA_CONTEXT_READY { return }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED { break }
            pa_mainloop_iterate(loop, 1, nil)
        }
        pa_context_disconnect(context)
        pa_context_unref(context)
        pa_mainloop_free(loop)
        return nil
    }

    deinit {
        pa_context_disconnect(context)
        pa_context_unref(context)
        pa_mainloop_free(loop)
    }

    /// The default sink's latency now, or nil when the server does not answer.
    public func latencyMicroseconds() -> UInt64? {
        // A dead connection would leave the loop waiting for ever.
        guard isConnected else { return nil }
        final class Answer { var latency: UInt64?; var done = false }
        let answer = Answer()
        guard let operation = pa_context_get_sink_info_by_name(context, "@DEFAULT_SINK@", { _, info, eol, userdata in
            let answer = Unmanaged<Answer>.fromOpaque(userdata!).takeUnretainedValue()
            if eol != 0 { answer.done = true; return }
            if let info { answer.latency = info.pointee.latency }
        }, Unmanaged.passUnretained(answer).toOpaque()) else { return nil }
        defer { pa_operation_unref(operation) }
        for _ in 0..<200 where !answer.done && isConnected { pa_mainloop_iterate(loop, 1, nil) }
        return answer.latency
    }

    public var isConnected: Bool { pa_context_get_state(context) == PA_CONTEXT_READY }
}
