internal import ShareTransport

/// One HTTP/1.1 exchange per connection over plain TCP, with a deadline
/// for the whole exchange.
public struct HTTPClient: Sendable {
    public var timeout: Duration

    public init(timeout: Duration = .seconds(5)) { self.timeout = timeout }

    public func send(_ method: String, _ url: HTTPURL, body: [UInt8]? = nil) throws(HTTPError) -> HTTPResponse {
        let deadline = ContinuousClock.now + timeout
        func remaining() throws(HTTPError) -> Duration {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw HTTPError("\(url): no complete answer within \(timeout)") }
            return left
        }
        do {
            let address = try SocketAddress(host: url.host, port: url.port)
            let stream = try TCPStream(connectingTo: address, timeout: try remaining())
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
            throw error
        } catch {
            throw HTTPError("\(url): \(error)")
        }
    }
}
