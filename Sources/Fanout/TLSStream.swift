internal import CTLS
internal import ShareTransport

/// Where the certificate of an https server is checked against.
public enum TLSTrust: Sendable, Equatable {
    /// The system's trust store.
    case system
    /// Only the CA certificates in this PEM file (a private CA).
    case authority(file: String)
    /// Nothing: any certificate is taken. Loopback only (`HTTPTransportRule`).
    case none
}

/// Something an HTTP exchange is written to and read from.
protocol ByteStream {
    func write(_ bytes: [UInt8], timeout: Duration) throws(HTTPError)
    /// Bytes read into `buffer`; 0 when the server closed the connection.
    func read(into buffer: inout [UInt8], timeout: Duration) throws(HTTPError) -> Int
}

/// A plain TCP connection as an HTTP exchange's stream.
struct PlainStream: ByteStream {
    let tcp: TCPStream

    func write(_ bytes: [UInt8], timeout: Duration) throws(HTTPError) {
        do { try tcp.write(bytes, timeout: timeout) } catch { throw HTTPError("\(error)") }
    }

    func read(into buffer: inout [UInt8], timeout: Duration) throws(HTTPError) -> Int {
        do { return try tcp.read(into: &buffer, timeout: timeout) } catch { throw HTTPError("\(error)") }
    }
}

/// TLS over a connected TCP stream (OpenSSL through the CTLS shim). The
/// handshake checks the certificate against `trust` and the host name (or
/// address) the user gave; a failure says which check failed. Every call
/// waits on the socket at most until its timeout, as TCPStream does.
final class TLSStream: ByteStream {
    private let tcp: TCPStream
    private let tls: OpaquePointer

    init(over tcp: TCPStream, host: String, trust: TLSTrust, timeout: Duration) throws(HTTPError) {
        self.tcp = tcp
        var error = [CChar](repeating: 0, count: 512)
        let (mode, file): (Int32, String?) = switch trust {
        case .system: (Int32(SHARE_TLS_TRUST_SYSTEM), nil)
        case .authority(let file): (Int32(SHARE_TLS_TRUST_FILE), file)
        case .none: (Int32(SHARE_TLS_TRUST_NONE), nil)
        }
        guard let opened = share_tls_open(tcp.fileDescriptor, host, mode, file, &error, error.count) else {
            throw HTTPError(Self.text(error))
        }
        // The handshake runs before `tls` is stored: a failure frees it here,
        // a success hands it to deinit.
        do {
            _ = try Self.retry(tcp, timeout: timeout, what: "TLS handshake") { error throws(HTTPError) in
                Int(share_tls_handshake(opened, &error, error.count))
            }
        } catch {
            share_tls_free(opened)
            throw HTTPError(error.description + Self.hint(error.description, trust: trust))
        }
        tls = opened
    }

    deinit { share_tls_free(tls) }

    func write(_ bytes: [UInt8], timeout: Duration) throws(HTTPError) {
        var offset = 0
        while offset < bytes.count {
            let start = offset
            offset += try Self.retry(tcp, timeout: timeout, what: "TLS write") { error throws(HTTPError) in
                bytes.withUnsafeBytes { raw in
                    share_tls_write(tls, raw.baseAddress! + start, raw.count - start, &error, error.count)
                }
            }
        }
    }

    func read(into buffer: inout [UInt8], timeout: Duration) throws(HTTPError) -> Int {
        try Self.retry(tcp, timeout: timeout, what: "TLS read") { error throws(HTTPError) in
            buffer.withUnsafeMutableBytes { raw in share_tls_read(tls, raw.baseAddress, raw.count, &error, error.count) }
        }
    }

    /// Calls `step` until it gives a count (or 0, done), waiting on the socket
    /// whichever way it asks, within `timeout` in all.
    private static func retry(_ tcp: TCPStream, timeout: Duration, what: String,
                              _ step: (inout [CChar]) throws(HTTPError) -> Int) throws(HTTPError) -> Int {
        let deadline = ContinuousClock.now + timeout
        var error = [CChar](repeating: 0, count: 512)
        while true {
            let result = try step(&error)
            if result >= 0 { return result }
            guard result == Int(SHARE_TLS_WANT_READ) || result == Int(SHARE_TLS_WANT_WRITE) else { throw HTTPError(text(error)) }
            let left = deadline - ContinuousClock.now
            let ready: Bool
            do { ready = left > .zero ? try tcp.wait(readable: result == Int(SHARE_TLS_WANT_READ), timeout: left) : false } catch {
                throw HTTPError("\(what): \(error)")
            }
            guard ready else { throw HTTPError("\(what): no answer within \(timeout)") }
        }
    }

    /// What the user can do about a failed handshake.
    private static func hint(_ failure: String, trust: TLSTrust) -> String {
        if failure.contains("wrong version number") || failure.contains("packet length too long") {
            return " (the server does not speak TLS there: is it the https port?)"
        }
        guard failure.contains("certificate is not accepted") else { return "" }
        if failure.contains("hostname mismatch") || failure.contains("IP address mismatch") {
            return " (the certificate is for another name: give the address it names)"
        }
        switch trust {
        case .system: return " (checked against the system's trust store; for a private CA give --janus-ca)"
        case .authority(let file): return " (checked against \(file) only)"
        case .none: return ""
        }
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
