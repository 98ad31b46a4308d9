internal import ShareBase
internal import ShareSRTP
internal import ShareWire

/// What the sender says in RTCP: its reports (clock mapping, round trip),
/// its state and title, the pointer, and BYE.
extension ReceiveSession {
    func handleRTCP(_ datagram: inout PacketBuffer, now: MonotonicTime,
                            emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        do {
            try srtp.unprotectRTCP(&datagram)
        } catch {
            if (error.kind == .replayed || error.kind == .tooOld) && srtp.carriesGenuineTag(rtcp: datagram) {
                statistics.replays += 1
            } else {
                statistics.authenticationFailures += 1
            }
            return []
        }
        guard let packets = try? RTCPPacket.parseCompound(datagram.bytes) else {
            statistics.malformed += 1
            return []
        }
        statistics.rtcpPackets += 1
        let header = datagram.bytes
        noteStream(header[(header.startIndex + 4)..<(header.startIndex + 8)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }, now: now)
        var events: [ReceiveEvent] = []
        for packet in packets {
            switch packet {
            case .senderReport(let sr):
                if sr.ssrc == heard.videoSSRC { heard.reception?.didReceive(senderReport: sr, at: now) }
                events.append(.senderReport(ssrc: sr.ssrc, sr))
            case .goodbye(let bye):
                let reason = bye.reason.map { String(decoding: $0, as: UTF8.self) }
                for ssrc in bye.sources where !(heard.goodbyeReported && ssrc == heard.videoSSRC) {
                    if ssrc == heard.videoSSRC { heard.goodbyeReported = true }
                    events.append(.goodbye(ssrc: ssrc, reason: reason))
                }
            case .application(let app) where heard.videoSSRC == nil || app.ssrc == heard.videoSSRC:
                if let position = CursorPosition(app) {
                    if cursor.receive(position), let overlay = cursor.overlay { events.append(.cursor(overlay)) }
                    continue
                }
                if let chunk = CursorShapeChunk(app) {
                    if cursor.receive(chunk), let overlay = cursor.overlay { events.append(.cursor(overlay)) }
                    continue
                }
                guard let announcement = StateAnnouncement(app) else { continue }
                // Every copy is answered (the answer may be lost); each state is reported once.
                sendRTCP([StateAcknowledgement(sequence: announcement.sequence).packet(ssrc: configuration.ssrc)], emit: emit)
                guard announcement.sequence != heard.stateSequence else { continue }
                heard.stateSequence = announcement.sequence
                if announcement.state == .finished {
                    if !heard.goodbyeReported {
                        heard.goodbyeReported = true
                        events.append(.goodbye(ssrc: app.ssrc, reason: announcement.reason))
                    }
                } else {
                    if let audio = announcement.audio, audio != heard.reportedAudio {
                        heard.reportedAudio = audio
                        events.append(.audioLayout(audio))
                    }
                    if announcement.state != heard.reportedState || announcement.reason != heard.reportedTitle {
                        heard.reportedState = announcement.state
                        heard.reportedTitle = announcement.reason
                        events.append(.senderState(announcement.state, title: announcement.reason))
                    }
                }
            case .extendedReport(let xr):
                for echo in xr.delaySinceLastReceiverReports where echo.ssrc == configuration.ssrc {
                    if heard.probe.handle(echo, now: now) != nil { tuneDelays() }
                }
            default:
                continue
            }
        }
        return events
    }
}
