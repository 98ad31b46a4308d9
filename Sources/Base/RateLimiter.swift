/// A token bucket, sans-IO: `rate` events a second on average, `burst` at
/// once; it starts full. Used where a stranger's traffic must cost bounded work.
public struct RateLimiter: Sendable {
    public var rate: Double
    public var burst: Double
    private var tokens: Double
    private var refilledAt: MonotonicTime?

    public init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
        tokens = burst
    }

    /// Takes one token at `now`; false when none is left.
    public mutating func take(now: MonotonicTime) -> Bool {
        if let last = refilledAt { tokens = min(burst, tokens + now.since(last).seconds * rate) }
        refilledAt = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Whether a token is there at `now`, without taking it (to skip work
    /// whose result would be refused anyway).
    public mutating func hasToken(now: MonotonicTime) -> Bool {
        if let last = refilledAt { tokens = min(burst, tokens + now.since(last).seconds * rate) }
        refilledAt = now
        return tokens >= 1
    }

    /// Spends `cost` tokens at `now` when the bucket is not in debt, even
    /// past what it holds: the debt is repaid by the refill before the next
    /// spend. So work of any size is allowed now and then, and on average
    /// `rate` a second.
    public mutating func spend(_ cost: Double, now: MonotonicTime) -> Bool {
        if let last = refilledAt { tokens = min(burst, tokens + now.since(last).seconds * rate) }
        refilledAt = now
        guard tokens > 0 else { return false }
        tokens -= cost
        return true
    }
}
