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
    public private(set) var statistics = ReceiveStatistics()
    private var srtp: SRTPContext
    private var outbound: SRTPContext
    /// What is known of the sender's streams, replaced whole for a new sender.
    private var heard: StreamsHeard
    /// The pointer as the sender describes it (`--cursor metadata`).
    private var cursor = CursorAssembler()
    /// The SRTP streams kept, at most `maximumStreams`.
    private var streams = StreamLedger(capacity: ReceiveSession.maximumStreams)
    /// Bounds the bytes hashed searching for late streams' rollover counters.
    private var rolloverSearchBudget = RateLimiter(rate: ReceiveSession.rolloverSearchBytesPerSecond,
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
    private func noteStream(_ ssrc: UInt32, now: MonotonicTime) {
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

    /// Forgets the streams heard (a new sender): a fresh jitter buffer, NACK,
    /// FEC and report state.
    private func forgetStreams() {
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

    /// Rollover counters tried for a stream heard first after its sender's
    /// sequence numbers wrapped: up to 1023 wraps, 67 million packets (62
    /// hours at 300 packets a second).
    static let rolloverCandidates: ClosedRange<UInt32> = 1...1023

    /// Bytes a second the searches may hash, on average: a few HMAC
    /// searches (about 130 KB each), or one GCM search of a full packet
    /// every half second. Hashing runs at several hundred MB a second, so
    /// a stranger flooding the port costs the network thread well under 1%
    /// of a core here (the hostile suite's rollover flood measures it).
    public static let rolloverSearchBytesPerSecond = 2_000_000.0

    /// The most SSRCs whose SRTP streams are kept at once: a sender uses
    /// five or so (video, its repairs, FEC, two audio streams).
    static let maximumStreams = 16

    /// The largest datagram searched: a genuine sender's packets fit a
    /// path's MTU, so a larger one is never a stream joined late.
    public static let largestSearchedDatagram = 1500

    /// A receiver that starts after its sender's sequence numbers wrapped
    /// cannot know the rollover counter (a static key carries none, RFC
    /// 4568): libsrtp2 assumes 0 and would refuse every packet of the
    /// stream. So the first packet of an SSRC not heard yet whose tag is
    /// not genuine at 0 is tried at the counters after it; the one that
    /// makes its tag genuine resumes the stream there. What the searches
    /// hash is budgeted in bytes (`rolloverSearchBytesPerSecond`), and only
    /// datagrams that fit an MTU are searched, so a stranger's packets under
    /// ever new SSRCs cost bounded work.
    private func resumeIfJoinedLate(_ datagram: PacketBuffer, now: MonotonicTime) {
        let bytes = datagram.bytes
        guard configuration.searchesRolloverCounters, bytes.count >= RTPPacket.fixedHeaderSize else { return }
        let ssrc = bytes[(bytes.startIndex + 8)..<(bytes.startIndex + 12)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard !srtp.knows(ssrc: ssrc), srtp.rolloverCounter(of: datagram, among: 0...0) == nil else { return }
        let cost = srtp.searchCost(length: bytes.count, candidates: Self.rolloverCandidates.count)
        guard bytes.count <= Self.largestSearchedDatagram, rolloverSearchBudget.spend(Double(cost), now: now) else {
            statistics.rolloverSearchesLimited += 1
            return
        }
        statistics.rolloverSearches += 1
        statistics.rolloverSearchBytes += cost
        guard let counter = srtp.rolloverCounter(of: datagram, among: Self.rolloverCandidates),
              (try? srtp.resume(ssrc: ssrc, rolloverCounter: counter)) != nil else { return }
        statistics.streamsResumed += 1
    }

    /// Waits sized to the path: the first NACK waits out the reordering,
    /// a repair takes a round trip, and one more try fits before the jitter
    /// buffer gives up (RTT 1 ms: 50 ms; RTT 100 ms: ~230 ms).
    private func tuneDelays() {
        let rtt = heard.probe.smoothed ?? .milliseconds(50)
        heard.nack.roundTrip = rtt
        let wait = heard.nack.reorderWait + rtt * 2 + .milliseconds(30)
        let depth = min(max(wait, configuration.minimumDelay), configuration.maximumDelay)
        heard.assembler.maxDelay = depth
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
            return []
        }
        guard let packet = try? RTPPacket(parsing: datagram.bytes) else {
            statistics.malformed += 1
            return []
        }
        statistics.rtpPackets += 1
        noteStream(packet.ssrc, now: now)
        if configuration.congestionFeedback { heard.feedback.received(ssrc: packet.ssrc, sequence: packet.sequenceNumber, now: now) }
        if let rtx = configuration.retransmissionPayloadType, packet.payloadType == rtx, let ssrc = heard.videoSSRC,
           let videoPayloadType = heard.videoPayloadType, packet.ssrc != ssrc {
            // RFC 4588 §4: the original sequence number, then the original payload.
            guard packet.payload.count >= 2 else {
                statistics.malformed += 1
                return []
            }
            let start = packet.payload.startIndex
            let original = RTPPacket(marker: packet.marker, payloadType: videoPayloadType,
                                     sequenceNumber: UInt16(packet.payload[start]) << 8 | UInt16(packet.payload[start + 1]),
                                     timestamp: packet.timestamp, ssrc: ssrc, headerExtension: packet.headerExtension,
                                     payload: packet.payload.dropFirst(2))
            statistics.repairsReceived += 1
            var events = video(original, isRepair: true, now: now, emit: emit)
            if heard.fec.isActive(now: now) {
                for rebuilt in heard.fec.media(original.serialized()[...], sequence: original.sequenceNumber, ssrc: ssrc, now: now) {
                    events += recovered(rebuilt, now: now, emit: emit)
                }
            }
            return events
        }
        if let fecType = configuration.fecPayloadType, packet.payloadType == fecType, let ssrc = heard.videoSSRC,
           packet.ssrc != ssrc {
            guard packet.csrcs.first == ssrc, let repair = FlexFEC.Repair(payload: packet.payload) else {
                statistics.malformed += 1
                return []
            }
            statistics.fecPacketsReceived += 1
            var events: [ReceiveEvent] = []
            for rebuilt in heard.fec.add(repair, ssrc: ssrc, now: now) { events += recovered(rebuilt, now: now, emit: emit) }
            return events
        }
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
        guard packet.ssrc == heard.videoSSRC, packet.payloadType == heard.videoPayloadType else {
            return events + [.otherPacket(packet)]
        }
        heard.videoHeardAt = now
        heard.reception?.record(sequence: packet.sequenceNumber, timestamp: packet.timestamp, arrival: now)
        events += video(packet, isRepair: false, now: now, emit: emit)
        if heard.fec.isActive(now: now) {
            for rebuilt in heard.fec.media(datagram.bytes, sequence: packet.sequenceNumber, ssrc: packet.ssrc, now: now) {
                events += recovered(rebuilt, now: now, emit: emit)
            }
        }
        return events
    }

    /// A packet FlexFEC rebuilt: into the jitter buffer as a repair.
    private func recovered(_ bytes: [UInt8], now: MonotonicTime, emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        guard let packet = try? RTPPacket(parsing: bytes), packet.ssrc == heard.videoSSRC,
              packet.payloadType == heard.videoPayloadType else { return [] }
        statistics.fecRecovered += 1
        return video(packet, isRepair: true, now: now, emit: emit)
    }

    /// A video packet, original or rebuilt from a repair, into NACK
    /// tracking and the jitter buffer.
    private func video(_ packet: RTPPacket, isRepair: Bool, now: MonotonicTime,
                       emit: (ArraySlice<UInt8>) -> Void) -> [ReceiveEvent] {
        if configuration.nack {
            let needless = heard.nack.needlessRequests
            heard.nack.received(heard.unwrapper.unwrap(packet.sequenceNumber), now: now, isRepair: isRepair)
            statistics.needlessNACKs += heard.nack.needlessRequests - needless
        }
        let before = heard.assembler.counters
        var events = convert(heard.assembler.insert(packet, now: now), now: now, emit: emit)
        statistics.duplicates += heard.assembler.counters.duplicates - before.duplicates
        statistics.late += heard.assembler.counters.late - before.late
        events += poll(now: now, emit: emit)
        return events
    }

    private func handleRTCP(_ datagram: inout PacketBuffer, now: MonotonicTime,
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

    private func sendRTCP(_ packets: [RTCPPacket], emit: (ArraySlice<UInt8>) -> Void) {
        var rtcp = PacketBuffer(RTCPPacket.serializeCompound(packets))
        guard (try? outbound.protectRTCP(&rtcp)) != nil else { return }
        emit(rtcp.bytes)
    }

    /// Packets lost so far per RFC 3550 §A.3 (negative with duplicates).
    public var cumulativeLost: Int64 { heard.reception?.cumulativeLost ?? 0 }
}
