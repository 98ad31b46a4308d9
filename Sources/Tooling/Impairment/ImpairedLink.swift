public import ShareBase

/// One direction of an impaired path, sans-IO: for each datagram offered at
/// `now`, the instants its copies leave (none when it is lost or the queue
/// is full; two when duplicated). The bottleneck serialises packets at its
/// rate behind a drop-tail queue bounded in time; then comes propagation
/// delay with jitter. Random numbers come from a seeded generator, so a run
/// can be repeated exactly.
public struct ImpairedLink: Sendable {
    public struct Counters: Sendable, Equatable, Codable {
        public var offered = 0
        public var delivered = 0
        public var lost = 0
        public var queueDrops = 0
        public var duplicated = 0
        public var bytesDelivered = 0
        /// Longest time a packet spent in the bottleneck's queue (ms).
        public var maxQueueMilliseconds = 0.0
    }

    public let profile: ImpairmentProfile
    public private(set) var counters = Counters()
    private var random: SplitMix64
    private var origin: MonotonicTime?
    private var linkFree: MonotonicTime = .zero
    private var lastRelease: MonotonicTime = .zero
    private var inBadState = false

    public init(profile: ImpairmentProfile, seed: UInt64) {
        self.profile = profile
        random = SplitMix64(seed: seed)
    }

    public mutating func submit(size: Int, now: MonotonicTime) -> [MonotonicTime] {
        counters.offered += 1
        let start = origin ?? now
        origin = start
        if dropsRandomly() {
            counters.lost += 1
            return []
        }
        var departure = now
        if let rate = profile.rate(at: now.since(start)) {
            let begin = max(now, linkFree)
            let waiting = begin.since(now)
            // Drop-tail: the queue holds what drains in `queue` at this rate.
            if waiting + transmission(size, rate) > profile.queue + transmission(1500, rate) {
                counters.queueDrops += 1
                return []
            }
            counters.maxQueueMilliseconds = max(counters.maxQueueMilliseconds, waiting.seconds * 1000)
            departure = begin + transmission(size, rate)
            linkFree = departure
        }
        var releases = [release(after: departure)]
        if profile.duplicate > 0, random.unit() < profile.duplicate {
            counters.duplicated += 1
            releases.append(release(after: departure))
        }
        counters.delivered += releases.count
        counters.bytesDelivered += size * releases.count
        return releases
    }

    private func transmission(_ size: Int, _ rate: Double) -> Duration {
        .nanoseconds(Int64(Double(size * 8) / rate * 1e9))
    }

    private mutating func dropsRandomly() -> Bool {
        if let bursts = profile.bursts {
            if inBadState {
                if random.unit() < bursts.leaveBad { inBadState = false }
            } else if random.unit() < bursts.enterBad {
                inBadState = true
            }
            if inBadState, random.unit() < bursts.lossInBad { return true }
        }
        return profile.loss > 0 && random.unit() < profile.loss
    }

    private mutating func release(after departure: MonotonicTime) -> MonotonicTime {
        var delay = profile.delay.seconds
        if profile.jitter > .zero { delay += (random.unit() * 2 - 1) * profile.jitter.seconds }
        var at = departure + .nanoseconds(Int64(max(delay, 0) * 1e9))
        if !profile.reorder { at = max(at, lastRelease) }
        lastRelease = max(lastRelease, at)
        return at
    }
}
