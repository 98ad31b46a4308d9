import ShareWire
import TestSupport
import Testing
import ShareBase

/// What an assembler with `earlySlices` said of one stream: the parts
/// announced per frame, and the frames and losses, in order.
private struct Heard {
    var parts: [UInt32: [EarlySlices]] = [:]
    var frames: [AccessUnit] = []
    var losses: [FrameLoss] = []
    /// Every event, in order, as a letter: s(lices), f(rame), l(ost).
    var order = ""

    mutating func take(_ events: [H264FrameAssembler.Event]) {
        for event in events {
            switch event {
            case .slices(let slices):
                parts[slices.timestamp, default: []].append(slices)
                order += "s"
            case .frame(let unit):
                frames.append(unit)
                order += "f"
            case .lost(let loss):
                losses.append(loss)
                order += "l"
            }
        }
    }

    /// The announced parts of the frame at `timestamp`, joined; checks they follow each other.
    func announced(_ timestamp: UInt32) -> [UInt8] {
        var joined: [UInt8] = []
        for part in parts[timestamp] ?? [] {
            #expect(part.offset == joined.count, "parts of \(timestamp) leave a gap or overlap")
            joined += part.data
        }
        return joined
    }
}

@Suite("H.264 frame assembler: the start of a frame announced while the rest arrives")
struct EarlySlicesTests {
    /// Slices of 1.5 packets each (fragmented), so a unit completes in the middle of a packet run.
    private func frames(_ count: Int, slices: Int = 6, seed: UInt64 = 1) -> [[[UInt8]]] {
        var rng = SeededGenerator(seed: seed)
        return (0..<count).map { _ in
            (0..<slices).map { _ in randomNAL(type: H264NALType.slice, size: Int.random(in: 1500...2200, using: &rng), using: &rng) }
        }
    }

    @Test func wholeSlicesAreAnnouncedAsTheyArriveAndTheFrameIsBuiltOnThem() throws {
        let sent = frames(3)
        let packets = try packetize(sent, mtu: 1200, firstSequence: 65_530)
        var assembler = H264FrameAssembler(earlySlices: true)
        var heard = Heard()
        for (index, frame) in packets.enumerated() {
            for (n, packet) in frame.enumerated() {
                let before = heard.parts[packet.timestamp]?.count ?? 0
                heard.take(assembler.insert(packet, now: .zero))
                let parts = heard.parts[packet.timestamp] ?? []
                // Never a fragment: every part is whole NAL units of the frame, in order.
                for part in parts.dropFirst(before) {
                    #expect(nalList(part.data).allSatisfy { sent[index].contains($0) })
                    #expect(annexB(nalList(part.data)) == part.data)
                }
                if n == frame.count - 1 { #expect(heard.frames.count == index + 1, "the marker completes the frame") }
            }
            let unit = try #require(heard.frames.last)
            #expect(unit.data == annexB(sent[index]))
            let announced = heard.announced(unit.timestamp)
            // All slices but the one the last packet finishes came early.
            #expect(announced == annexB(Array(sent[index].dropLast())))
            #expect(unit.data.starts(with: announced))
        }
        #expect(heard.order == String(repeating: "sssss" + "f", count: 3))
        #expect(assembler.counters.framesAnnouncedEarly == 3)
        #expect(assembler.counters.framesEmitted == 3)
        #expect(assembler.bufferedPackets == 0)
    }

    @Test func aHoleHoldsTheAnnouncementsBackUntilItFills() throws {
        let sent = frames(1, slices: 5)
        let packets = try packetize(sent, mtu: 1200, firstSequence: 100)[0]
        var assembler = H264FrameAssembler(earlySlices: true)
        var heard = Heard()
        // Each slice takes two packets: packet 4 (slice 2's first) comes last; the rest in order.
        #expect(packets.count == 10)
        for (n, packet) in packets.enumerated() where n != 4 { heard.take(assembler.insert(packet, now: .zero)) }
        let announced = heard.announced(packets[0].timestamp)
        #expect(announced == annexB(Array(sent[0].prefix(2))), "only what lies before the hole")
        #expect(heard.frames.isEmpty)
        heard.take(assembler.insert(packets[4], now: .zero))
        #expect(heard.frames.map(\.data) == [annexB(sent[0])])
        #expect(heard.order.last == "f")
    }

    @Test func aFrameGivenUpAfterItsStartWasAnnouncedIsLostAndTheNextStartsAgain() throws {
        let sent = frames(2, slices: 4)
        let packets = try packetize(sent, mtu: 1200, firstSequence: 7)
        var assembler = H264FrameAssembler(maxDelay: .milliseconds(30), earlySlices: true)
        var heard = Heard()
        // Frame 0 loses a packet after its first slice; frame 1 arrives whole behind it.
        for (n, packet) in packets[0].enumerated() where n != 3 { heard.take(assembler.insert(packet, now: .zero)) }
        #expect(!heard.announced(packets[0][0].timestamp).isEmpty)
        for packet in packets[1] { heard.take(assembler.insert(packet, now: MonotonicTime.zero + .milliseconds(5))) }
        heard.take(assembler.poll(now: MonotonicTime.zero + .milliseconds(40)))
        #expect(heard.losses.map(\.frames) == [1])
        #expect(heard.frames.map(\.data) == [annexB(sent[1])])
        // Frame 1 came whole in one go after the loss: nothing of it was early.
        #expect(heard.parts[packets[1][0].timestamp] == nil)
        #expect(heard.order.hasSuffix("lf"))
    }

    @Test func aFrameThatTurnsOutMalformedAfterItsStartIsLost() throws {
        let sent = frames(1, slices: 3)
        var packets = try packetize(sent, mtu: 1200, firstSequence: 50)[0]
        // The last packet becomes a unit with the forbidden bit set: the frame cannot be rebuilt.
        let last = packets.count - 1
        packets[last] = RTPPacket(marker: true, payloadType: 96, sequenceNumber: packets[last].sequenceNumber,
                                  timestamp: packets[last].timestamp, ssrc: 5, payload: [0xE1, 9, 9][...])
        var assembler = H264FrameAssembler(earlySlices: true)
        var heard = Heard()
        for packet in packets { heard.take(assembler.insert(packet, now: .zero)) }
        #expect(!heard.announced(packets[0].timestamp).isEmpty)
        #expect(heard.frames.isEmpty)
        #expect(heard.losses.count == 1)
        #expect(heard.order.last == "l")
    }

    @Test func withoutEarlySlicesOnlyWholeFramesComeOut() throws {
        let sent = frames(2)
        var assembler = H264FrameAssembler()
        var heard = Heard()
        for packet in try packetize(sent, mtu: 1200, firstSequence: 0).joined() {
            heard.take(assembler.insert(packet, now: .zero))
        }
        #expect(heard.order == "ff")
        #expect(heard.frames.map(\.data) == sent.map { annexB($0) })
    }
}
