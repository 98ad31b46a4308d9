import ShareSession
import ShareWire
import Testing
import ShareBase

private func at(_ milliseconds: Int) -> MonotonicTime { MonotonicTime(nanoseconds: UInt64(milliseconds) * 1_000_000 + 1) }

/// A pointer shape of `side` x `side` whose pixels say where they are.
private func shape(serial: UInt32, side: Int = 24) -> CursorShape {
    CursorShape(serial: serial, width: side, height: side, hotX: 1, hotY: 2,
                pixels: (0..<(side * side)).map { 0xFF00_0000 | UInt32($0) })
}

/// Through the wire as a receiver gets it: serialized, parsed back.
private func wire(_ packets: [RTCPPacket]) throws -> [ApplicationPacket] {
    try packets.flatMap { packet in
        try RTCPPacket.parseCompound(RTCPPacket.serializeCompound([packet])[...]).compactMap { parsed -> ApplicationPacket? in
            if case .application(let app) = parsed { return app }
            return nil
        }
    }
}

@Suite("The pointer as metadata: APP packets, the sender's repeats, the receiver's assembly (sans-IO)")
struct CursorMetadataTests {
    @Test func positionsAndShapesSurviveTheWireAndBadOnesAreRefused() throws {
        let position = CursorPosition(x: -5, y: 700, areaWidth: 1280, areaHeight: 720, shape: 7, visible: false)
        let parsed = try wire([position.packet(ssrc: 9)])
        #expect(parsed.count == 1 && CursorPosition(parsed[0]) == position && CursorShapeChunk(parsed[0]) == nil)
        let chunks = shape(serial: 7, side: 40).chunks()
        #expect(chunks.count == 7 && chunks.last?.pixels.count == 1600 - 6 * 256)
        let back = try wire(chunks.map { $0.packet(ssrc: 9) }).compactMap(CursorShapeChunk.init)
        #expect(back == chunks)
        // Too big a shape is not sent at all; a hot spot outside, or pixels past the end, are refused.
        #expect(CursorShape(serial: 1, width: 300, height: 2, hotX: 0, hotY: 0, pixels: Array(repeating: 0, count: 600)).chunks().isEmpty)
        var bad = chunks[0]
        bad.hotX = 40
        #expect(try wire([bad.packet(ssrc: 9)]).compactMap(CursorShapeChunk.init).isEmpty)
        bad = chunks[6]
        bad.offset = 1580
        #expect(try wire([bad.packet(ssrc: 9)]).compactMap(CursorShapeChunk.init).isEmpty)
        let zeroArea = ApplicationPacket(subtype: 0, ssrc: 9, name: CursorPosition.name, data: [0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 1])
        #expect(CursorPosition(zeroArea) == nil)
        let short = ApplicationPacket(subtype: 0, ssrc: 9, name: CursorShapeChunk.name, data: [0, 0, 0, 7, 0, 4])
        #expect(CursorShapeChunk(short) == nil)
    }

    @Test func theSenderSendsWhatIsNewAtOnceAndRepeatsTheRest() throws {
        var announcer = CursorAnnouncer()
        let first = CursorPosition(x: 10, y: 20, areaWidth: 640, areaHeight: 480, shape: 3, visible: true)
        announcer.update(position: first, shape: shape(serial: 3), now: at(0))
        let sent = try wire(announcer.poll(now: at(0), ssrc: 5))
        #expect(sent.count == 4, "three chunks of a 24x24 shape, then the position")
        #expect(sent.dropLast().allSatisfy { CursorShapeChunk($0) != nil } && CursorPosition(sent[3]) == first)
        let nothing = announcer.poll(now: at(1), ssrc: 5)
        #expect(nothing.isEmpty)
        // The same again changes nothing; a move 3 ms later waits for the 8 ms spacing.
        announcer.update(position: first, shape: shape(serial: 3), now: at(2))
        let same = announcer.poll(now: at(2), ssrc: 5)
        #expect(same.isEmpty)
        var moved = first
        moved.x = 11
        announcer.update(position: moved, shape: nil, now: at(3))
        let early = announcer.poll(now: at(3), ssrc: 5)
        #expect(early.isEmpty && announcer.deadline == at(8))
        let spaced = try wire(announcer.poll(now: at(8), ssrc: 5))
        #expect(spaced.compactMap(CursorPosition.init) == [moved])
        // Repeats: the position a second later, the shape three seconds after it was sent.
        let repeated = try wire(announcer.poll(now: at(1008), ssrc: 5))
        #expect(repeated.compactMap(CursorPosition.init) == [moved])
        let shapeAgain = try wire(announcer.poll(now: at(3000), ssrc: 5))
        #expect(shapeAgain.compactMap(CursorShapeChunk.init).count == 3)
        // A new session's receiver gets all of it at once.
        announcer.resend()
        let whole = try wire(announcer.poll(now: at(3001), ssrc: 5))
        #expect(whole.count == 4)
    }

    @Test func theReceiverPutsShapesTogetherAndRefusesWhatDoesNotFit() throws {
        var assembler = CursorAssembler()
        let position = CursorPosition(x: 100, y: 50, areaWidth: 1280, areaHeight: 720, shape: 4, visible: true)
        let changed = assembler.receive(position)
        let again = assembler.receive(position)
        #expect(changed && !again, "the same position is no change")
        #expect(assembler.overlay?.shape == nil, "no shape yet")
        let chunks = shape(serial: 4, side: 40).chunks()
        // Out of order, one twice, one missing: not complete.
        for index in [6, 2, 0, 2, 3, 1, 5] {
            let complete = assembler.receive(chunks[index])
            #expect(!complete)
        }
        // A chunk of another shape (a lost switch) starts that one instead.
        let other = shape(serial: 5, side: 16).chunks()
        let otherDone = assembler.receive(other[0])
        #expect(!otherDone, "a 16x16 shape is one chunk: complete, but not the one the position names")
        #expect(assembler.overlay?.shape == nil)
        // The repeat brings shape 4 whole.
        var completed = false
        for chunk in chunks { completed = assembler.receive(chunk) || completed }
        #expect(completed)
        #expect(assembler.overlay?.shape == shape(serial: 4, side: 40))
        // A chunk that lies about its length is refused and counted.
        var liar = chunks[0]
        liar.pixels.removeLast()
        let lied = assembler.receive(liar)
        #expect(!lied && assembler.refused == 1)
        // The position moving to shape 5, which came complete earlier... is not kept: one complete shape at a time.
        var next = position
        next.shape = 5
        let moved = assembler.receive(next)
        #expect(moved)
        #expect(assembler.overlay?.shape == nil)
        let fiveDone = assembler.receive(other[0])
        #expect(fiveDone, "shape 5 again completes and is the one to draw")
        #expect(assembler.overlay?.shape?.serial == 5)
    }

    /// `--cursor auto`: apart while every receiver heard within 5 s draws
    /// the pointer (and one was heard); one that does not, drawn in; one
    /// gone quiet stops counting; a new session starts from nobody.
    @Test func thePointerGoesApartWhileEveryReceiverHeardDrawsIt() {
        var audience = PointerAudience()
        #expect(!audience.drawnApart(now: at(0)), "nobody heard: drawn in")
        audience.heard(1, drawsPointer: true, now: at(0))
        #expect(audience.drawnApart(now: at(0)))
        audience.heard(2, drawsPointer: false, now: at(500))
        #expect(!audience.drawnApart(now: at(500)), "a receiver that does not draw it")
        audience.heard(1, drawsPointer: true, now: at(4000))
        #expect(!audience.drawnApart(now: at(5499)))
        #expect(audience.drawnApart(now: at(5500)), "the other quiet for 5 s")
        audience.heard(1, drawsPointer: false, now: at(6000))
        #expect(!audience.drawnApart(now: at(6000)), "the same receiver now records")
        audience.heard(1, drawsPointer: true, now: at(7000))
        #expect(audience.drawnApart(now: at(7000)))
        #expect(!audience.drawnApart(now: at(12_000)), "everyone quiet: drawn in")
        audience.heard(1, drawsPointer: true, now: at(13_000))
        audience.forget()
        #expect(!audience.drawnApart(now: at(13_000)), "a new session")
        // A flood of reporters keeps the newest 32: the drawer heard first falls out.
        var flooded = PointerAudience()
        flooded.heard(99, drawsPointer: false, now: at(0))
        for ssrc in 100..<132 as Range<UInt32> { flooded.heard(ssrc, drawsPointer: true, now: at(1)) }
        #expect(flooded.drawnApart(now: at(2)))
    }
}

/// Where a sender may put the pointer: anywhere its 16-bit fields reach,
/// far off the picture included (an authenticated sender, or anyone holding
/// a static key, chooses them).
@Suite("The pointer's rows on the picture")
struct PointerRowsTests {
    @Test(arguments: [(top: 10, rows: 16, covered: 10..<26), (-8, 16, 0..<8), (350, 16, 350..<360),
                      (360, 16, nil), (32_000, 16, nil), (-32_000, 16, nil), (-16, 16, nil)] as [(Int, Int, Range<Int>?)])
    func anywhereThePointerIsPutIsARowRangeOrNothing(top: Int, rows: Int, covered: Range<Int>?) {
        #expect(CursorOverlay.rowsCovered(top: top, rows: rows, height: 360) == covered)
    }

    /// The sender's extreme positions, scaled from a one-pixel area.
    @Test func extremePositionsFromATinyAreaDoNotTrap() {
        let shape = CursorShape(serial: 1, width: 16, height: 16, hotX: 0, hotY: 0, pixels: .init(repeating: 0, count: 256))
        for (x, y) in [(Int16.max, Int16.max), (.min, .min), (0, .max), (.max, 0)] {
            let overlay = CursorOverlay(position: CursorPosition(x: x, y: y, areaWidth: 1, areaHeight: 1, shape: 1, visible: true),
                                        shape: shape)
            let rows = overlay.rows(width: 3840, height: 2160)
            #expect(rows.map { $0.lowerBound >= 0 && $0.upperBound <= 2160 } ?? true)
        }
    }
}
