#if canImport(Glibc)
internal import Glibc
#endif

/// Changes the sample rate of interleaved PCM by a rational factor, in
/// chunks of any size: a polyphase windowed-sinc filter (Kaiser window),
/// one phase per output position between two input samples. Opus codes
/// 48 kHz; hosts push 44.1 kHz, 16 kHz, 96 kHz… Sans-IO and allocation-free
/// once its buffers have grown to the chunk size.
///
/// Quality: a tone in the passband comes out with its distortion and
/// aliasing more than 70 dB down (tested at 8, 16, 44.1 and 96 kHz), with
/// the passband flat to 0.9 of the lower rate's Nyquist frequency. The
/// filter delays the signal by `delayFrames` input frames.
public struct Resampler: Sendable {
    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int
    /// Output positions per input sample (L) and input samples per output step (M): out/in = L/M.
    private let up: Int
    private let down: Int
    /// Coefficients per phase, and the table (phase-major).
    private let taps: Int
    private let table: [Float]
    /// Input frames the filter still needs (the last `taps - 1` and any not yet used), interleaved.
    private var pending: [Float] = []
    /// Where the next output falls: `position` whole input frames into `pending`, plus `phase`/L.
    private var position = 0
    private var phase = 0

    /// The most phases a filter table holds: rates whose ratio to 48 kHz
    /// needs more (not a common rate) are refused.
    public static let maximumPhases = 1024

    /// Nil when the ratio needs more than `maximumPhases` phases or a rate is outside 1 kHz-384 kHz.
    public init?(inputRate: Int, outputRate: Int, channels: Int) {
        guard (1000...384_000).contains(inputRate), (1000...384_000).contains(outputRate), (1...8).contains(channels)
        else { return nil }
        let divisor = Self.gcd(inputRate, outputRate)
        up = outputRate / divisor
        down = inputRate / divisor
        guard up <= Self.maximumPhases else { return nil }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        // Downsampling narrows the passband: the filter grows by the ratio to keep its steepness.
        let ratio = max(1.0, Double(down) / Double(up))
        taps = Int((32 * ratio).rounded(.up)) & ~1
        let cutoff = 0.5 / ratio * 0.92  // cycles per input sample
        let beta = 8.6
        let half = Double(taps) / 2
        var table = [Float](repeating: 0, count: up * taps)
        for p in 0..<up {
            var sum = 0.0
            var row = [Double](repeating: 0, count: taps)
            for k in 0..<taps {
                // Distance in input samples from tap k to the output instant.
                let t = Double(taps / 2 - 1) + Double(p) / Double(up) - Double(k)
                let x = 2 * cutoff * t
                let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
                let w = t.magnitude >= half ? 0 : Self.besselI0(beta * (1 - (t / half) * (t / half)).squareRoot())
                    / Self.besselI0(beta)
                row[k] = sinc * w
                sum += row[k]
            }
            for k in 0..<taps { table[p * taps + k] = Float(row[k] / sum) }
        }
        self.table = table
        pending = [Float](repeating: 0, count: (taps - 1) * channels)
    }

    /// The filter's delay in input frames (the output lags the input by this much).
    public var delayFrames: Int { taps / 2 - 1 }

    /// Output frames `inputFrames` more input frames will produce, at most.
    public func outputFrames(forInput inputFrames: Int) -> Int {
        ((pending.count / channels + inputFrames) * up) / down + 1
    }

    /// Resamples interleaved `input` (any whole number of frames) and
    /// appends the result to `output`.
    public mutating func process(_ input: UnsafeBufferPointer<Float>, into output: inout [Float]) {
        pending.append(contentsOf: input)
        let frames = pending.count / channels
        let (taps, channels, up, down) = (self.taps, self.channels, self.up, self.down)
        output.reserveCapacity(output.count + outputFrames(forInput: 0) * channels)
        pending.withUnsafeBufferPointer { source in
            table.withUnsafeBufferPointer { filter in
                while position + taps <= frames {
                    let coefficients = filter.baseAddress! + phase * taps
                    let first = source.baseAddress! + position * channels
                    for c in 0..<channels {
                        var sum: Float = 0
                        for k in 0..<taps { sum += first[k * channels + c] * coefficients[k] }
                        output.append(sum)
                    }
                    phase += down
                    position += phase / up
                    phase %= up
                }
            }
        }
        // Keep what the next outputs still read.
        let used = min(position, frames)
        pending.removeFirst(used * channels)
        position -= used
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    /// The modified Bessel function of the first kind, order 0 (its series).
    private static func besselI0(_ x: Double) -> Double {
        var sum = 1.0
        var term = 1.0
        var k = 1.0
        while term > sum * 1e-12 {
            term *= (x / (2 * k)) * (x / (2 * k))
            sum += term
            k += 1
        }
        return sum
    }
}
