internal import ShareBase
internal import ShareAudio
internal import ShareFrames
#if canImport(Glibc)
internal import Glibc
internal import ShareSync
#endif

/// One audio stream the sender sends: where it comes from and how it is coded.
public struct AudioInput: Sendable, Equatable {
    /// Where the sound comes from.
    public enum Source: Sendable, Equatable {
        /// The monitor of the default sink: the sound of what is on screen.
        case system
        /// The default source.
        case microphone
        /// A PulseAudio source by name.
        case named(String)
        /// A 16-bit 48 kHz WAV file, looped (tests, demos).
        case file(String)
        /// A sine tone (tests, demos).
        case tone(hertz: Double)
        /// Sound the host pushes (`ScreenSender.push(audio:…)`).
        case pushed(PushedAudio)
    }

    /// Where the sound comes from.
    public var source: Source
    /// 1 (mono) or 2 (stereo); the default is mono for a microphone, stereo otherwise.
    public var channels: Int
    /// Opus bitrate in bit/s.
    public var bitrate: Int

    /// An input from `source`; voice (a microphone) defaults to mono at
    /// 32 kbit/s, anything else to stereo at 96 kbit/s.
    public init(source: Source, channels: Int? = nil, bitrate: Int? = nil) {
        self.source = source
        let voice = source == .microphone || source == .pushed(.microphone)
        self.channels = channels ?? (voice ? 1 : 2)
        self.bitrate = bitrate ?? (voice ? 32_000 : 96_000)
    }

    var isVoice: Bool { source == .microphone || source == .pushed(.microphone) }

    /// How the input is named in messages ("system audio", "pushed microphone").
    public var label: String {
        switch source {
        case .system: "system audio"
        case .microphone: "microphone"
        case .named(let name): "source \(name)"
        case .file(let path): "file \(path)"
        case .tone(let hertz): "\(hertz) Hz tone"
        case .pushed(.app): "pushed app audio"
        case .pushed(.microphone): "pushed microphone"
        }
    }

    /// Whether a PulseAudio server can be reached (for the `--audio` default).
    public static var pulseAudioAvailable: Bool { pulseAudioIsReachable() }
}

/// Reads 20 ms frames from an `AudioInput` with the instant their first
/// sample was captured. Pulse sources block on the server; file and tone
/// sources pace themselves on the monotonic clock.
final class AudioReader {
    private enum Backend {
        /// A capture and whether it reads a sink's monitor.
        case pulse(PulseCapture, monitor: Bool)
        case wav(WAVSource)
        case tone(ToneSource)
        case pushed(PushedAudioBuffer)
    }

    private var backend: Backend
    private var next = MonotonicTime.zero
    private var frames = 0
    /// The default sink's latency, refreshed every 0.5 s for monitor sources.
    private var sinkLatency = Duration.zero
    /// Pulse sources' instants, smoothed (server reads and sink latency jitter).
    private var timeline = CaptureTimeline(frameNanoseconds: 20_000_000)
    let channels: Int

    init(_ input: AudioInput) throws(SenderError) {
        guard (1...2).contains(input.channels) else { throw .audio("\(input.label): \(input.channels) channels (1 or 2)") }
        do {
            switch input.source {
            case .system: backend = .pulse(try PulseCapture(device: .systemOutput, channels: input.channels), monitor: true)
            case .microphone: backend = .pulse(try PulseCapture(device: .microphone, channels: input.channels), monitor: false)
            case .named(let name):
                backend = .pulse(try PulseCapture(device: .named(name), channels: input.channels),
                                 monitor: name.hasSuffix(".monitor"))
            case .file(let path):
                let wav = try WAVSource(path: path)
                backend = .wav(wav)
            case .tone(let hertz): backend = .tone(ToneSource(frequency: hertz, channels: input.channels))
            case .pushed(let kind):
                backend = .pushed(PushedAudioBuffer(kind: kind, channels: input.channels))
            }
        } catch let error as PulseError {
            throw .audio("\(input.label): \(error)")
        } catch {
            throw .audio("\(input.label): \(error)")
        }
        switch backend {
        case .wav(let wav): channels = wav.channels
        default: channels = input.channels
        }
    }

    /// The host's pushed stream, when this reads one.
    var pushed: PushedAudioBuffer? {
        if case .pushed(let buffer) = backend { buffer } else { nil }
    }

    /// The next frame and the capture instant of its first sample; nil when
    /// a pushed stream brought nothing for 50 ms (the host stopped pushing).
    func read() throws(SenderError) -> (pcm: [Int16], captured: CaptureTime)? {
        switch backend {
        case .pulse(let capture, let monitor):
            // The stream opened before streaming started: start from now, not
            // from a backlog whose timing no latency sample would describe.
            if frames == 0 { capture.flush() }
            let pcm: [Int16]
            do { pcm = try capture.read() } catch { throw .audio("\(error)") }
            // A read returns as soon as 20 ms are in (the stream was flushed
            // when streaming began, so there is no backlog): the first sample
            // is 20 ms old. The record stream's own latency figure was tried
            // and read ~0 in steady state and nonsense at start-up.
            var captured = CaptureTime.now() - .milliseconds(20)
            if monitor {
                // A monitor hands over samples when the sink renders them,
                // one sink latency before they are heard; the heard instant
                // is the one that lines up with the screen. It changes as
                // players come and go, so it is asked every 0.5 s.
                // A heavily buffered player (paplay buffers seconds) makes the
                // sink's render-ahead swing by hundreds of ms; following that
                // would tear the audio timeline, and such a player cannot be
                // lip-synced through a monitor anyway. The correction is
                // therefore capped at 200 ms: exact for low-latency players,
                // steady for the others.
                if frames % 25 == 0 {
                    sinkLatency = .microseconds(min(capture.sinkLatencyMicroseconds() ?? 0, 200_000))
                }
                captured = captured + sinkLatency
            }
            frames += 1
            return (pcm, timeline.stamp(captured))
        case .wav(var wav):
            pace()
            let pcm = wav.next()
            backend = .wav(wav)
            return (pcm, CaptureTime.now())
        case .tone(var tone):
            pace()
            let pcm = tone.next()
            backend = .tone(tone)
            return (pcm, CaptureTime.now())
        case .pushed(let buffer):
            return buffer.take(timeout: .milliseconds(50))
        }
    }

    /// Stops reading while the sender is paused: a sound server's stream
    /// is held, so the thread may sleep; the next `read` starts from sound
    /// captured then. The other sources need nothing (files and tones pace
    /// themselves afresh after a gap).
    func suspend() {
        guard case .pulse(let capture, _) = backend else { return }
        capture.suspend()
        // The sound after it is no continuation: its instants start afresh.
        timeline = CaptureTimeline(frameNanoseconds: 20_000_000)
    }

    private func pace() {
        let now = SystemClock.now()
        if next == .zero || next + .milliseconds(100) < now { next = now }
        SystemClock.sleep(until: next)
        next += .milliseconds(20)
    }
}

extension CaptureTimeline {
    /// `captured` moved onto the smoothed timeline, on both its clocks.
    mutating func stamp(_ captured: CaptureTime) -> CaptureTime {
        let observed = Int64(bitPattern: captured.monotonic.nanoseconds)
        return captured + .nanoseconds(stamp(observed: observed) &- observed)
    }
}

extension Duration {
    /// How long `frames` samples last at `rate` a second.
    static func of(frames: Int, rate: Int) -> Duration { .nanoseconds(Int64(frames) * 1_000_000_000 / Int64(rate)) }
}
