public import ShareWire
public import ShareBase

/// The receiver's half of congestion control, sans-IO: notes when each RTP
/// packet of each stream arrived and, every `interval`, writes an RFC 8888
/// congestion control feedback message covering what arrived since the last
/// one, reaching back to any packet that arrived after a report had it
/// missing (so the sender learns it was late, not lost).
public struct FeedbackReporter: Sendable {
    public var interval: Duration = .milliseconds(50)
    /// Streams tracked at most (oldest forgotten first).
    public static let maxStreams = 8
    static let ringSize = 2048
    /// Packets reported per stream and message at most.
    static let maxPerReport = 1024

    private struct Stream: Sendable {
        var unwrapper = SequenceUnwrapper()
        var arrivals: [(sequence: Int64, at: MonotonicTime)?] = Array(repeating: nil, count: FeedbackReporter.ringSize)
        var first: Int64
        var highest: Int64
        var nextToReport: Int64
        var dirty = true
        var lastArrival: MonotonicTime
        /// The oldest packet that arrived after a report had it missing.
        var oldestLate: Int64?
    }

    private var streams: [UInt32: Stream] = [:]
    private var nextReport: MonotonicTime?
    public private(set) var reportsWritten = 0

    public init() {}

    public mutating func received(ssrc: UInt32, sequence: UInt16, now: MonotonicTime) {
        var stream: Stream
        if let existing = streams.removeValue(forKey: ssrc) {
            stream = existing
        } else {
            if streams.count >= Self.maxStreams, let stale = streams.min(by: { $0.value.lastArrival < $1.value.lastArrival }) {
                streams[stale.key] = nil
            }
            var fresh = Stream(first: 0, highest: 0, nextToReport: 0, lastArrival: now)
            let first = fresh.unwrapper.unwrap(sequence)
            fresh.first = first
            fresh.highest = first
            fresh.nextToReport = first
            stream = fresh
            stream.arrivals[Self.slot(first)] = (first, now)
            streams[ssrc] = stream
            return
        }
        let extended = stream.unwrapper.unwrap(sequence)
        stream.arrivals[Self.slot(extended)] = (extended, now)
        if extended < stream.nextToReport { stream.oldestLate = min(stream.oldestLate ?? extended, extended) }
        stream.first = min(stream.first, extended)
        stream.highest = max(stream.highest, extended)
        stream.dirty = true
        stream.lastArrival = now
        streams[ssrc] = stream
    }

    /// When the next report is due, if anything is waiting to be reported.
    public var deadline: MonotonicTime? {
        streams.values.contains(where: \.dirty) ? (nextReport ?? .zero) : nil
    }

    /// A report when one is due and something new arrived since the last.
    public mutating func poll(now: MonotonicTime, senderSSRC: UInt32) -> CongestionControlFeedback? {
        if let due = nextReport, now < due { return nil }
        guard streams.values.contains(where: \.dirty) else { return nil }
        nextReport = now + interval
        let reportTime = Self.ntpMiddle(now)
        var blocks: [CongestionControlFeedback.Block] = []
        for ssrc in streams.keys.sorted() {
            guard var stream = streams[ssrc], stream.dirty else { continue }
            var begin = min(stream.nextToReport, stream.oldestLate ?? stream.nextToReport)
            begin = max(begin, stream.highest - Int64(Self.ringSize) + 1, stream.first)
            let end = stream.highest
            if end - begin + 1 > Int64(Self.maxPerReport) { begin = end - Int64(Self.maxPerReport) + 1 }
            guard end >= begin else { continue }
            var metrics: [CongestionControlFeedback.Metric] = []
            metrics.reserveCapacity(Int(end - begin + 1))
            for sequence in begin...end {
                if let arrival = stream.arrivals[Self.slot(sequence)], arrival.sequence == sequence {
                    // RFC 8888 §3.1: offset before the report timestamp, 1/1024 s.
                    let offset = Double(now.since(arrival.at).nanoseconds) * 1024 / 1e9
                    let ato = UInt16(min(offset.rounded(), Double(CongestionControlFeedback.Metric.offsetMaximum)))
                    metrics.append(.init(received: true, ecn: 0, arrivalOffset: ato))
                } else {
                    metrics.append(.lost)
                }
            }
            blocks.append(.init(ssrc: ssrc, beginSequence: UInt16(truncatingIfNeeded: begin), metrics: metrics))
            stream.nextToReport = end + 1
            stream.oldestLate = nil
            stream.dirty = false
            streams[ssrc] = stream
        }
        guard !blocks.isEmpty else { return nil }
        reportsWritten += 1
        return CongestionControlFeedback(senderSSRC: senderSSRC, blocks: blocks, reportTimestamp: reportTime)
    }

    static func slot(_ sequence: Int64) -> Int {
        Int((sequence % Int64(ringSize) + Int64(ringSize)) % Int64(ringSize))
    }

    /// The middle 32 bits of `now` in NTP format (16.16 seconds). Only
    /// differences matter to the sender, so the monotonic clock serves.
    static func ntpMiddle(_ now: MonotonicTime) -> UInt32 {
        let seconds = now.nanoseconds / 1_000_000_000
        let fraction = (now.nanoseconds % 1_000_000_000) << 16 / 1_000_000_000
        return UInt32(truncatingIfNeeded: seconds << 16 | fraction)
    }
}

/// The receiver's round trip to its sender through RFC 3611 extended
/// reports: a receiver reference time (RRTR) goes out with each receiver
/// report; the sender echoes it in a DLRR block with how long it held it.
public struct RoundTripProbe: Sendable {
    private var sent: [(middle: UInt32, at: MonotonicTime)] = []
    public private(set) var smoothed: Duration?
    public private(set) var latest: Duration?

    public init() {}

    /// The timestamp to put in the next RRTR block, remembered.
    public mutating func reference(now: MonotonicTime) -> NTPTimestamp {
        let seconds = now.nanoseconds / 1_000_000_000
        let fraction = (now.nanoseconds % 1_000_000_000) << 32 / 1_000_000_000
        let stamp = NTPTimestamp(rawValue: seconds << 32 | fraction)
        sent.append((stamp.middle32, now))
        if sent.count > 8 { sent.removeFirst() }
        return stamp
    }

    /// Takes a DLRR echo; returns the round trip it measures.
    @discardableResult
    public mutating func handle(_ echo: ExtendedReport.DelaySinceLastReceiverReport, now: MonotonicTime) -> Duration? {
        guard echo.lastReceiverReport != 0, let match = sent.first(where: { $0.middle == echo.lastReceiverReport }) else {
            return nil
        }
        let elapsed = now.since(match.at)
        let held = Duration.nanoseconds(Int64(echo.delay) * 1_000_000_000 / 65536)
        // An echo that claims to have been held longer than it was away is absurd.
        guard held <= elapsed else { return nil }
        let sample = min(elapsed - held, .seconds(10))
        latest = sample
        smoothed = smoothed.map { ($0 * 7 + sample) / 8 } ?? sample
        return sample
    }
}
