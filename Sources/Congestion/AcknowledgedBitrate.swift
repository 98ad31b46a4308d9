internal import ShareWire
public import ShareBase

/// The rate at which the receiver actually got our packets: bytes reported
/// received over a sliding window of arrival time (libwebrtc's acknowledged
/// bitrate estimator, simplified to a window sum), and the highest that
/// rate was over the last `peakWindow`.
public struct AcknowledgedBitrate: Sendable {
    public let window: Duration
    /// How far back `peak` looks (arrival time).
    public let peakWindow: Duration
    private var arrivals: [(at: Duration, size: ByteCount)] = []
    private var inWindow = ByteCount.zero
    /// The rate after each update, for `peak`, oldest first.
    private var rates: [(at: Duration, rate: Bitrate)] = []

    public init(window: Duration = .milliseconds(500), peakWindow: Duration = .seconds(1)) {
        self.window = window
        self.peakWindow = peakWindow
    }

    public mutating func update(_ results: [PacketResult]) {
        for result in results {
            guard let arrival = result.arrival else { continue }
            arrivals.append((arrival, .bytes(result.packet.size)))
            inWindow += .bytes(result.packet.size)
        }
        guard let newest = arrivals.map(\.at).max() else { return }
        while let first = arrivals.first, newest - first.at > window {
            inWindow -= first.size
            arrivals.removeFirst()
        }
        if let rate {
            rates.append((newest, rate))
            while let first = rates.first, newest - first.at > peakWindow { rates.removeFirst() }
        }
    }

    /// The rate, once the window holds enough to say.
    public var rate: Bitrate? {
        guard arrivals.count >= 8, let first = arrivals.first?.at, let last = arrivals.last?.at else { return nil }
        return inWindow / max(last - first, window / 2)
    }

    /// The rate over only the last `span` of arrivals: when a link is
    /// saturated (its queue full and overflowing), packets leave it back
    /// to back, so this is the link's rate, long before the window's
    /// average forgets the faster past. Nil with fewer than four packets
    /// or arrivals spread over less than a fifth of `span`.
    public func recentRate(over span: Duration) -> Bitrate? {
        guard let newest = arrivals.map(\.at).max() else { return nil }
        let recent = arrivals.filter { newest - $0.at <= span }
        guard recent.count >= 4, let first = recent.map(\.at).min(), newest - first >= span / 5 else { return nil }
        let firstSize = recent.first { $0.at == first }!.size
        return (recent.reduce(ByteCount.zero) { $0 + $1.size } - firstSize) / (newest - first)
    }

    /// The highest `rate` of the last `peakWindow`: what the path
    /// has just shown it carries. Screen content comes in bursts (a scroll,
    /// then a pause), so the rate of one window swings with where the
    /// bursts fall; the peak is what the path delivered when the content
    /// asked for it.
    public var peak: Bitrate? { rates.map(\.rate).max() }
}
