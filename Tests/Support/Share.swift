public import Foundation
internal import ShareBase
internal import ShareWire

/// The `share` binary built by `swift build` (make test builds it first).
public enum ShareBinary {
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The `share` binary, or another of the package's executables (the examples).
    public static func path(_ product: String = "share") throws -> String {
        for configuration in ["debug", "release"] {
            let path = packageRoot.appendingPathComponent(".build/\(configuration)/\(product)").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw TestEnvironmentError("\(product) is not built: run `swift build` (make test does)")
    }

    /// Starts `share` with `arguments`.
    public static func start(_ arguments: [String], environment: [String: String] = [:],
                             input: Bool = false) throws -> ChildProcess {
        try ChildProcess(try path(), arguments, environment: environment, input: input)
    }

    /// Runs `share` to completion.
    public static func run(_ arguments: [String], timeout: TimeInterval = 60,
                           environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        try start(arguments, environment: environment).wait(timeout: timeout)
    }

    /// `share recv` recording what a key holder sends to `port` into
    /// `recording`, with no window and no sound, for `seconds`.
    public static func recorder(port: Int, key: String, recording: String, seconds: Int) throws -> ChildProcess {
        try start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio", "--record", recording,
                   "--duration", "\(seconds)"])
    }

    /// A fresh key file (mode 0600) in `directory`.
    public static func keyFile(in directory: TemporaryDirectory, name: String = "share.key",
                               profile: String = "AES_CM_128_HMAC_SHA1_80") throws -> String {
        let path = directory.path(name)
        let result = try run(["keygen", path, "--profile", profile])
        guard result.status == 0 else { throw TestEnvironmentError("keygen failed: \(result.output)") }
        return path
    }

    /// A base64 key-salt as hexadecimal (GStreamer's srtpenc `key`, srtpdec's `srtp-key` caps).
    public static func hexKey(inline: String) -> String {
        Data(base64Encoded: inline)!.map { String(format: "%02x", $0) }.joined()
    }

    /// The base64 key-salt in a key file.
    public static func inlineKey(_ keyFile: String) throws -> String {
        let text = try String(contentsOfFile: keyFile, encoding: .utf8)
        return String(text.split(separator: " ").last!.dropFirst("inline:".count)).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Reads a `--stats-json` file.
public func readStats(_ path: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw TestEnvironmentError("\(path) is not a JSON object")
    }
    return object
}

/// A free even UDP port on loopback, with the odd one after it free too
/// (even ports are the RTP convention, and some peers use port+1), never
/// handed out before in this process. The kernel's choice rounded down to
/// even was not checked, and two calls could round to the same port: two
/// tests running at once then bound one (a receiver that could not listen
/// wrote no statistics).
public func freeUDPPort() -> Int {
    let type = Int32(SOCK_DGRAM.rawValue)
    for _ in 0..<500 {
        let even = freePort(type: type) & ~1
        guard even >= 1024, portIsFree(even, type: type), portIsFree(even + 1, type: type) else { continue }
        if claimPort(even) { return even }
    }
    return freePort(type: type) & ~1
}

private let claimedLock = NSLock()
nonisolated(unsafe) private var claimedPorts = Set<Int>()

/// Takes `port` for this process; false when it was handed out before.
private func claimPort(_ port: Int) -> Bool {
    claimedLock.lock()
    defer { claimedLock.unlock() }
    return claimedPorts.insert(port).inserted
}

/// 127.0.0.1:`port` as a socket address.
private func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}

/// Whether `port` on 127.0.0.1 can be bound now.
private func portIsFree(_ port: Int, type: Int32) -> Bool {
    let fd = socket(AF_INET, type, 0)
    defer { close(fd) }
    let address = loopbackAddress(port: port)
    return withUnsafePointer(to: address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// A free TCP port on loopback.
public func freeTCPPort() -> Int { freePort(type: Int32(SOCK_STREAM.rawValue)) }

/// Binds a socket to 127.0.0.1 on a port the kernel chooses, and returns that port.
public func bindLoopback(_ fd: Int32) -> Int {
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
            bind(fd, pointer, length)
            return getsockname(fd, pointer, &length)
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

private func freePort(type: Int32) -> Int {
    let fd = socket(AF_INET, type, 0)
    defer { close(fd) }
    return bindLoopback(fd)
}

/// Sends `count` datagrams of random bytes to a local port: a stranger's traffic.
public func sendGarbage(to port: Int, count: Int, seed: UInt64) {
    var rng = SeededGenerator(seed: seed)
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var address = loopbackAddress(port: port)
    for i in 0..<count {
        var bytes = rng.bytes(Int.random(in: 1...1400, using: &rng))
        // Half of them look like RTP or RTCP (version 2) to get past the first check.
        if i % 2 == 0 { bytes[0] = 0x80 | (bytes[0] & 0x3F) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        usleep(2_000)
    }
}
