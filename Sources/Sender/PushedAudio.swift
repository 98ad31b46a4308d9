import Dispatch
internal import ShareAudio
internal import ShareBase
internal import ShareFrames
internal import ShareSync
internal import ShareWire
import Synchronization

/// The audio streams a host can push (`AudioInput.Source.pushed`): the
/// application's own sound and the microphone, as a broadcast extension is
/// handed them: each is its own Opus stream, and the receiver mixes them.
public enum PushedAudio: String, Sendable, CaseIterable {
    /// What the application plays: music, coded stereo at 96 kbit/s by default.
    case app
    /// The person talking: voice, coded mono at 32 kbit/s by default.
    case microphone
}

/// Interleaved PCM a host pushes (`ScreenSender.push(audio:…)`), read only
/// while the push runs: 16-bit integers, or 32-bit floats in -1…1.
public enum AudioSamples {
    /// Signed 16-bit samples, interleaved.
    case int16(UnsafeBufferPointer<Int16>)
    /// 32-bit floating-point samples in -1…1 (clipped beyond), interleaved.
    case float32(UnsafeBufferPointer<Float>)

    var count: Int {
        switch self {
        case .int16(let samples): samples.count
        case .float32(let samples): samples.count
        }
    }
}

/// One pushed audio stream between the host's pushes and its channel's
/// thread: each push is converted at once, on the pushing thread, to the
/// stream's channels and 48 kHz (`Resampler`) and appended to a ring of at
/// most 200 ms; the channel's thread takes 20 ms frames from it. A push
/// never waits on the channel: when the ring is full the oldest sound is
/// dropped (counted), so the delay stays bounded; a second thread pushing
/// to the same stream at the same moment is refused (`.busy`).
final class PushedAudioBuffer: @unchecked Sendable {
    // Safe: the conversion state is used only by the thread that holds
    // `pushing` (a compare-exchange, never waited for); the ring is locked
    // for a copy of at most 200 ms of samples.
    let kind: PushedAudio
    let channels: Int
    private let pushing = Atomic<Bool>(false)
    private var resampler: Resampler?
    private var floats: [Float] = []
    private var resampled: [Float] = []
    private let ring: Locked<SampleRing>
    private let available = DispatchSemaphore(value: 0)
    /// Samples (per channel) dropped because the ring was full.
    let droppedFrames = Atomic<Int>(0)
    /// The capture instants of frames as taken, smoothed.
    private var timeline = CaptureTimeline(frameNanoseconds: 20_000_000)

    static let capacityFrames = OpusFormat.sampleRate / 5

    init(kind: PushedAudio, channels: Int) {
        self.kind = kind
        self.channels = channels
        ring = Locked(SampleRing(frames: Self.capacityFrames, channels: channels))
    }

    /// Converts and keeps `samples`; `time` is when its first sample was
    /// made (default: its last sample was made now).
    func push(_ samples: AudioSamples, rate: Int, channels inputChannels: Int, time: CaptureTime?) -> PushOutcome {
        guard (1...2).contains(inputChannels) else { return .refused("\(inputChannels) channels (1 or 2)") }
        guard samples.count % inputChannels == 0 else {
            return .refused("\(samples.count) samples are not a whole number of \(inputChannels)-channel frames")
        }
        guard pushing.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return .busy }
        defer { pushing.store(false, ordering: .releasing) }
        if resampler?.inputRate != rate || resampler?.channels != channels {
            guard let made = Resampler(inputRate: rate, outputRate: OpusFormat.sampleRate, channels: channels) else {
                return .refused("a rate of \(rate) Hz (8000 to 192000, a common rate)")
            }
            resampler = made
        }
        let frames = samples.count / inputChannels
        guard frames > 0 else { return .accepted }
        let made = time ?? CaptureTime.now() - .of(frames: frames, rate: rate)
        floats.removeAll(keepingCapacity: true)
        Self.convert(samples, from: inputChannels, to: channels, into: &floats)
        resampled.removeAll(keepingCapacity: true)
        floats.withUnsafeBufferPointer { resampler!.process($0, into: &resampled) }
        // What came out ends where the input ended, less the filter's delay.
        let end = made + .of(frames: frames, rate: rate) - .of(frames: resampler!.delayFrames, rate: rate)
        let dropped = resampled.withUnsafeBufferPointer { output in
            ring.withLock { $0.append(output, endingAt: end) }
        }
        if dropped > 0 { droppedFrames.add(dropped / channels, ordering: .relaxed) }
        available.signal()
        return .accepted
    }

    /// The next 20 ms frame and its first sample's capture instant, or nil
    /// when none came within `timeout`.
    func take(timeout: Duration) -> (pcm: [Int16], captured: CaptureTime)? {
        let frameSamples = OpusFormat.frameSamples * channels
        let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.nanoseconds))
        while true {
            var pcm = [Int16](repeating: 0, count: frameSamples)
            let start = pcm.withUnsafeMutableBufferPointer { out in ring.withLock { $0.take(into: out) } }
            if let start { return (pcm, timeline.stamp(start)) }
            if available.wait(timeout: deadline) == .timedOut { return nil }
        }
    }

    /// Interleaved samples as floats with `to` channels (mono is doubled,
    /// stereo averaged down to mono).
    private static func convert(_ samples: AudioSamples, from: Int, to: Int, into out: inout [Float]) {
        let frames = samples.count / from
        out.reserveCapacity(frames * to)
        func value(_ i: Int) -> Float {
            switch samples {
            case .int16(let s): Float(s[i]) / 32768
            case .float32(let s): s[i]
            }
        }
        for frame in 0..<frames {
            switch (from, to) {
            case (1, 2):
                let v = value(frame)
                out.append(v)
                out.append(v)
            case (2, 1): out.append((value(2 * frame) + value(2 * frame + 1)) / 2)
            default: for c in 0..<to { out.append(value(frame * from + c)) }
            }
        }
    }
}

/// A fixed ring of interleaved 48 kHz samples and the capture instant just
/// after its newest one: the oldest samples give way when it is full.
struct SampleRing: ~Copyable {
    private var samples: [Int16]
    private let channels: Int
    private var start = 0
    private(set) var count = 0
    /// When the frame after the newest would have been made.
    private var end = CaptureTime(monotonic: .zero, unixNanoseconds: 0)

    init(frames: Int, channels: Int) {
        samples = [Int16](repeating: 0, count: frames * channels)
        self.channels = channels
    }

    /// Appends (clipping to 16 bits); returns how many samples were dropped
    /// (the oldest, or the start of an input longer than the ring).
    mutating func append(_ input: UnsafeBufferPointer<Float>, endingAt time: CaptureTime) -> Int {
        let capacity = samples.count
        let incoming = input.count > capacity ? input[(input.count - capacity)...] : input[...]
        let excess = max(0, count + incoming.count - capacity)
        start = (start + excess) % capacity
        count -= excess
        var at = (start + count) % capacity
        for value in incoming {
            samples[at] = Int16(max(-32768, min(32767, (value * 32768).rounded())))
            at = at + 1 == capacity ? 0 : at + 1
        }
        count += incoming.count
        end = time
        return excess + input.count - incoming.count
    }

    /// Fills `out` from the oldest samples when there are enough; returns
    /// the first one's capture instant.
    mutating func take(into out: UnsafeMutableBufferPointer<Int16>) -> CaptureTime? {
        guard count >= out.count else { return nil }
        let capacity = samples.count
        let first = end - .of(frames: count / channels, rate: OpusFormat.sampleRate)
        for i in 0..<out.count { out[i] = samples[(start + i) % capacity] }
        start = (start + out.count) % capacity
        count -= out.count
        return first
    }
}
