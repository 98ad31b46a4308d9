public import Foundation

/// A certificate authority made for one test with `openssl`, and a server
/// certificate it signed for 127.0.0.1 only (no DNS name: an address given
/// as `localhost` does not match it).
public final class TestCertificates: @unchecked Sendable {
    public let directory: TemporaryDirectory
    /// The CA's certificate (PEM): what `--janus-ca` is given.
    public var authority: String { directory.path("ca.pem") }
    public var serverCertificate: String { directory.path("server.pem") }
    public var serverKey: String { directory.path("server.key") }
    /// Base64 SHA-256 of the server key's SubjectPublicKeyInfo: what Chromium's
    /// `--ignore-certificate-errors-spki-list` takes to trust this one key.
    public let serverKeyHash: String

    public init() throws {
        directory = try TemporaryDirectory()
        let d = directory.url.path
        let script = """
            set -euo pipefail
            cd '\(d)'
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2 \
              -subj '/CN=share test CA' -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1
            printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext
            openssl x509 -in server.pem -noout -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64
            """
        let made = try run("/bin/bash", ["-c", script])
        guard made.status == 0 else { throw TestEnvironmentError("openssl: \(made.stderr)") }
        serverKeyHash = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// tcpdump writing what crosses loopback on some TCP ports to a file, for a
/// test that reads the bytes back (is a secret there in clear?).
public final class LoopbackCapture: @unchecked Sendable {
    private let process: ChildProcess
    public let file: String

    public init(ports: [Int], into directory: TemporaryDirectory, name: String) throws {
        file = directory.path("\(name).pcap")
        let filter = ports.map { "tcp port \($0)" }.joined(separator: " or ")
        // -U: each packet written as it comes, so nothing waits in a buffer at the stop.
        process = try ChildProcess(try which("tcpdump"), ["-i", "lo", "-n", "-U", "-s", "0", "-w", file, filter])
        guard process.waitForOutput("listening on", timeout: 10) else {
            throw TestEnvironmentError("tcpdump did not start: \(process.output)")
        }
    }

    /// Stops the capture (by PID) and returns every byte it wrote.
    public func finish() -> [UInt8] {
        process.stop(signal: SIGINT)
        return (try? Array(Data(contentsOf: URL(fileURLWithPath: file)))) ?? []
    }

    /// Whether `needle` occurs anywhere in `bytes`.
    public static func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        guard !pattern.isEmpty, bytes.count >= pattern.count else { return false }
        return (0...(bytes.count - pattern.count)).contains { start in
            bytes[start] == pattern[0] && bytes[start..<(start + pattern.count)].elementsEqual(pattern)
        }
    }
}
