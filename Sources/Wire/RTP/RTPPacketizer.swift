/// Owns one outgoing RTP stream's header state (RFC 3550 §5.1): SSRC,
/// payload type, sequence number and the marker bit. Knows nothing of codecs.
public struct RTPPacketizer: Sendable {
    public let ssrc: UInt32
    public let payloadType: UInt8
    public let clockRate: UInt32
    /// The sequence number the next packet gets.
    public private(set) var nextSequenceNumber: UInt16
    /// Packets and payload octets sent, for sender reports (RFC 3550 §6.4.1).
    public private(set) var packetCount: UInt32 = 0
    public private(set) var octetCount: UInt32 = 0

    public init(ssrc: UInt32, payloadType: UInt8, clockRate: UInt32, initialSequenceNumber: UInt16) {
        self.ssrc = ssrc
        self.payloadType = payloadType & 0x7F
        self.clockRate = clockRate
        self.nextSequenceNumber = initialSequenceNumber
    }

    /// Starts the next packet in `buffer`: clears it, writes the header with
    /// `extensionData` (already RFC 8285 encoded) and returns the packet's
    /// sequence number. The caller appends the payload.
    @discardableResult
    public mutating func beginPacket(in buffer: inout PacketBuffer, timestamp: UInt32, marker: Bool,
                                     headerExtension: RTPHeaderExtension? = nil) -> UInt16 {
        let sequence = nextSequenceNumber
        nextSequenceNumber &+= 1
        buffer.removeAll()
        buffer.append(2 << 6 | (headerExtension == nil ? 0 : 0x10))
        buffer.append((marker ? 0x80 : 0) | payloadType)
        buffer.appendUInt16(sequence)
        buffer.appendUInt32(timestamp)
        buffer.appendUInt32(ssrc)
        if let headerExtension {
            buffer.appendUInt16(headerExtension.profile)
            buffer.appendUInt16(UInt16(truncatingIfNeeded: headerExtension.data.count / 4))
            buffer.append(slice: headerExtension.data)
        }
        return sequence
    }

    /// Accounts a finished packet of `payloadSize` bytes for sender reports.
    public mutating func didSend(payloadSize: Int) {
        packetCount &+= 1
        octetCount &+= UInt32(truncatingIfNeeded: payloadSize)
    }

    /// Size of the header `beginPacket` writes with `headerExtension`.
    public static func headerSize(headerExtension: RTPHeaderExtension?) -> Int {
        RTPPacket.fixedHeaderSize + (headerExtension.map { 4 + $0.data.count } ?? 0)
    }
}
