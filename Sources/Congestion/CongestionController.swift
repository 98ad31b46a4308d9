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
    private var overflow = OverflowDetector()
    /// What the path delivered when its queue last overflowed, and until
    /// when the pacer keeps under it.
    private var overflowPacing: (rate: Bitrate, until: MonotonicTime)?
    /// After the link fell to a fraction: the rate the pacer keeps to
    /// while the queue it left full drains, and until when.
    private var drainPacing: (rate: Bitrate, until: MonotonicTime)?
    private var bottleneck = BottleneckEstimator()
    private var probes = ProbeController()
    /// A queue standing longer than this (ms) is congestion even when flat.
    public var queueDelayLimit = 40.0
    private var lastStandingCut: (at: MonotonicTime, queue: Double)?
    private var smoothedRoundTrip: Duration?
    private var lastFeedback: MonotonicTime?
    private var lastSend: MonotonicTime?
    private var lastTimeoutCut: MonotonicTime?
    public private(set) var target: Bitrate
    /// Set when the path's rate was found fallen under half the target at
    /// once; taken by `takeCollapse`.
    private var collapsed = false
    private var saturation = SaturationDetector()
    /// When feedback last showed the path saturated (heavy loss behind a
    /// grown queue): loss then is the sender's own overflow.
    public private(set) var lastSaturation: MonotonicTime?
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
        /// A bandwidth probe the path carried.
        case probe
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
        // Until the first feedback report the target is the ceiling: a
        // receiver that never sends feedback (a plain one, given an SDP)
        // gets the configured bitrate. The estimates start at `start`, and
        // the first report brings the target down to them.
        target = configuration.maximum
        // Started under the ceiling: the path is unproven, and probes seek it.
        if configuration.start < configuration.maximum { probes = ProbeController(seeking: configuration.maximum) }
    }

    /// Records a packet as it leaves.
    public mutating func sent(_ packet: SentPacket) {
        history.sent(packet)
        probes.sent(packet)
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
        var results = feedback.results
        // A probe's padding is measured by the probe alone: it is sent
        // faster than the target on purpose, so its delay, its loss and its
        // share of what arrived say nothing of the media's rate.
        if results.contains(where: \.packet.isProbe) {
            if let carried = probes.handle(results.filter(\.packet.isProbe)) { raise(to: carried) }
            results.removeAll(where: \.packet.isProbe)
        }
        defer { probes.observe(target: target, carried: acknowledged.peak, used: acknowledged.rate, now: now) }
        guard !results.isEmpty else { return target }
        let rtt = smoothedRoundTrip ?? .milliseconds(100)
        acknowledged.update(results)
        queue.update(results)
        bottleneck.update(results)
        if bottleneck.takeWidened() { rate.forgetCapacity() }
        // A queue that overflowed was full, so the link was busy and what
        // arrived lately arrived at its rate: frames paced no faster than
        // that no longer overflow it in bursts. Dispersion tells that rate
        // when it can (and needs the bursts to), but jitter on the path
        // (wifi) spreads trains unevenly and hides it. The target is left
        // to the delay and the loss: an overflowing burst says nothing of
        // the mean rate.
        let overflowed = overflow.update(results)
        if overflowed, bottleneck.rate == nil, let delivered = acknowledged.recentRate(over: .milliseconds(250)) {
            overflowPacing = (delivered, now + Self.overflowMemory)
        }
        var usage = trendline.update(results)
        if usage == .normal, standingQueue(now: now, roundTrip: rtt) { usage = .overusing }
        // A link that fell below our rate overflows its queue: heavy loss
        // behind a grown queue. What still arrives arrives at the link's
        // rate; the target and the pacing go to it at once, not in halving
        // steps one round trip apart while every frame is lost.
        followSaturation(results, usage: usage, now: now)
        switch usage {
        case .overusing: overuseReports += 1
        case .underusing: underuseReports += 1
        case .normal: break
        }
        let delayBased = rate.update(usage, acknowledged: acknowledged.rate, carried: acknowledged.peak,
                                     bottleneck: bottleneck.rate, roundTrip: rtt, now: now)
        loss.cap(at: delayBased)
        let lossBased = loss.update(results, roundTrip: rtt, now: now,
                                    queued: queueShown(usage, over: Self.queueSign))
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

    /// Reads what the saturation detector makes of a report: a saturated
    /// link pins the bottleneck at what it delivers; one that fell to a
    /// fraction at once also asks for a keyframe and drains its queue.
    private mutating func followSaturation(_ results: [PacketResult], usage: BandwidthUsage, now: MonotonicTime) {
        let verdict = saturation.update(results, queueOverLimit: queueShown(usage, over: queueDelayLimit),
                                        queueShown: queueShown(usage, over: Self.queueSign), target: target,
                                        acknowledged: acknowledged)
        guard let verdict else { return }
        let delivered: Bitrate?
        switch verdict {
        case .saturated: delivered = acknowledged.recentRate(over: .milliseconds(250))
        case .fallen(let rate): delivered = rate
        }
        if let delivered {
            bottleneck.pin(delivered)
            // The rate fell to a fraction at once: most of what is in
            // flight is lost, more than repairs can resend in time.
            if delivered < target * 0.5, lastSaturation.map({ now.since($0) > .seconds(2) }) ?? true {
                collapsed = true
                // The queue is full: the keyframe that follows, paced at
                // the link's rate, would find it full and lose packets
                // (then a second keyframe, a round trip later). At half
                // that rate the queue drains as the keyframe goes in.
                // (A link that delivered nothing still drains at half the
                // floor: a pacer at zero would send nothing at all.)
                let drain = max(delivered, configuration.minimum) * Self.drainShare
                drainPacing = (drain, now + Self.drainTime)
            }
        }
        lastSaturation = now
    }

    /// A rate a probe showed the path carries: the estimates rise to it at
    /// once (as libwebrtc's do on a probe result) and a slower bottleneck
    /// measured before is forgotten.
    private mutating func raise(to carried: Bitrate) {
        let raised = min(carried, configuration.maximum)
        guard raised > target else { return }
        rate.raise(to: raised)
        loss.raise(to: raised)
        if let link = bottleneck.rate, link < raised { bottleneck.forget() }
        target = raised
        limit = .probe
    }

    /// A probe cluster to send now, if one is due, while the path is calm
    /// (no overuse, under 5% loss, a queue under 25 ms): after a large
    /// drop, while the target is well under the rate before it; and while
    /// the stream uses little of a target under the ceiling (`ProbeController`).
    public mutating func nextProbe(now: MonotonicTime) -> ProbeCluster? {
        let calm = trendline.state != .overusing && loss.lossFraction < 0.05 && (queue.queueDelay ?? 0) < 25
        return probes.next(now: now, target: target, calm: calm, ceiling: configuration.maximum)
    }

    /// True once after the path's rate fell under half the target at once
    /// (a saturated link delivering a fraction of what was sent): what was
    /// in flight is mostly lost, and repairs at the new rate would take
    /// longer than a keyframe at it. The sender sends one without waiting
    /// for the receiver to ask.
    public mutating func takeCollapse() -> Bool {
        defer { collapsed = false }
        return collapsed
    }

    /// Probe clusters sent, and how many the path carried.
    public var probeCounts: (clusters: Int, carried: Int) { (probes.clusters, probes.carried) }

    /// Whether the path shows a queue: growing (overuse), or standing
    /// longer than `milliseconds`.
    private func queueShown(_ usage: BandwidthUsage, over milliseconds: Double) -> Bool {
        usage == .overusing || (queue.queueDelay ?? 0) > milliseconds
    }

    /// A queue delay (ms) that shows loss may be congestion.
    static let queueSign = 10.0

    /// How fast the pacer may send: 2.5x the target, as libwebrtc, but no
    /// faster than a measured bottleneck drains, or than a queue that
    /// overflowed lately was drained (a frame sent faster only waits in,
    /// or overflows, its queue), and never under 1.1x the target; but for
    /// a moment after the link fell to a fraction, half what it delivers
    /// (or the target, if that fell further: the link's queue drains as
    /// fast at either, and the encoder's output waits no longer).
    public var pacingRate: Bitrate {
        if draining, let drain = drainPacing { return min(drain.rate, target) }
        let fast = target * 2.5
        guard let link = [bottleneck.rate, pacingAfterOverflow].compactMap({ $0 }).min() else { return fast }
        return min(fast, max(link, target * 1.1))
    }

    /// Whether the pacer keeps under the link while the queue a fall left
    /// full drains: at `pacingRate`, one packet at a time.
    public var draining: Bool {
        guard let drain = drainPacing, let last = lastFeedback else { return false }
        return last < drain.until
    }

    /// What the path delivered when its queue last overflowed, while that counts.
    private var pacingAfterOverflow: Bitrate? {
        overflowPacing.flatMap { pacing in lastFeedback.map { $0 < pacing.until } == true ? pacing.rate : nil }
    }

    /// How long after a fall the pacer keeps to `drainShare` of what the
    /// link delivered: a 100 ms queue drains in 200 ms at half its rate.
    static let drainTime: Duration = .milliseconds(250)
    static let drainShare = 0.5

    /// How long after a queue last overflowed the pacer keeps under the
    /// rate it delivered then.
    static let overflowMemory: Duration = .seconds(10)

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
        probes.observe(target: target, carried: acknowledged.peak, used: acknowledged.rate, now: now)
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
