internal import ShareBase

/// The packets an `H264FrameAssembler` keeps until their unit is complete,
/// by extended sequence number. Their header extensions and payloads lie
/// back to back in one buffer, emptied whenever nothing is stored (after
/// each unit on a clean path), so a steady stream stores its packets
/// without allocating (StageBenchmarks' unprotect-depacketize counts the
/// allocations). Nothing outside holds a slice of the buffer: a unit's
/// bytes are depacketized into its own array, and its header extension is
/// copied out. A packet is never kept as a slice of the datagram it came
/// in: the receiver reuses that buffer, and a slice would make its next
/// write copy it whole.
struct StoredPackets: Sendable {
    /// A kept packet: its header fields, and where its bytes lie.
    struct Packet: Sendable {
        var timestamp: UInt32
        var marker: Bool
        var arrival: MonotonicTime
        fileprivate var start: Int
        fileprivate var extensionProfile: UInt16?
        fileprivate var extensionLength: Int
        private(set) var payloadLength: Int

        fileprivate init(_ packet: RTPPacket, start: Int, arrival: MonotonicTime) {
            timestamp = packet.timestamp
            marker = packet.marker
            self.arrival = arrival
            self.start = start
            extensionProfile = packet.headerExtension?.profile
            extensionLength = packet.headerExtension?.data.count ?? 0
            payloadLength = packet.payload.count
        }

        fileprivate var length: Int { extensionLength + payloadLength }
    }

    private(set) var packets: [Int64: Packet] = [:]
    private var bytes: [UInt8] = []
    /// Bytes of `bytes` that kept packets still use.
    private var live = 0

    var count: Int { packets.count }
    var isEmpty: Bool { packets.isEmpty }
    var sequences: Dictionary<Int64, Packet>.Keys { packets.keys }
    subscript(sequence: Int64) -> Packet? { packets[sequence] }

    /// Copies `packet`'s header extension and payload in, as `sequence`.
    mutating func keep(_ packet: RTPPacket, as sequence: Int64, arrival: MonotonicTime) {
        if packets.isEmpty {
            bytes.removeAll(keepingCapacity: true)
            live = 0
        } else if bytes.count > 2 * live + 256 * 1024 {
            compact()
        }
        let kept = Packet(packet, start: bytes.count, arrival: arrival)
        bytes.append(contentsOf: packet.headerExtension?.data ?? [])
        bytes.append(contentsOf: packet.payload)
        live += kept.length
        packets[sequence] = kept
    }

    /// Removes a kept packet, giving its bytes up.
    @discardableResult
    mutating func forget(_ sequence: Int64) -> Packet? {
        guard let packet = packets.removeValue(forKey: sequence) else { return nil }
        live -= packet.length
        return packet
    }

    /// A kept packet's payload (valid until the next `keep`).
    func payload(of packet: Packet) -> ArraySlice<UInt8> {
        bytes[packet.start + packet.extensionLength ..< packet.start + packet.length]
    }

    /// A copy of a kept packet's header extension.
    func headerExtension(of packet: Packet) -> RTPHeaderExtension? {
        packet.extensionProfile.map {
            RTPHeaderExtension(profile: $0, data: ArraySlice(bytes[packet.start ..< packet.start + packet.extensionLength]))
        }
    }

    /// Moves the kept packets to the front: a path that never empties the
    /// store (a hole always waited on) keeps it from growing.
    private mutating func compact() {
        var packed: [UInt8] = []
        packed.reserveCapacity(live)
        for sequence in packets.keys.sorted() {
            var packet = packets[sequence]!
            packed.append(contentsOf: bytes[packet.start ..< packet.start + packet.length])
            packet.start = packed.count - packet.length
            packets[sequence] = packet
        }
        bytes = packed
    }
}
