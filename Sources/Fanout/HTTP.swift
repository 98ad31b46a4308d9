internal import ShareWire

/// Why an HTTP exchange failed.
public struct HTTPError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// An http:// or https:// address: host, port and path.
public struct HTTPURL: Sendable, Equatable, CustomStringConvertible {
    /// https: the exchange runs over TLS, the server's certificate checked.
    public var isSecure: Bool
    public var host: String
    public var port: Int
    /// The path with its query, starting with "/".
    public var path: String

    public init(host: String, port: Int, path: String, isSecure: Bool = false) {
        self.isSecure = isSecure
        self.host = host
        self.port = port
        self.path = path
    }

    public init(_ text: String) throws(HTTPError) {
        let lowered = text.lowercased()
        if lowered.hasPrefix("https://") {
            isSecure = true
        } else if lowered.hasPrefix("http://") {
            isSecure = false
        } else {
            throw HTTPError("\(text) is not an http:// or https:// address")
        }
        let defaultPort = isSecure ? 443 : 80
        let rest = text.dropFirst(isSecure ? "https://".count : "http://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        path = slash == rest.endIndex ? "/" : String(rest[slash...])
        guard !authority.isEmpty, !authority.contains("@") else { throw HTTPError("\(text): no host (or credentials in the address)") }
        // [v6]:port, host:port or host.
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw HTTPError("\(text): unclosed [") }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.isEmpty {
                port = defaultPort
            } else {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else { throw HTTPError("\(text): bad port") }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let number = Int(authority[authority.index(after: colon)...]) else { throw HTTPError("\(text): bad port") }
            port = number
        } else {
            host = String(authority)
            port = defaultPort
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw HTTPError("\(text): bad host or port") }
        guard !path.contains(where: { $0 == " " || $0.isNewline }) else { throw HTTPError("\(text): spaces in the path") }
    }

    /// The same server with another path.
    public func with(path: String) -> HTTPURL { HTTPURL(host: host, port: port, path: path, isSecure: isSecure) }

    public var description: String {
        (isSecure ? "https://" : "http://") + (host.contains(":") ? "[\(host)]" : host)
            + (port == (isSecure ? 443 : 80) ? "" : ":\(port)") + path
    }
}

/// A response: status and body.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// An HTTP/1.1 request as bytes (one per connection: Connection: close).
public func httpRequest(method: String, url: HTTPURL, body: [UInt8]?, contentType: String = "application/json") -> [UInt8] {
    var head = "\(method) \(url.path) HTTP/1.1\r\nHost: \(url.host.contains(":") ? "[\(url.host)]" : url.host):\(url.port)\r\n"
    head += "Connection: close\r\nAccept: application/json\r\nUser-Agent: share\r\n"
    if let body { head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n" }
    head += "\r\n"
    return Array(head.utf8) + (body ?? [])
}

/// Reads an HTTP/1.1 response from bytes as they arrive, sans-IO and
/// incrementally: each byte is looked at once, however the server splits
/// what it sends. The body by Content-Length, chunked transfer coding, or up
/// to the close. Everything is bounded: the head and the trailers at 16 KiB,
/// a chunk-size line at 1 KiB, the body at `maxBody` however it is framed.
public struct HTTPResponseParser: Sendable {
    public let maxBody: Int
    static let maximumHead = 16 << 10
    static let maximumChunkLine = 1 << 10

    private enum Stage: Sendable {
        /// The status line and headers, up to the empty line.
        case head
        /// A body of known length, or one that ends at the close.
        case body(remaining: Int?)
        /// A chunk-size line (with any extensions), up to its CRLF.
        case chunkSize
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data.
        case chunkEnd
        /// Trailer lines after the last chunk, up to the empty line.
        case trailers
        case done
    }

    private var stage = Stage.head
    /// The line or head being read (bounded by the stage's limit).
    private var pending: [UInt8] = []
    private var status: Int?
    private var body: [UInt8] = []
    private var length: Int?
    private var chunked = false

    public init(maxBody: Int = 1 << 20) { self.maxBody = maxBody }

    /// Takes the next bytes read; returns the response once it is complete.
    public mutating func feed(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> HTTPResponse? {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            switch stage {
            case .head:
                index = try take(line: bytes, from: index, limit: Self.maximumHead, what: "response headers", untilEmptyLine: true)
            case .body(let remaining):
                let count = min(bytes.endIndex - index, remaining ?? Int.max)
                try append(bytes[index..<(index + count)])
                index += count
                if let remaining {
                    stage = remaining - count == 0 ? .done : .body(remaining: remaining - count)
                }
            case .chunkSize:
                index = try take(line: bytes, from: index, limit: Self.maximumChunkLine, what: "a chunk-size line", untilEmptyLine: false)
            case .chunkData(let remaining):
                let count = min(bytes.endIndex - index, remaining)
                try append(bytes[index..<(index + count)])
                index += count
                stage = remaining - count == 0 ? .chunkEnd : .chunkData(remaining: remaining - count)
            case .chunkEnd:
                pending.append(bytes[index])
                index += 1
                if pending.count == 2 {
                    guard pending == [13, 10] else { throw HTTPError("a chunk's data is not followed by CRLF") }
                    pending.removeAll()
                    stage = .chunkSize
                }
            case .trailers:
                index = try take(line: bytes, from: index, limit: Self.maximumHead, what: "trailers", untilEmptyLine: true)
            case .done:
                index = bytes.endIndex
            }
        }
        if case .body(remaining: 0) = stage { stage = .done }
        if case .done = stage, let status { return HTTPResponse(status: status, body: body) }
        return nil
    }

    /// The peer closed the connection: the response as it stands, if that
    /// is a whole one.
    public mutating func finish() throws(HTTPError) -> HTTPResponse {
        guard let status else { throw HTTPError("the connection closed before a response") }
        switch stage {
        case .done, .body(remaining: nil): return HTTPResponse(status: status, body: body)
        default: throw HTTPError("the connection closed mid-response")
        }
    }

    /// Reads bytes into `pending` up to a CRLF (a head: up to an empty
    /// line), then acts on what was read; returns where it stopped.
    private mutating func take(line bytes: ArraySlice<UInt8>, from start: Int, limit: Int, what: String,
                               untilEmptyLine: Bool) throws(HTTPError) -> Int {
        var index = start
        while index < bytes.endIndex {
            pending.append(bytes[index])
            index += 1
            guard pending.count <= limit else { throw HTTPError("\(what) over \(limit) bytes") }
            guard pending.count >= 2, pending[pending.count - 2] == 13, pending[pending.count - 1] == 10 else { continue }
            if untilEmptyLine {
                // The block ends at an empty line: CRLF alone, or CRLFCRLF.
                guard pending.count == 2 || pending.suffix(4).elementsEqual([13, 10, 13, 10]) else { continue }
            }
            let line = pending.dropLast(2)
            pending.removeAll(keepingCapacity: true)
            try finished(line: Array(line))
            return index
        }
        return index
    }

    /// What a complete head, chunk-size line or trailer block means.
    private mutating func finished(line: [UInt8]) throws(HTTPError) {
        switch stage {
        case .head:
            try readHead(line[...])
            if chunked {
                stage = .chunkSize
            } else if let length {
                stage = length == 0 ? .done : .body(remaining: length)
            } else {
                stage = .body(remaining: nil)
            }
        case .chunkSize:
            let text = String(decoding: line, as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(text.trimmingCharacters(), radix: 16), size >= 0 else { throw HTTPError("bad chunk size") }
            guard size <= maxBody - body.count else { throw HTTPError("chunked body over \(maxBody) bytes") }
            stage = size == 0 ? .trailers : .chunkData(remaining: size)
        case .trailers:
            stage = .done
        default:
            break
        }
    }

    private mutating func append(_ bytes: ArraySlice<UInt8>) throws(HTTPError) {
        guard body.count + bytes.count <= maxBody else { throw HTTPError("response body over \(maxBody) bytes") }
        body.append(contentsOf: bytes)
    }

    private mutating func readHead(_ head: ArraySlice<UInt8>) throws(HTTPError) {
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first?.split(separator: " ") ?? []
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let code = Int(statusLine[1]), (100...599).contains(code)
        else { throw HTTPError("not an HTTP/1.x response") }
        status = code
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters()
            if name == "content-length" {
                guard let count = Int(value), count >= 0 else { throw HTTPError("bad Content-Length \(value)") }
                guard count <= maxBody else { throw HTTPError("response body of \(count) bytes, over \(maxBody)") }
                length = count
            } else if name == "transfer-encoding", value.lowercased().contains("chunked") {
                chunked = true
            }
        }
    }
}
