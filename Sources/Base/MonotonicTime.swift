/// A point on a monotonic clock in nanoseconds. Sans-IO code takes it as
/// `now:` so tests can drive time by hand.
public struct MonotonicTime: Comparable, Hashable, Sendable {
    /// Nanoseconds since the clock's origin (for CLOCK_MONOTONIC, boot).
    public var nanoseconds: UInt64

    /// The instant `nanoseconds` after the clock's origin.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The clock's origin: earlier than any instant read.
    public static let zero = MonotonicTime(nanoseconds: 0)

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    /// The instant `d` after `t` (a negative `d` counts as zero).
    public static func + (t: Self, d: Duration) -> Self {
        MonotonicTime(nanoseconds: t.nanoseconds &+ d.nanoseconds)
    }

    /// The instant `d` before `t`, or zero when the clock had not read that far.
    public static func - (t: Self, d: Duration) -> Self {
        MonotonicTime(nanoseconds: t.nanoseconds &- min(t.nanoseconds, d.nanoseconds))
    }

    /// Moves `t` on by `d`.
    public static func += (t: inout Self, d: Duration) { t = t + d }

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

    /// The duration in whole nanoseconds, negative ones too.
    public var signedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }

    /// The duration in milliseconds as a floating-point value.
    public var milliseconds: Double { seconds * 1000 }
}
