#if canImport(Glibc)
internal import Glibc
#endif

/// Why a WAV file cannot be used.
public struct WAVError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
}

/// A sine tone, 20 ms at a time, for tests and demos.
public struct ToneSource: Sendable {
    public let frequency: Double
    public let channels: Int
    public var amplitude = 0.3
    private var phase = 0.0

    public init(frequency: Double, channels: Int) {
        self.frequency = frequency
        self.channels = channels
    }

    public mutating func next() -> [Int16] {
        var pcm = [Int16](repeating: 0, count: OpusFormat.frameSamples * channels)
        let step = 2 * Double.pi * frequency / Double(OpusFormat.sampleRate)
        for i in 0..<OpusFormat.frameSamples {
            let value = Int16(sin(phase) * amplitude * 32767)
            for c in 0..<channels { pcm[i * channels + c] = value }
            phase += step
            if phase > 2 * Double.pi { phase -= 2 * Double.pi }
        }
        return pcm
    }
}

/// PCM from a RIFF/WAVE file: 16-bit, 48 kHz, 1 or 2 channels, looped.
public struct WAVSource: Sendable {
    public let channels: Int
    private let samples: [Int16]
    private var position = 0

    public init(path: String) throws(WAVError) {
        guard let file = fopen(path, "rb") else { throw WAVError(description: "cannot open \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        func u16(_ i: Int) -> Int { Int(bytes[i]) | Int(bytes[i + 1]) << 8 }
        func u32(_ i: Int) -> Int { u16(i) | u16(i + 2) << 16 }
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else {
            throw WAVError(description: "\(path) is not a RIFF/WAVE file")
        }
        var offset = 12
        var format: (channels: Int, rate: Int, bits: Int, tag: Int)?
        var data: Range<Int>?
        while offset + 8 <= bytes.count {
            let size = u32(offset + 4)
            let body = offset + 8
            guard body + size <= bytes.count || bytes[offset..<offset + 4].elementsEqual("data".utf8) else { break }
            if bytes[offset..<offset + 4].elementsEqual("fmt ".utf8), size >= 16 {
                format = (u16(body + 2), u32(body + 4), u16(body + 14), u16(body))
            } else if bytes[offset..<offset + 4].elementsEqual("data".utf8) {
                data = body..<min(body + size, bytes.count)
                break
            }
            offset = body + size + (size & 1)
        }
        guard let format, let data else { throw WAVError(description: "\(path) has no fmt or data chunk") }
        guard format.tag == 1 || format.tag == 0xFFFE, format.bits == 16, format.rate == OpusFormat.sampleRate,
              (1...2).contains(format.channels) else {
            throw WAVError(description: "\(path) is \(format.bits)-bit \(format.rate) Hz with \(format.channels) channels: share reads 16-bit 48000 Hz mono or stereo PCM")
        }
        channels = format.channels
        var pcm = [Int16](repeating: 0, count: data.count / 2)
        for i in 0..<pcm.count { pcm[i] = Int16(bitPattern: UInt16(u16(data.lowerBound + 2 * i))) }
        guard !pcm.isEmpty else { throw WAVError(description: "\(path) has no samples") }
        samples = pcm
    }

    /// The next 20 ms, wrapping around at the end of the file.
    public mutating func next() -> [Int16] {
        let count = OpusFormat.frameSamples * channels
        var out = [Int16](repeating: 0, count: count)
        for i in 0..<count {
            out[i] = samples[position]
            position = (position + 1) % samples.count
        }
        return out
    }
}
