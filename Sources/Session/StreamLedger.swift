internal import ShareWire
internal import ShareBase

/// The SSRCs a session's SRTP context keeps a stream for, each with when it
/// was last authenticated; at most `capacity`. libsrtp2 adds a stream (its
/// keys and replay window) for every new SSRC it authenticates, so without
/// a bound a key holder could grow the receiver without end by changing
/// SSRC. Past the bound, the stream heard longest ago goes; one that comes
/// back is added again (and found again past a rollover, with a static key).
struct StreamLedger {
    let capacity: Int
    private var heard: [UInt32: MonotonicTime] = [:]

    init(capacity: Int) {
        self.capacity = capacity
        heard.reserveCapacity(capacity + 1)
    }

    var count: Int { heard.count }

    /// Notes that `ssrc` was authenticated at `now`; returns the SSRC whose
    /// stream should go to stay within the bound (never `ssrc` itself, nor
    /// `keeping`), if any.
    mutating func authenticated(_ ssrc: UInt32, now: MonotonicTime, keeping: UInt32?) -> UInt32? {
        heard[ssrc] = now
        guard heard.count > capacity else { return nil }
        let oldest = heard.filter { $0.key != ssrc && $0.key != keeping }.min { $0.value < $1.value }?.key
        if let oldest { heard[oldest] = nil }
        return oldest
    }

    /// Forgets every stream (the context was replaced).
    mutating func removeAll() { heard.removeAll(keepingCapacity: true) }
}
