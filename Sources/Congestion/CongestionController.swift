public import ShareWire
public import ShareBase

/// The sender's congestion controller, sans-IO: one owner that records what
/// was sent, reads RFC 8888 feedback, runs the delay-based detector, the
/// AIMD rate control, the loss-based estimator and the acknowledged rate,
/// and combines them into one target bitrate, always within
/// [minimum, maximum] whatever the feedback says.
public struct CongestionController: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var start: Bitrate
        public var minimum: Bitrate
        public var maximum: Bitrate
        /// With no feedback for this long while sending, the rate halves.
        public var feedbackTimeout: Duration = .milliseconds(1500)

        public init(start: Bitrate, minimum: Bitrate, maximum: Bitrate) {
            self.maximum = max(maximum, .bitsPerSecond(1))
            self.minimum = min(max(minimum, .bitsPerSecond(1)), self.maximum)
            self.start = min(max(start, self.minimum), self.maximum)
        }
    }

    /// A snapshot for statistics.
    public struct Estimate: Sendable, Equatable {
        public var target: Bitrate
        public var delayBased: Bitrate
        public var lossBased: Bitrate
        /// Milliseconds packets wait in queues on the path, once known.
        public var queueDelay: Double?
        /// The narrowest link's rate from packet-train dispersion, if one was seen.
        public var bottleneck: Bitrate?
        public var acknowledged: Bitrate?
        public var lossFraction: Double
        public var roundTrip: Duration?
        public var usage: BandwidthUsage

        public init(target: Bitrate, delayBased: Bitrate, lossBased: Bitrate, queueDelay: Double?, bottleneck: Bitrate?,
                    acknowledged: Bitrate?, lossFraction: Double, roundTrip: Duration?, usage: BandwidthUsage) {
            self.target = target
            self.delayBased = delayBased
            self.lossBased = lossBased
            self.queueDelay = queueDelay
            self.bottleneck = bottleneck
            self.acknowledged = acknowledged
            self.lossFraction = lossFraction
            self.roundTrip = roundTrip
            self.usage = usage
        }
    }

    public let configuration: Configuration
    private var history = FeedbackHistory()
    private var trendline = TrendlineEstimator()
    private var rate: RateControl
    private var loss: LossBasedEstimator
    private var acknowledged = AcknowledgedBitrate()
    private var queue = QueueDelayEstimator()
    private var bottleneck = BottleneckEstimator()
    /// A queue standing longer than this (ms) is congestion even when flat.
    public var queueDelayLimit = 40.0
    private var lastStandingCut: (at: MonotonicTime, queue: Double)?
    private var smoothedRoundTrip: Duration?
    private var lastFeedback: MonotonicTime?
    private var lastSend: MonotonicTime?
    private var lastTimeoutCut: MonotonicTime?
    public private(set) var target: Bitrate
    public private(set) var feedbackReports = 0

    /// A rule that can set the target.
    public enum Limit: String, Sendable, Equatable {
        /// The delay-based estimate (GCC's rate control on the delay gradient).
        case delay
        /// The loss-based estimate.
        case loss
        /// The measured bottleneck's rate (with room for repairs and jitter).
        case bottleneck
        /// No feedback while sending: halved.
        case feedbackTimeout
        /// The configured maximum.
        case ceiling
        /// The configured minimum.
        case floor
    }
    /// The rule that set the target last.
    public private(set) var limit: Limit = .ceiling
    /// Feedback reports so far whose delay verdict (the gradient, or a queue
    /// standing full) was overuse, and underuse.
    public private(set) var overuseReports = 0
    public private(set) var underuseReports = 0

    public init(configuration: Configuration) {
        self.configuration = configuration
        rate = RateControl(start: configuration.start, minimum: configuration.minimum, maximum: configuration.maximum)
        loss = LossBasedEstimator(start: configuration.start, minimum: configuration.minimum,
                                  maximum: configuration.maximum)
        target = configuration.start
    }

    /// Records a packet as it leaves.
    public mutating func sent(_ packet: SentPacket) {
        history.sent(packet)
        lastSend = packet.sendTime
    }

    /// The round trip the controller works with (feedback or RTCP reports).
    public var roundTrip: Duration? { smoothedRoundTrip }

    /// A round trip measured elsewhere (RTCP receiver reports).
    public mutating func observeRoundTrip(_ sample: Duration) {
        let clamped = min(max(sample, .zero), .seconds(10))
        smoothedRoundTrip = smoothedRoundTrip.map { ($0 * 7 + clamped) / 8 } ?? clamped
    }

    /// Handles one feedback report; returns the new target.
    @discardableResult
    public mutating func handle(_ report: CongestionControlFeedback, now: MonotonicTime) -> Bitrate {
        // A missing packet is lost once a report made after it could have
        // arrived, late by up to 50 ms, says so.
        let lossDelay = (smoothedRoundTrip ?? .milliseconds(100)) + .milliseconds(100)
        let feedback = history.handle(report, now: now, lossDelay: lossDelay)
        feedbackReports += 1
        lastFeedback = now
        if let sample = feedback.roundTrip { observeRoundTrip(sample) }
        guard !feedback.results.isEmpty else { return target }
        let rtt = smoothedRoundTrip ?? .milliseconds(100)
        acknowledged.update(feedback.results)
        queue.update(feedback.results)
        bottleneck.update(feedback.results)
        if bottleneck.takeWidened() { rate.forgetCapacity() }
        var usage = trendline.update(feedback.results)
        if usage == .normal, standingQueue(now: now, roundTrip: rtt) { usage = .overusing }
        switch usage {
        case .overusing: overuseReports += 1
        case .underusing: underuseReports += 1
        case .normal: break
        }
        let delayBased = rate.update(usage, acknowledged: acknowledged.rate, carried: acknowledged.peak,
                                     bottleneck: bottleneck.rate, roundTrip: rtt, now: now)
        loss.cap(at: delayBased)
        let lossBased = loss.update(feedback.results, roundTrip: rtt, now: now)
        var combined = min(delayBased, lossBased)
        var limit: Limit = lossBased < delayBased ? .loss : .delay
        // Never above what the narrowest link drains (with room for repairs
        // and jitter); the rate control is held there too, so it has not
        // wound up past the link when the measurement lapses.
        if let link = bottleneck.rate, link * 0.9 < combined {
            combined = link * 0.9
            rate.reduce(to: combined)
            limit = .bottleneck
        }
        if combined >= configuration.maximum { limit = .ceiling }
        if combined <= configuration.minimum { limit = .floor }
        self.limit = limit
        target = min(max(combined, configuration.minimum), configuration.maximum)
        return target
    }

    /// How fast the pacer may send: 2.5x the target, as libwebrtc, but no
    /// faster than a measured bottleneck drains (a frame sent faster only
    /// waits in, or overflows, its queue), and never under 1.1x the target.
    public var pacingRate: Bitrate {
        let fast = target * 2.5
        guard let link = bottleneck.rate else { return fast }
        return min(fast, max(link, target * 1.1))
    }

    /// A full, flat queue: over the limit, not draining since the last cut
    /// it caused, and that cut at least half a second and a round trip ago.
    private mutating func standingQueue(now: MonotonicTime, roundTrip: Duration) -> Bool {
        guard let delay = queue.queueDelay, delay > queueDelayLimit else { return false }
        if let last = lastStandingCut {
            guard now.since(last.at) > .milliseconds(500) + roundTrip, delay >= last.queue - 5 else { return false }
        }
        lastStandingCut = (now, delay)
        return true
    }

    /// Runs the feedback timeout: while we send and hear nothing back, the
    /// path may be gone or saturated in the reverse direction.
    @discardableResult
    public mutating func poll(now: MonotonicTime) -> Bitrate {
        guard let heard = lastFeedback, let sent = lastSend, sent > heard,
              now.since(heard) > configuration.feedbackTimeout else { return target }
        if let cut = lastTimeoutCut, now.since(cut) < configuration.feedbackTimeout { return target }
        lastTimeoutCut = now
        target = max(target / 2, configuration.minimum)
        limit = target <= configuration.minimum ? .floor : .feedbackTimeout
        rate.reduce(to: target)
        loss.cap(at: target / 1.5)
        return target
    }

    public var estimate: Estimate {
        Estimate(target: target, delayBased: rate.bitrate, lossBased: loss.bitrate, queueDelay: queue.queueDelay,
                 bottleneck: bottleneck.rate,
                 acknowledged: acknowledged.rate, lossFraction: loss.lossFraction,
                 roundTrip: smoothedRoundTrip, usage: trendline.state)
    }
}
