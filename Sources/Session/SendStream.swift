public import ShareSRTP
public import ShareWire
public import ShareBase

/// The sending side of one RTP stream, sans-IO: turns H.264 access units
/// (or single payloads such as Opus packets) into protected RTP datagrams,
/// keeps them for retransmission, writes RTCP sender reports and answers
/// feedback. The caller owns the socket and the clock and hands both in
/// (`emit`, `now`).
public final class SendStream {
    public let configuration: Configuration
    public internal(set) var statistics = SendStatistics()
    var srtp: SRTPContext
    private var inbound: SRTPContext
    private var packetizer: RTPPacketizer
    var repairs: RepairWriter
    var repairBuffer: PacketBuffer
    /// Media packets per FEC repair packet (one loss in each group is
    /// rebuilt at once); nil sends no FEC.
    public var protectionGroup: Int? {
        get { repairs.protectionGroup }
        set { repairs.protectionGroup = newValue }
    }
    /// Whether each media packet is also protected by a repair across the
    /// groups (two losses in one group are rebuilt too; `FECGroups`).
    public var protectionCrossing: Bool {
        get { repairs.protectionCrossing }
        set { repairs.protectionCrossing = newValue }
    }
    private var payloader: H264Payloader
    var history: RetransmissionHistory
    private var buffer: PacketBuffer
    private var lastKeyframeRequest: MonotonicTime?
    private var nextReport: MonotonicTime?
    /// The newest frame's RTP timestamp and capture time, for SR timing.
    var clockAnchor: (rtp: UInt32, ntp: NTPTimestamp, at: MonotonicTime)?
    private var sentReports: [(middle: UInt32, at: MonotonicTime)] = []
    var announcer = StateAnnouncer()
    var cursor = CursorAnnouncer()
    private var reporters = ReporterRoster()
    var audience = PointerAudience()
    /// Plain keyframe requests on the RTCP port of its own, rationed.
    private var plainRequests: PlainRequestGate
    /// Whether a part of the frame being sent held an IDR slice.
    private var frameHasIDR = false
    /// The newest IDR frame's first packet: what came before is not resent.
    var keyframeStart: UInt16?
    /// Set when a frame with an IDR slice begins to leave (`takeKeyframeStarted`).
    var keyframeStarted = false

    /// The abs-capture-time extension as last sent. Encoded once; after
    /// that only its 8 timestamp bytes (after the one-byte element header)
    /// are rewritten, so a frame costs no allocation.
    private var captureTimeExtension: RTPHeaderExtension?

    /// A stream with one static key for both directions (SDES).
    public convenience init(configuration: Configuration, keying: SRTPKeyingMaterial,
                            initialSequenceNumber: UInt16 = RTPSequence.randomStart()) throws(SRTPError) {
        try self.init(configuration: configuration, keys: .symmetric(keying), initialSequenceNumber: initialSequenceNumber)
    }

    public init(configuration: Configuration, keys: SRTPSessionKeys,
                initialSequenceNumber: UInt16 = RTPSequence.randomStart()) throws(SRTPError) {
        self.configuration = configuration
        let keying = keys.outbound
        srtp = try SRTPContext(keying: keys.outbound, direction: .outbound)
        inbound = try SRTPContext(keying: keys.inbound, direction: .inbound)
        packetizer = RTPPacketizer(ssrc: configuration.ssrc, payloadType: configuration.payloadType,
                                   clockRate: configuration.clockRate,
                                   initialSequenceNumber: initialSequenceNumber)
        let extensionBytes = configuration.captureTimeExtensionID == nil ? 0 : 4 + 12
        // Repairs of the largest packet must fit the MTU too.
        let repairBytes = RepairWriter.overhead(retransmission: configuration.retransmission != nil,
                                                forwardErrorCorrection: configuration.forwardErrorCorrection != nil)
        payloader = H264Payloader(maxPayloadSize: configuration.mtu - RTPPacket.fixedHeaderSize - extensionBytes
                                  - keying.profile.rtpOverhead - repairBytes)
        history = RetransmissionHistory(capacity: configuration.historyPackets)
        buffer = PacketBuffer(capacity: max(configuration.mtu, 1500))
        repairBuffer = PacketBuffer(capacity: max(configuration.mtu, 1500))
        repairs = RepairWriter(mediaSSRC: configuration.ssrc, clockRate: configuration.clockRate,
                               retransmission: configuration.retransmission,
                               forwardErrorCorrection: configuration.forwardErrorCorrection)
        plainRequests = PlainRequestGate(ssrc: configuration.ssrc, interval: configuration.plainKeyframeRequestInterval)
    }

    /// Protects from now on with a new session's keys (same profile); the
    /// stream's SSRC, sequence numbers and history go on.
    public func rekey(_ keys: SRTPSessionKeys) throws(SRTPError) {
        srtp = try SRTPContext(keying: keys.outbound, direction: .outbound)
        inbound = try SRTPContext(keying: keys.inbound, direction: .inbound)
        // The session's receiver gets a keyframe as the session starts: its
        // first report is no late join.
        reporters.expectSessionPeer()
        // Its receiver has not said yet whether it draws the pointer.
        audience.forget()
        // And the pointer, whole, at the next poll.
        cursor.resend()
    }

    /// Sends one Annex B access unit: every packet carries the frame's
    /// capture time; the last has the marker bit. `emit` gets each protected
    /// datagram in order (it may pace them).
    public func send(accessUnit: [UInt8], rtpTimestamp: UInt32, captureTime: NTPTimestamp,
                     now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) throws(SRTPError) {
        try send(part: accessUnit[...], endsFrame: true, rtpTimestamp: rtpTimestamp, captureTime: captureTime,
                 now: now, emit: emit)
    }

    /// Sends part of an access unit (some of its NAL units, in Annex B, in
    /// order) as soon as the encoder has written it, before the rest of the
    /// frame exists: the packets carry the frame's timestamp and capture
    /// time, and the last packet of the part that `endsFrame` has the marker
    /// bit. A frame is counted (and counted as a keyframe if any part held
    /// an IDR slice) when it ends.
    public func send(part: ArraySlice<UInt8>, endsFrame: Bool, rtpTimestamp: UInt32, captureTime: NTPTimestamp,
                     now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) throws(SRTPError) {
        let headerExtension = captureExtension(captureTime)
        let count = payloader.prepare(accessUnit: part)
        if payloader.containsIDR, !frameHasIDR {
            frameHasIDR = true
            keyframeStart = packetizer.nextSequenceNumber
            keyframeStarted = true
        }
        for index in 0..<count {
            let last = endsFrame && index == count - 1
            let sequence = packetizer.beginPacket(in: &buffer, timestamp: rtpTimestamp, marker: last,
                                                  headerExtension: headerExtension)
            let headerSize = buffer.count
            payloader.writePayload(index, of: part, into: &buffer)
            try finishPacket(sequence: sequence, payloadSize: buffer.count - headerSize, emit: emit)
            try repairs.mediaSent(sequence, endsFrame: last, timestamp: rtpTimestamp, history: history,
                                  into: &repairBuffer) { (repair: inout PacketBuffer) throws(SRTPError) in
                try srtp.protect(&repair)
                statistics.fecPackets += 1
                statistics.bytes += repair.count
                emit(repair.bytes)
            }
        }
        clockAnchor = (rtpTimestamp, captureTime, now)
        guard endsFrame else { return }
        statistics.frames += 1
        if frameHasIDR { statistics.keyframes += 1 }
        frameHasIDR = false
    }

    /// The largest H.264 payload a packet carries: the sender cuts its
    /// slices to a whole number of these (a slice that fits one is sent as
    /// one packet, a larger one in FU-A fragments).
    public var maxPayloadSize: Int { payloader.maxPayloadSize }

    /// Sends one payload as one packet (RFC 7587: one Opus packet per RTP
    /// packet; the marker is unused for continuous audio).
    public func send(payload: ArraySlice<UInt8>, rtpTimestamp: UInt32, captureTime: NTPTimestamp, marker: Bool = false,
                     now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) throws(SRTPError) {
        let sequence = packetizer.beginPacket(in: &buffer, timestamp: rtpTimestamp, marker: marker,
                                              headerExtension: captureExtension(captureTime))
        buffer.append(slice: payload)
        try finishPacket(sequence: sequence, payloadSize: payload.count, emit: emit)
        statistics.frames += 1
        clockAnchor = (rtpTimestamp, captureTime, now)
    }

    /// Accounts, keeps for retransmission (unprotected: a repair is
    /// protected anew), protects and emits the packet in `buffer`.
    private func finishPacket(sequence: UInt16, payloadSize: Int, emit: (ArraySlice<UInt8>) -> Void) throws(SRTPError) {
        packetizer.didSend(payloadSize: payloadSize)
        history.remember(sequence: sequence, bytes: buffer.bytes)
        try srtp.protect(&buffer)
        statistics.packets += 1
        statistics.bytes += buffer.count
        emit(buffer.bytes)
    }

    private func captureExtension(_ captureTime: NTPTimestamp) -> RTPHeaderExtension? {
        guard let id = configuration.captureTimeExtensionID else { return nil }
        guard var encoded = captureTimeExtension else {
            let element = RTPExtensionElement(id: id, data: AbsoluteCaptureTime(ntpTimestamp: captureTime).bytes[...])
            captureTimeExtension = try? RTPHeaderExtension(elements: [element], form: .oneByte)
            return captureTimeExtension
        }
        captureTimeExtension = nil  // keep the bytes uniquely referenced while rewriting them
        let start = encoded.data.startIndex + 1
        for index in 0..<8 {
            encoded.data[start + index] = UInt8(truncatingIfNeeded: captureTime.rawValue >> UInt64(56 - 8 * index))
        }
        captureTimeExtension = encoded
        return encoded
    }

    /// Handles a datagram from the receiver (SRTCP; anything else is counted
    /// and dropped). Retransmissions and replies go to `emit` at once.
    public func handle(datagram: inout PacketBuffer, now: MonotonicTime,
                       emit: (ArraySlice<UInt8>) -> Void) -> [SenderFeedback] {
        handle(datagram: &datagram, now: now, reply: emit, repair: emit)
    }

    /// Handles a datagram from the receiver: RTCP replies (extended report
    /// echoes) go to `reply`, retransmissions to `repair` (for a pacer).
    public func handle(datagram: inout PacketBuffer, now: MonotonicTime, reply: (ArraySlice<UInt8>) -> Void,
                       repair: (ArraySlice<UInt8>) -> Void) -> [SenderFeedback] {
        guard datagram.count >= 2, RTCPPacket.isRTCP(payloadTypeByte: datagram.bytes[datagram.bytes.startIndex + 1])
        else {
            statistics.rtcpRejected += 1
            return []
        }
        do {
            try inbound.unprotectRTCP(&datagram)
        } catch {
            statistics.rtcpRejected += 1
            return []
        }
        guard let packets = try? RTCPPacket.parseCompound(datagram.bytes) else {
            statistics.rtcpRejected += 1
            return []
        }
        var feedback: [SenderFeedback] = []
        for packet in packets {
            switch packet {
            case .nack(let nack) where nack.mediaSSRC == configuration.ssrc:
                statistics.nacksReceived += 1
                var sent = 0
                var missed = 0
                for sequence in nack.lostSequenceNumbers {
                    switch retransmit(sequence, now: now, emit: repair) {
                    case .sent: sent += 1
                    case .missing: missed += 1
                    case .suppressed: statistics.retransmissionsSuppressed += 1
                    case .superseded: statistics.retransmissionsSuperseded += 1
                    }
                }
                statistics.retransmitted += sent
                feedback.append(.retransmitted(count: sent, missed: missed))
            case .pictureLoss, .fullIntraRequest:
                if PlainRequestGate.asksForKeyframe(packet, ssrc: configuration.ssrc), requestKeyframe(now: now) { feedback.append(.keyframeRequested) }
            case .receiverReport(let rr):
                if let report = rr.reports.first(where: { $0.ssrc == configuration.ssrc }) {
                    feedback.append(receiverReport(report, now: now))
                    audience.heard(rr.ssrc, drawsPointer: Self.saysItDrawsThePointer(rr.ssrc, in: packets), now: now)
                    if reporters.isNew(rr.ssrc) {
                        // A state it has not answered reaches it at once.
                        announcer.hurry(now: now)
                        if requestKeyframe(now: now) {
                            statistics.receiversJoined += 1
                            feedback.append(.receiverJoined(ssrc: rr.ssrc))
                        }
                    }
                }
            case .senderReport(let sr):
                if let report = sr.reports.first(where: { $0.ssrc == configuration.ssrc }) {
                    feedback.append(receiverReport(report, now: now))
                }
            case .congestionFeedback(let report):
                feedback.append(.congestion(report))
            case .extendedReport(let xr):
                // RFC 3611 §4.5: echo the receiver's reference time at once,
                // so the receiver learns the round trip (held: zero).
                if let reference = xr.receiverReferenceTime {
                    let echo = ExtendedReport(ssrc: configuration.ssrc, delaySinceLastReceiverReports: [
                        .init(ssrc: xr.ssrc, lastReceiverReport: reference.middle32, delay: 0),
                    ])
                    sendRTCP([.extendedReport(echo)], emit: reply)
                }
            case .goodbye(let bye):
                feedback.append(.goodbye(reason: bye.reason.map { String(decoding: $0, as: UTF8.self) }))
            case .application(let app):
                if let answer = StateAcknowledgement(app), announcer.received(answer) {
                    feedback.append(.stateAcknowledged(announcer.current.state))
                }
            default:
                continue
            }
        }
        return feedback
    }

    /// Handles a datagram that came in on the RTCP port of its own (the
    /// socket only takes datagrams from the address it sends to).
    /// Authenticated SRTCP is handled as on the media port. Plain RTCP is
    /// what an SFU such as Janus sends (its PLI and FIR are unprotected): it
    /// can ask for a keyframe and nothing else, at most once per
    /// `plainKeyframeRequestInterval`; everything else is counted and dropped.
    public func handle(controlPortDatagram datagram: inout PacketBuffer, now: MonotonicTime,
                       reply: (ArraySlice<UInt8>) -> Void, repair: (ArraySlice<UInt8>) -> Void) -> [SenderFeedback] {
        if inbound.carriesGenuineTag(rtcp: datagram) {
            return handle(datagram: &datagram, now: now, reply: reply, repair: repair)
        }
        switch plainRequests.judge(datagram.bytes, now: now) {
        case .refused: statistics.controlPortRefused += 1
        case .ignored: statistics.plainIgnored += 1
        case .tooSoon: statistics.plainRequestsLimited += 1
        case .keyframe:
            statistics.plainKeyframeRequests += 1
            return requestKeyframe(now: now) ? [.keyframeRequested] : []
        }
        return []
    }

    /// A round trip measured elsewhere (the congestion controller's).
    public func observeRoundTrip(_ roundTrip: Duration) {
        statistics.roundTrip = roundTrip
    }

    private func requestKeyframe(now: MonotonicTime) -> Bool {
        let interval = max(configuration.keyframeRequestInterval, (statistics.roundTrip ?? .zero) * 2)
        if let last = lastKeyframeRequest, now.since(last) < interval { return false }
        lastKeyframeRequest = now
        statistics.keyframeRequests += 1
        return true
    }

    /// RFC 3550 §6.4.1: RTT = arrival - LSR - DLSR, in 1/65536 s, using the
    /// time we sent the SR whose middle NTP bits the report echoes.
    private func receiverReport(_ report: ReceptionReport, now: MonotonicTime) -> SenderFeedback {
        statistics.fractionLost = Double(report.fractionLost) / 256
        var roundTrip: Duration?
        if report.lastSenderReport != 0, let sent = sentReports.first(where: { $0.middle == report.lastSenderReport }) {
            let elapsed = now.since(sent.at)
            let delay = Duration.nanoseconds(Int64(report.delaySinceLastSenderReport) * 1_000_000_000 / 65536)
            roundTrip = elapsed > delay ? elapsed - delay : .zero
            statistics.roundTrip = roundTrip
        }
        return .receiverReport(fractionLost: statistics.fractionLost, roundTrip: roundTrip)
    }

    /// Sends a sender report with SDES when one is due, an unanswered state
    /// announcement and the pointer's repeats; returns when it next has
    /// something to send (the caller may sleep until then).
    @discardableResult
    public func poll(now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) -> MonotonicTime {
        if let state = announcer.poll(now: now) { sendRTCP([state.packet(ssrc: configuration.ssrc)], emit: emit) }
        sendCursor(now: now, emit: emit)
        report(now: now, emit: emit)
        var next = nextReport ?? now + configuration.reportInterval
        if let due = announcer.deadline { next = min(next, due) }
        if let due = cursor.deadline { next = min(next, due) }
        return next
    }

    /// A sender report with the stream's SDES, when one is due.
    private func report(now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) {
        if let due = nextReport, now < due { return }
        nextReport = now + configuration.reportInterval
        guard let anchor = clockAnchor else { return }
        // RFC 3550 §6.4.1: the RTP timestamp of the same instant as the NTP
        // one, extrapolated from the newest packet's capture instant.
        let elapsed = now.since(anchor.at)
        // Whole seconds and the rest apart: no overflow however long the stream paused.
        let (seconds, rest) = elapsed.nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        let ticks = seconds &* UInt64(configuration.clockRate) &+ rest * UInt64(configuration.clockRate) / 1_000_000_000
        let rtpNow = anchor.rtp &+ UInt32(truncatingIfNeeded: ticks)
        let ntpNow = NTPTimestamp(unixNanoseconds: anchor.ntp.unixNanoseconds &+ elapsed.nanoseconds)
        let report = SenderReport(ssrc: configuration.ssrc, ntpTimestamp: ntpNow, rtpTimestamp: rtpNow,
                                  packetCount: packetizer.packetCount, octetCount: packetizer.octetCount)
        sentReports.append((ntpNow.middle32, now))
        if sentReports.count > 8 { sentReports.removeFirst() }
        sendRTCP([.senderReport(report), .sourceDescription(SourceDescription(ssrc: configuration.ssrc, cname: configuration.cname))],
                 emit: emit)
    }

    /// RTCP BYE (RFC 3550 §6.6), sent when the stream ends, after the
    /// announcement that it finished and why (answered, unlike the BYE).
    public func goodbye(reason: String, now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) {
        announcer.announce(.finished, reason: reason, now: now)
        sendRTCP([announcer.current.packet(ssrc: configuration.ssrc),
                  .goodbye(Goodbye(sources: [configuration.ssrc], reason: reason))], emit: emit)
    }

    func sendRTCP(_ packets: [RTCPPacket], emit: (ArraySlice<UInt8>) -> Void) {
        var rtcp = PacketBuffer(RTCPPacket.serializeCompound(packets))
        guard (try? srtp.protectRTCP(&rtcp)) != nil else { return }
        emit(rtcp.bytes)
    }

    /// Keeps the last `packets` for retransmission from now on (the memory
    /// governor's cheapest step).
    public func setHistoryCapacity(_ packets: Int) {
        guard packets != history.capacity else { return }
        history = RetransmissionHistory(capacity: packets)
    }

    /// Bytes held by the retransmission history.
    public var historyBytes: Int { history.retainedBytes }
}
