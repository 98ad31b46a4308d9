import ShareFanout
import Testing

@Suite("HTTP/1.1 for API calls (sans-IO parser, addresses)")
struct HTTPTests {
    private func parse(_ text: String, pieces: Int) throws -> HTTPResponse? {
        var parser = HTTPResponseParser()
        let bytes = Array(text.utf8)
        let size = max(1, bytes.count / pieces)
        var start = 0
        while start < bytes.count {
            if let response = try parser.feed(bytes[start..<min(bytes.count, start + size)]) { return response }
            start += size
        }
        return try parser.finish()
    }

    @Test(arguments: [1, 3, 17, 200])
    func aResponseReadInAnyNumberOfPiecesIsTheSame(pieces: Int) throws {
        let sized = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"janus\":\"x\"}"
        #expect(try parse(sized, pieces: pieces) == HTTPResponse(status: 200, body: Array("{\"janus\":\"x\"}".utf8)))
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3;x=y\r\n1}\n\r\n0\r\n\r\n"
        #expect(try parse(chunked, pieces: pieces) == HTTPResponse(status: 200, body: Array("{\"a\":1}\n".utf8)))
        let closed = "HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nno such path"
        #expect(try parse(closed, pieces: pieces) == HTTPResponse(status: 404, body: Array("no such path".utf8)))
    }

    @Test func whatIsNoHTTPResponseIsRefused() {
        var parser = HTTPResponseParser()
        #expect(throws: HTTPError.self) { _ = try parser.feed(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)[...]) }
        var big = HTTPResponseParser(maxBody: 100)
        #expect(throws: HTTPError.self) { _ = try big.feed(Array("HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n".utf8)[...]) }
        var endless = HTTPResponseParser()
        #expect(throws: HTTPError.self) { _ = try endless.feed(Array(repeating: UInt8(ascii: "a"), count: 20_000)[...]) }
        var cut = HTTPResponseParser()
        #expect(throws: HTTPError.self) {
            _ = try cut.feed(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8)[...])
            _ = try cut.finish()
        }
        var badChunk = HTTPResponseParser()
        #expect(throws: HTTPError.self) { _ = try badChunk.feed(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8)[...]) }
    }

    /// Everything a server sends is bounded however it frames it: a chunk-size
    /// line that never ends, chunks that add up past the body's limit,
    /// trailers without end, chunk data not closed by CRLF. Before, a
    /// chunk-size line without CRLF grew without end.
    @Test func chunkedResponsesAreBoundedWhateverTheServerSends() throws {
        let head = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var line = HTTPResponseParser()
        let endless = #expect(throws: HTTPError.self) { _ = try line.feed((head + Array(repeating: UInt8(ascii: "1"), count: 5000))[...]) }
        #expect(endless?.description.contains("chunk-size line") == true)
        var many = HTTPResponseParser(maxBody: 1000)
        let chunk = Array("64\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 100) + [13, 10]
        #expect(throws: HTTPError.self) { _ = try many.feed((head + Array((0..<11).map { _ in chunk }.joined()))[...]) }
        var trailers = HTTPResponseParser()
        #expect(throws: HTTPError.self) {
            _ = try trailers.feed((head + Array("0\r\n".utf8) + Array(repeating: UInt8(ascii: "t"), count: 20_000))[...])
        }
        var unclosed = HTTPResponseParser()
        #expect(throws: HTTPError.self) { _ = try unclosed.feed((head + Array("2\r\nabXY".utf8))[...]) }
        var withTrailers = HTTPResponseParser()
        #expect(try withTrailers.feed((head + Array("2\r\nab\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\n".utf8))[...])
                == HTTPResponse(status: 200, body: Array("ab".utf8)))
    }

    /// A server that drips its answer a byte at a time costs each byte once:
    /// a 512 KiB chunked body fed byte by byte is read in one pass (before,
    /// every read parsed the whole body again, quadratic in its size).
    @Test func aDrippedResponseIsReadInOnePass() throws {
        let payload = (0..<(512 << 10)).map { UInt8(truncatingIfNeeded: $0 % 251) }
        var text = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for start in stride(from: 0, to: payload.count, by: 1000) {
            let part = payload[start..<min(payload.count, start + 1000)]
            text += Array(String(part.count, radix: 16).utf8) + [13, 10] + part + [13, 10]
        }
        text += Array("0\r\n\r\n".utf8)
        var parser = HTTPResponseParser()
        var response: HTTPResponse?
        for index in text.indices {
            if let done = try parser.feed(text[index...index]) { response = done }
        }
        #expect(response?.body == payload)
    }

    @Test func addresses() throws {
        #expect(try HTTPURL("http://127.0.0.1:8088/janus") == HTTPURL(host: "127.0.0.1", port: 8088, path: "/janus"))
        #expect(try HTTPURL("http://janus.example") == HTTPURL(host: "janus.example", port: 80, path: "/"))
        #expect(try HTTPURL("http://[::1]:8088/janus/") == HTTPURL(host: "::1", port: 8088, path: "/janus/"))
        #expect(try HTTPURL("http://[::1]:8088/janus").description == "http://[::1]:8088/janus")
        #expect(try HTTPURL("https://janus.example/janus") == HTTPURL(host: "janus.example", port: 443, path: "/janus", isSecure: true))
        #expect(try HTTPURL("HTTPS://[::1]:8089/janus") == HTTPURL(host: "::1", port: 8089, path: "/janus", isSecure: true))
        #expect(try HTTPURL("https://h:8089/janus").with(path: "/janus/1").description == "https://h:8089/janus/1")
        #expect(try HTTPURL("https://h:443/").description == "https://h/")
        for bad in ["ftp://x", "https://", "httpss://x", "http://", "http://host:99999/", "http://user:pw@host/", "http://host:x/", "http://[::1/"] {
            #expect(throws: HTTPError.self, "\(bad)") { try HTTPURL(bad) }
        }
        let request = String(decoding: httpRequest(method: "POST", url: try HTTPURL("http://h:1/a?b=c"), body: Array("{}".utf8)), as: UTF8.self)
        #expect(request.hasPrefix("POST /a?b=c HTTP/1.1\r\nHost: h:1\r\n"))
        #expect(request.contains("Content-Length: 2\r\n") && request.hasSuffix("\r\n\r\n{}"))
    }
}
