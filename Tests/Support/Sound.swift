import Foundation

/// A PulseAudio daemon for one test: user mode, a 48 kHz null sink named
/// `share_test` (the default sink, so its monitor is "system audio"), a
/// private socket, stopped by PID.
public final class SoundServer: @unchecked Sendable {
    public let directory: TemporaryDirectory
    public let environment: [String: String]
    private let daemon: ChildProcess

    public init() throws {
        directory = try TemporaryDirectory()
        let socket = directory.path("native")
        environment = ["PULSE_SERVER": "unix:\(socket)", "HOME": directory.url.path, "XDG_RUNTIME_DIR": directory.url.path]
        daemon = try ChildProcess("pulseaudio", [
            "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
            "--load=module-null-sink sink_name=share_test rate=48000",
            "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1",
        ], environment: environment)
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) {
            guard Date() < deadline, daemon.isRunning else {
                throw TestEnvironmentError("pulseaudio did not start: \(daemon.output)")
            }
            usleep(20_000)
        }
        usleep(200_000)
    }

    /// Plays a WAV file into the null sink (what "system audio" captures).
    public func play(_ wav: String) throws -> ChildProcess {
        try ChildProcess("paplay", ["--device=share_test", wav], environment: environment)
    }

    /// Plays a sine into the null sink through PulseAudio's `module-sine`: a
    /// client that keeps about a second buffered, as media players do (the
    /// sink then renders far ahead and its latency swings by a second).
    public func playSine(hertz: Int) throws {
        let result = try run("pactl", ["load-module", "module-sine", "sink=share_test", "frequency=\(hertz)"],
                             environment: environment)
        guard result.status == 0 else { throw TestEnvironmentError("module-sine did not load: \(result.stderr)") }
    }

    public func stop() { daemon.stop() }

    deinit { daemon.stop() }
}

/// Writes a 16-bit 48 kHz stereo WAV of a sine at `hertz`.
public func writeToneWAV(_ path: String, hertz: Double, seconds: Double, amplitude: Double = 0.3) throws {
    let frames = Int(seconds * 48_000)
    var data = Data(capacity: 44 + frames * 4)
    func le32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    func le16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
    data.append(contentsOf: Array("RIFF".utf8)); le32(UInt32(36 + frames * 4)); data.append(contentsOf: Array("WAVE".utf8))
    data.append(contentsOf: Array("fmt ".utf8)); le32(16); le16(1); le16(2); le32(48_000); le32(48_000 * 4); le16(4); le16(16)
    data.append(contentsOf: Array("data".utf8)); le32(UInt32(frames * 4))
    for i in 0..<frames {
        let v = Int16(sin(2 * Double.pi * hertz * Double(i) / 48_000) * amplitude * 32767)
        le16(UInt16(bitPattern: v)); le16(UInt16(bitPattern: v))
    }
    try data.write(to: URL(fileURLWithPath: path))
}

/// The first audio track of a media file as 48 kHz mono samples (ffmpeg
/// decodes), placed by their timestamps from the file's time zero: gaps
/// become silence and overlaps are trimmed, so sample i is at i / 48000 s.
/// With `nativeDecoder`, libavcodec's own Opus decoder (the one ffplay, mpv
/// and most players use) instead of libopus, the reference decoder.
public func decodeAudio(_ path: String, track: Int = 0, nativeDecoder: Bool = false) throws -> [Int16] {
    let raw = path + ".raw"
    // libavcodec's native Opus decoder mis-decodes some hybrid (SILK+CELT)
    // streams; the tests that are not about players use the reference.
    let decoder = path.hasSuffix(".wav") || nativeDecoder ? [] : ["-c:a", "libopus"]
    let result = try run("ffmpeg", ["-v", "error"] + decoder + ["-i", path, "-map", "0:a:\(track)", "-ac", "1", "-ar", "48000",
                                    "-af", "aresample=async=1:first_pts=0", "-f", "s16le", "-y", raw])
    guard result.status == 0 else { throw TestEnvironmentError("ffmpeg could not decode audio: \(result.stderr)") }
    let data = try Data(contentsOf: URL(fileURLWithPath: raw))
    try? FileManager.default.removeItem(atPath: raw)
    return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
}

/// Frequency of a tone from upward crossings with hysteresis (immune to codec
/// noise around zero), over the part between the first and last loud sample.
public func toneFrequency(_ samples: [Int16], threshold: Int16 = 1000) -> Double? {
    var state = 0
    var ups: [Int] = []
    for (i, x) in samples.enumerated() {
        if state <= 0 && x > threshold {
            if state < 0 { ups.append(i) }
            state = 1
        } else if state >= 0 && x < -threshold {
            state = -1
        }
    }
    guard ups.count > 10 else { return nil }
    return Double(ups.count - 1) / (Double(ups.last! - ups.first!) / 48_000)
}

/// The longest run of near-silent samples between the first and the last
/// loud one: a gap in a continuous tone.
public func longestGap(_ samples: [Int16], quiet: Int16 = 300, loud: Int16 = 1000) -> Int {
    guard let first = samples.firstIndex(where: { abs(Int($0)) > loud }),
          let last = samples.lastIndex(where: { abs(Int($0)) > loud }) else { return samples.count }
    var run = 0
    var longest = 0
    for x in samples[first...last] {
        if abs(Int(x)) < quiet { run += 1; longest = max(longest, run) } else { run = 0 }
    }
    return longest
}

/// Times (seconds) at which the picture turns bright, from 16x9 grey frames.
public func flashTimes(_ path: String) throws -> [Double] {
    let times = try run("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                                    "-of", "csv=p=0", path]).stdout
        .split(whereSeparator: \.isNewline).compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ", "))) }
    let gray = path + ".gray"
    // One raw frame per decoded frame (no constant-rate duplication: a
    // still screen is recorded as few, widely spaced frames).
    _ = try run("ffmpeg", ["-v", "error", "-i", path, "-map", "0:v", "-vf", "scale=16:9,format=gray", "-fps_mode", "passthrough",
                           "-f", "rawvideo", "-y", gray])
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: gray)))
    try? FileManager.default.removeItem(atPath: gray)
    let frames = min(bytes.count / 144, times.count)
    let luma = (0..<frames).map { i in bytes[i * 144..<(i + 1) * 144].reduce(0) { $0 + Int($1) } / 144 }
    return (1..<frames).filter { luma[$0] > 128 && luma[$0 - 1] <= 128 }.map { times[$0] }
}

/// Where the first audio track begins on the file's timeline, in seconds.
public func audioStart(_ path: String) throws -> Double {
    try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        .stdout.split(whereSeparator: \.isNewline).first
        .flatMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ", "))) } ?? 0
}

/// When the first audio track's last packet begins (seconds, on the file's timeline).
public func audioEnd(_ path: String) throws -> Double {
    try run("ffprobe", ["-v", "error", "-select_streams", "a:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        .stdout.split(whereSeparator: \.isNewline).last
        .flatMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ", "))) } ?? 0
}

/// Times (seconds, on the file's timeline) at which a beep starts after at
/// least half a second of quiet, in the first audio track.
public func beepTimes(_ path: String) throws -> [Double] {
    let samples = try decodeAudio(path)
    var onsets: [Double] = []
    var quiet = 0
    for (i, x) in samples.enumerated() {
        let loud = abs(Int(x)) > 3000
        if loud && quiet > 24_000 { onsets.append(Double(i) / 48_000) }
        quiet = loud ? 0 : quiet + 1
    }
    return onsets
}
