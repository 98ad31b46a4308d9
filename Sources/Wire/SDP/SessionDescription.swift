internal import ShareBase

/// Why an SDP could not be used.
public enum SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// There is no m=video or m=audio section.
    case noMediaSection
    /// A line that is not `type=value`, or a value that does not parse.
    case malformedLine(String)
    /// A codec share does not receive (it takes H264 and opus).
    case unsupportedCodec(String)
    /// No a=crypto line: share only receives SRTP.
    case missingCrypto
    /// An a=crypto line with an unknown suite or an unusable key.
    case badCrypto(String)

    public var description: String {
        switch self {
        case .noMediaSection: "the SDP has no m=video or m=audio section"
        case .malformedLine(let line): "malformed SDP line: \(line)"
        case .unsupportedCodec(let codec): "unsupported codec \(codec) (share receives H264 and opus)"
        case .missingCrypto: "the SDP has no a=crypto line: share only receives SRTP"
        case .badCrypto(let line): "unusable a=crypto line: \(line)"
        }
    }
}

/// One m= section of an SDP (RFC 8866) as far as RTP/SAVP streaming needs.
public struct MediaDescription: Sendable, Equatable {
    /// Which medium an m= section describes.
    public enum Kind: String, Sendable {
        /// An m=video section.
        case video
        /// An m=audio section.
        case audio
    }

    /// Video or audio.
    public var kind: Kind
    /// The port the medium is sent to.
    public var port: Int
    /// RTP/SAVP, or RTP/AVP for an unencrypted description.
    public var transport: String
    /// The RTP payload type.
    public var payloadType: UInt8
    /// Encoding name as in a=rtpmap (H264, opus).
    public var codec: String
    /// The RTP clock rate (90000 for video, 48000 for Opus).
    public var clockRate: Int
    /// Audio channels (Opus: always 2 in the SDP, RFC 7587).
    public var channels: Int?
    /// a=fmtp parameters in order.
    public var formatParameters: [(String, String)]
    /// a=crypto: suite name and the base64 key-salt of its inline: key.
    public var crypto: (suite: String, keySalt: String)?
    /// a=extmap: id → URI.
    public var extensions: [(id: Int, uri: String)]
    /// Whether RTCP shares the media port (a=rtcp-mux).
    public var rtcpMux: Bool
    /// a=rtcp (RFC 3605): RTCP on a port of its own rather than RTP's + 1
    /// (and not muxed).
    public var rtcpPort: Int?
    /// a=ssrc (RFC 5576): the sender's SSRC and CNAME, when announced.
    public var source: (ssrc: UInt32, cname: String)?
    /// Retransmissions (RFC 4588 §8.6): an `rtx` payload type with apt= this
    /// section's, and its SSRC (a=ssrc-group:FID) when announced.
    public var retransmission: (payloadType: UInt8, ssrc: UInt32?)?
    /// FlexFEC repairs (RFC 8627 §5.1.1: `flexfec` payload type,
    /// a=ssrc-group:FEC-FR media repair), when sent.
    public var forwardErrorCorrection: (payloadType: UInt8, ssrc: UInt32?)?
    /// RTCP feedback the sender answers (RFC 4585 §4.2, RFC 8888 §6):
    /// NACK, PLI, FIR and congestion control feedback. Written, not parsed.
    public var feedback: [String] = []

    /// A media section with these fields.
    public init(kind: Kind, port: Int, transport: String = "RTP/SAVP", payloadType: UInt8, codec: String,
                clockRate: Int, channels: Int? = nil, formatParameters: [(String, String)] = [],
                crypto: (suite: String, keySalt: String)? = nil, extensions: [(id: Int, uri: String)] = [],
                rtcpMux: Bool = true, source: (ssrc: UInt32, cname: String)? = nil) {
        self.kind = kind
        self.port = port
        self.transport = transport
        self.payloadType = payloadType
        self.codec = codec
        self.clockRate = clockRate
        self.channels = channels
        self.formatParameters = formatParameters
        self.crypto = crypto
        self.extensions = extensions
        self.rtcpMux = rtcpMux
        self.source = source
    }

    /// The value of the a=fmtp parameter `name`, if present.
    public func parameter(_ name: String) -> String? {
        formatParameters.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// SPS and PPS from sprop-parameter-sets (RFC 6184 §8.1).
    public var parameterSets: [[UInt8]] {
        guard let sets = parameter("sprop-parameter-sets") else { return [] }
        return sets.split(separator: ",").compactMap { Base64.decode($0) }.filter { !$0.isEmpty }
    }

    /// The id of the extension with `uri`, if negotiated.
    public func extensionID(_ uri: String) -> Int? { extensions.first { $0.uri == uri }?.id }

    public static func == (a: Self, b: Self) -> Bool {
        a.kind == b.kind && a.port == b.port && a.transport == b.transport && a.payloadType == b.payloadType
            && a.codec == b.codec && a.clockRate == b.clockRate && a.channels == b.channels
            && a.formatParameters.elementsEqual(b.formatParameters) { $0 == $1 }
            && a.crypto?.suite == b.crypto?.suite && a.crypto?.keySalt == b.crypto?.keySalt
            && a.extensions.elementsEqual(b.extensions) { $0 == $1 } && a.rtcpMux == b.rtcpMux && a.rtcpPort == b.rtcpPort
            && a.source?.ssrc == b.source?.ssrc && a.source?.cname == b.source?.cname
            && a.retransmission?.payloadType == b.retransmission?.payloadType
            && a.retransmission?.ssrc == b.retransmission?.ssrc && a.feedback == b.feedback
            && a.forwardErrorCorrection?.payloadType == b.forwardErrorCorrection?.payloadType
            && a.forwardErrorCorrection?.ssrc == b.forwardErrorCorrection?.ssrc
    }
}

/// A session description: the connection address and the media sections.
public struct SessionDescription: Sendable, Equatable {
    /// The session's name (s=).
    public var sessionName: String
    /// c= address of the session (where the media goes).
    public var connectionAddress: String
    /// The m= sections, in order.
    public var media: [MediaDescription]

    /// A description with these fields.
    public init(sessionName: String = "share", connectionAddress: String, media: [MediaDescription]) {
        self.sessionName = sessionName
        self.connectionAddress = connectionAddress
        self.media = media
    }

    /// The first video section.
    public var video: MediaDescription? { media.first { $0.kind == .video } }
    /// The audio sections, in order.
    public var audio: [MediaDescription] { media.filter { $0.kind == .audio } }

    /// The SDP text, CRLF line endings (RFC 8866 §5).
    public func serialized(sessionID: UInt64 = 1) -> String {
        // RFC 8866 §5.7: an unknown address is written 0.0.0.0, never left out.
        let address = connectionAddress.isEmpty ? "0.0.0.0" : connectionAddress
        let ipVersion = address.contains(":") ? "IP6" : "IP4"
        var lines = [
            "v=0",
            "o=- \(sessionID) 1 IN \(ipVersion) \(address)",
            "s=\(sessionName)",
            "c=IN \(ipVersion) \(address)",
            "t=0 0",
        ]
        for m in media {
            let formats = [m.payloadType] + (m.retransmission.map { [$0.payloadType] } ?? [])
                + (m.forwardErrorCorrection.map { [$0.payloadType] } ?? [])
            lines.append("m=\(m.kind.rawValue) \(m.port) \(m.transport) " + formats.map { "\($0)" }.joined(separator: " "))
            // No encoding known (no rtpmap was given, as for a static payload type): none written.
            if !m.codec.isEmpty {
                lines.append("a=rtpmap:\(m.payloadType) \(m.codec)/\(m.clockRate)\(m.channels.map { "/\($0)" } ?? "")")
            }
            if !m.formatParameters.isEmpty {
                lines.append("a=fmtp:\(m.payloadType) " + m.formatParameters.map { "\($0.0)=\($0.1)" }.joined(separator: ";"))
            }
            for item in m.feedback { lines.append("a=rtcp-fb:\(m.payloadType) \(item)") }
            if let rtx = m.retransmission {
                lines.append("a=rtpmap:\(rtx.payloadType) rtx/\(m.clockRate)")
                lines.append("a=fmtp:\(rtx.payloadType) apt=\(m.payloadType)")
            }
            if let fec = m.forwardErrorCorrection {
                lines.append("a=rtpmap:\(fec.payloadType) flexfec/\(m.clockRate)")
                lines.append("a=fmtp:\(fec.payloadType) repair-window=2000000")
            }
            if let port = m.rtcpPort { lines.append("a=rtcp:\(port)") }
            if m.rtcpMux { lines.append("a=rtcp-mux") }
            for ext in m.extensions { lines.append("a=extmap:\(ext.id) \(ext.uri)") }
            if let crypto = m.crypto { lines.append("a=crypto:1 \(crypto.suite) inline:\(crypto.keySalt)") }
            if let source = m.source {
                if let rtx = m.retransmission?.ssrc { lines.append("a=ssrc-group:FID \(source.ssrc) \(rtx)") }
                lines.append("a=ssrc:\(source.ssrc) cname:\(source.cname)")
                if let rtx = m.retransmission?.ssrc { lines.append("a=ssrc:\(rtx) cname:\(source.cname)") }
                if let fec = m.forwardErrorCorrection?.ssrc {
                    lines.append("a=ssrc-group:FEC-FR \(source.ssrc) \(fec)")
                    lines.append("a=ssrc:\(fec) cname:\(source.cname)")
                }
            }
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Parses what ffmpeg, GStreamer and `share` write. Unknown lines are ignored.
    public init(parsing text: String) throws(SDPError) {
        var name = "-"
        var sessionAddress = ""
        var media: [MediaDescription] = []
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters()
            guard line.count >= 2, line.dropFirst().first == "=" else {
                if line.isEmpty { continue }
                throw .malformedLine(line)
            }
            // RFC 8866 §9: fields are separated by single spaces; a control
            // character (a tab, NUL, C1) inside a line is no SDP of anyone's.
            guard !line.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
                throw .malformedLine(line)
            }
            let value = String(line.dropFirst(2))
            switch line.first {
            case "s": name = value
            case "c":
                let parts = value.split(separator: " ")
                guard parts.count >= 3 else { throw .malformedLine(line) }
                // Multicast addresses may carry /ttl.
                let address = String(parts[2].split(separator: "/").first ?? "")
                // Session level, else the first media level one (ffmpeg writes c= per media).
                if media.isEmpty || sessionAddress.isEmpty { sessionAddress = address }
            case "m":
                let parts = value.split(separator: " ")
                guard parts.count >= 4, let kind = MediaDescription.Kind(rawValue: String(parts[0])),
                      let port = Int(parts[1]), let pt = UInt8(parts[3])
                else {
                    // A media kind we do not handle (application, text): skip its section.
                    media.append(MediaDescription(kind: .video, port: -1, payloadType: 0, codec: "", clockRate: 0))
                    continue
                }
                media.append(MediaDescription(kind: kind, port: port, transport: String(parts[2]), payloadType: pt,
                                              codec: "", clockRate: 0, rtcpMux: false))
            case "a":
                guard !media.isEmpty else { continue }
                try Self.apply(attribute: value, line: line, to: &media[media.count - 1])
            default:
                continue
            }
        }
        media.removeAll { $0.port < 0 }
        guard !media.isEmpty else { throw .noMediaSection }
        self.init(sessionName: name, connectionAddress: sessionAddress, media: media)
    }

    private static func apply(attribute: String, line: String, to m: inout MediaDescription) throws(SDPError) {
        let (key, rest) = attribute.splitOnce(":")
        switch key {
        case "rtpmap":
            let (pt, encoding) = rest.splitOnce(" ")
            if let number = UInt8(pt), number != m.payloadType, encoding.lowercased().hasPrefix("rtx/") {
                m.retransmission = (number, m.retransmission?.ssrc)
                return
            }
            if let number = UInt8(pt), number != m.payloadType, encoding.lowercased().hasPrefix("flexfec/") {
                m.forwardErrorCorrection = (number, m.forwardErrorCorrection?.ssrc)
                return
            }
            guard UInt8(pt) == m.payloadType else { return }
            let fields = encoding.split(separator: "/")
            guard fields.count >= 2, let rate = Int(fields[1]) else { throw .malformedLine(line) }
            m.codec = String(fields[0])
            m.clockRate = rate
            m.channels = fields.count > 2 ? Int(fields[2]) : nil
        case "fmtp":
            let (pt, parameters) = rest.splitOnce(" ")
            guard UInt8(pt) == m.payloadType else { return }
            m.formatParameters = parameters.split(separator: ";").map {
                let (k, v) = String($0).trimmingCharacters().splitOnce("=")
                return (k, v)
            }
        case "rtcp-mux":
            m.rtcpMux = true
        case "rtcp":
            // RFC 3605: a=rtcp:<port> [<nettype> <addrtype> <address>]
            guard let port = Int(rest.split(separator: " ").first ?? ""), (1...65535).contains(port) else {
                throw .malformedLine(line)
            }
            m.rtcpPort = port
        case "extmap":
            let (id, uri) = rest.splitOnce(" ")
            if let number = Int(id.split(separator: "/").first ?? "") {
                m.extensions.append((number, String(uri.split(separator: " ").first ?? "")))
            }
        case "ssrc-group":
            // RFC 5576 §4.2 with RFC 4588 §8.7's FID: the media SSRC, then its repairs.
            let fields = rest.split(separator: " ")
            if fields.count == 3, let media = UInt32(fields[1]), let repair = UInt32(fields[2]) {
                if fields[0] == "FID", let rtx = m.retransmission { m.retransmission = (rtx.payloadType, repair) }
                if fields[0] == "FEC-FR", let fec = m.forwardErrorCorrection { m.forwardErrorCorrection = (fec.payloadType, repair) }
                if m.source == nil { m.source = (media, "") }
            }
        case "ssrc":
            // RFC 5576 §4.1: a=ssrc:<ssrc-id> <attribute>:<value>
            let (id, attribute) = rest.splitOnce(" ")
            if let ssrc = UInt32(id), m.source == nil || (m.source?.ssrc == ssrc && m.source?.cname == "") {
                let (name, value) = attribute.splitOnce(":")
                m.source = (ssrc, name == "cname" ? value : "")
            }
        case "crypto":
            // RFC 4568 §9.1: a=crypto:<tag> <suite> inline:<key||salt>[|lifetime][|MKI:len]
            let fields = rest.split(separator: " ")
            guard fields.count >= 3, fields[2].hasPrefix("inline:") else { throw .badCrypto(line) }
            guard m.crypto == nil else { return }  // first offer wins
            let keySalt = fields[2].dropFirst("inline:".count).split(separator: "|").first ?? ""
            m.crypto = (String(fields[1]), String(keySalt))
        default:
            return
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing white space (no Foundation here).
    package func trimmingCharacters() -> String {
        var s = self[...]
        while let c = s.first, c.isWhitespace { s = s.dropFirst() }
        while let c = s.last, c.isWhitespace { s = s.dropLast() }
        return String(s)
    }

    /// Splits at the first `separator`: ("a:b:c", ":") → ("a", "b:c").
    func splitOnce(_ separator: Character) -> (String, String) {
        guard let index = firstIndex(of: separator) else { return (String(self), "") }
        return (String(self[..<index]), String(self[self.index(after: index)...]))
    }
}
