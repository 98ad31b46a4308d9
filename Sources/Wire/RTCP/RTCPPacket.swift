/// Why an RTCP compound packet could not be parsed.
public enum RTCPParseError: Error, Equatable, Sendable {
    case tooShort(Int)
    case badVersion(UInt8)
    /// The length field points past the end of the datagram.
    case badLength(packetType: UInt8, words: Int)
    /// A known packet type whose body is shorter than its fields.
    case truncated(packetType: UInt8)
    case badPadding
}

/// One packet of an RTCP compound packet.
public enum RTCPPacket: Equatable, Sendable {
    case senderReport(SenderReport)
    case receiverReport(ReceiverReport)
    case sourceDescription(SourceDescription)
    case goodbye(Goodbye)
    case nack(GenericNACK)
    case pictureLoss(PictureLossIndication)
    case fullIntraRequest(FullIntraRequest)
    case congestionFeedback(CongestionControlFeedback)
    case extendedReport(ExtendedReport)
    case application(ApplicationPacket)
    /// A type (or feedback format) this implementation does not interpret;
    /// kept so it can be skipped or forwarded, never fatal.
    case unknown(packetType: UInt8, count: UInt8, body: [UInt8])

    public enum PacketType {
        public static let senderReport: UInt8 = 200
        public static let receiverReport: UInt8 = 201
        public static let sourceDescription: UInt8 = 202
        public static let goodbye: UInt8 = 203
        public static let applicationDefined: UInt8 = 204
        /// RFC 4585 §6.1: transport layer feedback.
        public static let transportFeedback: UInt8 = 205
        /// RFC 4585 §6.1: payload-specific feedback.
        public static let payloadFeedback: UInt8 = 206
        /// RFC 3611: extended reports.
        public static let extendedReport: UInt8 = 207
    }

    /// True for the packet types of RTCP (RFC 5761 §4: 192-223 when demultiplexing with RTP).
    public static func isRTCP(payloadTypeByte byte: UInt8) -> Bool { (192...223).contains(byte) }
}

extension RTCPPacket {
    /// Parses a compound packet (RFC 3550 §6.1): packets back to back, each
    /// with its own length. Only the last may be padded.
    public static func parseCompound(_ bytes: ArraySlice<UInt8>) throws(RTCPParseError) -> [RTCPPacket] {
        guard bytes.count >= 4 else { throw .tooShort(bytes.count) }
        var packets: [RTCPPacket] = []
        var reader = ByteReader(bytes)
        while !reader.isAtEnd {
            guard let first = reader.readUInt8(), let type = reader.readUInt8(), let words = reader.readUInt16() else {
                throw .tooShort(reader.remaining)
            }
            guard first >> 6 == 2 else { throw .badVersion(first >> 6) }
            guard var body = reader.readSlice(Int(words) * 4) else {
                throw .badLength(packetType: type, words: Int(words))
            }
            if first & 0x20 != 0 {
                guard let pad = body.last, pad > 0, Int(pad) <= body.count else { throw .badPadding }
                body = body.dropLast(Int(pad))
            }
            packets.append(try parse(type: type, count: first & 0x1F, body: body))
        }
        return packets
    }

    public static func parseCompound(_ bytes: [UInt8]) throws(RTCPParseError) -> [RTCPPacket] {
        try parseCompound(bytes[...])
    }

    private static func parse(type: UInt8, count: UInt8, body: ArraySlice<UInt8>) throws(RTCPParseError) -> RTCPPacket {
        var reader = ByteReader(body)
        switch type {
        case PacketType.senderReport:
            guard let ssrc = reader.readUInt32(), let ntp = reader.readUInt64(), let rtp = reader.readUInt32(),
                  let packets = reader.readUInt32(), let octets = reader.readUInt32(),
                  let reports = readReports(Int(count), from: &reader)
            else { throw .truncated(packetType: type) }
            return .senderReport(SenderReport(ssrc: ssrc, ntpTimestamp: NTPTimestamp(rawValue: ntp), rtpTimestamp: rtp,
                                              packetCount: packets, octetCount: octets, reports: reports,
                                              profileExtension: Array(reader.readRest())))
        case PacketType.receiverReport:
            guard let ssrc = reader.readUInt32(), let reports = readReports(Int(count), from: &reader) else {
                throw .truncated(packetType: type)
            }
            return .receiverReport(ReceiverReport(ssrc: ssrc, reports: reports,
                                                  profileExtension: Array(reader.readRest())))
        case PacketType.sourceDescription:
            return .sourceDescription(try parseSDES(count: Int(count), reader: &reader))
        case PacketType.goodbye:
            var sources: [UInt32] = []
            for _ in 0..<count {
                guard let ssrc = reader.readUInt32() else { throw .truncated(packetType: type) }
                sources.append(ssrc)
            }
            var reason: [UInt8]?
            if let length = reader.readUInt8() {
                guard let text = reader.readSlice(Int(length)) else { throw .truncated(packetType: type) }
                reason = Array(text)
            }
            var bye = Goodbye(sources: sources)
            bye.reason = reason
            return .goodbye(bye)
        case PacketType.transportFeedback where count == 1:
            guard let sender = reader.readUInt32(), let media = reader.readUInt32() else {
                throw .truncated(packetType: type)
            }
            var entries: [GenericNACK.Entry] = []
            while reader.remaining >= 4 {
                entries.append(GenericNACK.Entry(packetID: reader.readUInt16()!, lostBitmask: reader.readUInt16()!))
            }
            return .nack(GenericNACK(senderSSRC: sender, mediaSSRC: media, entries: entries))
        case PacketType.transportFeedback where count == CongestionControlFeedback.format:
            guard let feedback = CongestionControlFeedback(body: body) else { throw .truncated(packetType: type) }
            return .congestionFeedback(feedback)
        case PacketType.extendedReport:
            guard let report = ExtendedReport(body: body) else { throw .truncated(packetType: type) }
            return .extendedReport(report)
        case PacketType.applicationDefined:
            // RFC 3550 §6.7: SSRC, a four-character name, then data in 32-bit words.
            guard let ssrc = reader.readUInt32(), let name = reader.readSlice(4) else { throw .truncated(packetType: type) }
            return .application(ApplicationPacket(subtype: count, ssrc: ssrc, name: Array(name), data: Array(reader.readRest())))
        case PacketType.payloadFeedback where count == 1:
            guard let sender = reader.readUInt32(), let media = reader.readUInt32() else {
                throw .truncated(packetType: type)
            }
            return .pictureLoss(PictureLossIndication(senderSSRC: sender, mediaSSRC: media))
        case PacketType.payloadFeedback where count == 4:
            guard let sender = reader.readUInt32(), let media = reader.readUInt32() else {
                throw .truncated(packetType: type)
            }
            var entries: [FullIntraRequest.Entry] = []
            while reader.remaining >= 8 {
                let ssrc = reader.readUInt32()!
                let sequence = reader.readUInt8()!
                _ = reader.skip(3)
                entries.append(FullIntraRequest.Entry(ssrc: ssrc, sequenceNumber: sequence))
            }
            return .fullIntraRequest(FullIntraRequest(senderSSRC: sender, mediaSSRC: media, entries: entries))
        default:
            return .unknown(packetType: type, count: count, body: Array(body))
        }
    }

    private static func readReports(_ count: Int, from reader: inout ByteReader) -> [ReceptionReport]? {
        var reports: [ReceptionReport] = []
        reports.reserveCapacity(count)
        for _ in 0..<count {
            guard let report = ReceptionReport(&reader) else { return nil }
            reports.append(report)
        }
        return reports
    }

    private static func parseSDES(count: Int, reader: inout ByteReader) throws(RTCPParseError) -> SourceDescription {
        let type = PacketType.sourceDescription
        var chunks: [SourceDescription.Chunk] = []
        for _ in 0..<count {
            guard let ssrc = reader.readUInt32() else { throw .truncated(packetType: type) }
            var items: [SourceDescription.Item] = []
            var consumed = 0
            while true {
                guard let itemType = reader.readUInt8() else { throw .truncated(packetType: type) }
                consumed += 1
                if itemType == 0 {
                    // RFC 3550 §6.5: null octets pad the chunk to a 32-bit boundary.
                    let pad = (4 - consumed % 4) % 4
                    guard reader.skip(min(pad, reader.remaining)) else { throw .truncated(packetType: type) }
                    break
                }
                guard let length = reader.readUInt8(), let value = reader.readSlice(Int(length)) else {
                    throw .truncated(packetType: type)
                }
                consumed += 1 + Int(length)
                items.append(SourceDescription.Item(type: itemType, value: Array(value)))
            }
            chunks.append(SourceDescription.Chunk(ssrc: ssrc, items: items))
        }
        return SourceDescription(chunks: chunks)
    }
}

extension RTCPPacket {
    /// Serializes `packets` back to back as one compound packet.
    public static func serializeCompound(_ packets: [RTCPPacket]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(packets.count * 32)
        for packet in packets { packet.append(to: &out) }
        return out
    }

    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        append(to: &out)
        return out
    }

    /// Appends this packet, header included, to `out`.
    public func append(to out: inout [UInt8]) {
        let start = out.count
        let (type, count) = header
        out.append(2 << 6 | count & 0x1F)
        out.append(type)
        out.appendUInt16(0)  // length, patched below
        switch self {
        case .senderReport(let sr):
            out.appendUInt32(sr.ssrc)
            out.appendUInt64(sr.ntpTimestamp.rawValue)
            out.appendUInt32(sr.rtpTimestamp)
            out.appendUInt32(sr.packetCount)
            out.appendUInt32(sr.octetCount)
            for report in sr.reports.prefix(31) { report.append(to: &out) }
            out.append(contentsOf: sr.profileExtension)
        case .receiverReport(let rr):
            out.appendUInt32(rr.ssrc)
            for report in rr.reports.prefix(31) { report.append(to: &out) }
            out.append(contentsOf: rr.profileExtension)
        case .sourceDescription(let sdes):
            for chunk in sdes.chunks.prefix(31) {
                let chunkStart = out.count
                out.appendUInt32(chunk.ssrc)
                for item in chunk.items {
                    out.append(item.type)
                    out.append(UInt8(truncatingIfNeeded: min(item.value.count, 255)))
                    out.append(contentsOf: item.value.prefix(255))
                }
                // At least one null octet ends the list, then pad to 32 bits.
                out.append(0)
                out.appendZeros((4 - (out.count - chunkStart) % 4) % 4)
            }
        case .goodbye(let bye):
            for ssrc in bye.sources.prefix(31) { out.appendUInt32(ssrc) }
            if let reason = bye.reason {
                out.append(UInt8(truncatingIfNeeded: min(reason.count, 255)))
                out.append(contentsOf: reason.prefix(255))
            }
        case .nack(let nack):
            out.appendUInt32(nack.senderSSRC)
            out.appendUInt32(nack.mediaSSRC)
            for entry in nack.entries {
                out.appendUInt16(entry.packetID)
                out.appendUInt16(entry.lostBitmask)
            }
        case .pictureLoss(let pli):
            out.appendUInt32(pli.senderSSRC)
            out.appendUInt32(pli.mediaSSRC)
        case .fullIntraRequest(let fir):
            out.appendUInt32(fir.senderSSRC)
            out.appendUInt32(fir.mediaSSRC)
            for entry in fir.entries {
                out.appendUInt32(entry.ssrc)
                out.append(entry.sequenceNumber)
                out.appendZeros(3)
            }
        case .congestionFeedback(let feedback):
            feedback.appendBody(to: &out)
        case .extendedReport(let report):
            report.appendBody(to: &out)
        case .application(let app):
            out.appendUInt32(app.ssrc)
            out.append(contentsOf: (app.name + [0x20, 0x20, 0x20, 0x20]).prefix(4))
            out.append(contentsOf: app.data)
        case .unknown(_, _, let body):
            out.append(contentsOf: body)
        }
        out.appendZeros((4 - (out.count - start) % 4) % 4)
        let words = (out.count - start) / 4 - 1
        out[start + 2] = UInt8(truncatingIfNeeded: words >> 8)
        out[start + 3] = UInt8(truncatingIfNeeded: words)
    }

    /// Packet type and the 5-bit count/format field.
    private var header: (UInt8, UInt8) {
        switch self {
        case .senderReport(let sr): (PacketType.senderReport, UInt8(min(sr.reports.count, 31)))
        case .receiverReport(let rr): (PacketType.receiverReport, UInt8(min(rr.reports.count, 31)))
        case .sourceDescription(let sdes): (PacketType.sourceDescription, UInt8(min(sdes.chunks.count, 31)))
        case .goodbye(let bye): (PacketType.goodbye, UInt8(min(bye.sources.count, 31)))
        case .nack: (PacketType.transportFeedback, 1)
        case .pictureLoss: (PacketType.payloadFeedback, 1)
        case .fullIntraRequest: (PacketType.payloadFeedback, 4)
        case .congestionFeedback: (PacketType.transportFeedback, CongestionControlFeedback.format)
        case .extendedReport: (PacketType.extendedReport, 0)
        case .application(let app): (PacketType.applicationDefined, app.subtype & 0x1F)
        case .unknown(let type, let count, _): (type, count & 0x1F)
        }
    }
}
