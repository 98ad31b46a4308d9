internal import ShareWire
internal import ShareBase

/// What the delay signal says about the path.
public enum BandwidthUsage: Sendable, Equatable {
    case normal
    /// Queues are growing: the sender is above what the path carries.
    case overusing
    /// Queues are draining.
    case underusing
}

/// The delay-based detector of Google Congestion Control
/// (draft-ietf-rmcat-gcc-02 §5.3-5.4, with libwebrtc's trendline filter):
/// packets are grouped into bursts by send time; the growth of one-way
/// delay between groups is accumulated and smoothed; the slope of a linear
/// fit over the last groups, scaled, is compared with an adaptive threshold.
public struct TrendlineEstimator: Sendable {
    /// Packets sent within this much of a group's first packet are one group.
    public static let burstInterval: Duration = .milliseconds(5)
    static let windowSize = 20
    static let smoothing = 0.9
    static let thresholdGain = 4.0
    static let overuseTime = 10.0  // ms
    static let thresholdUp = 0.0087
    static let thresholdDown = 0.039

    private struct Group: Sendable {
        var firstSend: MonotonicTime
        var lastSend: MonotonicTime
        var lastArrival: Duration
        var size: Int
    }

    private var current: Group?
    private var previous: Group?
    private var firstArrival: Duration?
    private var accumulatedDelay = 0.0
    private var smoothedDelay = 0.0
    private var samples: [(x: Double, y: Double)] = []
    private var deltas = 0
    public private(set) var threshold = 12.5
    private var lastThresholdUpdate: Double?
    private var timeOverUsing = -1.0
    private var overuseCount = 0
    private var previousTrend = 0.0
    public private(set) var state: BandwidthUsage = .normal
    /// The last modified trend (ms), for statistics and tests.
    public private(set) var trend = 0.0

    public init() {}

    /// Feeds received packets (in send order) and returns the detector's state.
    @discardableResult
    public mutating func update(_ results: [PacketResult]) -> BandwidthUsage {
        for result in results {
            guard let arrival = result.arrival, !result.packet.isRetransmission else { continue }
            add(send: result.packet.sendTime, arrival: arrival, size: result.packet.size)
        }
        return state
    }

    private mutating func add(send: MonotonicTime, arrival: Duration, size: Int) {
        guard var group = current else {
            current = Group(firstSend: send, lastSend: send, lastArrival: arrival, size: size)
            return
        }
        if send < group.firstSend {
            return  // reordered across groups: no reliable sample
        }
        if send.since(group.firstSend) <= Self.burstInterval {
            group.lastSend = max(group.lastSend, send)
            group.lastArrival = max(group.lastArrival, arrival)
            group.size += size
            current = group
            return
        }
        if let previous {
            let sendDelta = Double(group.lastSend.since(previous.lastSend).nanoseconds) / 1e6
            let arrivalDelta = (group.lastArrival - previous.lastArrival) / .microseconds(1) / 1000
            detect(sendDelta: sendDelta, arrivalDelta: arrivalDelta, arrival: group.lastArrival)
        }
        previous = group
        current = Group(firstSend: send, lastSend: send, lastArrival: arrival, size: size)
    }

    private mutating func detect(sendDelta: Double, arrivalDelta: Double, arrival: Duration) {
        deltas = min(deltas + 1, 1000)
        let first = firstArrival ?? arrival
        firstArrival = first
        // A delta beyond a second is a pause or a clock jump, not queueing.
        let delay = max(-1000, min(1000, arrivalDelta - sendDelta))
        accumulatedDelay += delay
        smoothedDelay = Self.smoothing * smoothedDelay + (1 - Self.smoothing) * accumulatedDelay
        let x = (arrival - first) / .microseconds(1) / 1000
        samples.append((x, smoothedDelay))
        if samples.count > Self.windowSize { samples.removeFirst() }
        var slope = previousTrend
        if samples.count == Self.windowSize, let fitted = Self.slope(samples) { slope = fitted }
        trend = Double(min(deltas, 60)) * slope * Self.thresholdGain
        classify(trend: trend, slope: slope, sendDelta: sendDelta, now: x)
        previousTrend = slope
    }

    /// Least-squares slope of y over x.
    static func slope(_ points: [(x: Double, y: Double)]) -> Double? {
        let n = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / n
        let meanY = points.reduce(0) { $0 + $1.y } / n
        var numerator = 0.0
        var denominator = 0.0
        for point in points {
            numerator += (point.x - meanX) * (point.y - meanY)
            denominator += (point.x - meanX) * (point.x - meanX)
        }
        return denominator == 0 ? nil : numerator / denominator
    }

    private mutating func classify(trend: Double, slope: Double, sendDelta: Double, now: Double) {
        if trend > threshold {
            timeOverUsing = timeOverUsing < 0 ? sendDelta / 2 : timeOverUsing + sendDelta
            overuseCount += 1
            if timeOverUsing > Self.overuseTime, overuseCount > 1, slope >= previousTrend {
                timeOverUsing = 0
                overuseCount = 0
                state = .overusing
            }
        } else if trend < -threshold {
            timeOverUsing = -1
            overuseCount = 0
            state = .underusing
        } else {
            timeOverUsing = -1
            overuseCount = 0
            state = .normal
        }
        adaptThreshold(trend: trend, now: now)
    }

    /// draft-ietf-rmcat-gcc-02 §5.4: the threshold follows |trend| slowly
    /// upwards and faster downwards, so a concurrent TCP flow cannot starve us.
    private mutating func adaptThreshold(trend: Double, now: Double) {
        let last = lastThresholdUpdate ?? now
        lastThresholdUpdate = now
        let magnitude = abs(trend)
        if magnitude > threshold + 15 { return }
        let k = magnitude < threshold ? Self.thresholdDown : Self.thresholdUp
        let elapsed = min(max(now - last, 0), 100)
        threshold = min(max(threshold + k * (magnitude - threshold) * elapsed, 6), 600)
    }
}
