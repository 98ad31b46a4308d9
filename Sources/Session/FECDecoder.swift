public import ShareWire
public import ShareBase

/// The receiving half of FlexFEC (RFC 8627), sans-IO: keeps the recent
/// media packets of the protected stream (only while repairs arrive) and
/// the recent repair packets, and rebuilds a media packet as soon as a
/// repair covers it and every other packet that repair protects is here.
public struct FECDecoder: Sendable {
    /// Media packets kept, by sequence number modulo this.
    static let window = 512
    /// Repairs waited on at most.
    static let maxRepairs = 64
    /// Keep media while a repair arrived within this long.
    static let activeFor: Duration = .seconds(5)

    private var media: [(sequence: UInt16, bytes: [UInt8])?] = Array(repeating: nil, count: FECDecoder.window)
    private var repairs: [FlexFEC.Repair] = []
    private var lastRepair: MonotonicTime?

    public init() {}

    /// True while the sender sends repairs (media is kept only then).
    public func isActive(now: MonotonicTime) -> Bool {
        guard let last = lastRepair else { return false }
        return now.since(last) < Self.activeFor
    }

    /// A media packet (plain RTP bytes) arrived; returns packets it lets repairs rebuild.
    public mutating func media(_ bytes: ArraySlice<UInt8>, sequence: UInt16, ssrc: UInt32, now: MonotonicTime) -> [[UInt8]] {
        media[Int(sequence) % Self.window] = (sequence, Array(bytes))
        return attempt(ssrc: ssrc)
    }

    /// A repair arrived; returns packets it rebuilds.
    public mutating func add(_ repair: FlexFEC.Repair, ssrc: UInt32, now: MonotonicTime) -> [[UInt8]] {
        lastRepair = now
        repairs.append(repair)
        if repairs.count > Self.maxRepairs { repairs.removeFirst(repairs.count - Self.maxRepairs) }
        return attempt(ssrc: ssrc)
    }

    private func have(_ sequence: UInt16) -> ArraySlice<UInt8>? {
        guard let entry = media[Int(sequence) % Self.window], entry.sequence == sequence else { return nil }
        return entry.bytes[...]
    }

    /// Rebuilds what can be rebuilt; a repair whose packets are all here is done.
    private mutating func attempt(ssrc: UInt32) -> [[UInt8]] {
        var rebuilt: [[UInt8]] = []
        var progress = true
        while progress {
            progress = false
            var remaining: [FlexFEC.Repair] = []
            for repair in repairs {
                let missing = repair.protected.filter { have($0) == nil }
                if missing.isEmpty { continue }
                if missing.count == 1,
                   let packet = FlexFEC.recover(repair, missing: missing[0], others: repair.protected.compactMap { have($0) },
                                                ssrc: ssrc) {
                    media[Int(missing[0]) % Self.window] = (missing[0], packet)
                    rebuilt.append(packet)
                    progress = true
                    continue
                }
                remaining.append(repair)
            }
            repairs = remaining
        }
        return rebuilt
    }
}
