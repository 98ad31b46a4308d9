import Foundation
import ShareAudio
import Testing

@Suite("The resampler")
struct ResamplerTests {
    /// A tone in, resampled to 48 kHz in uneven chunks: what comes out is
    /// that tone (fitted by least squares) with everything else — images,
    /// aliases, distortion — far below it.
    @Test(arguments: [(8000, 1000.0), (16000, 3000.0), (44100, 1000.0), (44100, 15000.0), (96000, 5000.0)])
    func aToneComesOutClean(rate: Int, hertz: Double) throws {
        var resampler = try #require(Resampler(inputRate: rate, outputRate: 48_000, channels: 1))
        let input = (0..<rate).map { Float(0.5 * sin(2 * Double.pi * hertz * Double($0) / Double(rate))) }
        var output: [Float] = []
        var offset = 0
        var chunk = 1
        while offset < input.count {
            let end = min(input.count, offset + chunk)
            input[offset..<end].withUnsafeBufferPointer { resampler.process($0, into: &output) }
            offset = end
            chunk = chunk * 7 % 997 + 1
        }
        #expect(abs(output.count - 48_000) <= 48_000 * resampler.delayFrames / rate + 2, "\(output.count) frames")
        // Skip the filter's start; fit a sin, a cos and a constant at the tone's frequency.
        let samples = output.dropFirst(4800).map(Double.init)
        let (amplitude, residual) = fit(samples, hertz: hertz, rate: 48_000, startIndex: 4800)
        #expect(abs(amplitude - 0.5) < 0.005, "amplitude \(amplitude)")
        let snr = 20 * log10(amplitude / residual)
        #expect(snr > 70, "\(rate) Hz, \(hertz) Hz tone: \(snr) dB")
    }

    /// Chunk boundaries change nothing: one chunk or many give the same samples.
    @Test func chunksDoNotMatter() throws {
        var whole = try #require(Resampler(inputRate: 44_100, outputRate: 48_000, channels: 2))
        var pieces = whole
        let input = (0..<8820).map { Float(sin(Double($0) * 0.01)) }
        var one: [Float] = []
        input.withUnsafeBufferPointer { whole.process($0, into: &one) }
        var many: [Float] = []
        for start in stride(from: 0, to: input.count, by: 126) {
            input[start..<min(input.count, start + 126)].withUnsafeBufferPointer { pieces.process($0, into: &many) }
        }
        #expect(one == many)
    }

    /// Stereo channels stay apart: a tone on the left leaves the right silent.
    @Test func channelsStayApart() throws {
        var resampler = try #require(Resampler(inputRate: 44_100, outputRate: 48_000, channels: 2))
        var input = [Float](repeating: 0, count: 44_100 * 2)
        for i in 0..<44_100 { input[2 * i] = Float(0.5 * sin(2 * Double.pi * 440 * Double(i) / 44_100)) }
        var output: [Float] = []
        input.withUnsafeBufferPointer { resampler.process($0, into: &output) }
        let left = stride(from: 0, to: output.count, by: 2).map { output[$0] }
        let right = stride(from: 1, to: output.count, by: 2).map { output[$0] }
        #expect(left.map(abs).max()! > 0.45)
        #expect(right.map(abs).max()! == 0)
    }

    @Test func ratiosNeedingTooManyPhasesAreRefused() {
        #expect(Resampler(inputRate: 44_101, outputRate: 48_000, channels: 1) == nil)
        #expect(Resampler(inputRate: 500, outputRate: 48_000, channels: 1) == nil)
        #expect(Resampler(inputRate: 48_000, outputRate: 48_000, channels: 9) == nil)
        for rate in [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000, 176_400, 192_000] {
            #expect(Resampler(inputRate: rate, outputRate: 48_000, channels: 2) != nil, "\(rate)")
        }
    }

    /// The amplitude of the best-fitting tone and the RMS of what is left.
    private func fit(_ x: [Double], hertz: Double, rate: Double, startIndex: Int) -> (Double, Double) {
        let w = 2 * Double.pi * hertz / rate
        var (ss, cc, sc, sx, cx, s1, c1, x1) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for (i, v) in x.enumerated() {
            let (s, c) = (sin(w * Double(i + startIndex)), cos(w * Double(i + startIndex)))
            ss += s * s; cc += c * c; sc += s * c; sx += s * v; cx += c * v; s1 += s; c1 += c; x1 += v
        }
        let n = Double(x.count)
        // Solve the 3x3 normal equations for a·sin + b·cos + d.
        let m = [[ss, sc, s1], [sc, cc, c1], [s1, c1, n]]
        let r = [sx, cx, x1]
        let solution = solve(m, r)
        let (a, b, d) = (solution[0], solution[1], solution[2])
        var residual = 0.0
        for (i, v) in x.enumerated() {
            let model = a * sin(w * Double(i + startIndex)) + b * cos(w * Double(i + startIndex)) + d
            residual += (v - model) * (v - model)
        }
        return ((a * a + b * b).squareRoot(), (residual / n).squareRoot())
    }

    private func solve(_ m: [[Double]], _ r: [Double]) -> [Double] {
        var a = m
        var b = r
        for i in 0..<3 {
            for j in (i + 1)..<3 {
                let f = a[j][i] / a[i][i]
                for k in i..<3 { a[j][k] -= f * a[i][k] }
                b[j] -= f * b[i]
            }
        }
        var x = [0.0, 0.0, 0.0]
        for i in stride(from: 2, through: 0, by: -1) {
            var s = b[i]
            for k in (i + 1)..<3 { s -= a[i][k] * x[k] }
            x[i] = s / a[i][i]
        }
        return x
    }
}
