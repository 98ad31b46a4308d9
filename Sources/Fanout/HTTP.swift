internal import ShareWire

/// Why an HTTP exchange failed.
public struct HTTPError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// An http:// address: host, port and path (no TLS here: the sender talks
/// to an SFU's API on its own network; see the README).
public struct HTTPURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The path with its query, starting with "/".
    public var path: String

    public init(host: String, port: Int, path: String) {
        self.host = host
        self.port = port
        self.path = path
    }

    public init(_ text: String) throws(HTTPError) {
        if text.lowercased().hasPrefix("https://") {
            throw HTTPError("\(text): https is not supported; give Janus's plain http API address (port 8088 by default)")
        }
        guard text.lowercased().hasPrefix("http://") else { throw HTTPError("\(text) is not an http:// address") }
        let rest = text.dropFirst("http://".count)
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
                port = 80
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
            port = 80
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw HTTPError("\(text): bad host or port") }
        guard !path.contains(where: { $0 == " " || $0.isNewline }) else { throw HTTPError("\(text): spaces in the path") }
    }

    /// The same server with another path.
    public func with(path: String) -> HTTPURL { HTTPURL(host: host, port: port, path: path) }

    public var description: String {
        "http://" + (host.contains(":") ? "[\(host)]" : host) + (port == 80 ? "" : ":\(port)") + path
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

/// Reads an HTTP/1.1 response from bytes as they arrive, sans-IO: the body
/// by Content-Length, chunked transfer coding, or up to the close. Bounded:
/// headers up to 16 KiB, a body up to `maxBody`.
public struct HTTPResponseParser: Sendable {
    public let maxBody: Int
    private var buffer: [UInt8] = []
    private var status: Int?
    private var bodyStart = 0
    private var length: Int?
    private var chunked = false

    public init(maxBody: Int = 1 << 20) { self.maxBody = maxBody }

    /// Takes the next bytes read; returns the response once it is complete.
    public mutating func feed(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> HTTPResponse? {
        buffer.append(contentsOf: bytes)
        if status == nil {
            guard let end = Self.find([13, 10, 13, 10], in: buffer[...]) else {
                if buffer.count > 16 << 10 { throw HTTPError("response headers over 16 KiB") }
                return nil
            }
            try readHead(buffer[..<end])
            bodyStart = end + 4
        }
        return try complete(closed: false)
    }

    /// The peer closed the connection: the response as it stands, if that
    /// is a whole one.
    public mutating func finish() throws(HTTPError) -> HTTPResponse {
        guard status != nil else { throw HTTPError("the connection closed before a response") }
        guard let response = try complete(closed: true) else { throw HTTPError("the connection closed mid-response") }
        return response
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

    private func complete(closed: Bool) throws(HTTPError) -> HTTPResponse? {
        guard let status else { return nil }
        let body = buffer[bodyStart...]
        if chunked {
            return try Self.dechunk(body).map { HTTPResponse(status: status, body: $0) }
        }
        if let length {
            return body.count >= length ? HTTPResponse(status: status, body: Array(body.prefix(length))) : nil
        }
        if body.count > maxBody { throw HTTPError("response body over \(maxBody) bytes") }
        return closed ? HTTPResponse(status: status, body: Array(body)) : nil
    }

    /// The body of a chunked message once its last chunk is in, else nil.
    private static func dechunk(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> [UInt8]? {
        var body: [UInt8] = []
        var cursor = bytes.startIndex
        while true {
            guard let lineEnd = find([13, 10], in: bytes[cursor...]) else { return nil }
            let sizeText = String(decoding: bytes[cursor..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(), radix: 16), size >= 0, size <= 1 << 20 else {
                throw HTTPError("bad chunk size")
            }
            let start = lineEnd + 2
            if size == 0 { return body }
            guard bytes.endIndex - start >= size + 2 else { return nil }
            body.append(contentsOf: bytes[start..<(start + size)])
            if body.count > 1 << 20 { throw HTTPError("chunked body over 1 MiB") }
            cursor = start + size + 2
        }
    }

    private static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index + needle.count <= haystack.endIndex {
            if haystack[index] == needle[0] && haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
