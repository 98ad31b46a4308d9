internal import ShareWire
public import ShareBase
#if canImport(Glibc)
internal import Glibc
#endif

/// The additive-increase / multiplicative-decrease rate controller of Google
/// Congestion Control (draft-ietf-rmcat-gcc-02 §5.5): overuse cuts the rate
/// to 85% of what the receiver acknowledged; normal use grows it by 8% a
/// second far from the last congestion point and by about a packet per
/// round trip near it; underuse holds it while queues drain.
public struct RateControl: Sendable {
    public enum Phase: Sendable, Equatable { case hold, increase, decrease }

    static let beta = 0.85
    /// Growth per second far from the last congestion point (GCC's 8%,
    /// raised so a lifted cap is found again within seconds).
    static let growth = 1.12
    public let minimum: Bitrate
    public let maximum: Bitrate
    public private(set) var bitrate: Bitrate
    public private(set) var phase: Phase = .increase
    private var lastUpdate: MonotonicTime?
    private var lastDecrease: MonotonicTime?
    /// Average and variance of the acknowledged rate at overuse, the
    /// estimate of the link capacity: in kbit/s, the unit the variance's
    /// bounds are set in (libwebrtc's).
    private var linkCapacity: Double?
    private var linkVariance = 0.4

    public init(start: Bitrate, minimum: Bitrate, maximum: Bitrate) {
        self.minimum = minimum
        self.maximum = max(maximum, minimum)
        bitrate = min(max(start, minimum), self.maximum)
    }

    /// `bottleneck` is the narrowest link's measured rate, when known: a
    /// cut after overuse goes to 85% of it or of what was acknowledged,
    /// whichever is more, so a burst after a quiet spell (little
    /// acknowledged) is not taken for a path that carries little.
    /// `carried` is the most the receiver acknowledged lately (defaults to
    /// `acknowledged`): growth stops at 1.5x it.
    public mutating func update(_ usage: BandwidthUsage, acknowledged: Bitrate?, carried: Bitrate? = nil,
                                bottleneck: Bitrate? = nil, roundTrip: Duration, now: MonotonicTime) -> Bitrate {
        let elapsed = lastUpdate.map { min(now.since($0).seconds, 1) } ?? 0
        lastUpdate = now
        switch usage {
        case .overusing:
            phase = .decrease
        case .underusing:
            phase = .hold
        case .normal:
            if phase == .hold || phase == .decrease { phase = .increase }
        }
        switch phase {
        case .hold:
            break
        case .increase:
            // libwebrtc's link capacity: forgotten when more gets through than it allows.
            if let ack = acknowledged, let capacity = linkCapacity, ack.kilobitsPerSecond > capacity + band(capacity) {
                linkCapacity = nil
            }
            var next: Bitrate
            if linkCapacity != nil {
                // Near convergence: about one packet (1200 B) per response time.
                let response = roundTrip.seconds + 0.1
                next = bitrate + .bitsPerSecond(max(1000, 1200 * 8 * elapsed / response))
            } else {
                next = bitrate * pow(Self.growth, elapsed) + .bitsPerSecond(1000 * elapsed)
            }
            // Never more than 1.5x what gets through (libwebrtc's rule): an
            // encoder that sends less than its target (a still screen,
            // simple content) would otherwise let the estimate float into
            // territory never tried. What gets through is the most the path
            // carried lately, not the latest window's: content in bursts
            // leaves some windows nearly empty, and growth lost in them is
            // lost for good (a lifted cap was found again only when a
            // burst happened to fill a window).
            if let ack = carried ?? acknowledged { next = min(next, 1.5 * ack + .bitsPerSecond(10_000)) }
            bitrate = max(bitrate, next)
        case .decrease:
            if let last = lastDecrease, now.since(last) < roundTrip + .milliseconds(100) {
                phase = .hold
                break
            }
            lastDecrease = now
            let base = max(acknowledged ?? bitrate, bottleneck ?? .zero)
            let next = Self.beta * base
            bitrate = min(bitrate, next)
            if let ack = acknowledged {
                let kbps = ack.kilobitsPerSecond
                // Far below the old capacity: the path changed, start afresh.
                if let capacity = linkCapacity, kbps < capacity - band(capacity) { linkCapacity = nil }
                if let capacity = linkCapacity {
                    let error = capacity - kbps
                    linkVariance = min(max(0.95 * linkVariance + 0.05 * error * error / max(capacity, 1), 0.4), 2.5)
                    linkCapacity = 0.95 * capacity + 0.05 * kbps
                } else {
                    linkCapacity = kbps
                }
            }
            phase = .hold
        }
        bitrate = min(max(bitrate, minimum), maximum)
        return bitrate
    }

    /// Forgets the link capacity (the path changed): growth is
    /// multiplicative again.
    public mutating func forgetCapacity() {
        linkCapacity = nil
    }

    /// Three standard deviations of the capacity estimate (kbit/s).
    private func band(_ capacity: Double) -> Double { 3 * (capacity * linkVariance).squareRoot() }

    /// Raises the rate to what a probe showed the path carries: the old
    /// capacity no longer holds, so growth is multiplicative again.
    public mutating func raise(to carried: Bitrate) {
        bitrate = min(max(bitrate, carried), maximum)
        linkCapacity = nil
    }

    /// Lowers the rate from outside (a feedback timeout).
    public mutating func reduce(to limit: Bitrate) {
        bitrate = min(max(min(bitrate, limit), minimum), maximum)
        phase = .hold
    }
}

/// The loss-based part of Google Congestion Control
/// (draft-ietf-rmcat-gcc-02 §6): above 10% loss the rate drops by half the
/// loss (above 25% when no queue shows), below 2% it may grow 5% per
/// update; in between it holds.
public struct LossBasedEstimator: Sendable {
    public let minimum: Bitrate
    public let maximum: Bitrate
    public private(set) var bitrate: Bitrate
    public private(set) var lossFraction = 0.0
    private var received = 0
    private var lost = 0
    private var lastChange: MonotonicTime?

    public init(start: Bitrate, minimum: Bitrate, maximum: Bitrate) {
        self.minimum = minimum
        self.maximum = max(maximum, minimum)
        bitrate = min(max(start, minimum), self.maximum)
    }

    /// Loss above which the rate is cut even with no queue on the path.
    public static let unqueuedLoss = 0.25

    /// Counts reported packets; decides once enough (20) have been reported
    /// and at most once per round trip plus 100 ms for decreases. `queued`
    /// says the delay detector sees a queue (growing, or standing).
    public mutating func update(_ results: [PacketResult], roundTrip: Duration, now: MonotonicTime,
                                queued: Bool = true) -> Bitrate {
        for result in results where !result.packet.isRetransmission {
            if result.received { received += 1 } else { lost += 1 }
        }
        // A late arrival of a packet first reported lost counts as both: the
        // loss stays counted, which errs on the side of caution.
        let total = received + lost
        guard total >= 20 else { return bitrate }
        lossFraction = Double(lost) / Double(total)
        received = 0
        lost = 0
        let since = lastChange.map { now.since($0) } ?? .seconds(3600)
        // Without a queue to show for it (random loss on a radio link), a
        // tenth lost is no sign of congestion: cutting only starves the
        // stream while FEC and NACK repair. Heavier loss is cut even then
        // (a policer drops without queueing).
        if lossFraction > (queued ? 0.1 : Self.unqueuedLoss) {
            if since >= roundTrip + .milliseconds(100) {
                bitrate = bitrate * (1 - 0.5 * lossFraction)
                lastChange = now
            }
        } else if lossFraction < 0.02 {
            if since >= .milliseconds(200) {
                bitrate = bitrate * 1.05
                lastChange = now
            }
        }
        bitrate = min(max(bitrate, minimum), maximum)
        return bitrate
    }

    /// Raises the rate to what a probe showed the path carries.
    public mutating func raise(to carried: Bitrate) {
        bitrate = min(max(bitrate, carried), maximum)
    }

    /// Keeps the loss-based rate within reach of the delay-based one, as
    /// libwebrtc does, so it cannot sit far above it after a long calm.
    public mutating func cap(at limit: Bitrate) {
        bitrate = min(bitrate, max(limit * 1.5, minimum))
    }
}
