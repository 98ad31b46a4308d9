internal import ShareWire
internal import ShareBase

/// Tells a saturated link from feedback, sans-IO: the path's rate fell
/// under what is sent, its queue is full and overflowing, and what still
/// arrives arrives at the link's rate. Random loss on a free path comes
/// with no queue; a burst of content that overflows a short queue loses the
/// tail of a frame or two, not everything sent for a while.
///
/// Two runs of reports are watched, by the send times of their packets:
/// - **saturated**: each report loses a fifth or more of its media packets
///   (at least five) while the queue grows or stands over its limit, for
///   `saturationSpan`;
/// - **fallen**: each report loses half or more of its media packets while
///   the queue shows at all, over two reports or more and `fallSpan`, at
///   least `fallLosses` lost in the run, and the link delivering, while
///   the run's packets arrived, under `fallShare` of both the target and
///   what the run sent. A link that fell to a fraction at once is told two
///   or three reports before the first run says so, while the queue
///   estimate still lags the queue; content that overflowed a queue in a
///   burst and then went quiet sent little more than arrived. What
///   arrived is the link's rate: it crossed the overflowing queue back to
///   back.
struct SaturationDetector: Sendable {
    static let saturationSpan: Duration = .milliseconds(150)
    static let fallSpan: Duration = .milliseconds(50)
    static let fallLosses = 8
    static let fallShare = 0.4

    enum Verdict: Equatable {
        /// Saturated: the rate the link delivers is to be read from the
        /// arrivals lately.
        case saturated
        /// Fallen to a fraction at once, delivering `delivered`.
        case fallen(delivered: Bitrate)
    }

    /// A run of lossy reports: when its packets began to be sent, how many
    /// reports and packets it holds and how many were lost, and over what
    /// span (receiver's clock) those that arrived did.
    private struct Run {
        var since: MonotonicTime
        var reports = 0
        var lost = 0
        /// Bytes of the run's packets, sent from `since` on.
        var sent = 0
        var firstArrival: Duration?
        var lastArrival: Duration?

        init(since: MonotonicTime) { self.since = since }

        mutating func add(_ media: [PacketResult]) {
            reports += 1
            for result in media {
                sent += result.packet.size
                guard let arrival = result.arrival else {
                    lost += 1
                    continue
                }
                firstArrival = min(firstArrival ?? arrival, arrival)
                lastArrival = max(lastArrival ?? arrival, arrival)
            }
        }

        var arrivalSpan: Duration? { firstArrival.flatMap { first in lastArrival.map { $0 - first } } }
    }

    private var saturatedRun: Run?
    private var fallRun: Run?

    /// Reads one report's results. `queueOverLimit`: the queue grows or
    /// stands over its limit; `queueShown`: it grows or stands at all;
    /// `acknowledged`: what arrived, all streams, for the rate the link
    /// delivered over the span the run's packets arrived in (a full queue
    /// drains back to back at the link's rate).
    mutating func update(_ results: [PacketResult], queueOverLimit: Bool, queueShown: Bool,
                         target: Bitrate, acknowledged: AcknowledgedBitrate) -> Verdict? {
        let media = results.filter { !$0.packet.isRetransmission && !$0.packet.isProbe }
        guard let oldest = media.map(\.packet.sendTime).min(), let newest = media.map(\.packet.sendTime).max() else {
            return nil
        }
        let lost = media.filter { !$0.received }.count
        var verdict: Verdict?

        if lost >= 5, Double(lost) >= Double(media.count) * 0.2, queueOverLimit {
            var run = saturatedRun ?? Run(since: oldest)
            run.add(media)
            saturatedRun = run
            if newest.since(run.since) >= Self.saturationSpan { verdict = .saturated }
        } else {
            saturatedRun = nil
        }

        if lost > 0, Double(lost) >= Double(media.count) * 0.5, queueShown {
            var run = fallRun ?? Run(since: oldest)
            run.add(media)
            fallRun = run
            let sending = newest.since(run.since)
            if run.reports >= 2, sending >= Self.fallSpan, run.lost >= Self.fallLosses,
               let span = run.arrivalSpan, let delivered = acknowledged.recentRate(over: span),
               delivered < min(target, ByteCount.bytes(run.sent) / sending) * Self.fallShare {
                verdict = .fallen(delivered: delivered)
            }
        } else {
            fallRun = nil
        }
        return verdict
    }
}
