import Foundation
import TestSupport
import Testing

/// `share send --janus https://...`: Janus's HTTPS transport with a
/// certificate from a CA made for the test, a headless Chromium watching
/// through it, and tcpdump on loopback showing what crossed in clear.
@Suite("Janus over HTTPS: certificates checked, no secret in clear", .serialized, .alone)
struct JanusHTTPSEndToEndTests {
    private func number(_ report: [String: Any]?, _ key: String) -> Double {
        (report?[key] as? NSNumber)?.doubleValue ?? -1
    }

    /// Everything secret in a run: Janus's two secrets, the SRTP key (as
    /// base64, and as JSON writes it with "/" escaped) and the viewers' pin.
    private func secrets(_ janus: JanusServer, key: String, pin: String?) throws -> [String: String] {
        var all = ["api_secret": try #require(janus.apiSecret), "admin_key": janus.adminKey, "SRTP key": key,
                   "SRTP key (JSON)": key.replacingOccurrences(of: "/", with: "\\/")]
        if let pin { all["pin"] = pin }
        return all
    }

    @Test func anHTTPSJanusIsFedAndWatchedWithNoSecretInClearOnTheWire() throws {
        let certificates = try TestCertificates()
        let janus = try JanusServer(certificates: certificates)
        let secureURL = try #require(janus.secureURL)
        let dir = try TemporaryDirectory()
        let screen = try EndToEndTests.Screen()
        let keyFile = try ShareBinary.keyFile(in: dir)
        let key = try ShareBinary.inlineKey(keyFile)
        let common = ["--janus-secrets", janus.secretsFile, "--srtp-key-file", keyFile, "--display", screen.name, "--audio-tone", "440"]

        // The control: the same capture over Janus's plain http API sees the
        // secrets, so the capture below would see them if they were there.
        let plainCapture = try LoopbackCapture(ports: [janus.httpPort], into: dir, name: "plain")
        let plain = try ShareBinary.run(["send", "--janus", janus.url, "--duration", "1"] + common, timeout: 30)
        let plainBytes = plainCapture.finish()
        #expect(plain.status == 0, "\(plain.output)")
        let apiSecret = try #require(janus.apiSecret)
        #expect(LoopbackCapture.contains(plainBytes, "POST /janus") && LoopbackCapture.contains(plainBytes, apiSecret),
                "the plain capture holds \(plainBytes.count) bytes without the API calls")

        let capture = try LoopbackCapture(ports: [try #require(janus.httpsPort)], into: dir, name: "https")
        let sender = try ShareBinary.start(["send", "--janus", secureURL, "--janus-ca", certificates.authority, "--duration", "12",
                                            "--stats-json", dir.path("send.json")] + common)
        #expect(sender.waitForOutput("watch:", timeout: 10), "\(sender.output)")
        let link = try #require(ViewerLink(senderOutput: sender.output), "\(sender.output)")
        #expect(link.line.contains("janus=\(secureURL)&"), "\(link.line)")
        let viewer = try BrowserViewer(janus: secureURL, mountpoint: link.mountpoint, pin: link.pin, apiSecret: janus.apiSecret,
                                       trusting: certificates.serverKeyHash)
        let start = viewer.waitForReport(timeout: 10) { number($0, "framesDecoded") > 0 }
        #expect(start != nil, "no picture through the https Janus: \(viewer.statuses) \(janus.log.suffix(2000))")
        let later = viewer.waitForReport(timeout: 10) { number($0, "elapsedMs") >= number(start, "elapsedMs") + 5000 }
        let result = sender.wait(timeout: 20)
        viewer.stop()
        let wire = capture.finish()
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("mountpoint \(link.mountpoint) at \(secureURL) removed"), "\(result.output)")
        // Five seconds of picture: at least 95% of 30 fps decoded, nothing lost.
        let seconds = (number(later, "elapsedMs") - number(start, "elapsedMs")) / 1000
        #expect(seconds >= 4.5 && number(later, "framesDecoded") - number(start, "framesDecoded") >= 0.95 * 30 * seconds,
                "\(String(describing: later))")
        #expect(number(later, "videoPacketsLost") == 0)

        // The API calls crossed loopback (create, and remove at the end), all in TLS.
        #expect(wire.count > 4000 && !LoopbackCapture.contains(wire, "POST /janus"), "\(wire.count) bytes captured")
        for (name, secret) in try secrets(janus, key: key, pin: link.pin) {
            #expect(!LoopbackCapture.contains(wire, secret), "the \(name) crossed loopback in clear")
        }
        // Nor are they in what the sender printed or wrote: the pin only in the viewer link.
        let stats = try String(contentsOfFile: dir.path("send.json"), encoding: .utf8)
        let printed = result.output.split(separator: "\n").filter { $0 != link.line }.joined(separator: "\n")
        for (name, secret) in try secrets(janus, key: key, pin: link.pin) {
            #expect(!stats.contains(secret) && !printed.contains(secret), "the \(name) in --stats-json or the output")
        }
    }

    /// This machine's first address that is not loopback (the test hosts
    /// have one), where a Janus on another machine would be reached.
    private func ownAddress() throws -> String {
        let words = try run("/bin/hostname", ["-I"]).stdout.split(separator: " ").map(String.init)
        return words.first { $0.contains(".") && !$0.hasPrefix("127.") } ?? "198.51.100.1"
    }

    @Test func untrustedCertificatesWrongNamesAndPlainHTTPAcrossANetworkAreRefused() throws {
        let certificates = try TestCertificates()
        let janus = try JanusServer(certificates: certificates)
        let port = try #require(janus.httpsPort)
        let screen = try EndToEndTests.Screen()
        func send(_ arguments: [String]) throws -> (status: Int32, output: String) {
            try ShareBinary.run(["send"] + arguments + ["--janus-secrets", janus.secretsFile, "--display", screen.name,
                                                       "--audio", "none", "--duration", "1"], timeout: 30)
        }
        // The system's trust store does not know the test CA.
        let untrusted = try send(["--janus", "https://127.0.0.1:\(port)/janus"])
        #expect(untrusted.status == 1 && !untrusted.output.contains("watch:"), "\(untrusted.output)")
        #expect(untrusted.output.contains("certificate is not accepted: unable to get local issuer certificate")
                && untrusted.output.contains("--janus-ca"), "\(untrusted.output)")
        // The certificate names 127.0.0.1; the same Janus as localhost is someone else.
        let renamed = try send(["--janus", "https://localhost:\(port)/janus", "--janus-ca", certificates.authority])
        #expect(renamed.status == 1 && renamed.output.contains("hostname mismatch"), "\(renamed.output)")
        // Plain http to an address of another interface: refused, naming what would cross.
        let address = try ownAddress()
        let plain = try send(["--janus", "http://\(address):\(janus.httpPort)/janus"])
        #expect(plain.status == 1 && plain.output.contains("would cross the network in clear")
                && plain.output.contains("SRTP master key") && plain.output.contains("--janus-allow-plain-http"), "\(plain.output)")
        // No certificate checks for another machine, and a warning on loopback every run.
        let unchecked = try send(["--janus", "https://\(address):\(port)/janus", "--janus-insecure"])
        #expect(unchecked.status == 1 && unchecked.output.contains("certificate checks cannot be turned off"), "\(unchecked.output)")
        let lab = try send(["--janus", "https://127.0.0.1:\(port)/janus", "--janus-insecure"])
        #expect(lab.status == 0 && lab.output.contains("warning: --janus-insecure") && lab.output.contains("removed"), "\(lab.output)")
        // Options that contradict the address are usage errors, before anything starts.
        let mixed = try send(["--janus", janus.url, "--janus-ca", certificates.authority])
        #expect(mixed.status == 64 && mixed.output.contains("is about an https:// Janus"), "\(mixed.output)")
        let missing = try send(["--janus", "https://127.0.0.1:\(port)/janus", "--janus-ca", "/nonexistent/ca.pem"])
        #expect(missing.status == 64 && missing.output.contains("no such readable file"), "\(missing.output)")
    }
}
