public import ShareBase

/// One bandwidth probe: a short burst of padding sent at a rate above the
/// target, to learn whether the path now carries that rate (libwebrtc's
/// probe cluster). The burst lasts `duration` at `rate`, in at least
/// `minimumPackets` packets no larger than `largestPacket` bytes on the
/// wire, so that even a fast probe spans several of the feedback's
/// 1/1024 s arrival ticks.
public struct ProbeCluster: Sendable, Equatable {
    public static let duration: Duration = .milliseconds(15)
    public static let minimumPackets = 5
    /// A padding-only RTP packet: a 12-byte header, at most 255 bytes of
    /// padding (its count is one octet, RFC 3550 §5.1), SRTP's 10-byte tag.
    public static let largestPacket = 12 + 255 + 10
    public static let smallestPacket = 12 + 1 + 10

    /// How fast the burst is sent.
    public let rate: Bitrate
    /// Packets in the burst.
    public let packets: Int
    /// The size of each on the wire.
    public let packetSize: Int

    /// A cluster at `rate`, cut into padding packets.
    public init(rate: Bitrate) {
        self.rate = rate
        let bytes = rate.bytes(in: Self.duration)
        let packets = max(Self.minimumPackets, Int((bytes / Double(Self.largestPacket)).rounded(.up)))
        self.packets = packets
        packetSize = min(max(Int(bytes / Double(packets)), Self.smallestPacket), Self.largestPacket)
    }

    /// How far apart the packets leave: one packet's time at `rate`.
    public var spacing: Duration {
        ByteCount(bytes: packetSize) / rate
    }
}

/// What the receiver's feedback said of one probe cluster, sans-IO: it
/// collects the cluster's packets as they leave and as they are reported,
/// and once all are reported gives the rate the path carried them at.
struct ProbeMeasurement: Sendable {
    /// The outcome of a cluster.
    enum Outcome: Sendable, Equatable {
        /// The receiver got the burst as fast as it left: the path carries
        /// at least `rate` (the lower of the rates sent and received).
        case carried(Bitrate)
        /// The burst arrived spread out (or too much of it was lost): the
        /// path is slower than the probe.
        case fellShort(Bitrate?)
        /// No verdict (feedback lost, or too few packets to tell).
        case unknown
    }

    /// The receive rate must be this share of the send rate to count as
    /// carried (libwebrtc's 0.9): a link a little slower than the probe
    /// spreads a short burst only a little, and the feedback's 1 ms ticks
    /// blur that further.
    static let keptPace = 0.9
    /// Arrival spans shorter than this are below the feedback's resolution.
    static let shortestSpan: Duration = .milliseconds(3)

    let cluster: ProbeCluster
    private var packets: [(ssrc: UInt32, sequence: UInt16, size: Int, sent: MonotonicTime, arrival: Duration?, reported: Bool)] = []

    init(_ cluster: ProbeCluster) {
        self.cluster = cluster
        packets.reserveCapacity(cluster.packets)
    }

    /// When the last packet left, once one has.
    var lastSent: MonotonicTime? { packets.last?.sent }
    var allSent: Bool { packets.count >= cluster.packets }

    mutating func sent(_ packet: SentPacket) {
        guard !allSent else { return }
        packets.append((packet.ssrc, packet.sequence, packet.size, packet.sendTime, nil, false))
    }

    /// Bytes of media and repairs that left while the cluster did.
    private var bytesBeside = 0

    /// A packet not of the cluster, as it leaves: counted while the cluster leaves.
    mutating func sentBeside(_ packet: SentPacket) {
        guard !packets.isEmpty, !allSent else { return }
        bytesBeside += packet.size
    }

    /// The rate of what left beside the cluster, over the cluster's own span.
    var rateBeside: Bitrate {
        guard let first = packets.first?.sent, let last = packets.last?.sent, last > first else { return .zero }
        return ByteCount(bytes: bytesBeside) / last.since(first)
    }

    /// Takes the results for this cluster's packets; the outcome once every
    /// packet is reported.
    mutating func update(_ results: [PacketResult]) -> Outcome? {
        for result in results {
            guard let index = packets.firstIndex(where: {
                $0.ssrc == result.packet.ssrc && $0.sequence == result.packet.sequence
            }) else { continue }
            packets[index].reported = true
            packets[index].arrival = result.arrival
        }
        guard allSent, packets.allSatisfy(\.reported) else { return nil }
        return outcome
    }

    private var outcome: Outcome {
        let received = packets.filter { $0.arrival != nil }
        // A burst that overflowed a queue: the path did not carry it.
        guard Double(received.count) >= Double(packets.count) * 0.8, received.count >= 3 else { return .fellShort(nil) }
        let sendSpan = received.last!.sent.since(received.first!.sent)
        let arrivals = received.map { $0.arrival! }
        let arrivalSpan = arrivals.max()! - arrivals.min()!
        guard sendSpan >= Self.shortestSpan || arrivalSpan >= Self.shortestSpan else { return .unknown }
        // Each rate leaves out one end packet: n packets span n - 1 gaps.
        let sendRate = ByteCount(bytes: received.dropLast().reduce(0) { $0 + $1.size }) / max(sendSpan, .microseconds(1))
        guard arrivalSpan >= Self.shortestSpan else {
            // Arrived closer together than the feedback can tell: at least as fast as sent.
            return .carried(sendRate)
        }
        let receiveRate = ByteCount(bytes: received.dropFirst().reduce(0) { $0 + $1.size }) / arrivalSpan
        guard receiveRate >= sendRate * Self.keptPace else { return .fellShort(receiveRate) }
        return .carried(min(sendRate, receiveRate))
    }
}
