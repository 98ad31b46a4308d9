internal import ShareCongestion
internal import ShareWire
internal import ShareSync
internal import ShareBase

/// The sender's rates every 250 ms for the last five minutes (the
/// controller's estimate and what it is made of, what left, the encoder's
/// bitrate), in storage
/// reserved at the start (about 150 KiB): a long run's footprint stays
/// flat. The feedback thread records; the statistics read, any thread.
final class RateTimeline: Sendable {
    static let interval: Duration = .milliseconds(250)
    /// The wall-clock time (Unix seconds) the timeline counts from.
    let beganUnix = Double(SystemClock.wall()) / 1e9
    private let began = SystemClock.now()

    private struct State {
        var samples = BoundedHistory<RateSample>(capacity: 1200)
        /// When the last sample was taken, and the bytes sent by then.
        var last: MonotonicTime
        var bytesAtLast = 0
        /// The controller's overuse and underuse verdicts by then.
        var verdictsAtLast = (overuse: 0, underuse: 0)
    }
    private let state: Locked<State>

    init() { state = Locked(State(last: began)) }

    /// When the next sample is due.
    var next: MonotonicTime { state.withLock { $0.last + Self.interval } }

    /// What the congestion controller says at a sample: its estimate, the
    /// rule that set its target, and its running counts of feedback reports
    /// that found the path overused and underused.
    struct ControllerState {
        var estimate: CongestionController.Estimate
        var limit: CongestionController.Limit
        var overuseReports: Int
        var underuseReports: Int
        /// When feedback last showed the path saturated.
        var lastSaturation: MonotonicTime?
        /// How fast the pacer may send.
        var pacing: Bitrate

        init(_ controller: borrowing CongestionController) {
            estimate = controller.estimate
            limit = controller.limit
            overuseReports = controller.overuseReports
            underuseReports = controller.underuseReports
            lastSaturation = controller.lastSaturation
            pacing = controller.pacingRate
        }
    }

    /// Records the rates at `now`: what was sent since the last sample
    /// (`bytesSent` is the running total), the controller's estimate, and
    /// its delay verdict over the interval (overusing if any report since
    /// the last sample said so, else underusing if any said that).
    func record(at now: MonotonicTime, bytesSent: Int, controller: ControllerState, encoderKbps: Int, quantizer: Int,
                protectionGroup: Int, protectionCrossing: Bool, framesEncoded: Int) {
        let estimate = controller.estimate
        let seconds = now.since(began).seconds
        state.withLock { s in
            var sample = RateSample(seconds: seconds, targetKbps: estimate.target.kilobitsPerSecond,
                                    delayBasedKbps: estimate.delayBased.kilobitsPerSecond,
                                    lossBasedKbps: estimate.lossBased.kilobitsPerSecond,
                                    acknowledgedKbps: estimate.acknowledged?.kilobitsPerSecond,
                                    sentKbps: (ByteCount(bytes: bytesSent - s.bytesAtLast) / now.since(s.last)).kilobitsPerSecond,
                                    encoderKbps: encoderKbps,
                                    queueDelayMilliseconds: estimate.queueDelay, lossFraction: estimate.lossFraction,
                                    roundTripMilliseconds: estimate.roundTrip.map { $0.seconds * 1000 })
            sample.framesEncoded = framesEncoded
            sample.quantizer = quantizer > 0 ? quantizer : nil
            sample.protectionGroup = protectionGroup > 0 ? protectionGroup : nil
            sample.protectionCrossing = protectionGroup > 0 && protectionCrossing ? true : nil
            sample.bottleneckKbps = estimate.bottleneck?.kilobitsPerSecond
            sample.pacingKbps = controller.pacing.kilobitsPerSecond
            sample.limitedBy = controller.limit.rawValue
            sample.delayVerdict = controller.overuseReports > s.verdictsAtLast.overuse ? "overusing"
                : controller.underuseReports > s.verdictsAtLast.underuse ? "underusing" : "normal"
            s.verdictsAtLast = (controller.overuseReports, controller.underuseReports)
            s.samples.append(sample)
            s.last = now
            s.bytesAtLast = bytesSent
        }
    }

    /// The samples kept, oldest first.
    var samples: [RateSample] { state.withLock { $0.samples.elements } }
}
