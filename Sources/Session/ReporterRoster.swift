/// The receivers that have reported on a stream (by their RTCP SSRC), so
/// one that reports for the first time, and may have joined mid-stream,
/// can be told apart. Holds the last `capacity` reporters: a flood of
/// forged-looking SSRCs cannot grow it (and only authenticated reports
/// reach it).
struct ReporterRoster {
    private var known: [UInt32] = []
    private let capacity: Int
    /// The next new reporter is the session's own receiver, which got a
    /// keyframe when the session started.
    private var sessionPeerExpected = false

    init(capacity: Int = 32) {
        self.capacity = capacity
        known.reserveCapacity(capacity)
    }

    mutating func expectSessionPeer() {
        sessionPeerExpected = true
        known.removeAll(keepingCapacity: true)
    }

    /// Records `ssrc`; true when it is a receiver not heard before that
    /// is not the session's expected peer.
    mutating func isNew(_ ssrc: UInt32) -> Bool {
        guard !known.contains(ssrc) else { return false }
        if known.count == capacity { known.removeFirst() }
        known.append(ssrc)
        if sessionPeerExpected {
            sessionPeerExpected = false
            return false
        }
        return true
    }
}
