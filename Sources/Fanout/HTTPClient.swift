internal import ShareTransport

/// What an HTTP client may send where: plain http only to this machine
/// unless the user allows more, and certificate checks off only there.
/// Checked on the address actually connected to, before a byte is sent.
public struct HTTPTransportRule: Sendable, Equatable {
    /// What an https server's certificate is checked against.
    public var trust: TLSTrust
    /// Plain http to an address that is not loopback (the user said so).
    public var plainHTTPBeyondLoopback: Bool
    /// What the requests carry, named when plain http is refused.
    public var carries: String

    /// The safe default: certificates checked against the system's store, plain http on loopback only.
    public init(trust: TLSTrust = .system, plainHTTPBeyondLoopback: Bool = false, carries: String = "the requests") {
        self.trust = trust
        self.plainHTTPBeyondLoopback = plainHTTPBeyondLoopback
        self.carries = carries
    }

    /// Throws (saying why, without the address) when `url`, reached at an address that is (or is not) loopback, breaks the rule.
    public func check(_ url: HTTPURL, loopback: Bool) throws(HTTPError) {
        guard !loopback else { return }
        if !url.isSecure && !plainHTTPBeyondLoopback {
            throw HTTPError("not on this machine, and over plain http \(carries) would cross the network in clear: "
                            + "give its https:// address, or --janus-allow-plain-http on a network you trust")
        }
        if url.isSecure && trust == .none {
            throw HTTPError("not on this machine: certificate checks cannot be turned off for it "
                            + "(--janus-insecure is for loopback); give its CA with --janus-ca")
        }
    }
}

/// One HTTP/1.1 exchange per connection over TCP, or TLS for https, with a
/// deadline for the whole exchange.
public struct HTTPClient: Sendable {
    /// The deadline for a whole exchange: connect, handshake, request and answer.
    public var timeout: Duration
    /// What may be sent where (checked on the address connected to).
    public var rule: HTTPTransportRule

    public init(timeout: Duration = .seconds(5), rule: HTTPTransportRule = HTTPTransportRule()) {
        self.timeout = timeout
        self.rule = rule
    }

    public func send(_ method: String, _ url: HTTPURL, body: [UInt8]? = nil) throws(HTTPError) -> HTTPResponse {
        let deadline = ContinuousClock.now + timeout
        func remaining() throws(HTTPError) -> Duration {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw HTTPError("no complete answer within \(timeout)") }
            return left
        }
        do {
            let address = try SocketAddress(host: url.host, port: url.port)
            try rule.check(url, loopback: address.isLoopback)
            let tcp = try TCPStream(connectingTo: address, timeout: try remaining())
            let stream: any ByteStream = url.isSecure
                ? try TLSStream(over: tcp, host: url.host, trust: rule.trust, timeout: try remaining())
                : PlainStream(tcp: tcp)
            try stream.write(httpRequest(method: method, url: url, body: body), timeout: try remaining())
            var parser = HTTPResponseParser()
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            while true {
                let count = try stream.read(into: &buffer, timeout: try remaining())
                if count == 0 { return try parser.finish() }
                if let response = try parser.feed(buffer[0..<count]) { return response }
            }
        } catch let error as TransportError {
            throw HTTPError("\(url): \(error)")
        } catch let error as HTTPError {
            throw HTTPError("\(url): \(error)")
        } catch {
            throw HTTPError("\(url): \(error)")
        }
    }
}
