public import ArgumentParser

/// One Janus to feed: its API address and its secrets file.
public struct JanusTarget: Equatable, Sendable {
    public var url: String
    public var secrets: String?

    public var isSecure: Bool { Self.scheme(of: url) == "https" }

    /// "http" or "https" for an address of either, nil otherwise.
    static func scheme(of url: String) -> String? {
        let lowered = url.lowercased()
        return ["https", "http"].first { lowered.hasPrefix($0 + "://") }
    }

    public init(url: String, secrets: String?) {
        self.url = url
        self.secrets = secrets
    }

    /// A `--janus-list` file: one `URL [SECRETS_FILE]` a line; blank lines
    /// and `#` comments are skipped. Servers without a secrets file of their
    /// own take `secrets`.
    public static func parseList(_ text: String, secrets: String?) throws(ValidationError) -> [JanusTarget] {
        var targets: [JanusTarget] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            guard !words.isEmpty else { continue }
            guard words.count <= 2, scheme(of: words[0]) != nil else {
                throw ValidationError("--janus-list line \(number + 1): expected `URL [SECRETS_FILE]`, with an http:// or https:// URL")
            }
            targets.append(JanusTarget(url: words[0], secrets: words.count == 2 ? words[1] : secrets))
        }
        return targets
    }
}

/// `share send`'s options for Janus: one server or several, fed by one
/// encode, and how their API is reached.
public struct JanusOptions: ParsableArguments {
    @Option(help: "Fan out through Janus: create a streaming mountpoint at this API address (https://HOST:8089/janus, its HTTPS transport; plain http://HOST:8088/janus on this machine only), send to it, remove it on exit; prints the viewer link. Give it again for more servers: one encode, the packets copied to each. The positional host is then not given.")
    public var janus: [String] = []
    @Option(help: "Janus servers to feed, one a line: `URL [SECRETS_FILE]` (# starts a comment); with or instead of --janus.")
    public var janusList: String?
    @Option(help: "Relay through this Janus (its VideoRoom plugin): the stream goes to it once, as a remote publisher, and its RTP forwarders feed every --janus server, so the sender's upload does not grow with them. Each --janus address must be reachable from it as written.")
    public var janusIngest: String?
    @Option(help: "The --janus-ingest server's secrets file (default: --janus-secrets).")
    public var janusIngestSecrets: String?
    @Option(help: "Janus's secrets, mode 0600: `api_secret = ...` and/or `admin_key = ...` lines (Janus's own names); for every server without a file of its own.")
    public var janusSecrets: String?
    @Option(help: "Check Janus's https certificate against this CA (PEM) instead of the system's trust store.")
    public var janusCa: String?
    @Flag(help: "A lab on this machine only: take any certificate from an https Janus on loopback (warns every run; refused for any other address).")
    public var janusInsecure = false
    @Flag(help: "Allow a plain http:// Janus that is not on this machine: this run's SRTP key, Janus's secrets and the viewers' pin then cross the network in clear.")
    public var janusAllowPlainHttp = false

    public init() {}

    /// Whether the stream goes to Janus at all.
    public var isOn: Bool { !janus.isEmpty || janusList != nil || janusIngest != nil }

    /// Every server to feed: `--janus` ones first, then the list's.
    public func targets() throws(ValidationError) -> [JanusTarget] {
        var targets = janus.map { JanusTarget(url: $0, secrets: janusSecrets) }
        if let janusList {
            guard let text = readTextFile(janusList) else { throw ValidationError("--janus-list \(janusList): no such readable file") }
            let listed = try JanusTarget.parseList(text, secrets: janusSecrets)
            guard !listed.isEmpty else { throw ValidationError("--janus-list \(janusList) names no server") }
            targets += listed
        }
        return targets
    }

    /// The Janus that relays to the others (`--janus-ingest`), if any.
    public var ingest: JanusTarget? {
        janusIngest.map { JanusTarget(url: $0, secrets: janusIngestSecrets ?? janusSecrets) }
    }

    /// --janus-ca, --janus-insecure and --janus-allow-plain-http: each for
    /// the kind of address it is about, and not two ways of trusting at once.
    public func validate() throws {
        let named = [(janusCa != nil, "--janus-ca"), (janusInsecure, "--janus-insecure"), (janusAllowPlainHttp, "--janus-allow-plain-http")]
            .filter(\.0).map(\.1)
        let edges = try targets()
        if let ingest {
            guard JanusTarget.scheme(of: ingest.url) != nil else {
                throw ValidationError("--janus-ingest \(ingest.url): give an http:// or https:// address")
            }
            if edges.isEmpty { throw ValidationError("--janus-ingest relays to the --janus servers: give at least one") }
        } else if janusIngestSecrets != nil {
            throw ValidationError("--janus-ingest-secrets is about the --janus-ingest server: give --janus-ingest too")
        }
        // The ingest's API carries what the others' do: the same rules.
        let targets = (ingest.map { [$0] } ?? []) + edges
        guard !targets.isEmpty else {
            if let first = named.first { throw ValidationError("\(first) is about the --janus address: give --janus too") }
            return
        }
        if janusCa != nil && janusInsecure { throw ValidationError("--janus-ca checks the certificate and --janus-insecure does not: give one") }
        if !targets.contains(where: \.isSecure), let tls = named.first(where: { $0 != "--janus-allow-plain-http" }) {
            throw ValidationError("\(tls) is about an https:// Janus; \(targets[0].url) is plain http")
        }
        if janusAllowPlainHttp, let secure = targets.first(where: \.isSecure), targets.allSatisfy(\.isSecure) {
            throw ValidationError("--janus-allow-plain-http is about an http:// Janus; \(secure.url) is https")
        }
        if let janusCa, !fileIsReadable(janusCa) { throw ValidationError("--janus-ca \(janusCa): no such readable file") }
        var seen: Set<String> = []
        for target in edges where !seen.insert(target.url).inserted {
            throw ValidationError("\(target.url) is given twice: each Janus once")
        }
    }
}
