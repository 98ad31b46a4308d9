/// Congestion control feedback (RFC 8888 §3.1): RTPFB, FMT 11. For each
/// reported stream, a run of consecutive sequence numbers with, for each,
/// whether it arrived and when, relative to the report's timestamp.
public struct CongestionControlFeedback: Equatable, Sendable {
    /// One packet's fate: 16 bits on the wire, `R|ECN(2)|ATO(13)`.
    public struct Metric: Equatable, Sendable {
        public var received: Bool
        /// The ECN bits seen (0 when unknown).
        public var ecn: UInt8
        /// Arrival time offset before the report timestamp, in 1/1024 s.
        /// RFC 8888 §3.1: 0x1FFE means that much or more; 0x1FFF means
        /// "not available".
        public var arrivalOffset: UInt16

        public static let lost = Metric(received: false, ecn: 0, arrivalOffset: 0)
        public static let offsetUnavailable: UInt16 = 0x1FFF
        public static let offsetMaximum: UInt16 = 0x1FFE

        public init(received: Bool, ecn: UInt8, arrivalOffset: UInt16) {
            self.received = received
            self.ecn = ecn & 0x3
            self.arrivalOffset = arrivalOffset & 0x1FFF
        }

        init(bits: UInt16) {
            self.init(received: bits & 0x8000 != 0, ecn: UInt8(truncatingIfNeeded: bits >> 13), arrivalOffset: bits & 0x1FFF)
        }

        var bits: UInt16 {
            guard received else { return 0 }
            return 0x8000 | UInt16(ecn & 0x3) << 13 | arrivalOffset & 0x1FFF
        }
    }

    /// The reports for one RTP stream: `metrics[i]` is sequence `beginSequence + i`.
    public struct Block: Equatable, Sendable {
        public var ssrc: UInt32
        public var beginSequence: UInt16
        public var metrics: [Metric]

        public init(ssrc: UInt32, beginSequence: UInt16, metrics: [Metric]) {
            self.ssrc = ssrc
            self.beginSequence = beginSequence
            self.metrics = Array(metrics.prefix(Self.maxReports))
        }

        /// RFC 8888 §3.1: num_reports covers at most 2^14 packets.
        public static let maxReports = 16_384
    }

    public var senderSSRC: UInt32
    public var blocks: [Block]
    /// Middle 32 bits of the NTP-format time the report was made (RFC 8888 §3.1),
    /// on the receiver's clock.
    public var reportTimestamp: UInt32

    public init(senderSSRC: UInt32, blocks: [Block], reportTimestamp: UInt32) {
        self.senderSSRC = senderSSRC
        self.blocks = blocks
        self.reportTimestamp = reportTimestamp
    }

    public static let format: UInt8 = 11

    /// The body after the common header: sender SSRC, blocks, report timestamp.
    init?(body: ArraySlice<UInt8>) {
        var reader = ByteReader(body)
        guard let sender = reader.readUInt32(), reader.remaining >= 4 else { return nil }
        var blocks: [Block] = []
        // Everything but the last word is blocks.
        while reader.remaining > 4 {
            guard let ssrc = reader.readUInt32(), let begin = reader.readUInt16(), let count = reader.readUInt16()
            else { return nil }
            // A num_reports of 0 is how RFC 8888 §3.1 writes 16384 packets.
            let reports = count == 0 ? Block.maxReports : Int(count)
            guard reports <= Block.maxReports, reader.remaining >= reports * 2 + 4 else { return nil }
            var metrics: [Metric] = []
            metrics.reserveCapacity(reports)
            for _ in 0..<reports { metrics.append(Metric(bits: reader.readUInt16()!)) }
            if reports % 2 == 1 { _ = reader.skip(2) }
            blocks.append(Block(ssrc: ssrc, beginSequence: begin, metrics: metrics))
        }
        guard let timestamp = reader.readUInt32(), reader.isAtEnd else { return nil }
        self.init(senderSSRC: sender, blocks: blocks, reportTimestamp: timestamp)
    }

    func appendBody(to out: inout [UInt8]) {
        out.appendUInt32(senderSSRC)
        // An empty block cannot be written: num_reports 0 means 16384.
        for block in blocks where !block.metrics.isEmpty {
            out.appendUInt32(block.ssrc)
            out.appendUInt16(block.beginSequence)
            out.appendUInt16(UInt16(truncatingIfNeeded: block.metrics.count))
            for metric in block.metrics { out.appendUInt16(metric.bits) }
            if block.metrics.count % 2 == 1 { out.appendUInt16(0) }
        }
        out.appendUInt32(reportTimestamp)
    }
}

/// Extended reports (RFC 3611), packet type 207: the two blocks that let a
/// receiver that sends no media measure the round trip (§4.4 and §4.5).
public struct ExtendedReport: Equatable, Sendable {
    /// DLRR sub-block (RFC 3611 §4.5): the echo of one receiver's RRTR.
    public struct DelaySinceLastReceiverReport: Equatable, Sendable {
        public var ssrc: UInt32
        /// Middle 32 bits of the RRTR's NTP timestamp.
        public var lastReceiverReport: UInt32
        /// Delay since that RRTR arrived, in 1/65536 s.
        public var delay: UInt32

        public init(ssrc: UInt32, lastReceiverReport: UInt32, delay: UInt32) {
            self.ssrc = ssrc
            self.lastReceiverReport = lastReceiverReport
            self.delay = delay
        }
    }

    public var ssrc: UInt32
    /// Receiver reference time block (BT 4).
    public var receiverReferenceTime: NTPTimestamp?
    /// DLRR block (BT 5).
    public var delaySinceLastReceiverReports: [DelaySinceLastReceiverReport]

    public init(ssrc: UInt32, receiverReferenceTime: NTPTimestamp? = nil,
                delaySinceLastReceiverReports: [DelaySinceLastReceiverReport] = []) {
        self.ssrc = ssrc
        self.receiverReferenceTime = receiverReferenceTime
        self.delaySinceLastReceiverReports = delaySinceLastReceiverReports
    }

    static let receiverReferenceTimeBlock: UInt8 = 4
    static let dlrrBlock: UInt8 = 5

    /// Parses the body; blocks of other types are skipped by their length.
    init?(body: ArraySlice<UInt8>) {
        var reader = ByteReader(body)
        guard let ssrc = reader.readUInt32() else { return nil }
        self.init(ssrc: ssrc)
        while !reader.isAtEnd {
            guard let type = reader.readUInt8(), reader.readUInt8() != nil, let words = reader.readUInt16(),
                  var block = reader.readSlice(Int(words) * 4).map({ ByteReader($0) })
            else { return nil }
            switch type {
            case Self.receiverReferenceTimeBlock:
                guard words == 2, let ntp = block.readUInt64() else { return nil }
                receiverReferenceTime = NTPTimestamp(rawValue: ntp)
            case Self.dlrrBlock:
                guard words % 3 == 0 else { return nil }
                while let item = block.readUInt32(), let lrr = block.readUInt32(), let dlrr = block.readUInt32() {
                    delaySinceLastReceiverReports.append(.init(ssrc: item, lastReceiverReport: lrr, delay: dlrr))
                }
            default:
                continue
            }
        }
    }

    func appendBody(to out: inout [UInt8]) {
        out.appendUInt32(ssrc)
        if let receiverReferenceTime {
            out.append(Self.receiverReferenceTimeBlock)
            out.append(0)
            out.appendUInt16(2)
            out.appendUInt64(receiverReferenceTime.rawValue)
        }
        if !delaySinceLastReceiverReports.isEmpty {
            let items = delaySinceLastReceiverReports.prefix(1000)
            out.append(Self.dlrrBlock)
            out.append(0)
            out.appendUInt16(UInt16(items.count * 3))
            for item in items {
                out.appendUInt32(item.ssrc)
                out.appendUInt32(item.lastReceiverReport)
                out.appendUInt32(item.delay)
            }
        }
    }
}
