internal import ShareWire
public import ShareBase

/// The most recent packets of one stream by sequence number (before SRTP),
/// for answering NACKs (RFC 4585 §6.2.1), with when each was last resent.
/// A fixed ring: slots are allocated once and reused.
public struct RetransmissionHistory: Sendable {
    private var slots: [(sequence: UInt16, bytes: [UInt8])?]
    /// When each slot's packet was last resent.
    private var resent: [MonotonicTime?]
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = max(16, capacity)
        slots = Array(repeating: nil, count: self.capacity)
        resent = Array(repeating: nil, count: self.capacity)
    }

    public mutating func remember(sequence: UInt16, bytes: ArraySlice<UInt8>) {
        let index = Int(sequence) % capacity
        resent[index] = nil
        if var slot = slots[index] {
            slots[index] = nil  // keep the array uniquely referenced while reusing it
            slot.sequence = sequence
            slot.bytes.removeAll(keepingCapacity: true)
            slot.bytes.append(contentsOf: bytes)
            slots[index] = slot
        } else {
            var storage = [UInt8]()
            storage.reserveCapacity(1500)
            storage.append(contentsOf: bytes)
            slots[index] = (sequence, storage)
        }
    }

    /// The stored packet with `sequence`, if it is still in the ring.
    public func packet(_ sequence: UInt16) -> ArraySlice<UInt8>? {
        guard let slot = slots[Int(sequence) % capacity], slot.sequence == sequence else { return nil }
        return slot.bytes[...]
    }

    public mutating func markResent(_ sequence: UInt16, at time: MonotonicTime) {
        guard slots[Int(sequence) % capacity]?.sequence == sequence else { return }
        resent[Int(sequence) % capacity] = time
    }

    public func lastResent(_ sequence: UInt16) -> MonotonicTime? {
        guard slots[Int(sequence) % capacity]?.sequence == sequence else { return nil }
        return resent[Int(sequence) % capacity]
    }

    /// Bytes held (for memory accounting).
    public var retainedBytes: Int { slots.reduce(0) { $0 + ($1?.bytes.capacity ?? 0) } }
}
