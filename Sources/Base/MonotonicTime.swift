/// A point on a monotonic clock in nanoseconds. Sans-IO code takes it as
/// `now:` so tests can drive time by hand.
public struct MonotonicTime: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static let zero = MonotonicTime(nanoseconds: 0)

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    public static func + (t: Self, d: Duration) -> Self {
        MonotonicTime(nanoseconds: t.nanoseconds &+ d.nanoseconds)
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    public func since(_ earlier: Self) -> Duration {
        nanoseconds >= earlier.nanoseconds ? .nanoseconds(Int64(nanoseconds - earlier.nanoseconds)) : .zero
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to zero for negative values.
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    /// The duration in seconds as a floating-point value.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
