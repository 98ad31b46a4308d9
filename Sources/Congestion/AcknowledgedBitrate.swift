internal import ShareWire

/// The rate at which the receiver actually got our packets: bytes reported
/// received over a sliding window of arrival time (libwebrtc's acknowledged
/// bitrate estimator, simplified to a window sum).
public struct AcknowledgedBitrate: Sendable {
    public let window: Duration
    private var arrivals: [(at: Duration, bytes: Int)] = []
    private var bytesInWindow = 0

    public init(window: Duration = .milliseconds(500)) {
        self.window = window
    }

    public mutating func update(_ results: [PacketResult]) {
        for result in results {
            guard let arrival = result.arrival else { continue }
            arrivals.append((arrival, result.packet.size))
            bytesInWindow += result.packet.size
        }
        guard let newest = arrivals.map(\.at).max() else { return }
        while let first = arrivals.first, newest - first.at > window {
            bytesInWindow -= first.bytes
            arrivals.removeFirst()
        }
    }

    /// Bits per second, once the window holds enough to say.
    public var bitsPerSecond: Double? {
        guard arrivals.count >= 8, let first = arrivals.first?.at, let last = arrivals.last?.at else { return nil }
        let span = max(last - first, window / 2)
        return Double(bytesInWindow * 8) / span.seconds
    }
}
