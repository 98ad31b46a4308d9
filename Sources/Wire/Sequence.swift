/// Wrap-aware arithmetic on 16-bit RTP sequence numbers (RFC 3550 §A.1) and
/// 32-bit RTP timestamps: a value is "newer" when it is less than half the
/// number space ahead.
public enum RTPSequence {
    /// True when `a` comes after `b` in the 16-bit sequence space.
    @inlinable public static func isNewer(_ a: UInt16, than b: UInt16) -> Bool {
        a != b && a &- b < 0x8000
    }

    /// Signed distance from `b` to `a`, in -32768...32767.
    @inlinable public static func distance(from b: UInt16, to a: UInt16) -> Int {
        Int(Int16(bitPattern: a &- b))
    }

    /// A stream's first sequence number: random, in the lower half of the
    /// space (1...32767, as libwebrtc does). The stream then sends at least
    /// 32,768 packets before its first wrap, so a receiver that must take
    /// the SRTP rollover counter to be 0 when it joins (SDES carries none:
    /// ffmpeg, GStreamer) can join in the stream's first minutes.
    public static func randomStart() -> UInt16 { UInt16.random(in: 1...0x7FFF) }

    /// True when timestamp `a` comes after `b` in the 32-bit timestamp space.
    @inlinable public static func isNewer(timestamp a: UInt32, than b: UInt32) -> Bool {
        a != b && a &- b < 0x8000_0000
    }
}

/// Extends 16-bit sequence numbers to 64 bits by counting wrap-arounds
/// (the "cycles" of RFC 3550 §A.1), following the newest value seen.
public struct SequenceUnwrapper: Sendable {
    private var last: Int64?

    public init() {}

    /// The extended value of `sequence`; old (reordered) values extend below
    /// the newest without moving it.
    public mutating func unwrap(_ sequence: UInt16) -> Int64 {
        guard let last else {
            self.last = Int64(sequence)
            return Int64(sequence)
        }
        let delta = Int64(RTPSequence.distance(from: UInt16(truncatingIfNeeded: last), to: sequence))
        let value = last + delta
        if delta > 0 { self.last = value }
        return value
    }

    /// The newest extended value seen, if any.
    public var newest: Int64? { last }
}

/// Extends 32-bit RTP timestamps to 64 bits the same way.
public struct TimestampUnwrapper: Sendable {
    private var last: Int64?

    public init() {}

    public mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        guard let last else {
            self.last = Int64(timestamp)
            return Int64(timestamp)
        }
        let delta = Int64(Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: last)))
        let value = last + delta
        if delta > 0 { self.last = value }
        return value
    }
}
