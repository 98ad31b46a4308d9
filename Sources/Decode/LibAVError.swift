internal import CLibAV

/// A libav* failure with its raw AVERROR code and libav's own message.
public struct LibAVError: Error, Equatable, Sendable, CustomStringConvertible {
    public var operation: String
    public var code: Int32
    public var message: String

    public var description: String { "\(operation): \(message) (AVERROR \(code))" }

    /// The one funnel from libav status codes to Swift errors.
    static func check(_ code: Int32, _ operation: String) throws(LibAVError) {
        guard code < 0 else { return }
        throw LibAVError(operation: operation, code: code, message: describe(code))
    }

    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Keeps libav quiet unless something is wrong.
enum LibAVLogging {
    static let configured: Void = { av_log_set_level(AV_LOG_ERROR) }()
}
