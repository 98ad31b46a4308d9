// Feedback messages of RFC 4585 §6 and RFC 5104 §4.3: NACK, PLI, FIR.

/// Generic NACK (RFC 4585 §6.2.1): RTPFB, FMT 1.
public struct GenericNACK: Equatable, Sendable {
    /// One FCI entry: a packet id and a bitmask of the 16 following lost packets.
    public struct Entry: Equatable, Sendable {
        public var packetID: UInt16
        public var lostBitmask: UInt16

        public init(packetID: UInt16, lostBitmask: UInt16) {
            self.packetID = packetID
            self.lostBitmask = lostBitmask
        }
    }

    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public var entries: [Entry]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }

    /// Packs lost sequence numbers (in sending order) into as few entries as possible.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lost: [UInt16]) {
        var entries: [Entry] = []
        for sequence in lost {
            if var last = entries.last {
                let offset = sequence &- last.packetID
                // RFC 4585 §6.2.1: bit i of BLP reports packet PID+i+1.
                if offset >= 1 && offset <= 16 {
                    last.lostBitmask |= 1 << (offset - 1)
                    entries[entries.count - 1] = last
                    continue
                }
                if offset == 0 { continue }
            }
            entries.append(Entry(packetID: sequence, lostBitmask: 0))
        }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, entries: entries)
    }

    /// Every sequence number the entries report lost.
    public var lostSequenceNumbers: [UInt16] {
        var out: [UInt16] = []
        for entry in entries {
            out.append(entry.packetID)
            for bit in 0..<16 where entry.lostBitmask & (1 << bit) != 0 {
                out.append(entry.packetID &+ UInt16(bit + 1))
            }
        }
        return out
    }
}

/// Picture loss indication (RFC 4585 §6.3.1): PSFB, FMT 1, no FCI.
public struct PictureLossIndication: Equatable, Sendable {
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32

    public init(senderSSRC: UInt32, mediaSSRC: UInt32) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }
}

/// Full intra request (RFC 5104 §4.3.1): PSFB, FMT 4.
public struct FullIntraRequest: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public var ssrc: UInt32
        public var sequenceNumber: UInt8

        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    public var senderSSRC: UInt32
    /// RFC 5104 §4.3.1.2: "SHALL be set to 0" by senders; kept as received.
    public var mediaSSRC: UInt32
    public var entries: [Entry]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }
}
