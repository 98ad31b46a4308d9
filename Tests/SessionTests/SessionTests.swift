import ShareSRTP
import ShareSession
import ShareWire
import TestSupport
import Testing
import ShareBase

/// A synthetic H.264 access unit of `size` bytes (keyframes carry SPS/PPS).
func accessUnit(_ n: Int, size: Int, keyframe: Bool) -> [UInt8] {
    var au: [UInt8] = []
    if keyframe { au += [0, 0, 0, 1, 0x67, 0x42, 0xC0, 0x1F, 0, 0, 0, 1, 0x68, 0xCE, 0x3C, 0x80] }
    au += [0, 0, 0, 1, keyframe ? 0x65 : 0x41]
    au += (0..<size).map { UInt8(truncatingIfNeeded: ($0 &* 31 &+ n) % 250 + 4) }
    return au
}

/// The SSRC of an RTP packet on the wire (SRTP leaves the header clear).
func ssrc(of packet: [UInt8]) -> UInt32 {
    UInt32(packet[8]) << 24 | UInt32(packet[9]) << 16 | UInt32(packet[10]) << 8 | UInt32(packet[11])
}

/// The sequence number of an RTP packet on the wire.
func sequenceNumber(of packet: [UInt8]) -> UInt16 { UInt16(packet[2]) << 8 | UInt16(packet[3]) }

/// Sender and receiver sessions joined by an in-memory channel with a clock.
final class Link {
    let keying: SRTPKeyingMaterial
    let sender: SendStream
    let receiver: ReceiveSession
    var now = MonotonicTime(nanoseconds: 1_000_000_000)
    var toReceiver: [[UInt8]] = []
    var toSender: [[UInt8]] = []
    var frames: [AccessUnit] = []
    var losses = 0
    var feedback: [SenderFeedback] = []
    var states: [StreamState] = []
    var layouts: [[AudioStreamLayout]] = []
    var goodbyes: [String?] = []
    var replacedBy: [UInt32] = []

    /// `sessionPeer`: the receiver is the one a handshake set the stream up
    /// for (its first report is no late join); otherwise a static-key
    /// receiver, whose first report brings a keyframe.
    init(initialSequenceNumber: UInt16 = 65_500, sessionPeer: Bool = false, receiverDrawsPointer: Bool = false,
         profile: SRTPProfile = .aes128CmHmacSha1_80,
         configure: (inout SendStream.Configuration) -> Void = { _ in },
         configureReceiver: (inout ReceiveSession.Configuration) -> Void = { _ in }) throws {
        keying = .random(profile: profile)
        var configuration = SendStream.Configuration(ssrc: 0xAAAA, cname: "sender")
        configure(&configuration)
        sender = try SendStream(configuration: configuration, keying: keying, initialSequenceNumber: initialSequenceNumber)
        if sessionPeer { try sender.rekey(.symmetric(keying)) }
        var receiving = ReceiveSession.Configuration(ssrc: 0xBBBB, cname: "receiver", videoPayloadType: 96)
        receiving.drawsPointer = receiverDrawsPointer
        configureReceiver(&receiving)
        receiver = try ReceiveSession(configuration: receiving, keying: keying)
    }

    func send(_ n: Int, size: Int = 5000, keyframe: Bool = false) throws {
        try sender.send(accessUnit: accessUnit(n, size: size, keyframe: keyframe), rtpTimestamp: UInt32(n * 3000),
                        captureTime: NTPTimestamp(unixNanoseconds: 1_700_000_000_000_000_000 + UInt64(n) * 33_000_000),
                        now: now) { toReceiver.append(Array($0)) }
    }

    /// Delivers queued datagrams both ways, dropping those `drop` selects.
    func deliver(drop: (Int, [UInt8]) -> Bool = { _, _ in false }) {
        let batch = toReceiver
        toReceiver.removeAll()
        for (index, bytes) in batch.enumerated() where !drop(index, bytes) {
            var datagram = PacketBuffer(bytes)
            record(receiver.handle(datagram: &datagram, now: now) { toSender.append(Array($0)) })
        }
        record(receiver.poll(now: now) { toSender.append(Array($0)) })
        let replies = toSender
        toSender.removeAll()
        for bytes in replies {
            var datagram = PacketBuffer(bytes)
            feedback += sender.handle(datagram: &datagram, now: now) { toReceiver.append(Array($0)) }
        }
    }

    func advance(_ duration: Duration) {
        now = now + duration
    }

    /// Frames `frames` of 40,000 bytes (about 35 packets each) 33 ms apart,
    /// keyframes at `keyframes`; not `heard`, they go to no one (the
    /// receiver is not there yet).
    func stream(_ frames: Range<Int>, keyframes: Set<Int>, heard: Bool = true) throws {
        for n in frames {
            try send(n, size: 40_000, keyframe: keyframes.contains(n))
            deliver(drop: { _, _ in !heard })
            advance(.milliseconds(33))
        }
    }

    private func record(_ events: [ReceiveEvent]) {
        for event in events {
            switch event {
            case .videoFrame(let unit): frames.append(unit)
            case .videoLoss(let loss): losses += loss.frames
            case .senderState(let state, _): states.append(state)
            case .audioLayout(let streams): layouts.append(streams)
            case .goodbye(_, let reason): goodbyes.append(reason)
            case .streamReplaced(let ssrc): replacedBy.append(ssrc)
            default: continue
            }
        }
    }
}

@Suite("Send and receive sessions (sans-IO)")
struct SessionTests {
    @Test func framesArriveIntactWithCaptureTime() throws {
        let link = try Link()
        for n in 0..<20 {
            try link.send(n, size: n == 0 ? 40_000 : 3000, keyframe: n == 0)
            link.deliver()
            link.advance(.milliseconds(33))
        }
        #expect(link.frames.count == 20)
        #expect(link.frames.map { nalTypes($0.data) }.first == [7, 8, 5])
        #expect(link.frames[0].data == accessUnit(0, size: 40_000, keyframe: true))
        let ext = try #require(link.frames[5].headerExtension?.element(id: 1))
        #expect(AbsoluteCaptureTime(ext)?.ntpTimestamp == NTPTimestamp(unixNanoseconds: 1_700_000_000_000_000_000 + 5 * 33_000_000))
        #expect(link.receiver.statistics.authenticationFailures == 0)
    }

    /// A lost packet is NACKed, retransmitted from the sender's history and
    /// the frame completes: nothing is lost end to end.
    @Test func lostPacketIsRecoveredByNACK() throws {
        let link = try Link()
        try link.send(0, size: 20_000, keyframe: true)
        link.deliver()
        try link.send(1, size: 20_000)
        link.deliver { index, _ in index == 3 }  // drop one packet of frame 1
        #expect(link.frames.count == 1)
        link.advance(.milliseconds(2))  // past the reordering wait (1 ms while none was seen)
        link.deliver()
        #expect(link.receiver.statistics.nacksSent == 1)
        #expect(link.feedback.contains(.retransmitted(count: 1, missed: 0)))
        link.deliver()  // the retransmission arrives
        #expect(link.frames.count == 2)
        #expect(link.frames[1].data == accessUnit(1, size: 20_000, keyframe: false))
        #expect(link.losses == 0)
        #expect(link.sender.statistics.retransmitted == 1)
    }

    /// When a retransmission is lost too, the jitter buffer gives up after its
    /// delay, reports the loss and asks for a keyframe with a PLI, which the
    /// sender turns into a keyframe request (rate limited).
    @Test func unrecoverableLossRequestsKeyframe() throws {
        // The session's own receiver: the only keyframe request is the loss's.
        let link = try Link(sessionPeer: true)
        try link.send(0, size: 10_000, keyframe: true)
        link.deliver()
        try link.send(1, size: 10_000)
        try link.send(2, size: 10_000)
        // Drop a packet of frame 1 and every later copy of it.
        let victim = link.toReceiver[2]
        link.deliver { _, bytes in bytes == victim }
        for _ in 0..<12 {
            link.advance(.milliseconds(20))
            link.deliver { _, bytes in bytes == victim }
        }
        #expect(link.losses >= 1)
        #expect(link.frames.count == 2, "frames 0 and 2 arrive; 1 cannot")
        #expect(link.receiver.statistics.plisSent >= 1)
        #expect(link.feedback.contains(.keyframeRequested))
        #expect(link.sender.statistics.keyframeRequests == 1, "requests within 200 ms are folded into one")
    }

    /// A receiver that joins just before the sequence number wraps (so SRTP's
    /// rollover counter steps while it is learning the stream): every frame
    /// from its first keyframe on arrives, none fails authentication.
    @Test func aReceiverJoiningAsTheSequenceWraps() throws {
        let link = try Link(initialSequenceNumber: 65_200)
        // Frames 0-5 go to no one: the receiver is not there yet.
        try link.stream(0..<6, keyframes: [0], heard: false)
        // It joins a little before 65535: frames of ~35 packets each carry the
        // sequence across the wrap and around again.
        try link.stream(6..<40, keyframes: [6, 30])
        #expect(link.receiver.statistics.authenticationFailures == 0)
        #expect(link.receiver.statistics.replays == 0)
        #expect(link.frames.count == 34, "every frame from the receiver's first keyframe: \(link.frames.count)")
        #expect(link.frames.last?.data == accessUnit(39, size: 40_000, keyframe: false))
        #expect(link.losses == 0)
    }

    /// A sender started again with the same static key (ffmpeg run twice;
    /// its RTCP, BYE included, goes to another port, so the receiver hears
    /// no goodbye): once the first stream has been silent for a second, the
    /// new one is followed, from its keyframe. Two streams at once do not
    /// take turns: the one heard first keeps the receiver while it sends.
    @Test func aSenderStartedAgainWithTheSameKeyIsFollowed() throws {
        let link = try Link()
        var other = SendStream.Configuration(ssrc: 0xDDDD, cname: "sender again")
        other.payloadType = 96
        let again = try SendStream(configuration: other, keying: link.keying, initialSequenceNumber: 1234)
        func sendAgain(_ n: Int, keyframe: Bool) throws {
            try again.send(accessUnit: accessUnit(1000 + n, size: 3000, keyframe: keyframe), rtpTimestamp: UInt32(n * 3000),
                           captureTime: NTPTimestamp(unixNanoseconds: 1_800_000_000_000_000_000 + UInt64(n) * 33_000_000),
                           now: link.now) { link.toReceiver.append(Array($0)) }
        }
        // The first stream, with the second sending alongside it for a while.
        for n in 0..<30 {
            try link.send(n, size: 3000, keyframe: n == 0)
            if n >= 10 { try sendAgain(n, keyframe: n == 10) }
            link.deliver()
            link.advance(.milliseconds(33))
        }
        #expect(link.replacedBy.isEmpty && link.frames.count == 30)
        #expect(link.frames.allSatisfy { $0.data != accessUnit(1010, size: 3000, keyframe: true) })
        // The first stops; 0.9 s later the second is still not followed.
        link.advance(.milliseconds(900))
        try sendAgain(40, keyframe: false)
        link.deliver()
        #expect(link.replacedBy.isEmpty)
        // At a second of silence it is, and its frames come from its keyframe on.
        link.advance(.milliseconds(200))
        for n in 41..<60 {
            try sendAgain(n, keyframe: n == 41)
            link.deliver()
            link.advance(.milliseconds(33))
        }
        #expect(link.replacedBy == [0xDDDD])
        #expect(link.receiver.statistics.streamsReplaced == 1)
        #expect(link.receiver.senderSSRC == 0xDDDD)
        #expect(link.frames.count == 30 + 19, "\(link.frames.count)")
        #expect(link.frames.last?.data == accessUnit(1059, size: 3000, keyframe: false))
        // The first, back while the second sends, is not followed again.
        try link.send(30, size: 3000, keyframe: true)
        link.deliver()
        #expect(link.replacedBy.count == 1 && link.receiver.senderSSRC == 0xDDDD)
        #expect(link.receiver.statistics.authenticationFailures == 0)
    }

    /// A static-key receiver that starts listening after the sender's
    /// sequence numbers wrapped: libsrtp2 alone would assume rollover
    /// counter 0 and refuse every packet. The session finds the counter from
    /// the first packet's tag and receives everything from then on.
    @Test(arguments: [SRTPProfile.aes128CmHmacSha1_80, .aeadAes128Gcm, .aes256CmHmacSha1_32])
    func aReceiverJoiningAfterTheSequenceWrapped(profile: SRTPProfile) throws {
        let link = try Link(initialSequenceNumber: 65_000, profile: profile)
        // ~1000 packets go to no one: the sender's counter is 1 when the receiver comes.
        try link.stream(0..<30, keyframes: [0], heard: false)
        try link.stream(30..<45, keyframes: [30])
        let s = link.receiver.statistics
        #expect(s.streamsResumed == 1 && s.rolloverSearches == 1 && s.rolloverSearchesLimited == 0)
        #expect(s.authenticationFailures == 0 && s.replays == 0)
        #expect(link.frames.count == 15, "every frame from the first one heard: \(link.frames.count)")
        #expect(link.frames.last.map { $0.data == accessUnit(44, size: 40_000, keyframe: false) } == true)
        #expect(link.losses == 0)
    }

    /// With a handshake, keys and counters are new each session: a packet
    /// under a new SSRC is never searched (a stranger cannot make the
    /// receiver hash), and one past a wrap is refused, as it should be.
    @Test func aHandshakeSessionNeverSearchesForCounters() throws {
        let link = try Link(initialSequenceNumber: 65_000, configureReceiver: { $0.searchesRolloverCounters = false })
        try link.stream(0..<30, keyframes: [0], heard: false)
        try link.stream(30..<35, keyframes: [30])
        let s = link.receiver.statistics
        #expect(s.rolloverSearches == 0 && s.rolloverSearchesLimited == 0 && s.streamsResumed == 0)
        #expect(link.frames.isEmpty && s.authenticationFailures > 0)
    }

    /// A key holder changing SSRC at every packet cannot grow the receiver:
    /// past 16 SRTP streams the one heard longest ago goes, never the video
    /// stream being shown, which carries on.
    @Test func newSSRCsPastTheCapReplaceTheOldestStream() throws {
        let link = try Link()
        try link.send(0, size: 3000, keyframe: true)
        link.deliver()
        for i in 0..<40 {
            let other = try SendStream(configuration: .init(ssrc: 0x1000 + UInt32(i), cname: "x"), keying: link.keying)
            try other.send(accessUnit: accessUnit(i, size: 500, keyframe: true), rtpTimestamp: UInt32(i), captureTime: .init(rawValue: 0),
                           now: link.now) { bytes in
                var datagram = PacketBuffer(bytes)
                _ = link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in })
            }
            link.advance(.milliseconds(1))
        }
        let s = link.receiver.statistics
        #expect(s.streamsForgotten == 41 - 16, "\(s.streamsForgotten)")
        try link.send(1, size: 3000)
        link.deliver()
        #expect(link.frames.count == 2 && link.receiver.senderSSRC == 0xAAAA, "the video stream carries on")
        #expect(link.receiver.statistics.authenticationFailures == 0)
    }

    /// A datagram larger than an MTU is never a genuine packet of a stream
    /// joined late: it is not searched, so a stranger's 64 KiB datagrams
    /// cannot make the search costly.
    @Test func datagramsLargerThanAnMTUAreNotSearched() throws {
        let link = try Link()
        var rng = SeededGenerator(seed: 7)
        for size in [1501, 9000, 65_000] {
            var bytes = rng.bytes(size)
            bytes[0] = 0x80
            bytes[1] = 96
            var datagram = PacketBuffer(bytes)
            #expect(link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }).isEmpty)
        }
        let s = link.receiver.statistics
        #expect(s.rolloverSearches == 0 && s.rolloverSearchesLimited == 3 && s.authenticationFailures == 3)
    }

    /// A sender paused for 60 hours still writes its sender report (the RTP
    /// time of "now" is extrapolated from the last frame without overflow).
    @Test func aSenderReportAfterALongPause() throws {
        let link = try Link()
        try link.send(0, size: 1000, keyframe: true)
        link.deliver()
        link.advance(.seconds(60 * 3600))
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        var reports: [SenderReport] = []
        for bytes in link.toReceiver {
            var datagram = PacketBuffer(bytes)
            for case .senderReport(_, let report) in link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }) {
                reports.append(report)
            }
        }
        let report = try #require(reports.last)
        // 60 h at 90 kHz, modulo 2^32.
        #expect(report.rtpTimestamp == UInt32(truncatingIfNeeded: UInt64(60 * 3600) * 90_000))
    }

    /// RFC 3550 §6.4.1 allows NTP time 0 (senders without a wall clock): a
    /// time before 1970 maps to a negative Unix time, not a trap.
    @Test func clockMappingTakesReportsStampedBefore1970() {
        var clocks = ClockMapping()
        clocks.update(ssrc: 1, report: SenderReport(ssrc: 1, ntpTimestamp: NTPTimestamp(rawValue: 0), rtpTimestamp: 90_000,
                                                    packetCount: 0, octetCount: 0))
        let mapped = clocks.unixNanoseconds(ssrc: 1, timestamp: 180_000, clockRate: 90_000)
        #expect(mapped == -Int64(NTPTimestamp.unixEpochOffset) * 1_000_000_000 + 1_000_000_000)
    }

    @Test func receiverReportsGiveRoundTripAndLoss() throws {
        let link = try Link()
        for n in 0..<10 {
            try link.send(n, size: 2000, keyframe: n == 0)
            link.deliver()
            link.sender.poll(now: link.now) {
                link.toReceiver.append(Array($0))
            }
            link.advance(.milliseconds(600))
        }
        let reports = link.feedback.compactMap { item -> Duration?? in
            if case .receiverReport(_, let rtt) = item { return rtt }
            return nil
        }
        #expect(reports.count >= 2)
        // The in-memory channel has no delay: the RTT is the report's own age, under a report interval.
        let rtt = try #require(link.sender.statistics.roundTrip)
        #expect(rtt < .seconds(1))
    }

    /// `poll` says when the stream next has something to send, so the
    /// feedback thread can sleep until then: the next sender report (1 s),
    /// an unanswered announcement's repeat (100 ms), a pointer position held
    /// back by its minimum interval (8 ms).
    @Test func pollSaysWhenItNextHasSomethingToSend() throws {
        let link = try Link()
        try link.send(0, size: 1000, keyframe: true)
        link.deliver()
        let start = link.now
        var due = link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        #expect(due == start + .seconds(1), "the next report")
        link.deliver()
        link.sender.announce(.paused, now: link.now)
        due = link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        #expect(due == link.now + .milliseconds(100), "the announcement's repeat")
        link.deliver()                                               // answered
        #expect(link.sender.stateAcknowledged)
        due = link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        #expect(due == start + .seconds(1), "answered: the report again")
        link.sender.updateCursor(CursorPosition(x: 10, y: 20, areaWidth: 640, areaHeight: 480, shape: 1, visible: true), shape: nil, now: link.now) { _ in }
        link.sender.updateCursor(CursorPosition(x: 11, y: 20, areaWidth: 640, areaHeight: 480, shape: 1, visible: true), shape: nil, now: link.now) { _ in }
        due = link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        #expect(due == link.now + .milliseconds(8), "the position held back")
        // A pointer no longer shown is not held back: it leaves at once.
        var sent = 0
        link.sender.updateCursor(CursorPosition(x: 11, y: 20, areaWidth: 640, areaHeight: 480, shape: 1, visible: false), shape: nil,
                                 now: link.now + .milliseconds(1)) { _ in sent += 1 }
        #expect(sent == 1)
    }

    /// A receiver says with each report whether it draws the pointer; the
    /// sender sends it apart while every receiver reporting does. A second
    /// receiver that does not (a recording one, ffmpeg) brings it back into
    /// the pictures; a new session's receiver has said nothing yet.
    @Test func theReceiversSayWhetherThePointerGoesApart() throws {
        let drawing = try Link(sessionPeer: true, receiverDrawsPointer: true)
        #expect(!drawing.sender.pointerDrawnApart(now: drawing.now), "before any report")
        try drawing.stream(0..<3, keyframes: [0])
        #expect(drawing.sender.pointerDrawnApart(now: drawing.now))
        let other = try ReceiveSession(configuration: .init(ssrc: 0xCCCC, cname: "recorder", videoPayloadType: 96),
                                       keying: drawing.keying)
        try drawing.send(3, size: 3000)
        var replies: [[UInt8]] = []
        for bytes in drawing.toReceiver {
            var datagram = PacketBuffer(bytes)
            _ = other.handle(datagram: &datagram, now: drawing.now) { replies.append(Array($0)) }
        }
        _ = other.poll(now: drawing.now) { replies.append(Array($0)) }
        drawing.deliver()
        for bytes in replies {
            var datagram = PacketBuffer(bytes)
            _ = drawing.sender.handle(datagram: &datagram, now: drawing.now) { _ in }
        }
        #expect(!drawing.sender.pointerDrawnApart(now: drawing.now), "a receiver that does not draw it reported")
        drawing.advance(.seconds(5))
        try drawing.stream(4..<6, keyframes: [])
        #expect(drawing.sender.pointerDrawnApart(now: drawing.now), "it went quiet")
        try drawing.sender.rekey(.symmetric(drawing.keying))
        #expect(!drawing.sender.pointerDrawnApart(now: drawing.now), "a new session")

        let recording = try Link(sessionPeer: true)
        try recording.stream(0..<3, keyframes: [0])
        recording.advance(.seconds(1))
        recording.deliver()
        #expect(recording.receiver.statistics.reportsSent >= 2)
        #expect(!recording.sender.pointerDrawnApart(now: recording.now))
    }

    /// Pause, resume and finish are repeated until the receiver answers,
    /// however many copies or answers are lost, and each is reported once.
    @Test func statesAreRepeatedUntilAnsweredAndReportedOnce() throws {
        let link = try Link()
        try link.send(0, size: 1000, keyframe: true)
        link.deliver()
        link.sender.announce(.paused, now: link.now)
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        link.deliver(drop: { _, _ in true })                      // the announcement is lost
        #expect(link.states.isEmpty && !link.sender.stateAcknowledged)
        link.advance(.milliseconds(50))
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        #expect(link.toReceiver.isEmpty, "not repeated before 100 ms")
        link.advance(.milliseconds(50))
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        // This copy arrives, but its answer is lost.
        for bytes in link.toReceiver {
            var datagram = PacketBuffer(bytes)
            for case .senderState(let state, _) in link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }) {
                link.states.append(state)
            }
        }
        link.toReceiver.removeAll()
        #expect(link.states == [.paused] && !link.sender.stateAcknowledged)
        link.advance(.milliseconds(100))
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        #expect(link.toReceiver.isEmpty, "the next copy waits twice as long")
        link.advance(.milliseconds(100))
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        link.deliver()                                                 // a copy and its answer arrive
        #expect(link.states == [.paused], "reported once")
        #expect(link.sender.stateAcknowledged)
        #expect(link.feedback.contains(.stateAcknowledged(.paused)))
        link.advance(.milliseconds(200))
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        #expect(link.toReceiver.isEmpty, "nothing more once answered")
        link.toReceiver.removeAll()
        link.sender.announce(.live, now: link.now)
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        link.deliver()
        #expect(link.states == [.paused, .live] && link.sender.stateAcknowledged)
        // Finished: announced with the BYE, answered, reported once as the goodbye.
        link.sender.goodbye(reason: "stopped by the user", now: link.now) { link.toReceiver.append(Array($0)) }
        link.toReceiver += link.toReceiver
        link.deliver()
        #expect(link.goodbyes == ["stopped by the user"])
        #expect(link.sender.stateAcknowledged)
    }

    /// An announcement nobody answers (the players of a static-key stream)
    /// is sent again after 100 ms, then twice as long each time, up to
    /// every 2 s; a receiver that joins hurries it, an answer ends it.
    @Test func anUnansweredStateIsRepeatedLessAndLessOften() {
        var announcer = StateAnnouncer()
        let start = MonotonicTime(nanoseconds: 1_000_000_000)
        announcer.announce(.paused, now: start)
        var sent: [UInt64] = []
        var now = start
        while now.since(start) < .seconds(12) {
            if announcer.poll(now: now) != nil { sent.append(now.since(start).nanoseconds / 1_000_000) }
            now = now + .milliseconds(10)
        }
        #expect(Array(sent.prefix(7)) == [0, 100, 300, 700, 1500, 3100, 5100], "\(sent)")
        #expect(zip(sent.dropFirst(6), sent.dropFirst(7)).allSatisfy { $1 - $0 == 2000 }, "then every 2 s: \(sent)")
        announcer.hurry(now: now)
        #expect(announcer.poll(now: now) != nil, "a receiver joined: at once")
        #expect(announcer.poll(now: now + .milliseconds(50)) == nil)
        #expect(announcer.poll(now: now + .milliseconds(100)) != nil, "and again soon")
        let answered = announcer.received(StateAcknowledgement(sequence: announcer.current.sequence))
        #expect(answered)
        announcer.hurry(now: now + .milliseconds(200))
        #expect(announcer.poll(now: now + .seconds(5)) == nil, "answered: never again")
    }

    /// A receiver that joins a stream whose state nobody answered learns
    /// it with its first report's answer, not at the next repeat (up to 2 s).
    @Test func aReceiverJoiningIsToldTheStateAtOnce() throws {
        let link = try Link()
        try link.send(0, size: 1000, keyframe: true)
        link.sender.announce(.paused, now: link.now)
        var unheard: [[UInt8]] = []
        for _ in 0..<500 {                                   // 5 s with nobody there
            link.sender.poll(now: link.now) { unheard.append(Array($0)) }
            link.advance(.milliseconds(10))
        }
        #expect(unheard.count >= 6 && unheard.count <= 12, "\(unheard.count) copies and reports in 5 s")
        link.deliver()                                       // the receiver gets the keyframe and reports
        #expect(link.states.isEmpty)
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        link.deliver()
        #expect(link.states == [.paused], "told with the answer to its first report")
        #expect(link.sender.stateAcknowledged)
    }

    /// The audio layout is told reliably and reported once; telling it is
    /// not a change of state (no "resumed" for a stream that never paused),
    /// and a pause after it still carries it.
    @Test func theAudioLayoutIsToldOnceAndIsNotAResume() throws {
        let link = try Link()
        try link.send(0, size: 1000, keyframe: true)
        link.deliver()
        let layout = [AudioStreamLayout(ssrc: 0x51, channels: 2), AudioStreamLayout(ssrc: 0x52, channels: 1)]
        link.sender.describe(audio: layout, now: link.now)
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        link.deliver(drop: { _, _ in true })                      // lost
        link.advance(.milliseconds(100))
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        link.toReceiver += link.toReceiver                             // and duplicated
        link.deliver()
        #expect(link.layouts == [layout], "reported once")
        #expect(link.states.isEmpty, "not a change of state")
        #expect(link.sender.stateAcknowledged)
        link.sender.announce(.paused, now: link.now)
        link.sender.poll(now: link.now) { link.toReceiver.append(Array($0)) }
        link.deliver()
        #expect(link.states == [.paused] && link.layouts == [layout])
    }

    @Test func goodbyeReachesTheReceiver() throws {
        let link = try Link()
        try link.send(0, size: 1000, keyframe: true)
        link.deliver()
        link.sender.goodbye(reason: "done", now: link.now) { link.toReceiver.append(Array($0)) }
        var sawBye = false
        for bytes in link.toReceiver {
            var datagram = PacketBuffer(bytes)
            for case .goodbye(let ssrc, let reason) in link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }) {
                sawBye = ssrc == 0xAAAA && reason == "done"
            }
        }
        #expect(sawBye)
    }

    /// Hostile input: random bytes, replays and a stranger's key are counted
    /// and dropped; the stream goes on.
    @Test func hostileDatagramsAreCountedAndDropped() throws {
        let link = try Link()
        var rng = SeededGenerator(seed: 99)
        try link.send(0, size: 3000, keyframe: true)
        let genuine = link.toReceiver
        link.deliver()
        for _ in 0..<2000 {
            var bytes = rng.bytes(Int.random(in: 0...1500, using: &rng))
            if !bytes.isEmpty && Bool.random(using: &rng) { bytes[0] = 0x80 }
            var datagram = PacketBuffer(bytes)
            #expect(link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }).isEmpty)
        }
        for bytes in genuine {  // replays
            var datagram = PacketBuffer(bytes)
            #expect(link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }).isEmpty)
        }
        for bytes in genuine {  // forged copies: a genuine header, a wrong tag
            var forged = bytes
            forged[forged.count - 1] ^= 0x01
            var datagram = PacketBuffer(forged)
            #expect(link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }).isEmpty)
        }
        // A stranger with another key claims the genuine SSRC. libsrtp checks
        // the replay window before the tag; the session checks the tags of
        // what it refused as old, so they are forgeries, not replays.
        let stranger = try SendStream(configuration: .init(ssrc: 0xAAAA, cname: "x"),
                                           keying: .random(profile: .aes128CmHmacSha1_80))
        var strangerPackets = 0
        try stranger.send(accessUnit: accessUnit(9, size: 3000, keyframe: true), rtpTimestamp: 1, captureTime: .init(rawValue: 0),
                          now: link.now) { bytes in
            strangerPackets += 1
            var datagram = PacketBuffer(bytes)
            #expect(link.receiver.handle(datagram: &datagram, now: link.now, emit: { _ in }).isEmpty)
        }
        let s = link.receiver.statistics
        #expect(s.replays == genuine.count, "only the genuine packets sent again are replays")
        #expect(s.authenticationFailures >= genuine.count + strangerPackets, "forgeries that look old are forgeries")
        #expect(s.replays + s.authenticationFailures + s.malformed == 2000 + 2 * genuine.count + strangerPackets,
                "every hostile datagram is counted exactly once")
        // Datagrams under SSRCs not heard yet each looked like a stream
        // joined late: searches for their rollover counter until the byte
        // budget was spent (all at one instant: the burst, and the one
        // search that took it into debt), none found, the rest refused.
        let largest = 1500 + 128 * 1023
        #expect(s.rolloverSearches >= 4 && s.streamsResumed == 0 && s.rolloverSearchesLimited > 100)
        #expect(s.rolloverSearchBytes <= Int(ReceiveSession.rolloverSearchBytesPerSecond) + largest, "\(s.rolloverSearchBytes)")
        try link.send(1, size: 3000)
        link.deliver()
        #expect(link.frames.count == 2, "the genuine stream carries on")
        // Feedback from a stranger to the sender is refused as well.
        var forged = PacketBuffer(RTCPPacket.pictureLoss(PictureLossIndication(senderSSRC: 1, mediaSSRC: 0xAAAA)).serialized())
        #expect(link.sender.handle(datagram: &forged, now: link.now, emit: { _ in }).isEmpty)
        #expect(link.sender.statistics.rtcpRejected == 1)
    }

    @Test func nackTrackerRepeatsAfterARoundTripAndGivesUpByTime() {
        var tracker = NACKTracker(maxAge: .milliseconds(250))
        tracker.roundTrip = .milliseconds(100)
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        tracker.received(10, now: now)
        tracker.received(14, now: now)  // 11, 12, 13 missing
        now = now + .milliseconds(1)
        #expect(tracker.due(now: now) == [11, 12, 13], "no reordering seen yet: asked for at once")
        now = now + .milliseconds(50)
        #expect(tracker.due(now: now).isEmpty, "not again within a round trip: the repair may be on its way")
        tracker.received(12, now: now, isRepair: true)
        now = now + .milliseconds(60)
        #expect(tracker.due(now: now) == [11, 13], "again after the round trip and its margin")
        now = now + .milliseconds(110)
        #expect(tracker.due(now: now) == [11, 13])
        now = now + .milliseconds(110)
        #expect(tracker.due(now: now).isEmpty, "given up once the jitter buffer would no longer wait")
        #expect(tracker.outstanding == 0)
        #expect(tracker.recovered == 1)
        // A huge jump (a restart or a forged sequence) is not NACKed.
        tracker.received(5000, now: now)
        #expect(tracker.outstanding == 0)
    }

    @Test func nackTrackerLearnsReorderingAndDoesNotAskForLatePackets() {
        var tracker = NACKTracker(maxAge: .milliseconds(500))
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        var sequence: Int64 = 0
        var requested = 0
        // Every 10th packet arrives 15 ms behind its successor.
        for round in 0..<50 {
            for i in 0..<10 {
                let value = sequence + Int64(i)
                if i == 5 { continue }
                tracker.received(value, now: now)
                now = now + .milliseconds(3)
                requested += tracker.due(now: now).count
            }
            now = now + .milliseconds(3)
            tracker.received(sequence + 5, now: now)
            requested += tracker.due(now: now).count
            sequence += 10
            _ = round
        }
        #expect(tracker.reorderWait > .milliseconds(12), "learnt: \(tracker.reorderWait)")
        #expect(requested <= 3, "after the first few, a late packet is waited for, not NACKed (\(requested) NACKs)")
        // A real loss is still asked for, once the reordering wait is over.
        tracker.received(sequence + 1, now: now)
        now = now + tracker.reorderWait + .milliseconds(1)
        #expect(tracker.due(now: now) == [UInt16(sequence)])
    }

    private func nalTypes(_ data: [UInt8]) -> [UInt8] { AnnexB.nalUnits(in: data).map { data[$0.lowerBound] & 0x1F } }
}
