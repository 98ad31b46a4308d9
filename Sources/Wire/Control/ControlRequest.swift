/// One request on the sender's control socket (`share ctl`): a word and a
/// newline, at most `ControlRequest.maximumLength` bytes. Local clients are
/// untrusted too: any bytes give a request or a specific refusal, never a
/// trap, and a request split across reads means the same as one in one read.
public enum ControlRequest: Equatable, Sendable {
    case pause
    case resume
    case stop
    case status
    /// `budget SIZE`: a new memory budget (the size as written, e.g. 32M;
    /// digits, a point and letters, at most 16 characters: the sender parses it).
    case budget(String)
    /// Not a command the sender knows (the text, shortened and printable, for the reply).
    case unknown(String)
    /// Longer than a request can be, or not UTF-8.
    case malformed(String)

    public static let maximumLength = 256

    /// The request in `line` (without its newline; surrounding spaces ignored).
    public init(line: ArraySlice<UInt8>) {
        guard let text = String(validating: line, as: UTF8.self) else {
            self = .malformed("not UTF-8")
            return
        }
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        let trimmed = text.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        switch String(trimmed) {
        case "pause": self = .pause
        case "resume": self = .resume
        case "stop": self = .stop
        case "status": self = .status
        case let other where other.hasPrefix("budget ") || other.hasPrefix("budget\t"):
            let size = other.dropFirst("budget".count).drop(while: isSpace)
            if (1...16).contains(size.count), size.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ".") }) {
                self = .budget(String(size))
            } else {
                self = .unknown("budget ?")
            }
        case let other:
            let shown = other.unicodeScalars.prefix(32).map { $0.properties.isAlphabetic || $0 == " " ? Character($0) : "?" }
            self = .unknown(String(shown))
        }
    }
}

/// Collects a control request from the reads of one connection: complete at
/// the first newline, at the end of the stream, or refused once
/// `ControlRequest.maximumLength` bytes came without one. Sans-IO.
public struct ControlRequestReader: Sendable {
    private var line: [UInt8] = []
    public private(set) var request: ControlRequest?

    public init() {}

    /// Takes the next bytes read; returns the request once it is complete.
    public mutating func consume(_ bytes: some Collection<UInt8>) -> ControlRequest? {
        guard request == nil else { return request }
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                request = ControlRequest(line: line[...])
                return request
            }
            guard line.count < ControlRequest.maximumLength else {
                request = .malformed("longer than \(ControlRequest.maximumLength) bytes")
                return request
            }
            line.append(byte)
        }
        return nil
    }

    /// The stream ended (or the client stopped talking): what came is the request.
    public mutating func finish() -> ControlRequest {
        if let request { return request }
        let finished = line.isEmpty ? ControlRequest.malformed("empty") : ControlRequest(line: line[...])
        request = finished
        return finished
    }
}
