import ShareWire
import TestSupport
import Testing
import ShareBase

/// Packetizes `frames` into RTP packets (MTU-limited), one array per frame.
func packetize(_ frames: [[[UInt8]]], mtu: Int, firstSequence: UInt16) throws -> [[RTPPacket]] {
    var packetizer = RTPPacketizer(ssrc: 5, payloadType: 96, clockRate: 90_000, initialSequenceNumber: firstSequence)
    var payloader = H264Payloader(maxPayloadSize: mtu - RTPPacket.fixedHeaderSize)
    var buffer = PacketBuffer(capacity: mtu)
    var result: [[RTPPacket]] = []
    for (index, nals) in frames.enumerated() {
        let au = annexB(nals)
        let count = payloader.prepare(accessUnit: au[...])
        var packets: [RTPPacket] = []
        for i in 0..<count {
            packetizer.beginPacket(in: &buffer, timestamp: UInt32(truncatingIfNeeded: index * 3000 + 7),
                                   marker: i == count - 1)
            payloader.writePayload(i, of: au[...], into: &buffer)
            packets.append(try RTPPacket(parsing: Array(buffer.bytes)))
        }
        result.append(packets)
    }
    return result
}

@Suite("H.264 frame assembler: reordering, loss and duplicates")
struct FrameAssemblerTests {
    @Test func inOrderStreamYieldsEveryFrame() throws {
        var rng = SeededGenerator(seed: 1)
        let frames = (0..<50).map { _ in randomAccessUnit(using: &rng) }
        let packets = try packetize(frames, mtu: 1200, firstSequence: 65_500)
        var assembler = H264FrameAssembler()
        var out: [[[UInt8]]] = []
        var now = MonotonicTime.zero
        for packet in packets.joined() {
            now = now + .microseconds(100)
            for case .frame(let unit) in assembler.insert(packet, now: now) { out.append(nalList(unit.data)) }
        }
        #expect(out == frames)
        #expect(assembler.counters.framesLost == 0)
        #expect(assembler.bufferedPackets == 0)
    }

    /// A whole keyframe behind a gap: the gap is not waited for (a sender
    /// that sent the keyframe no longer repairs what came before it), and
    /// decoding goes on from the keyframe at once. Its start is proven by
    /// the unit before it, or, when that unit's end is what was lost, by
    /// the parameter sets it begins with.
    @Test(arguments: [false, true])
    func aWholeKeyframeBehindAGapIsNotKeptWaiting(losePacketBeforeIt: Bool) throws {
        func bytes(_ header: UInt8, _ count: Int, _ seed: UInt8) -> [UInt8] { [header] + (0..<count).map { UInt8(truncatingIfNeeded: $0) &+ seed } }
        let keyframe = { (seed: UInt8) in [bytes(0x67, 12, seed), bytes(0x68, 4, seed), bytes(0x65, 3000, seed)] }
        let frames = [keyframe(1), [bytes(0x41, 2500, 2)], [bytes(0x41, 2500, 3)], keyframe(4), [bytes(0x41, 800, 5)]]
        let packets = try packetize(frames, mtu: 1200, firstSequence: 100)
        var assembler = H264FrameAssembler(maxDelay: .seconds(1))
        assembler.keyframeSkipAfter = .milliseconds(5)
        var out: [[[UInt8]]] = []
        var lost = 0
        let victim = losePacketBeforeIt ? packets[2].last! : packets[1][1]
        func take(_ events: [H264FrameAssembler.Event]) {
            for event in events {
                switch event {
                case .frame(let unit): out.append(nalList(unit.data))
                case .lost(let loss): lost += loss.frames
                default: break
                }
            }
        }
        for packet in packets.joined() where packet.sequenceNumber != victim.sequenceNumber {
            take(assembler.insert(packet, now: .zero))
        }
        // Within the reordering allowance the hole is still waited for.
        #expect(out == [frames[0]] || (losePacketBeforeIt && out == [frames[0], frames[1]]))
        #expect(assembler.deadline == .zero + .milliseconds(5), "woken when the allowance is over")
        take(assembler.poll(now: .zero + .milliseconds(5)))
        #expect(out == [frames[0], frames[3], frames[4]] || (losePacketBeforeIt && out == [frames[0], frames[1], frames[3], frames[4]]),
                "no waiting for the second's repair: \(out.count) frames")
        #expect(out.last == frames[4])
        #expect(lost >= 1)
        #expect(assembler.counters.gapsSkippedForKeyframe == 1)
        #expect(assembler.deadline == nil, "nothing left to wait for")
    }

    /// The case a link falling to a tenth showed: a large frame's head
    /// arrives, its rest is never sent (a keyframe superseded it), and the
    /// keyframe comes slowly, a packet every 48 ms through the drained
    /// queue, so the gap's wait runs out before it is whole. The frame
    /// after the keyframe is then the first clean start the buffer can see
    /// by sequence numbers alone; the keyframe's own start is proven by the
    /// parameter sets it begins with, and it must not be passed over
    /// (it was, and the receiver waited a round trip for another).
    @Test func aKeyframeSlowerThanTheGapWaitIsNotPassedOver() throws {
        func bytes(_ header: UInt8, _ count: Int, _ seed: UInt8) -> [UInt8] {
            [header] + (0..<count).map { UInt8(truncatingIfNeeded: $0) &+ seed }
        }
        let keyframe = [bytes(0x67, 12, 3), bytes(0x68, 4, 3), bytes(0x65, 2400, 3)]
        let frames = [[bytes(0x41, 3000, 1)], [bytes(0x41, 12_000, 2)], keyframe,
                      [bytes(0x41, 500, 4)], [bytes(0x41, 600, 5)]]
        let packets = try packetize(frames, mtu: 1200, firstSequence: 100)
        var assembler = H264FrameAssembler(maxDelay: .milliseconds(50))
        assembler.keyframeSkipAfter = .milliseconds(15)
        var out: [[[UInt8]]] = []
        var now = MonotonicTime.zero
        func take(_ events: [H264FrameAssembler.Event]) {
            for case .frame(let unit) in events { out.append(nalList(unit.data)) }
        }
        for packet in packets[0] + packets[1].prefix(3) {
            now = now + .milliseconds(3)
            take(assembler.insert(packet, now: now))
        }
        for frame in packets[2...] {
            for packet in frame {
                now = now + .milliseconds(48)
                take(assembler.insert(packet, now: now))
                take(assembler.poll(now: now + .milliseconds(47)))
            }
        }
        // Each unit as its NAL units' headers and sizes (the units themselves print long).
        let summary = { (units: [[[UInt8]]]) in units.map { $0.map { "\($0[0])/\($0.count)" } } }
        let expected = [frames[0], frames[2], frames[3], frames[4]]
        #expect(summary(out) == summary(expected))
        let asSent = out == expected
        #expect(asSent, "the units' bytes as sent")
    }

    @Test func keyframeFlagAndCaptureExtension() throws {
        var packetizer = RTPPacketizer(ssrc: 1, payloadType: 96, clockRate: 90_000, initialSequenceNumber: 0)
        var buffer = PacketBuffer(capacity: 1500)
        let ext = try RTPHeaderExtension(elements: [RTPExtensionElement(id: 1, data: [1, 2, 3, 4, 5, 6, 7, 8])])
        packetizer.beginPacket(in: &buffer, timestamp: 10, marker: true, headerExtension: ext)
        buffer.append(contentsOf: [0x65, 1, 2])
        var assembler = H264FrameAssembler()
        let events = assembler.insert(try RTPPacket(parsing: Array(buffer.bytes)), now: .zero)
        guard case .frame(let unit) = events.first else { Issue.record("no frame"); return }
        #expect(unit.isKeyframe)
        #expect(unit.headerExtension == ext)
    }

    /// The verifier: a lossy, reordering, duplicating channel. Whatever
    /// arrives, every emitted frame is exactly one of the frames sent, in
    /// order, never a corrupt mix; with no loss every frame comes out.
    @Test(arguments: [
        (seed: UInt64(11), loss: 0.0, duplicate: 0.0, reorder: 0.3),
        (seed: 12, loss: 0.0, duplicate: 0.2, reorder: 0.0),
        (seed: 13, loss: 0.0, duplicate: 0.1, reorder: 0.5),
        (seed: 14, loss: 0.02, duplicate: 0.0, reorder: 0.0),
        (seed: 15, loss: 0.05, duplicate: 0.1, reorder: 0.3),
        (seed: 16, loss: 0.3, duplicate: 0.3, reorder: 0.6),
    ])
    func neverEmitsCorruptFrames(seed: UInt64, loss: Double, duplicate: Double, reorder: Double) throws {
        for early in [false, true] { try verify(seed: seed, loss: loss, duplicate: duplicate, reorder: reorder, early: early) }
    }

    /// With `early`, every announced start of a frame is whole NAL units of
    /// that frame, parts follow each other, and an emitted frame begins with them.
    private func verify(seed: UInt64, loss: Double, duplicate: Double, reorder: Double, early: Bool) throws {
        var rng = SeededGenerator(seed: seed)
        let frames = (0..<300).map { _ in randomAccessUnit(using: &rng, maxNALSize: 4000) }
        let sent = try packetize(frames, mtu: Int.random(in: 300...1200, using: &rng),
                                 firstSequence: UInt16.random(in: 0...UInt16.max, using: &rng))
        // The channel: each packet is dropped, duplicated, or delayed by up to 8 places.
        var wire: [(order: Double, packet: RTPPacket)] = []
        var position = 0.0
        for packet in sent.joined() {
            position += 1
            if Double.random(in: 0..<1, using: &rng) < loss { continue }
            let delay = Double.random(in: 0..<1, using: &rng) < reorder ? Double.random(in: 0...8, using: &rng) : 0
            wire.append((position + delay, packet))
            if Double.random(in: 0..<1, using: &rng) < duplicate {
                wire.append((position + Double.random(in: 0...4, using: &rng), packet))
            }
        }
        wire.sort { $0.order < $1.order }

        let byTimestamp = Dictionary(uniqueKeysWithValues: sent.enumerated().map {
            ($0.element[0].timestamp, frames[$0.offset])
        })
        var assembler = H264FrameAssembler(maxDelay: .milliseconds(20), earlySlices: early)
        var now = MonotonicTime.zero
        var emitted: [UInt32] = []
        var lostReported = 0
        var announced: [UInt32: [UInt8]] = [:]
        func check(_ events: [H264FrameAssembler.Event]) {
            for event in events {
                switch event {
                case .frame(let unit):
                    #expect(nalList(unit.data) == byTimestamp[unit.timestamp], "corrupt frame ts \(unit.timestamp)")
                    if let last = emitted.last { #expect(unit.timestamp > last, "frames out of order") }
                    emitted.append(unit.timestamp)
                    #expect(unit.data.starts(with: announced.removeValue(forKey: unit.timestamp) ?? []))
                case .slices(let part):
                    #expect(early)
                    #expect(part.offset == announced[part.timestamp, default: []].count, "parts must follow each other")
                    announced[part.timestamp, default: []] += part.data
                    // A joining receiver's first unit may start mid-frame; any
                    // other announced start is the frame's own first units.
                    if let frame = byTimestamp[part.timestamp], !emitted.isEmpty || lostReported > 0 {
                        #expect(annexB(frame).starts(with: announced[part.timestamp]!), "announced units not the frame's start")
                    }
                case .lost(let loss): lostReported += loss.frames
                }
            }
        }
        for (_, packet) in wire {
            now = now + .milliseconds(1)
            check(assembler.insert(packet, now: now))
        }
        check(assembler.poll(now: now + .seconds(1)))
        if loss == 0 {
            #expect(emitted.count == frames.count, "every frame must come out when nothing is lost")
        } else {
            #expect(emitted.count > 0)
            #expect(emitted.count < frames.count)
            #expect(lostReported > 0)
        }
        #expect(assembler.bufferedPackets < 64)
    }

    @Test func gapIsGivenUpAfterMaxDelayAndStreamRecovers() throws {
        var rng = SeededGenerator(seed: 3)
        let frames = (0..<4).map { _ in [randomNAL(type: 1, size: 3000, using: &rng)] }
        let sent = try packetize(frames, mtu: 1200, firstSequence: 10)
        var assembler = H264FrameAssembler(maxDelay: .milliseconds(50))
        var events: [H264FrameAssembler.Event] = []
        // Frame 0 complete; frame 1 misses its middle packet; frames 2 and 3 complete.
        for packet in sent[0] { events += assembler.insert(packet, now: .zero) }
        events += assembler.insert(sent[1][0], now: .zero)
        events += assembler.insert(sent[1][2], now: .zero)
        for packet in sent[2] + sent[3] { events += assembler.insert(packet, now: MonotonicTime.zero + .milliseconds(10)) }
        #expect(events.count == 1)  // frame 0 only: 2 and 3 wait behind the gap
        // The hole was seen when sent[1][2] arrived at 0 ms.
        #expect(assembler.deadline == MonotonicTime.zero + .milliseconds(50))
        events += assembler.poll(now: MonotonicTime.zero + .milliseconds(49))
        #expect(events.count == 1)
        events += assembler.poll(now: MonotonicTime.zero + .milliseconds(50))
        #expect(events.count == 4)
        #expect(events[1] == .lost(FrameLoss(reason: .missingPackets, frames: 1, packets: 2)))
        guard case .frame(let f2) = events[2], case .frame(let f3) = events[3] else { Issue.record("no recovery"); return }
        #expect(nalList(f2.data) == frames[2] && nalList(f3.data) == frames[3])
        // The missing packet arriving late is dropped as late.
        #expect(assembler.insert(sent[1][1], now: MonotonicTime.zero + .milliseconds(70)).isEmpty)
        #expect(assembler.counters.late == 1)
    }

    @Test func malformedButCompleteFrameIsReportedNotEmitted() throws {
        var assembler = H264FrameAssembler()
        let bad = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1,
                            payload: [0x7C, 0x05, 1][...])
        let events = assembler.insert(bad, now: .zero)
        #expect(events == [.lost(FrameLoss(reason: .malformed(.fragmentWithoutStart), frames: 1, packets: 1))])
    }

    @Test func bufferIsBoundedUnderFlood() throws {
        var assembler = H264FrameAssembler(maxDelay: .seconds(10), maxPackets: 64)
        var rng = SeededGenerator(seed: 8)
        // First packet leaves a permanent hole; then a flood of unrelated sequence numbers.
        _ = assembler.insert(RTPPacket(payloadType: 96, sequenceNumber: 0, timestamp: 0, ssrc: 1, payload: [0x41][...]), now: .zero)
        for i in 0..<5000 {
            let packet = RTPPacket(marker: Bool.random(using: &rng), payloadType: 96,
                                   sequenceNumber: UInt16.random(in: 2...30000, using: &rng),
                                   timestamp: UInt32(i), ssrc: 1, payload: rng.bytes(Int.random(in: 1...50, using: &rng))[...])
            _ = assembler.insert(packet, now: .zero)
            #expect(assembler.bufferedPackets <= 64)
        }
    }
}
