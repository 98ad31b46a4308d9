import ShareWire
import TestSupport
import Testing
import ShareBase

@Suite("Sequence and timestamp arithmetic (RFC 3550 §A.1)")
struct SequenceTests {
    @Test(arguments: [
        (UInt16(1), UInt16(0), true), (0, 0xFFFF, true), (0x7FFF, 0, true), (0x8000, 0, false),
        (0, 1, false), (5, 5, false), (10, 0xFFF0, true),
    ])
    func newerWrapsAround(a: UInt16, b: UInt16, newer: Bool) {
        #expect(RTPSequence.isNewer(a, than: b) == newer)
    }

    /// A stream starts anywhere in the lower half of the sequence space,
    /// never at 0 and never where it would wrap within 32,768 packets.
    @Test func firstSequenceNumbersLeaveHalfTheSpaceBeforeAWrap() {
        let starts = (0..<20_000).map { _ in RTPSequence.randomStart() }
        #expect(starts.allSatisfy { (1...0x7FFF).contains($0) })
        #expect(starts.min()! < 100 && starts.max()! > 0x7FFF - 100, "spread over the half")
        #expect(Set(starts).count > 10_000, "random")
    }

    @Test func unwrapperCountsCycles() {
        var unwrapper = SequenceUnwrapper()
        let input: [UInt16] = [65533, 65534, 65535, 0, 1, 65535, 2, 3]
        let extended = input.map { unwrapper.unwrap($0) }
        #expect(extended == [65533, 65534, 65535, 65536, 65537, 65535, 65538, 65539])
        #expect(unwrapper.newest == 65539)
    }

    @Test func timestampUnwrapperCrossesZero() {
        var unwrapper = TimestampUnwrapper()
        #expect(unwrapper.unwrap(0xFFFF_FF00) == 0xFFFF_FF00)
        #expect(unwrapper.unwrap(0x100) == 0x1_0000_0100)
        #expect(unwrapper.unwrap(0xFFFF_FFF0) == 0xFFFF_FFF0)
    }

    /// Seeded property: an unwrapped random walk equals the walk itself.
    @Test func unwrapperFollowsRandomWalk() {
        var rng = SeededGenerator(seed: 42)
        var unwrapper = SequenceUnwrapper()
        var truth: Int64 = 60_000
        _ = unwrapper.unwrap(UInt16(truncatingIfNeeded: truth))
        for _ in 0..<10_000 {
            truth += Int64.random(in: -200...1000, using: &rng)
            #expect(unwrapper.unwrap(UInt16(truncatingIfNeeded: truth)) == truth)
        }
    }
}

@Suite("Reception statistics (RFC 3550 §A.1, §A.3, §A.8)")
struct ReceptionStatisticsTests {
    @Test func probationThenLossAccounting() {
        var stats = ReceptionStatistics(ssrc: 7, clockRate: 90_000)
        var now = MonotonicTime.zero
        // MIN_SEQUENTIAL = 2: the first packet is on probation.
        let first = stats.record(sequence: 100, timestamp: 0, arrival: now)
        #expect(!first)
        for sequence: UInt16 in 101...200 where sequence % 10 != 0 {
            now = now + .milliseconds(1)
            let valid = stats.record(sequence: sequence, timestamp: UInt32(sequence) * 90, arrival: now)
            #expect(valid)
        }
        // Valid from 101 (end of probation) to 199; 110, 120, ... 190 missing.
        #expect(stats.extendedHighest == 199)
        #expect(stats.expected == 99)
        #expect(stats.cumulativeLost == 9)
        let report = stats.makeReport(now: now)
        #expect(report.cumulativeLost == 9)
        #expect(report.fractionLost == UInt8((9 << 8) / 99))
        #expect(report.highestSequence == 199)
        // A second interval with no loss reports fraction 0.
        for sequence: UInt16 in 200...220 { stats.record(sequence: sequence, timestamp: 0, arrival: now) }
        #expect(stats.makeReport(now: now).fractionLost == 0)
    }

    @Test func wrapIncrementsCycles() {
        var stats = ReceptionStatistics(ssrc: 1, clockRate: 48_000)
        for sequence: UInt16 in 65530...65535 { stats.record(sequence: sequence, timestamp: 0, arrival: .zero) }
        for sequence: UInt16 in 0...4 { stats.record(sequence: sequence, timestamp: 0, arrival: .zero) }
        #expect(stats.extendedHighest == 65536 + 4)
        #expect(stats.cumulativeLost == 0)
    }

    @Test func jitterOfPerfectStreamIsZeroAndOfShakyStreamIsNot() {
        var steady = ReceptionStatistics(ssrc: 1, clockRate: 90_000)
        var shaky = ReceptionStatistics(ssrc: 1, clockRate: 90_000)
        var rng = SeededGenerator(seed: 9)
        for i in 0..<300 {
            let ideal = MonotonicTime(nanoseconds: UInt64(i) * 33_333_333)
            steady.record(sequence: UInt16(i), timestamp: UInt32(i) * 3000, arrival: ideal)
            let wobble = UInt64.random(in: 0...10_000_000, using: &rng)
            shaky.record(sequence: UInt16(i), timestamp: UInt32(i) * 3000, arrival: ideal + .nanoseconds(Int64(wobble)))
        }
        #expect(steady.jitter <= 1)
        // Uniform 0-10 ms wobble: mean |D| is about 3.3 ms = 300 ticks at 90 kHz.
        #expect((150...500).contains(shaky.jitter))
    }

    @Test func lsrAndDlsrComeFromTheLastSenderReport() {
        var stats = ReceptionStatistics(ssrc: 1, clockRate: 90_000)
        let sr = SenderReport(ssrc: 1, ntpTimestamp: NTPTimestamp(rawValue: 0x1234_5678_9ABC_DEF0), rtpTimestamp: 0,
                              packetCount: 0, octetCount: 0)
        stats.didReceive(senderReport: sr, at: MonotonicTime(nanoseconds: 1_000_000_000))
        let report = stats.makeReport(now: MonotonicTime(nanoseconds: 1_500_000_000))
        #expect(report.lastSenderReport == 0x5678_9ABC)
        #expect(report.delaySinceLastSenderReport == 32768)  // 0.5 s in 1/65536 s
    }
}

@Suite("Base64 (RFC 4648 §10 test vectors)")
struct Base64Tests {
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                      ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test(arguments: ["Zg=", "Z===", "Zm9v!A==", "=Zm9", "Zg==Zg=="])
    func rejectsInvalid(text: String) {
        #expect(Base64.decode(text) == nil)
    }
}

@Suite("Bounded history")
struct BoundedHistoryTests {
    /// The newest `capacity` elements, oldest first, in storage that never grows.
    @Test func keepsTheNewestInOrderWithoutGrowing() {
        var history = BoundedHistory<Int>(capacity: 5)
        #expect(history.isEmpty && history.elements.isEmpty)
        for value in 1...3 { history.append(value) }
        #expect(history.elements == [1, 2, 3])
        for value in 4...12 { history.append(value) }
        #expect(history.count == 5)
        #expect(history.elements == [8, 9, 10, 11, 12])
        #expect(history.unordered.sorted() == [8, 9, 10, 11, 12])
        for value in 13...1000 { history.append(value) }
        #expect(history.elements == Array(996...1000))
    }
}
