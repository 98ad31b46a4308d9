/// An SRTP failure. `kind` is what callers act on; `libraryStatus` keeps
/// libsrtp2's raw `srtp_err_status_t` where it came from the library.
public struct SRTPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, as callers act on it.
    public enum Kind: Sendable, Equatable {
        /// The authentication tag did not verify: forged, corrupted or wrong key.
        case authenticationFailed
        /// The packet index was already seen (replay window).
        case replayed
        /// The packet index is older than the replay window.
        case tooOld
        /// The packet is too short or too long to be SRTP/SRTCP.
        case badLength
        /// Key material of the wrong size or encoding.
        case badKey
        /// The buffer lacks room after the packet for the trailer.
        case noTailroom
        /// Any other libsrtp2 failure.
        case library
    }

    /// What went wrong.
    public var kind: Kind
    /// libsrtp2's `srtp_err_status_t`, when the failure came from the library.
    public var libraryStatus: Int32?
    /// More about it, for messages.
    public var detail: String

    /// An error of `kind`.
    public init(_ kind: Kind, libraryStatus: Int32? = nil, detail: String = "") {
        self.kind = kind
        self.libraryStatus = libraryStatus
        self.detail = detail
    }

    public var description: String {
        let status = libraryStatus.map { " (libsrtp2 status \($0))" } ?? ""
        return "\(Self.words(kind))\(detail.isEmpty ? "" : ": " + detail)\(status)"
    }

    /// What a person reads for each kind.
    private static func words(_ kind: Kind) -> String {
        switch kind {
        case .authenticationFailed: "SRTP authentication failed (forged, corrupted, or another key)"
        case .replayed: "SRTP packet seen before (replay)"
        case .tooOld: "SRTP packet older than the replay window"
        case .badLength: "SRTP packet of an impossible length"
        case .badKey: "bad SRTP key"
        case .noTailroom: "no room after the packet for its SRTP trailer"
        case .library: "SRTP failure"
        }
    }
}
