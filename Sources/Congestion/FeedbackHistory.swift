public import ShareWire
public import ShareBase

/// One packet as the sender put it on the wire.
public struct SentPacket: Sendable, Equatable {
    public var ssrc: UInt32
    public var sequence: UInt16
    public var size: Int
    public var sendTime: MonotonicTime
    /// A repair (RTX): counted in the rate, not in the loss of the media.
    public var isRetransmission: Bool
    /// Padding of a bandwidth probe: measured by the probe alone.
    public var isProbe: Bool

    public init(ssrc: UInt32, sequence: UInt16, size: Int, sendTime: MonotonicTime, isRetransmission: Bool = false,
                isProbe: Bool = false) {
        self.ssrc = ssrc
        self.sequence = sequence
        self.size = size
        self.sendTime = sendTime
        self.isRetransmission = isRetransmission
        self.isProbe = isProbe
    }
}

/// A sent packet with what the receiver said of it.
public struct PacketResult: Sendable, Equatable {
    public var packet: SentPacket
    public var received: Bool
    /// Arrival on the receiver's clock (an arbitrary origin); nil when lost
    /// or when the receiver had no usable time for it.
    public var arrival: Duration?

    public init(packet: SentPacket, received: Bool, arrival: Duration?) {
        self.packet = packet
        self.received = received
        self.arrival = received ? arrival : nil
    }
}

extension PacketResult {
    /// Arrival on the receiver's clock less the send time on ours (ms):
    /// the clocks' offset is in it, so only differences between packets
    /// mean anything. Nil when no arrival time is known.
    var oneWayDelay: Double? {
        arrival.map { ($0 / .microseconds(1)) / 1000 - Double(packet.sendTime.nanoseconds) / 1e6 }
    }
}

/// What one feedback message taught the sender.
public struct TransportFeedback: Sendable, Equatable {
    /// Packets reported for the first time (or first reported received),
    /// in send order.
    public var results: [PacketResult]
    /// A round trip measured from the newest arrival in the report.
    public var roundTrip: Duration?
    public var feedbackTime: MonotonicTime
}

/// Remembers what was sent and turns RFC 8888 reports into per-packet
/// results, sans-IO. Each packet is reported once as received. A packet the
/// receiver reports missing is only given up as lost once it was sent
/// `lossDelay` ago and no later report has it: on a path that reorders, a
/// packet that is merely late is missing from one report and present in
/// the next. Reports about packets we never sent, or sent too long ago, are
/// ignored, so forged or stale feedback cannot invent traffic.
public struct FeedbackHistory: Sendable {
    private enum State: UInt8 { case unreported, missing, received, lost }

    private struct Entry: Sendable {
        var packet: SentPacket
        var state: State
    }

    /// Packets kept per stream, by sequence number modulo the capacity.
    public let capacity: Int
    private var streams: [UInt32: [Entry?]] = [:]
    private var clock = ReportClock()
    /// Packets reported missing, oldest first, waiting for their verdict.
    private var missing: [(ssrc: UInt32, sequence: UInt16, sent: MonotonicTime)] = []

    public init(capacity: Int = 1024) {
        self.capacity = max(64, capacity)
    }

    public mutating func sent(_ packet: SentPacket) {
        var ring = streams[packet.ssrc] ?? Array(repeating: nil, count: capacity)
        streams[packet.ssrc] = nil
        ring[Int(packet.sequence) % capacity] = Entry(packet: packet, state: .unreported)
        streams[packet.ssrc] = ring
    }

    /// The results a report carries, and the losses now certain. `now` is
    /// when it arrived; `lossDelay` how long after sending a missing packet
    /// is given up (a round trip plus the reordering to allow for).
    public mutating func handle(_ report: CongestionControlFeedback, now: MonotonicTime,
                                lossDelay: Duration = .milliseconds(150)) -> TransportFeedback {
        let reportTime = clock.unwrap(report.reportTimestamp)
        var results: [PacketResult] = []
        var newest: (sent: MonotonicTime, offset: Duration)?
        for block in report.blocks {
            guard var ring = streams[block.ssrc] else { continue }
            streams[block.ssrc] = nil
            for (index, metric) in block.metrics.enumerated() {
                let sequence = block.beginSequence &+ UInt16(truncatingIfNeeded: index)
                let slot = Int(sequence) % capacity
                guard var entry = ring[slot], entry.packet.sequence == sequence,
                      entry.packet.sendTime <= now else { continue }
                if metric.received {
                    guard entry.state != .received else { continue }
                    entry.state = .received
                    var arrival: Duration?
                    if metric.arrivalOffset != CongestionControlFeedback.Metric.offsetUnavailable {
                        let offset = Duration.microseconds(Int64(metric.arrivalOffset) * 1_000_000 / 1024)
                        arrival = reportTime - offset
                        if newest == nil || offset < newest!.offset { newest = (entry.packet.sendTime, offset) }
                    }
                    // Received with no usable time: counted as received, no delay sample.
                    results.append(PacketResult(packet: entry.packet, received: true, arrival: arrival))
                } else {
                    guard entry.state == .unreported else { continue }
                    entry.state = .missing
                    if missing.count < capacity { missing.append((block.ssrc, sequence, entry.packet.sendTime)) }
                }
                ring[slot] = entry
            }
            streams[block.ssrc] = ring
        }
        while let first = missing.first, now.since(first.sent) >= lossDelay {
            missing.removeFirst()
            let slot = Int(first.sequence) % capacity
            guard let entry = streams[first.ssrc]?[slot], entry.packet.sequence == first.sequence,
                  entry.state == .missing else { continue }
            streams[first.ssrc]?[slot]?.state = .lost
            results.append(PacketResult(packet: entry.packet, received: false, arrival: nil))
        }
        results.sort { $0.packet.sendTime < $1.packet.sendTime }
        var roundTrip: Duration?
        if let newest {
            // RFC 8888 §3.1: the offset is how long before the report the
            // packet arrived, so what remains of the wait is the path.
            let elapsed = now.since(newest.sent)
            roundTrip = elapsed > newest.offset ? elapsed - newest.offset : .zero
        }
        return TransportFeedback(results: results, roundTrip: roundTrip, feedbackTime: now)
    }
}

/// Unwraps the 32-bit middle-NTP report timestamps (1/65536 s, wrapping
/// every 18 hours) into a continuous receiver timeline.
struct ReportClock: Sendable {
    private var last: UInt32?
    private var total: Int64 = 0

    mutating func unwrap(_ stamp: UInt32) -> Duration {
        if let last {
            total += Int64(Int32(bitPattern: stamp &- last))
        } else {
            total = Int64(stamp)
        }
        last = stamp
        return .microseconds(total * 1_000_000 / 65536)
    }
}
