public import Foundation

/// Janus (Debian's package) for one test: a configuration the project
/// writes (only the streaming plugin and the HTTP transport, on loopback, a
/// free HTTP port, an RTP port range of its own, an API secret and a
/// streaming admin key), stopped by PID. Given certificates, its API is on
/// a second port over HTTPS too. As a relay, its VideoRoom plugin is on
/// too (`share send --janus-ingest`).
public final class JanusServer: @unchecked Sendable {
    public let directory: TemporaryDirectory
    public let httpPort: Int
    /// The HTTPS API's port, when started with certificates.
    public let httpsPort: Int?
    /// The API secret every request needs; nil when Janus asks for none
    /// (viewers' pages need no secret; the admin key still guards creating).
    public let apiSecret: String?
    public let adminKey = "admin-\(UInt64.random(in: 0...UInt64.max))"
    /// The credentials as `share send --janus-secrets` reads them (mode 0600).
    public let secretsFile: String
    private let server: ChildProcess

    public var url: String { "http://127.0.0.1:\(httpPort)/janus" }
    public var secureURL: String? { httpsPort.map { "https://127.0.0.1:\($0)/janus" } }
    public var pid: pid_t { server.pid }
    public var log: String { server.output }

    public init(certificates: TestCertificates? = nil, openToViewers: Bool = false, relay: Bool = false) throws {
        apiSecret = openToViewers ? nil : "api-\(UInt64.random(in: 0...UInt64.max))"
        directory = try TemporaryDirectory()
        httpPort = freeTCPPort()
        httpsPort = certificates.map { _ in freeTCPPort() }
        // Each server its own 250 UDP ports, below the kernel's ephemeral range.
        let base = 20_000 + Int(UInt32.random(in: 0..<48)) * 250
        let script = ShareBinary.packageRoot.appendingPathComponent("examples/fanout/janus-config.sh").path
        var environment: [String: String] = relay ? ["RELAY": "1"] : [:]
        if let certificates, let httpsPort {
            environment.merge(["HTTPS_PORT": "\(httpsPort)", "CERT_PEM": certificates.serverCertificate, "CERT_KEY": certificates.serverKey]) { $1 }
        }
        let written = try run("/bin/bash", [script, directory.url.path, "\(httpPort)", "\(base)", apiSecret ?? "none", adminKey],
                              environment: environment)
        guard written.status == 0 else { throw TestEnvironmentError("janus-config.sh: \(written.stderr)") }
        secretsFile = directory.path("janus.secrets")
        server = try Self.start(arguments: ["-C", directory.path("janus.jcfg"), "-F", directory.url.path],
                                ready: certificates == nil ? "HTTP webserver started" : "HTTPS webserver started")
    }

    /// Starts Janus and waits for its HTTP transport. Janus starts in a
    /// fraction of a second; once in CI, beside the other tests on two cores,
    /// one printed its version and nothing more for 15 s, so a start that
    /// stalls is stopped and tried once more before the test gives up.
    private static func start(arguments: [String], ready: String) throws -> ChildProcess {
        var stalled: [String] = []
        for _ in 0..<2 {
            let server = try ChildProcess(try which("janus"), arguments)
            let deadline = Date().addingTimeInterval(20)
            while !server.output.contains(ready) && server.isRunning && Date() < deadline {
                usleep(50_000)
            }
            if server.output.contains(ready) { return server }
            guard server.isRunning else { throw TestEnvironmentError("janus exited: \(server.output)") }
            stalled.append(server.output)
            server.stop(signal: SIGKILL)
        }
        throw TestEnvironmentError("janus did not start in 20 s, twice: \(stalled.joined(separator: "\n--- again:\n"))")
    }

    /// CPU seconds Janus has used so far (user + system, from /proc).
    public var cpuSeconds: Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Janus's resident memory now (VmRSS, bytes).
    public var residentBytes: Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return (Int(line.split(separator: " ")[1]) ?? 0) * 1024
    }

    public func stop() { server.stop() }

    deinit { server.stop() }
}

/// A headless Chromium (Debian's chromium-headless-shell) showing
/// examples/fanout/viewer.html: it watches a mountpoint through Janus
/// and logs its getStats() figures once a second, which this reads back.
public final class BrowserViewer: @unchecked Sendable {
    private let browser: ChildProcess
    private let profile: TemporaryDirectory

    /// `trusting`: the base64 SPKI hash of the one server key Chromium
    /// takes without a known CA (an https Janus with a test certificate).
    public convenience init(janus: String, mountpoint: UInt64, pin: String?, apiSecret: String?, trusting keyHash: String? = nil) throws {
        let page = ShareBinary.packageRoot.appendingPathComponent("examples/fanout/viewer.html").path
        var query = "janus=\(janus)&id=\(mountpoint)"
        if let pin { query += "&pin=\(pin)" }
        if let apiSecret { query += "&apisecret=\(apiSecret)" }
        try self.init(opening: "file://\(page)?\(query)", trusting: keyHash)
    }

    /// The viewer page at `url` (served, or a redirect to it).
    public init(opening url: String, trusting keyHash: String? = nil) throws {
        profile = try TemporaryDirectory()
        browser = try ChildProcess(try chromiumPath(), [
            "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--user-data-dir=\(profile.url.path)",
            "--autoplay-policy=no-user-gesture-required", "--disable-features=WebRtcHideLocalIpsWithMdns",
            "--no-first-run", "--mute-audio",
        ] + (keyHash.map { ["--ignore-certificate-errors-spki-list=\($0)"] } ?? []) + [url])
    }

    /// Every statistics line the page logged so far, oldest first.
    public var reports: [[String: Any]] {
        browser.output.components(separatedBy: "share-stats ").dropFirst().compactMap { chunk in
            guard let end = chunk.range(of: "}\"") else { return nil }
            let json = chunk[..<chunk.index(after: end.lowerBound)]
            return (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
        }
    }

    /// The status lines the page logged (connection states, errors).
    public var statuses: [String] {
        browser.output.components(separatedBy: "share-status ").dropFirst().map { String($0.prefix { $0 != "\"" }) }
    }

    /// Waits until a report satisfies `condition` (returned) or `timeout` passes (nil).
    public func waitForReport(timeout: TimeInterval, _ condition: ([String: Any]) -> Bool) -> [String: Any]? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let report = reports.last(where: condition) { return report }
            usleep(100_000)
        }
        return nil
    }

    public var isRunning: Bool { browser.isRunning }
    public var output: String { browser.output }

    public func stop() { browser.stop() }

    deinit { browser.stop() }
}

/// Chromium's own binary: Debian's /usr/bin/chromium-headless-shell is a
/// script that runs it as a child, which stopping the script would orphan.
public func chromiumPath() throws -> String {
    let real = "/usr/lib/chromium/chromium-headless-shell"
    return FileManager.default.isExecutableFile(atPath: real) ? real : try which("chromium-headless-shell")
}

/// The mountpoint and pin in a `share send --janus` "watch:" line (one a server).
public struct ViewerLink: Sendable {
    public let line: String
    /// The Janus API address the line names.
    public let janus: String
    public let mountpoint: UInt64
    public let pin: String

    /// The first server's link.
    public init?(senderOutput: String) {
        guard let first = Self.all(senderOutput: senderOutput).first else { return nil }
        self = first
    }

    private init?(line: Substring) {
        guard line.contains("janus: mountpoint") && line.contains("watch:"),
              let id = line.split(separator: " ").lazy.compactMap({ UInt64($0) }).first,
              let janus = line.split(separator: " at ").dropFirst().first?.split(separator: ";").first,
              let pin = line.split(separator: "&pin=").dropFirst().first.map({ String($0.prefix { $0.isHexDigit }) })
        else { return nil }
        self.line = String(line)
        self.janus = String(janus)
        mountpoint = id
        self.pin = pin
    }

    /// Every server's link, in the order printed.
    public static func all(senderOutput: String) -> [ViewerLink] {
        senderOutput.split(separator: "\n").compactMap { ViewerLink(line: $0) }
    }
}
