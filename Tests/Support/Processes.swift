public import Foundation

/// Runs a command to completion and returns its exit status and output.
@discardableResult
public func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                timeout: TimeInterval = 120) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : try which(executable))
    process.arguments = arguments
    if let environment { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read both pipes while waiting, so a chatty child never blocks.
    nonisolated(unsafe) var outData = Data()
    nonisolated(unsafe) var errData = Data()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    group.enter()
    DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(20_000) }
    if process.isRunning {
        process.terminate()
        usleep(200_000)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    process.waitUntilExit()
    group.wait()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

/// The absolute path of `name` on PATH.
public func which(_ name: String) throws -> String {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    throw TestEnvironmentError("\(name) is not installed (run `make deps`)")
}

public struct TestEnvironmentError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A fresh temporary directory removed on deinit.
public final class TemporaryDirectory {
    public let url: URL
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("share-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The text another process writes to `path` (an SDP a sender writes as it
/// starts), once it is there whole: not empty and ending in a line break.
/// Polled for up to `seconds`: a loaded machine starts a sender slower.
public func textWhenWritten(_ path: String, within seconds: Double = 5) throws -> String {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        // By scalars: "\r\n" is one Character, which hasSuffix("\n") would not match.
        if let text = try? String(contentsOfFile: path, encoding: .utf8), text.unicodeScalars.last == "\n" { return text }
        guard Date() < deadline else { return try String(contentsOfFile: path, encoding: .utf8) }
        usleep(20_000)
    }
}

/// Frames and codec facts of a media file, from ffprobe.
public struct ProbeResult {
    public var videoFrames: Int
    public var width: Int
    public var height: Int
    public var codec: String
    public var errors: String
}

/// Counts the decodable video frames of `path` with ffprobe (reads every packet).
public func probeVideo(_ path: String) throws -> ProbeResult {
    let result = try run("ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                     "-show_entries", "stream=codec_name,width,height,nb_read_frames",
                                     "-of", "default=noprint_wrappers=1", path])
    var fields: [String: String] = [:]
    for line in result.stdout.split(separator: "\n") {
        let parts = line.split(separator: "=", maxSplits: 1)
        if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
    }
    return ProbeResult(videoFrames: Int(fields["nb_read_frames"] ?? "") ?? 0, width: Int(fields["width"] ?? "") ?? 0,
                       height: Int(fields["height"] ?? "") ?? 0, codec: fields["codec_name"] ?? "",
                       errors: result.stderr)
}

/// The size of every video frame of a recording, in order ("1280x720"), as
/// ffprobe decodes them, and what ffprobe printed as errors.
public func recordedFrameSizes(_ path: String) throws -> (sizes: [String], errors: String) {
    let result = try run("ffprobe", ["-v", "error", "-show_entries", "frame=width,height", "-of", "csv=p=0", path])
    let sizes = result.stdout.split(separator: "\n").map { $0.split(separator: ",").prefix(2).joined(separator: "x") }
    return (sizes, result.status == 0 ? result.stderr : "ffprobe exit \(result.status): \(result.stderr)")
}

/// The last picture of a recording (or the one picture of an image file)
/// as RGB24 bytes, by ffmpeg; refused unless it is `width` x `height`.
public func lastPictureRGB(_ path: String, width: Int, height: Int) throws -> [UInt8] {
    let out = path + ".last.rgb"
    defer { try? FileManager.default.removeItem(atPath: out) }
    let decoded = try run("ffmpeg", ["-v", "error", "-i", path, "-update", "1", "-pix_fmt", "rgb24", "-f", "image2",
                                     "-c:v", "rawvideo", "-y", out])
    guard decoded.status == 0 else { throw TestEnvironmentError("ffmpeg: \(decoded.stderr)") }
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: out)))
    guard bytes.count == width * height * 3 else {
        throw TestEnvironmentError("\(path): \(bytes.count) bytes of RGB, not \(width)x\(height)")
    }
    return bytes
}

