public import ShareSRTP
public import ShareWire
public import ShareBase

/// The receiving side of an RTP/SAVP session on one port (rtcp-mux),
/// sans-IO: unprotects and demultiplexes datagrams, rebuilds video frames
/// through the jitter buffer, and writes the RTCP the sender needs
/// (receiver reports, NACK, PLI). Hostile input is counted and dropped.
public final class ReceiveSession {
    public struct Configuration: Sendable {
        public var ssrc: UInt32
        public var cname: String
        /// Video payload type; nil accepts the first dynamic one seen (96-127).
        public var videoPayloadType: UInt8?
        /// The payload type of retransmissions of the video (RFC 4588 RTX, apt=video).
        public var retransmissionPayloadType: UInt8? = 97
        /// The payload type of FlexFEC repairs of the video (RFC 8627).
        public var fecPayloadType: UInt8? = 98
        /// Bounds of the jitter buffer's wait for a missing packet; in
        /// between, it follows the round trip and the reordering seen.
        public var minimumDelay: Duration = .milliseconds(50)
        public var maximumDelay: Duration = .milliseconds(1000)
        /// Send RFC 8888 congestion control feedback (share's own senders use it).
        public var congestionFeedback = true
        public var keyframeRequestInterval: Duration = .milliseconds(300)
        public var reportInterval: Duration = .seconds(1)
        public var nack = true
        /// Announce the start of each frame as its slices arrive
        /// (`videoSlices`), so decoding can begin before the frame is whole.
        public var earlySlices = true
        /// Whether this receiver draws the pointer itself when the sender
        /// sends it apart (it shows the picture and records nothing): told
        /// with each report (`PointerDrawing`) for a sender's `--cursor auto`.
        public var drawsPointer = false
        /// Whether a stream heard first after its sender's sequence numbers
        /// wrapped is searched for its rollover counter. Only a static key
        /// needs it: a handshake's keys are new each session, and so are
        /// the sender's counters.
        public var searchesRolloverCounters = true

        public init(ssrc: UInt32, cname: String, videoPayloadType: UInt8? = nil) {
            self.ssrc = ssrc
            self.cname = cname
            self.videoPayloadType = videoPayloadType
        }
    }

    public let configuration: Configuration
    public internal(set) var statistics = ReceiveStatistics()
    var srtp: SRTPContext
    var outbound: SRTPContext
    /// What is known of the sender's streams, replaced whole for a new sender.
    var heard: StreamsHeard
    /// The pointer as the sender describes it (`--cursor metadata`).
    var cursor = CursorAssembler()
    /// The SRTP streams kept, at most `maximumStreams`.
    var streams = StreamLedger(capacity: ReceiveSession.maximumStreams)
    /// Bounds the bytes hashed searching for late streams' rollover counters.
    var rolloverSearchBudget = RateLimiter(rate: ReceiveSession.rolloverSearchBytesPerSecond,
                                                   burst: ReceiveSession.rolloverSearchBytesPerSecond)

    /// A session with one static key for both directions (SDES).
    public convenience init(configuration: Configuration, keying: SRTPKeyingMaterial) throws(SRTPError) {
        try self.init(configuration: configuration, keys: .symmetric(keying))
    }

    public init(configuration: Configuration, keys: SRTPSessionKeys) throws(SRTPError) {
        self.configuration = configuration
        srtp = try SRTPContext(keying: keys.inbound, direction: .inbound)
        outbound = try SRTPContext(keying: keys.outbound, direction: .outbound)
        heard = StreamsHeard(configuration)
    }

    /// Takes a renewed session's keys (the same sender handshook again):
    /// the jitter buffer, NACK state and statistics go on.
    public func rekey(_ keys: SRTPSessionKeys) throws(SRTPError) {
        srtp = try SRTPContext(keying: keys.inbound, direction: .inbound)
        outbound = try SRTPContext(keying: keys.outbound, direction: .outbound)
        streams.removeAll()
    }

    /// Keeps the SRTP streams within `maximumStreams` once `ssrc` authenticated.
    func noteStream(_ ssrc: UInt32, now: MonotonicTime) {
        if let stale = streams.authenticated(ssrc, now: now, keeping: heard.videoSSRC) {
            srtp.forget(ssrc: stale)
            statistics.streamsForgotten += 1
        }
    }

    /// Starts over for a new sender (a new session): its keys, and a fresh
    /// jitter buffer, NACK, FEC and report state that learns the new
    /// streams. The counters go on.
    public func restart(_ keys: SRTPSessionKeys) throws(SRTPError) {
        try rekey(keys)
        forgetStreams()
    }

    /// How long a video stream is silent before another stream of the same
    /// payload type and key takes its place (`streamReplaced`): longer than
    /// a still sender's pause between pictures, shorter than anyone takes
    /// to start a sender again.
    public static let streamTakeover = Duration.seconds(1)

    /// The most SSRCs whose SRTP streams are kept at once: a sender uses
    /// five or so (video, its repairs, FEC, two audio streams).
    static let maximumStreams = 16

    /// Forgets the streams heard (a new sender): a fresh jitter buffer, NACK,
    /// FEC and report state.
    func forgetStreams() {
        heard = StreamsHeard(configuration)
    }

    /// The sender's SSRC once video arrived.
    public var senderSSRC: UInt32? { heard.videoSSRC }

    /// The round trip to the sender, once measured (RFC 3611 RRTR/DLRR).
    public var roundTrip: Duration? { heard.probe.smoothed }

    /// How long the jitter buffer now waits for a missing packet.
    public var jitterBufferDelay: Duration { heard.assembler.maxDelay }

    /// The earliest instant `poll` has work (NACK, feedback, give-up, report).
    public var nextDeadline: MonotonicTime? {
        [heard.assembler.deadline, configuration.nack ? heard.nack.nextDeadline() : nil,
         configuration.congestionFeedback ? heard.feedback.deadline : nil, heard.nextReport].compactMap { $0 }.min()
    }

    /// Waits sized to the path: the first NACK waits out the reordering,
    /// a repair takes a round trip, and as many tries as the path's loss
    /// makes worth it fit before the jitter buffer gives up (two below
    /// about 3% loss: RTT 1 ms 50 ms, RTT 100 ms ~230 ms; three at 10%).
    func tuneDelays() {
        let rtt = heard.probe.smoothed ?? .milliseconds(50)
        heard.nack.roundTrip = rtt
        let wait = heard.repairWait.depth(reorderWait: heard.nack.reorderWait, roundTrip: rtt,
                                          retryMargin: heard.nack.retryMargin)
        let depth = min(max(wait, configuration.minimumDelay), configuration.maximumDelay)
        heard.assembler.maxDelay = depth
        // Past the reordering seen, a hole before a whole keyframe is a loss
        // nobody repairs (the sender sent the keyframe instead).
        heard.assembler.keyframeSkipAfter = heard.nack.reorderWait + .milliseconds(10)
        heard.nack.maxAge = depth
    }

    /// Handles one datagram. `emit` sends RTCP feedback back to the sender.
    public func handle(datagram: inout PacketBuffer, now: MonotonicTime,
                       emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        statistics.datagrams += 1
        statistics.bytes += datagram.count
        guard datagram.count >= 12, datagram.bytes.first.map({ $0 >> 6 == 2 }) == true else {
            statistics.malformed += 1
            return []
        }
        let second = datagram.bytes[datagram.bytes.startIndex + 1]
        // RFC 5761 §4: with rtcp-mux, packet types 192-223 are RTCP.
        if RTCPPacket.isRTCP(payloadTypeByte: second) {
            return handleRTCP(&datagram, now: now, emit: emit)
        }
        guard let packet = unprotect(&datagram, now: now) else { return [] }
        noteStream(packet.ssrc, now: now)
        if configuration.congestionFeedback { heard.feedback.received(ssrc: packet.ssrc, sequence: packet.sequenceNumber, now: now) }
        // A bandwidth probe's padding (RFC 4588 §8.2): its arrival is all
        // it carries, and the feedback above has it.
        if let rtx = configuration.retransmissionPayloadType, packet.payloadType == rtx, packet.payload.isEmpty,
           !packet.padding.isEmpty, packet.ssrc != heard.videoSSRC {
            statistics.paddingReceived += 1
            return []
        }
        if let rtx = configuration.retransmissionPayloadType, packet.payloadType == rtx, let ssrc = heard.videoSSRC,
           let videoPayloadType = heard.videoPayloadType, packet.ssrc != ssrc {
            return retransmission(packet, of: ssrc, payloadType: videoPayloadType, now: now, emit: emit)
        }
        if let fecType = configuration.fecPayloadType, packet.payloadType == fecType, let ssrc = heard.videoSSRC,
           packet.ssrc != ssrc {
            return forwardErrorCorrection(packet, of: ssrc, now: now, emit: emit)
        }
        var events = followVideoStream(packet, now: now)
        guard packet.ssrc == heard.videoSSRC, packet.payloadType == heard.videoPayloadType else {
            return events + [.otherPacket(packet)]
        }
        heard.videoHeardAt = now
        heard.reception?.record(sequence: packet.sequenceNumber, timestamp: packet.timestamp, arrival: now)
        events.gather(video(packet, isRepair: false, now: now, emit: emit))
        if heard.fec.isActive(now: now) {
            for rebuilt in heard.fec.media(datagram.bytes, sequence: packet.sequenceNumber, ssrc: packet.ssrc, now: now) {
                events.gather(recovered(rebuilt, now: now, emit: emit))
            }
        }
        return events
    }

    /// Authenticates and decrypts an RTP datagram in place and parses it;
    /// nil, counted, when it is forged, replayed or malformed.
    private func unprotect(_ datagram: inout PacketBuffer, now: MonotonicTime) -> RTPPacket? {
        resumeIfJoinedLate(datagram, now: now)
        do {
            try srtp.unprotect(&datagram)
        } catch {
            switch error.kind {
            case .replayed, .tooOld:
                // libsrtp2 refuses a packet that looks old before it checks
                // the tag: only a genuine tag makes it a replay.
                if srtp.carriesGenuineTag(rtp: datagram) { statistics.replays += 1 } else {
                    statistics.authenticationFailures += 1
                }
            case .badLength: statistics.malformed += 1
            default: statistics.authenticationFailures += 1
            }
            return nil
        }
        guard let packet = try? RTPPacket(parsing: datagram.bytes) else {
            statistics.malformed += 1
            return nil
        }
        statistics.rtpPackets += 1
        return packet
    }

    /// An RTX repair (RFC 4588 §4: the original sequence number, then the
    /// original payload) of the video stream `ssrc`.
    private func retransmission(_ packet: RTPPacket, of ssrc: UInt32, payloadType: UInt8, now: MonotonicTime,
                                emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        guard packet.payload.count >= 2 else {
            statistics.malformed += 1
            return []
        }
        let start = packet.payload.startIndex
        let original = RTPPacket(marker: packet.marker, payloadType: payloadType,
                                 sequenceNumber: UInt16(packet.payload[start]) << 8 | UInt16(packet.payload[start + 1]),
                                 timestamp: packet.timestamp, ssrc: ssrc, headerExtension: packet.headerExtension,
                                 payload: packet.payload.dropFirst(2))
        statistics.repairsReceived += 1
        var events = video(original, isRepair: true, now: now, emit: emit)
        if heard.fec.isActive(now: now) {
            for rebuilt in heard.fec.media(original.serialized()[...], sequence: original.sequenceNumber, ssrc: ssrc, now: now) {
                events.gather(recovered(rebuilt, now: now, emit: emit))
            }
        }
        return events
    }

    /// A FlexFEC repair (RFC 8627) of the video stream `ssrc`.
    private func forwardErrorCorrection(_ packet: RTPPacket, of ssrc: UInt32, now: MonotonicTime,
                                        emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        guard packet.csrcs.first == ssrc, let repair = FlexFEC.Repair(payload: packet.payload) else {
            statistics.malformed += 1
            return []
        }
        statistics.fecPacketsReceived += 1
        var events: [ReceiveEvent] = []
        for rebuilt in heard.fec.add(repair, ssrc: ssrc, now: now) { events.gather(recovered(rebuilt, now: now, emit: emit)) }
        return events
    }

    /// Takes the video stream from `packet`: the first of a dynamic
    /// payload type (or the one configured), or a new one that took the
    /// place of a stream silent for `streamTakeover`.
    private func followVideoStream(_ packet: RTPPacket, now: MonotonicTime) -> [ReceiveEvent] {
        var events: [ReceiveEvent] = []
        if let current = heard.videoSSRC, packet.ssrc != current, packet.payloadType == heard.videoPayloadType,
           let heardAt = heard.videoHeardAt, now.since(heardAt) >= Self.streamTakeover {
            // The stream went silent and another took its place: follow it.
            let payloadType = heard.videoPayloadType
            forgetStreams()
            heard.videoPayloadType = payloadType
            statistics.streamsReplaced += 1
            events.append(.streamReplaced(ssrc: packet.ssrc))
        }
        if heard.videoSSRC == nil, packet.payloadType == (heard.videoPayloadType ?? packet.payloadType),
           (96...127).contains(packet.payloadType) || heard.videoPayloadType != nil {
            heard.videoSSRC = packet.ssrc
            heard.videoPayloadType = packet.payloadType
            heard.reception = ReceptionStatistics(ssrc: packet.ssrc, clockRate: 90_000)
        }
        return events
    }

    /// A packet FlexFEC rebuilt: into the jitter buffer as a repair.
    private func recovered(_ bytes: [UInt8], now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        guard let packet = try? RTPPacket(parsing: bytes), packet.ssrc == heard.videoSSRC,
              packet.payloadType == heard.videoPayloadType else { return [] }
        // Counted when it was missing: a repair that arrived before the
        // decoder kept media (the first group) "rebuilds" packets already here.
        let before = heard.assembler.counters
        let events = video(packet, isRepair: true, now: now, emit: emit)
        let after = heard.assembler.counters
        if after.duplicates == before.duplicates, after.late == before.late { statistics.fecRecovered += 1 }
        return events
    }

    /// A video packet, original or rebuilt from a repair, into NACK
    /// tracking and the jitter buffer.
    private func video(_ packet: RTPPacket, isRepair: Bool, now: MonotonicTime,
                       emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        if configuration.nack {
            let needless = heard.nack.needlessRequests
            heard.nack.received(heard.unwrapper.unwrap(packet.sequenceNumber), now: now, isRepair: isRepair,
                                timestamp: packet.timestamp, marker: packet.marker)
            statistics.needlessNACKs += heard.nack.needlessRequests - needless
        }
        let before = heard.assembler.counters
        var events = convert(heard.assembler.insert(packet, now: now), now: now, emit: emit)
        statistics.duplicates += heard.assembler.counters.duplicates - before.duplicates
        statistics.late += heard.assembler.counters.late - before.late
        events.gather(poll(now: now, emit: emit))
        return events
    }

    /// Runs timers: gives up on old gaps, sends NACKs and periodic reports.
    /// Call it at least every `pollInterval` when no datagram arrives.
    public func poll(now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        let events = convert(heard.assembler.poll(now: now), now: now, emit: emit)
        if configuration.congestionFeedback, let report = heard.feedback.poll(now: now, senderSSRC: configuration.ssrc) {
            statistics.feedbackReportsSent += 1
            sendRTCP([.congestionFeedback(report)], emit: emit)
        }
        if let ssrc = heard.videoSSRC, configuration.nack {
            let lost = heard.nack.due(now: now)
            heard.assembler.burstAllowance = heard.nack.burstAllowance
            if !lost.isEmpty {
                statistics.nacksSent += 1
                statistics.nackedPackets += lost.count
                sendRTCP([.nack(GenericNACK(senderSSRC: configuration.ssrc, mediaSSRC: ssrc, lost: lost))], emit: emit)
            }
        }
        if heard.nextReport == nil || now >= heard.nextReport!, var reception = heard.reception {
            heard.nextReport = now + configuration.reportInterval
            let report = reception.makeReport(now: now)
            heard.reception = reception
            heard.repairWait.reported(fractionLost: Double(report.fractionLost) / 256)
            statistics.reportsSent += 1
            tuneDelays()
            sendRTCP([.receiverReport(ReceiverReport(ssrc: configuration.ssrc, reports: [report])),
                      .sourceDescription(SourceDescription(ssrc: configuration.ssrc, cname: configuration.cname)),
                      .extendedReport(ExtendedReport(ssrc: configuration.ssrc, receiverReferenceTime: heard.probe.reference(now: now))),
                      PointerDrawing(drawsPointer: configuration.drawsPointer).packet(ssrc: configuration.ssrc)],
                     emit: emit)
        }
        return events
    }

    /// How long until `poll` has work, at most.
    public static let pollInterval: Duration = .milliseconds(10)

    private func convert(_ assembled: [H264FrameAssembler.Event], now: MonotonicTime,
                         emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        var events: [ReceiveEvent] = []
        events.reserveCapacity(assembled.count)
        for event in assembled {
            switch event {
            case .frame(let unit): events.append(.videoFrame(unit))
            case .slices(let slices): events.append(.videoSlices(slices))
            case .lost(let loss):
                statistics.framesLost += loss.frames
                events.append(.videoLoss(loss))
                requestKeyframe(now: now, emit: emit)
            }
        }
        return events
    }

    /// Sends a PLI (RFC 4585 §6.3.1), at most once per `keyframeRequestInterval`.
    /// Returns whether one was sent.
    @discardableResult
    public func requestKeyframe(now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) -> Bool {
        guard let ssrc = heard.videoSSRC else { return false }
        if let last = heard.lastKeyframeRequest, now.since(last) < configuration.keyframeRequestInterval { return false }
        heard.lastKeyframeRequest = now
        statistics.plisSent += 1
        sendRTCP([.pictureLoss(PictureLossIndication(senderSSRC: configuration.ssrc, mediaSSRC: ssrc))], emit: emit)
        return true
    }

    /// RTCP BYE (RFC 3550 §6.6) after an empty receiver report, when the
    /// receiver stops: the sender knows at once that no one listens.
    public func goodbye(reason: String, emit: (ArraySlice<UInt8>) -> Void) {
        guard heard.videoSSRC != nil else { return }
        sendRTCP([.receiverReport(ReceiverReport(ssrc: configuration.ssrc)),
                  .goodbye(Goodbye(sources: [configuration.ssrc], reason: reason))], emit: emit)
    }

    func sendRTCP(_ packets: [RTCPPacket], emit: (ArraySlice<UInt8>) -> Void) {
        var rtcp = PacketBuffer(RTCPPacket.serializeCompound(packets))
        guard (try? outbound.protectRTCP(&rtcp)) != nil else { return }
        emit(rtcp.bytes)
    }

    /// Packets lost so far per RFC 3550 §A.3 (negative with duplicates).
    public var cumulativeLost: Int64 { heard.reception?.cumulativeLost ?? 0 }
}

private extension Array {
    /// Appends `more`, taking its storage when there is nothing here yet:
    /// most packets bring one event or none, and a copy would allocate
    /// (StageBenchmarks' unprotect-depacketize counts the allocations).
    mutating func gather(_ more: [Element]) {
        if isEmpty { self = more } else { self += more }
    }
}
