import ShareCongestion
import ShareFanout
import ShareHandshake
import ShareSRTP
import ShareSession
import ShareWire
import ShareBase

/// The invariants each fuzz target checks on arbitrary bytes. A violated
/// invariant traps (so libFuzzer records the input); a parser that traps on
/// its own is a bug of the same kind. Shared by the libFuzzer driver and the
/// corpus replay test.
public enum FuzzChecks {
    public static let targets: [String: @Sendable ([UInt8]) -> Void] = [
        "rtp": rtp, "rtcp": rtcp, "h264": h264, "srtp": srtp, "fec": fec, "congestion": congestion,
        "handshake": handshake, "sdp": sdp, "session": session, "control": control, "opus": opus,
        "cursor": cursor, "knownpeers": knownPeers, "http": http,
    ]

    /// The pointer sent apart: the input's datagrams read as RTCP, their APP
    /// packets fed to a receiver's assembler as positions and shape parts. A
    /// shape it completes is whole (its pixels fill its sides, at most 256 a
    /// side); wherever a position puts it, the rows it covers lie on the
    /// picture, on a small picture and a 4K one alike.
    public static func cursor(_ bytes: [UInt8]) {
        var assembler = CursorAssembler()
        for (datagram, _) in datagrams(bytes) {
            guard let packets = try? RTCPPacket.parseCompound(Array(datagram)) else { continue }
            for case .application(let app) in packets {
                if let position = CursorPosition(app) { _ = assembler.receive(position) }
                if let chunk = CursorShapeChunk(app) { _ = assembler.receive(chunk) }
                guard let overlay = assembler.overlay else { continue }
                if let shape = overlay.shape {
                    precondition(shape.pixels.count == shape.width * shape.height && (1...256).contains(shape.width)
                                 && (1...256).contains(shape.height), "a pointer shape that does not fill its sides")
                }
                for (width, height) in [(16, 16), (320, 240), (3840, 2160)] {
                    if let rows = overlay.rows(width: width, height: height) {
                        precondition(rows.lowerBound >= 0 && rows.upperBound <= height, "pointer rows off the picture")
                    }
                }
            }
        }
    }

    /// known_peers as anything may have written it: every peer read has a
    /// valid name and a 32-byte key, and what is written back reads back to
    /// the same peers with nothing skipped.
    public static func knownPeers(_ bytes: [UInt8]) {
        let (peers, _) = KnownPeersFile.parse(bytes, path: "known_peers")
        for (name, key) in peers.keys { precondition(PeerName.isValid(name) && key.count == 32, "a peer read that is not one") }
        let again = KnownPeersFile.parse(Array(KnownPeersFile.text(peers).utf8), path: "known_peers")
        precondition(again.peers == peers && again.skipped.isEmpty, "known_peers does not read back what it wrote")
    }

    /// An HTTP response from a server that may be hostile, read in pieces
    /// (the first byte of each record is where the next read ends): the
    /// parser never keeps more than its bounds, and the pieces it is given
    /// do not change what it reads (the same response, or an error).
    public static func http(_ bytes: [UInt8]) {
        let maxBody = 4096
        var whole = HTTPResponseParser(maxBody: maxBody)
        let once: Result<HTTPResponse?, HTTPError> = Result { () throws(HTTPError) in try whole.feed(bytes[...]) }
        var pieces = HTTPResponseParser(maxBody: maxBody)
        var split: Result<HTTPResponse?, HTTPError> = .success(nil)
        var index = 0
        var cut = 1
        while index < bytes.count, case .success(nil) = split {
            cut = Int(bytes[index]) % 7 + 1
            let end = min(bytes.count, index + cut)
            split = Result { () throws(HTTPError) in try pieces.feed(bytes[index..<end]) }
            index = end
        }
        if case .success(let response?) = once {
            precondition(response.body.count <= maxBody, "a body over the bound")
            guard case .success(let other?) = split else { preconditionFailure("read whole, but not in pieces") }
            precondition(other == response, "the pieces changed what was read")
        }
        if case .failure = once { precondition(!(split.isSuccessWithResponse), "read in pieces, but refused whole") }
    }

    /// The datagrams of a fuzz input made of (length byte, time-step byte in
    /// milliseconds, bytes) records, each with the time it arrives.
    static func datagrams(_ bytes: [UInt8]) -> [(ArraySlice<UInt8>, MonotonicTime)] {
        var out: [(ArraySlice<UInt8>, MonotonicTime)] = []
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        var index = 0
        while index + 2 <= bytes.count {
            let length = Int(bytes[index])
            now = now + .milliseconds(Int64(bytes[index + 1]))
            index += 2
            let end = min(index + length, bytes.count)
            out.append((bytes[index..<end], now))
            index = end
        }
        return out
    }

    /// The sender's control socket: any bytes, read in any pieces (the first
    /// byte sets the piece size), give the same request as read at once;
    /// nothing traps; a request never holds more than its maximum length,
    /// and only the exact words are commands.
    public static func control(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let piece = Int(first % 17) + 1
        var whole = ControlRequestReader()
        let atOnce = whole.consume(bytes) ?? whole.finish()
        var pieces = ControlRequestReader()
        var inPieces: ControlRequest?
        var index = 0
        while inPieces == nil && index < bytes.count {
            inPieces = pieces.consume(bytes[index..<min(index + piece, bytes.count)])
            index += piece
        }
        precondition((inPieces ?? pieces.finish()) == atOnce, "the request depends on how it was read")
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") }
        switch atOnce {
        case .pause, .resume, .stop, .status:
            precondition(line.count <= ControlRequest.maximumLength, "a command longer than a request can be")
            let word = line.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") && $0 != UInt8(ascii: "\r") }
            precondition(["pause", "resume", "stop", "status"].contains(String(decoding: word, as: UTF8.self)),
                         "a command from other bytes: \(line)")
        case .budget(let size):
            precondition((1...16).contains(size.count) && size.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ".") },
                         "a budget that is no size: \(size)")
            precondition(String(decoding: line, as: UTF8.self).drop { $0 == " " || $0 == "\t" || $0 == "\r" }.hasPrefix("budget"),
                         "a budget from other bytes")
        case .unknown(let shown):
            precondition(shown.unicodeScalars.count <= 32, "an unknown request shown in full")
            precondition(shown.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0 == " " || $0 == "?" },
                         "an unknown request shown with characters a JSON reply would need escaped")
        case .malformed: break
        }
    }

    /// SDP: whatever text parses, what we write from it parses again to the
    /// same description (the second round trip is the identity).
    public static func sdp(_ bytes: [UInt8]) {
        guard let text = String(validating: bytes, as: UTF8.self),
              let description = try? SessionDescription(parsing: text) else { return }
        let once = description.serialized()
        guard let again = try? SessionDescription(parsing: once) else {
            preconditionFailure("our own SDP did not parse: \(once)")
        }
        precondition(again.serialized() == once, "SDP not canonical after one round trip:\n\(once)\n--- then ---\n\(again.serialized())")
    }

    /// The receive session, past authentication: the input is a series of
    /// plaintext datagrams (a length byte, a time-step byte, the bytes), each
    /// protected with the session's key before it is handed over, as a sender
    /// holding the key would, so the fuzzer reaches the jitter buffer, NACK,
    /// RTX and FEC unwrapping, RTCP handling and the clock mapping of sender
    /// reports. Nothing traps; timers and state stay bounded.
    public static func session(_ bytes: [UInt8]) {
        let keying = try! SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80, bytes: Array(0..<30))
        let sender = try! SRTPContext(keying: keying, direction: .outbound)
        let receiver = try! ReceiveSession(configuration: .init(ssrc: 1, cname: "fuzz", videoPayloadType: 96), keying: keying)
        var clocks = ClockMapping()
        for (plain, now) in datagrams(bytes) {
            var datagram = PacketBuffer(plain)
            guard datagram.count >= 12 else { continue }
            let rtcp = RTCPPacket.isRTCP(payloadTypeByte: datagram.bytes[datagram.bytes.startIndex + 1])
            guard (try? (rtcp ? sender.protectRTCP(&datagram) : sender.protect(&datagram))) != nil else { continue }
            for event in receiver.handle(datagram: &datagram, now: now, emit: { _ in }) + receiver.poll(now: now, emit: { _ in }) {
                if case .senderReport(let ssrc, let report) = event {
                    clocks.update(ssrc: ssrc, report: report)
                    _ = clocks.unixNanoseconds(ssrc: ssrc, timestamp: report.rtpTimestamp &+ 12345, clockRate: 90_000)
                }
            }
            if let deadline = receiver.nextDeadline {
                precondition(deadline.nanoseconds <= now.nanoseconds &+ 2_000_000_000, "a timer further than 2 s away")
            }
        }
    }

    /// Handshake: the input is a series of datagrams (a length byte, a
    /// time-step byte, the bytes) fed to a responder in each mode and, under
    /// its own id, to an initiator from its first commit on. A parsed message serializes back to
    /// its bytes; no answer is larger than the datagram that asked for it;
    /// the responder holds a bounded number of handshakes (commits are kept
    /// once their cookie is echoed, as a source on the path can); and nothing built
    /// by chance, without the keys, ever yields a session or a question to a person.
    public static func handshake(_ bytes: [UInt8]) {
        let secret = [UInt8](repeating: 7, count: 30)
        let identity = try! LocalIdentity(name: "fuzz", privateKey: [UInt8](repeating: 9, count: 32))
        var responders = [
            HandshakeResponder<Int>(configuration: .init(authentication: .preSharedKey(secret), name: "r")),
            HandshakeResponder<Int>(configuration: .init(authentication: .identity(identity, known: KnownPeers()), name: "r")),
        ]
        var initiator = HandshakeInitiator(configuration: .init(authentication: .preSharedKey(secret), name: "i",
                                                                profile: .aes128CmHmacSha1_80, instance: 1))
        _ = initiator.start(now: MonotonicTime(nanoseconds: 1_000_000_000))
        for (datagram, now) in datagrams(bytes) {
            guard let message = HandshakeMessage(parsing: datagram) else { continue }
            precondition(message.serialized() == Array(datagram), "handshake round trip changed the bytes")
            for r in responders.indices {
                let peer = datagram.count & 3
                var actions = responders[r].handle(message, from: peer, now: now)
                // A source that can read its answers echoes the cookie, as an
                // attacker on the path can: the commit is then kept.
                if case .commit(var commit) = message, case .send(let answer, _)? = actions.first,
                   case .cookie(_, let cookie)? = HandshakeMessage(parsing: answer[...]) {
                    commit.cookie = cookie
                    actions += responders[r].handle(.commit(commit), from: peer, now: now)
                }
                for action in actions {
                    switch action {
                    case .send(let answer, _):
                        precondition(answer.count <= datagram.count, "an answer larger than its question")
                    case .established, .confirmationNeeded:
                        preconditionFailure("a session from bytes made without the keys")
                    case .refused, .abandoned:
                        break
                    }
                }
                for action in responders[r].poll(now: now) {
                    if case .abandoned = action { preconditionFailure("keys opened to bytes made without a commitment's keys") }
                }
                precondition(responders[r].pendingCount <= responders[r].configuration.maximumPending)
            }
            // The initiator hears it under its own handshake's id, as from a
            // source on the path that read the id off its commit.
            var addressed = Array(datagram)
            if addressed.count >= 12, message != .retry {
                withUnsafeBytes(of: initiator.id.bigEndian) { addressed.replaceSubrange(4..<12, with: $0) }
            }
            let toInitiator = HandshakeMessage(parsing: addressed[...]) ?? message
            for action in initiator.handle(toInitiator, now: now) + initiator.poll(now: now) {
                switch action {
                case .established: preconditionFailure("an initiator session from bytes made without the keys")
                case .failed: preconditionFailure("an initiator ended for good by bytes made without the keys")
                case .send, .setback: break
                }
            }
        }
    }

    /// RTP: a parsed packet serializes back to exactly the input; its
    /// extension elements, when readable, rebuild the same data.
    public static func rtp(_ bytes: [UInt8]) {
        guard let packet = try? RTPPacket(parsing: bytes) else { return }
        precondition(packet.serialized() == bytes, "RTP round trip changed the bytes")
        precondition(packet.headerSize + packet.payload.count + packet.padding.count == bytes.count)
        if let ext = packet.headerExtension, let elements = try? ext.elements() {
            for element in elements { precondition(element.data.count <= ext.data.count) }
        }
    }

    /// An Opus payload as a receiver reads it: its duration is 2.5 ms to
    /// 120 ms in whole frames, and only a packet with a SILK layer and a
    /// frame byte can say it carries FEC.
    public static func opus(_ bytes: [UInt8]) {
        guard let info = try? OpusPacketInfo(packet: bytes[...]) else { return }
        precondition((120...5760).contains(info.samples) && info.frameCount >= 1, "an Opus duration out of range")
        precondition(!info.carriesFEC || (info.configuration < 16 && bytes.count >= 2), "FEC read where there is none")
    }

    /// RTCP: after one parse/serialize the form is canonical, so a second
    /// round trip is the identity.
    public static func rtcp(_ bytes: [UInt8]) {
        guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
        let once = RTCPPacket.serializeCompound(packets)
        precondition(once.count % 4 == 0, "RTCP serialized to a length that is not a multiple of 4")
        guard let again = try? RTCPPacket.parseCompound(once) else {
            preconditionFailure("RTCP re-parse of our own output failed")
        }
        precondition(RTCPPacket.serializeCompound(again) == once, "RTCP not canonical after one round trip")
        // The pointer's APP packets: what parses survives its own round trip,
        // and the assembler keeps one shape of at most 256x256 and what it
        // completes is whole.
        var assembler = CursorAssembler()
        var audience = PointerAudience(capacity: 4)
        for case .application(let app) in packets {
            // A receiver's word on the pointer: its own round trip, and the
            // sender's account of who draws it, bounded.
            if let drawing = PointerDrawing(app) {
                guard case .application(let back) = drawing.packet(ssrc: app.ssrc) else {
                    preconditionFailure("a pointer drawing is an APP packet")
                }
                precondition(PointerDrawing(back) == drawing, "pointer drawing round trip")
                audience.heard(app.ssrc, drawsPointer: drawing.drawsPointer, now: .zero)
                precondition(audience.drawnApart(now: .zero) == false || drawing.drawsPointer, "drawn apart after a no")
            }
            if let position = CursorPosition(app) {
                precondition(CursorPosition(app.withData(position)) == position, "cursor position round trip")
                _ = assembler.receive(position)
            }
            if let chunk = CursorShapeChunk(app) {
                _ = assembler.receive(chunk)
                if let shape = assembler.shape {
                    precondition(shape.width <= 256 && shape.height <= 256 && shape.pixels.count == shape.width * shape.height,
                                 "cursor shape out of bounds")
                }
            }
        }
    }

    /// H.264: the input is a stream of packets (a length byte, a flags byte
    /// with marker and sequence step, then the payload) fed to the
    /// depacketizer and the frame assembler. The assembler stays bounded and
    /// every unit it emits (and every start of one it announces early) is a
    /// well-formed Annex B stream of non-empty units.
    public static func h264(_ bytes: [UInt8]) {
        var assembler = H264FrameAssembler(maxDelay: .milliseconds(5), maxPackets: 32, earlySlices: true)
        var index = 0
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var now = MonotonicTime.zero
        while index + 2 <= bytes.count {
            let length = Int(bytes[index])
            let flags = bytes[index + 1]
            index += 2
            let end = min(index + length, bytes.count)
            let payload = bytes[index..<end]
            index = end
            _ = try? H264Depacketizer.nalUnits(of: payload)
            sequence &+= UInt16(flags & 0x07)
            if flags & 0x08 != 0 { timestamp &+= 3000 }
            now = now + .milliseconds(Int64(flags >> 4))
            let packet = RTPPacket(marker: flags & 0x80 != 0, payloadType: 96, sequenceNumber: sequence,
                                   timestamp: timestamp, ssrc: 1, payload: payload)
            check(assembler.insert(packet, now: now))
            precondition(assembler.bufferedPackets <= 32, "assembler grew past its bound")
        }
        check(assembler.poll(now: now + .seconds(1)))
    }

    private static func check(_ events: [H264FrameAssembler.Event]) {
        for event in events {
            let data: [UInt8]
            switch event {
            case .frame(let unit): data = unit.data
            case .slices(let part): data = part.data
            case .lost: continue
            }
            var ranges: [Range<Int>] = []
            AnnexB.nalUnits(in: data[...], into: &ranges)
            precondition(!ranges.isEmpty, "emitted an access unit or early slices with no NAL unit")
            precondition(data.starts(with: AnnexB.startCode), "emitted units do not start with a start code")
        }
    }

    /// SRTP: unprotecting arbitrary bytes with a fixed key never succeeds
    /// (the tag is 80 bits) and never traps; SRTCP likewise.
    public static func srtp(_ bytes: [UInt8]) {
        var rtp = PacketBuffer(bytes)
        var rtcp = rtp
        precondition((try? receiver.unprotect(&rtp)) == nil, "forged SRTP packet accepted")
        precondition((try? receiver.unprotectRTCP(&rtcp)) == nil, "forged SRTCP packet accepted")
    }

    nonisolated(unsafe) private static let receiver: SRTPContext = {
        let keying = try! SRTPKeyingMaterial(profile: .aes128CmHmacSha1_80, bytes: Array(0..<30))
        return try! SRTPContext(keying: keying, direction: .inbound)
    }()

    /// Length-prefixed chunks of `bytes` (one length byte each).
    private static func chunks(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var out: [ArraySlice<UInt8>] = []
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            index += 1
            let end = min(index + length, bytes.count)
            out.append(bytes[index..<end])
            index = end
        }
        return out
    }

    /// FlexFEC: any bytes as a repair payload parse or are refused, and
    /// rebuilding from them never traps; packets built into a repair by us
    /// are each rebuilt exactly from it and the others.
    public static func fec(_ bytes: [UInt8]) {
        let parts = chunks(bytes)
        if let first = parts.first, let repair = FlexFEC.Repair(payload: first) {
            precondition(!repair.protected.isEmpty && repair.protected.count <= FlexFEC.maxProtected)
            if let missing = repair.protected.first {
                _ = FlexFEC.recover(repair, missing: missing, others: Array(parts.dropFirst()), ssrc: 1)
            }
        }
        // Our own repairs over the chunks as payloads of one stream.
        let packets = parts.prefix(FlexFEC.maxProtected).enumerated().map { index, payload in
            RTPPacket(marker: index % 3 == 0, payloadType: 96, sequenceNumber: 65_530 &+ UInt16(index),
                      timestamp: UInt32(index) &* 3000, ssrc: 7, payload: payload).serialized()
        }
        guard packets.count >= 2, let payload = FlexFEC.repairPayload(protecting: packets.map { $0[...] }),
              let repair = FlexFEC.Repair(payload: payload[...]) else { return }
        for (index, packet) in packets.enumerated() {
            let others = packets.enumerated().filter { $0.offset != index }.map { $0.element[...] }
            let rebuilt = FlexFEC.recover(repair, missing: 65_530 &+ UInt16(index), others: others, ssrc: 7)
            precondition(rebuilt == packet, "FlexFEC did not rebuild packet \(index)")
        }
    }

    /// Congestion control: whatever feedback arrives (any RTCP, with
    /// RFC 8888 reports about packets we did or did not send), the target
    /// stays within its bounds and the pacer's rate at or above the target,
    /// but while the queue a fall left full drains: then over zero and at
    /// most the target.
    public static func congestion(_ bytes: [UInt8]) {
        var controller = CongestionController(configuration: .init(start: .kilobitsPerSecond(2000), minimum: .kilobitsPerSecond(200),
                                                                             maximum: .kilobitsPerSecond(4000)))
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        for (index, part) in chunks(bytes).enumerated() {
            // Even chunks: packets sent (sequence from the first bytes); odd: feedback.
            if index % 2 == 0 {
                for (offset, byte) in part.enumerated() {
                    controller.sent(SentPacket(ssrc: UInt32(byte & 3), sequence: UInt16(offset) &* 7 &+ UInt16(byte),
                                               size: Int(byte) * 5 + 40, sendTime: now))
                }
            } else if let packets = try? RTCPPacket.parseCompound(part) {
                for case .congestionFeedback(let report) in packets { controller.handle(report, now: now) }
            }
            now = now + .milliseconds(Int64(part.first ?? 1))
            controller.poll(now: now)
            precondition(controller.target >= .kilobitsPerSecond(200) && controller.target <= .kilobitsPerSecond(4000),
                         "target out of bounds")
            if controller.draining {
                // Under the target, or at it when the target fell under
                // the drain's rate within the drain (the crash corpus).
                precondition(controller.pacingRate > .zero && controller.pacingRate <= controller.target,
                             "draining, yet over the target")
            } else {
                precondition(controller.pacingRate >= controller.target, "pacer slower than the target")
            }
        }
    }
}

private extension ApplicationPacket {
    /// The APP packet a position serializes to, parsed back.
    func withData(_ position: CursorPosition) -> ApplicationPacket {
        guard case .application(let app) = position.packet(ssrc: ssrc) else { preconditionFailure("a position is an APP packet") }
        return app
    }
}

private extension Result where Success == HTTPResponse? {
    var isSuccessWithResponse: Bool {
        if case .success(.some) = self { return true }
        return false
    }
}
