// The RTCP packets of RFC 3550 §6: reports, source descriptions, BYE.

/// A reception report block (RFC 3550 §6.4.1).
public struct ReceptionReport: Equatable, Sendable {
    public var ssrc: UInt32
    /// Fraction of packets lost since the last report, in 1/256ths.
    public var fractionLost: UInt8
    /// Cumulative packets lost, a 24-bit signed value (duplicates can make it negative).
    public var cumulativeLost: Int32
    /// Extended highest sequence number received.
    public var highestSequence: UInt32
    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the last SR's NTP timestamp.
    public var lastSenderReport: UInt32
    /// Delay since that SR, in 1/65536 seconds.
    public var delaySinceLastSenderReport: UInt32

    public init(ssrc: UInt32, fractionLost: UInt8, cumulativeLost: Int32, highestSequence: UInt32, jitter: UInt32,
                lastSenderReport: UInt32, delaySinceLastSenderReport: UInt32) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = max(min(cumulativeLost, 0x7F_FFFF), -0x80_0000)
        self.highestSequence = highestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    static let size = 24

    init?(_ reader: inout ByteReader) {
        guard let ssrc = reader.readUInt32(), let fraction = reader.readUInt8(), let lost = reader.readUInt24(),
              let highest = reader.readUInt32(), let jitter = reader.readUInt32(), let lsr = reader.readUInt32(),
              let dlsr = reader.readUInt32()
        else { return nil }
        // Sign-extend the 24-bit cumulative loss.
        let signed = Int32(bitPattern: lost << 8) >> 8
        self.init(ssrc: ssrc, fractionLost: fraction, cumulativeLost: signed, highestSequence: highest, jitter: jitter,
                  lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }

    func append(to out: inout [UInt8]) {
        out.appendUInt32(ssrc)
        out.append(fractionLost)
        out.appendUInt24(UInt32(bitPattern: cumulativeLost) & 0xFF_FFFF)
        out.appendUInt32(highestSequence)
        out.appendUInt32(jitter)
        out.appendUInt32(lastSenderReport)
        out.appendUInt32(delaySinceLastSenderReport)
    }
}

/// SR: sender report (RFC 3550 §6.4.1), packet type 200.
public struct SenderReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var ntpTimestamp: NTPTimestamp
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var reports: [ReceptionReport]
    /// Profile-specific extension words after the report blocks, kept as they came.
    public var profileExtension: [UInt8]

    public init(ssrc: UInt32, ntpTimestamp: NTPTimestamp, rtpTimestamp: UInt32, packetCount: UInt32,
                octetCount: UInt32, reports: [ReceptionReport] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
        self.profileExtension = profileExtension
    }
}

/// RR: receiver report (RFC 3550 §6.4.2), packet type 201.
public struct ReceiverReport: Equatable, Sendable {
    public var ssrc: UInt32
    public var reports: [ReceptionReport]
    public var profileExtension: [UInt8]

    public init(ssrc: UInt32, reports: [ReceptionReport] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.reports = reports
        self.profileExtension = profileExtension
    }
}

/// SDES: source description (RFC 3550 §6.5), packet type 202.
public struct SourceDescription: Equatable, Sendable {
    public struct Item: Equatable, Sendable {
        /// Item type: 1 CNAME, 2 NAME, ... 8 PRIV.
        public var type: UInt8
        public var value: [UInt8]

        public init(type: UInt8, value: [UInt8]) {
            self.type = type
            self.value = value
        }

        public static let cname: UInt8 = 1
    }

    public struct Chunk: Equatable, Sendable {
        public var ssrc: UInt32
        public var items: [Item]

        public init(ssrc: UInt32, items: [Item]) {
            self.ssrc = ssrc
            self.items = items
        }
    }

    public var chunks: [Chunk]

    public init(chunks: [Chunk]) { self.chunks = chunks }

    /// One chunk with a CNAME item.
    public init(ssrc: UInt32, cname: String) {
        chunks = [Chunk(ssrc: ssrc, items: [Item(type: Item.cname, value: Array(cname.utf8.prefix(255)))])]
    }

    /// The CNAME of `ssrc`, if described.
    public func cname(of ssrc: UInt32) -> String? {
        guard let item = chunks.first(where: { $0.ssrc == ssrc })?.items.first(where: { $0.type == Item.cname })
        else { return nil }
        return String(decoding: item.value, as: UTF8.self)
    }
}

/// BYE (RFC 3550 §6.6), packet type 203.
public struct Goodbye: Equatable, Sendable {
    public var sources: [UInt32]
    public var reason: [UInt8]?

    public init(sources: [UInt32], reason: String? = nil) {
        self.sources = sources
        self.reason = reason.map { Array($0.utf8.prefix(255)) }
    }
}
