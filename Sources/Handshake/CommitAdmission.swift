internal import ShareWire
internal import ShareBase

/// Who may start a handshake, sans-IO: the responder's first step, apart
/// from the handshake itself. A commit without a valid cookie gets one and
/// holds nothing (a forged source never sees it); one that echoes it is
/// admitted within limits per source host and in all. A made-up cookie
/// past the limit in all costs no HMAC.
struct CommitAdmission {
    enum Verdict: Equatable {
        /// Answer with this cookie; keep nothing.
        case cookie([UInt8])
        case admitted
        /// Over a limit: not answered.
        case limited
    }

    /// The limits, read from the responder's configuration at each commit.
    struct Limits {
        var perSecond: Double
        var burst: Double
        var perSourcePerSecond: Double
    }

    private let jar = CookieJar()
    private var all: RateLimiter
    private var perSource: [[UInt8]: RateLimiter] = [:]
    /// Source hosts whose limits are kept at once; past it they start over
    /// (the limit in all still holds).
    static var trackedSources: Int { 256 }

    init(_ limits: Limits) {
        all = RateLimiter(rate: limits.perSecond, burst: limits.burst)
    }

    /// What to do with a commit (`id`, `cookie`) from a source whose address
    /// and host are given as bytes.
    mutating func consider(id: UInt64, cookie: [UInt8], address: [UInt8], host: [UInt8], limits: Limits,
                           now: MonotonicTime) -> Verdict {
        let echoed = cookie != HandshakeMessage.noCookie
        // A commit with a cookie is checked only while one more could be
        // kept in all: a flood of made-up cookies costs no HMAC past the limit.
        if echoed, !all.hasToken(now: now) { return .limited }
        guard echoed, jar.isValid(cookie, address: address, id: id, now: now) else {
            // Always answered: a cookie costs one HMAC, about what receiving
            // the commit cost, and is smaller than it. A limit here would let
            // a flood from forged addresses starve the genuine senders.
            return .cookie(jar.cookie(address: address, id: id, now: now))
        }
        if perSource[host] == nil, perSource.count >= Self.trackedSources { perSource.removeAll(keepingCapacity: true) }
        var source = perSource[host] ?? RateLimiter(rate: limits.perSourcePerSecond, burst: limits.perSourcePerSecond)
        defer { perSource[host] = source }
        all.rate = limits.perSecond
        all.burst = limits.burst
        return source.take(now: now) && all.take(now: now) ? .admitted : .limited
    }
}
