import Foundation
import ShareFanout
import TestSupport
import Testing

/// https for an SFU's API: the rule on what may leave the machine in clear
/// (sans-IO), and the TLS client against a real TLS server (`openssl
/// s_server` with a certificate from a CA made for the test).
@Suite("HTTPS: what may cross a network, and certificates checked", .serialized)
struct TLSTests {
    private let plain = try! HTTPURL("http://192.0.2.7:8088/janus")
    private let secure = try! HTTPURL("https://192.0.2.7:8089/janus")

    @Test func plainHTTPAndUncheckedCertificatesStayOnThisMachine() throws {
        let rule = HTTPTransportRule(carries: "the key")
        // Loopback: anything goes, since nothing leaves the machine.
        try rule.check(plain, loopback: true)
        try HTTPTransportRule(trust: .none).check(secure, loopback: true)
        // Beyond it, plain http is refused, naming what would cross in clear...
        let refused = #expect(throws: HTTPError.self) { try rule.check(plain, loopback: false) }
        #expect(refused?.description.contains("the key would cross the network in clear") == true)
        #expect(refused?.description.contains("--janus-allow-plain-http") == true)
        // ...unless the user allowed it; https with checked certificates is fine.
        try HTTPTransportRule(plainHTTPBeyondLoopback: true).check(plain, loopback: false)
        try rule.check(secure, loopback: false)
        try HTTPTransportRule(trust: .authority(file: "ca.pem")).check(secure, loopback: false)
        // Certificate checks cannot be turned off for another machine, allowed or not.
        let unchecked = #expect(throws: HTTPError.self) {
            try HTTPTransportRule(trust: .none, plainHTTPBeyondLoopback: true).check(secure, loopback: false)
        }
        #expect(unchecked?.description.contains("--janus-ca") == true)
    }

    /// `openssl s_server -www` on a free loopback port: answers any GET
    /// with an HTTP status page, over TLS with the test CA's certificate.
    private func tlsServer(_ certificates: TestCertificates) throws -> (ChildProcess, Int) {
        let port = freeTCPPort()
        let server = try ChildProcess(try which("openssl"), ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificates.serverCertificate,
                                                          "-key", certificates.serverKey, "-www", "-quiet"])
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? TCPProbe.connect(port: port)) == true { return (server, port) }
            usleep(20_000)
        }
        throw TestEnvironmentError("openssl s_server did not listen: \(server.output)")
    }

    @Test func theServersCertificateIsCheckedAgainstTheTrustGivenAndTheAddress() throws {
        let certificates = try TestCertificates()
        let (server, port) = try tlsServer(certificates)
        defer { server.stop() }
        let url = try HTTPURL("https://127.0.0.1:\(port)/")
        // The test CA given: the exchange runs, and what comes back is HTTP.
        let trusted = HTTPClient(rule: HTTPTransportRule(trust: .authority(file: certificates.authority)))
        #expect(try trusted.send("GET", url).status == 200)
        // The system's store does not know the test CA: refused, saying so and what to do.
        let system = #expect(throws: HTTPError.self) { _ = try HTTPClient().send("GET", url) }
        #expect(system?.description.contains("certificate is not accepted: unable to get local issuer certificate") == true,
                "\(String(describing: system))")
        #expect(system?.description.contains("--janus-ca") == true)
        // The certificate names 127.0.0.1 only: the same server as localhost is refused.
        let renamed = #expect(throws: HTTPError.self) { _ = try trusted.send("GET", try HTTPURL("https://localhost:\(port)/")) }
        #expect(renamed?.description.contains("hostname mismatch") == true, "\(String(describing: renamed))")
        // Another CA's certificate file is no trust in this one.
        let other = try TestCertificates()
        let stranger = HTTPClient(rule: HTTPTransportRule(trust: .authority(file: other.authority)))
        #expect(throws: HTTPError.self) { _ = try stranger.send("GET", url) }
        // With checks off (loopback only), anything is taken.
        #expect(try HTTPClient(rule: HTTPTransportRule(trust: .none)).send("GET", url).status == 200)
        // A CA file that is not one says so.
        let garbage = certificates.directory.path("garbage.pem")
        try "not a certificate".write(toFile: garbage, atomically: true, encoding: .utf8)
        let unreadable = #expect(throws: HTTPError.self) {
            _ = try HTTPClient(rule: HTTPTransportRule(trust: .authority(file: garbage))).send("GET", url)
        }
        #expect(unreadable?.description.contains("cannot read the CA file") == true, "\(String(describing: unreadable))")
    }

    /// A server that takes the connection and never answers the handshake
    /// costs the deadline, not forever.
    @Test func aServerThatNeverAnswersTheHandshakeCostsOnlyTheDeadline() throws {
        let listener = try TCPProbe.listen()
        defer { close(listener.descriptor) }
        let client = HTTPClient(timeout: .milliseconds(500))
        let start = Date()
        let silent = #expect(throws: HTTPError.self) { _ = try client.send("GET", try HTTPURL("https://127.0.0.1:\(listener.port)/")) }
        #expect(silent?.description.contains("TLS handshake: no answer within") == true, "\(String(describing: silent))")
        #expect(Date().timeIntervalSince(start) < 3)
    }
}

/// Plain TCP for the tests above: is a port listening, and a listener
/// that the kernel completes connections to but nobody ever answers.
enum TCPProbe {
    static func connect(port: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: in_port_t(UInt16(port).bigEndian),
                                  sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    static func listen() throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0,
                                  sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && Glibc.listen(fd, 4) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestEnvironmentError("listen: errno \(errno)") }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
