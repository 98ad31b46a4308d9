/// A rate of data, as libwebrtc's `DataRate`: one type for what was spelt
/// as `Double` bits per second in some places and `Int` kbit/s in others,
/// so a rate cannot be taken for the other unit, nor for a size.
public struct Bitrate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Bits a second.
    public var bitsPerSecond: Double

    /// A rate of `bitsPerSecond` bits a second.
    public init(bitsPerSecond: Double) { self.bitsPerSecond = bitsPerSecond }

    /// `value` bits a second.
    public static func bitsPerSecond(_ value: Double) -> Bitrate { Bitrate(bitsPerSecond: value) }
    /// `value` kilobits (1000 bits) a second.
    public static func kilobitsPerSecond(_ value: Double) -> Bitrate { Bitrate(bitsPerSecond: value * 1000) }
    /// `value` kilobits (1000 bits) a second.
    public static func kilobitsPerSecond(_ value: Int) -> Bitrate { Bitrate(bitsPerSecond: Double(value) * 1000) }

    /// Nothing a second.
    public static let zero = Bitrate(bitsPerSecond: 0)

    /// Kilobits (1000 bits) a second.
    public var kilobitsPerSecond: Double { bitsPerSecond / 1000 }

    /// "1234 kbit/s".
    public var description: String { "\(Int(kilobitsPerSecond.rounded())) kbit/s" }

    public static func < (a: Bitrate, b: Bitrate) -> Bool { a.bitsPerSecond < b.bitsPerSecond }
    /// The two rates together.
    public static func + (a: Bitrate, b: Bitrate) -> Bitrate { Bitrate(bitsPerSecond: a.bitsPerSecond + b.bitsPerSecond) }
    /// What is left of `a` once `b` is taken.
    public static func - (a: Bitrate, b: Bitrate) -> Bitrate { Bitrate(bitsPerSecond: a.bitsPerSecond - b.bitsPerSecond) }
    /// The rate scaled by `factor`.
    public static func * (rate: Bitrate, factor: Double) -> Bitrate { Bitrate(bitsPerSecond: rate.bitsPerSecond * factor) }
    /// The rate scaled by `factor`.
    public static func * (factor: Double, rate: Bitrate) -> Bitrate { rate * factor }
    /// The rate divided by `divisor`.
    public static func / (rate: Bitrate, divisor: Double) -> Bitrate { Bitrate(bitsPerSecond: rate.bitsPerSecond / divisor) }
    /// How many times `b` fits in `a`.
    public static func / (a: Bitrate, b: Bitrate) -> Double { a.bitsPerSecond / b.bitsPerSecond }

    /// What this rate carries in `time`.
    public static func * (rate: Bitrate, time: Duration) -> ByteCount {
        ByteCount(bytes: Int((rate.bitsPerSecond / 8 * time.seconds).rounded()))
    }

    /// Bytes this rate carries in `time`, fractions kept (a token bucket's level).
    public func bytes(in time: Duration) -> Double { bitsPerSecond / 8 * time.seconds }
}

/// An amount of data, as libwebrtc's `DataSize`: bytes, apart from rates.
public struct ByteCount: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The amount in bytes.
    public var bytes: Int

    /// `bytes` bytes.
    public init(bytes: Int) { self.bytes = bytes }

    /// `value` bytes.
    public static func bytes(_ value: Int) -> ByteCount { ByteCount(bytes: value) }
    /// `value` MiB (2^20 bytes each).
    public static func mebibytes(_ value: Int) -> ByteCount { ByteCount(bytes: value << 20) }
    /// No bytes.
    public static let zero = ByteCount(bytes: 0)

    /// Whole MiB, rounded up (what a message says is needed).
    public var mebibytesRoundedUp: Int { (bytes + (1 << 20) - 1) >> 20 }

    /// The amount in bits.
    public var bits: Double { Double(bytes) * 8 }
    public var description: String { "\(bytes) B" }

    public static func < (a: ByteCount, b: ByteCount) -> Bool { a.bytes < b.bytes }
    /// The two amounts together.
    public static func + (a: ByteCount, b: ByteCount) -> ByteCount { ByteCount(bytes: a.bytes + b.bytes) }
    /// What is left of `a` once `b` is taken (negative when `b` is more).
    public static func - (a: ByteCount, b: ByteCount) -> ByteCount { ByteCount(bytes: a.bytes - b.bytes) }
    /// Adds `b` to `a`.
    public static func += (a: inout ByteCount, b: ByteCount) { a.bytes += b.bytes }
    /// Takes `b` from `a`.
    public static func -= (a: inout ByteCount, b: ByteCount) { a.bytes -= b.bytes }
    /// `count` of this size.
    public static func * (size: ByteCount, count: Int) -> ByteCount { ByteCount(bytes: size.bytes * count) }
    /// A share of this size, rounded down.
    public static func * (size: ByteCount, share: Double) -> ByteCount { ByteCount(bytes: Int(Double(size.bytes) * share)) }

    /// The rate at which this much passed in `time` (zero for no time).
    public static func / (size: ByteCount, time: Duration) -> Bitrate {
        let seconds = time.seconds
        return seconds > 0 ? Bitrate(bitsPerSecond: size.bits / seconds) : .zero
    }

    /// How long this much takes at `rate` (zero at no rate).
    public static func / (size: ByteCount, rate: Bitrate) -> Duration {
        rate.bitsPerSecond > 0 ? .nanoseconds(Int64(size.bits / rate.bitsPerSecond * 1e9)) : .zero
    }
}
