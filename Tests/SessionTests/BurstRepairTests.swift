import ShareSession
import ShareWire
import TestSupport
import Testing
import ShareBase

/// A burst of losses on a slow link, replayed from a trace of
/// `Benchmarks/harness.py --network wifi --scenes video`: nineteen packets
/// of one frame lost together, asked for in one NACK, and their repairs
/// arriving a round trip later one link-spacing apart. Before the burst's
/// spacing was counted, the receiver asked again for seventeen of them
/// while their repairs were still queued on the way, and gave the last two
/// up 110 ms after they went missing, just before their repairs came: a
/// keyframe request and a 0.35 s freeze.
@Suite("A burst's repairs waited for as long as the link takes to deliver them (sans-IO)")
struct BurstRepairTests {
    static let roundTrip = Duration.milliseconds(40)
    /// The jitter buffer's wait on that path (two tries).
    static let maxAge = Duration.milliseconds(110)

    /// Frames of `count` packets `spacing` apart, as a slow link delivers
    /// them, then one frame whose packets `lost` never come; their repairs
    /// arrive `roundTrip` after the first NACK, `repairSpacing` apart.
    /// Returns how often each lost packet was asked for, and how many came back.
    static func replay(spacing: Duration, repairSpacing: Duration, lost: Range<Int>, count: Int = 25)
        -> (asks: [Int64: Int], recovered: Int, allowanceAtWorst: Duration, tracker: NACKTracker) {
        var tracker = NACKTracker(maxAge: maxAge)
        tracker.roundTrip = roundTrip
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        var sequence: Int64 = 0
        var asks: [Int64: Int] = [:]
        var allowance = Duration.zero
        var firstAsk: MonotonicTime?
        func poll(until end: MonotonicTime, repairs: inout [(at: MonotonicTime, sequence: Int64)]) {
            while now < end {
                now = min(now + .microseconds(500), end)
                while let first = repairs.first, first.at <= now {
                    tracker.received(first.sequence, now: now, isRepair: true, timestamp: 0, marker: false)
                    repairs.removeFirst()
                }
                for asked in tracker.due(now: now) {
                    asks[Int64(asked), default: 0] += 1
                    firstAsk = firstAsk ?? now
                }
                allowance = max(allowance, tracker.burstAllowance)
            }
        }
        var none: [(at: MonotonicTime, sequence: Int64)] = []
        for frame in 0..<20 {
            for index in 0..<6 {
                tracker.received(sequence, now: now, timestamp: UInt32(frame) * 3000, marker: index == 5)
                sequence += 1
                poll(until: now + (index == 5 ? .milliseconds(33) - spacing * 5 : spacing), repairs: &none)
            }
        }
        // Only the burst's asks count (the first frame's tail may be asked
        // for before any spacing is learned).
        asks = [:]
        firstAsk = nil
        let first = sequence
        // The lost packets take no time on the link: the one after them
        // comes a spacing after the one before.
        for index in 0..<count where !lost.contains(index) {
            tracker.received(first + Int64(index), now: now, timestamp: 60_000, marker: index == count - 1)
            poll(until: now + spacing, repairs: &none)
        }
        sequence = first + Int64(count)
        // The sender answers the first NACK at once; the link delivers the
        // repairs a packet's serialisation apart.
        let askedAt = firstAsk ?? now
        var repairs = lost.enumerated().map { (at: askedAt + roundTrip + repairSpacing * $0.offset, sequence: first + Int64($0.element)) }
        poll(until: now + .milliseconds(400), repairs: &repairs)
        return (asks, tracker.recovered, allowance, tracker)
    }

    @Test func aLongBurstOnASlowLinkIsAskedForOnceAndWaitedForWhole() {
        let lost = 3..<22
        let replay = Self.replay(spacing: .milliseconds(4), repairSpacing: .milliseconds(4), lost: lost)
        #expect(replay.asks.count == lost.count, "every lost packet asked for: \(replay.asks.count)")
        let repeated = replay.asks.filter { $0.value > 1 }.count
        #expect(repeated == 0, "none asked for again while its repair was on the way: \(repeated) were")
        #expect(replay.recovered == lost.count, "every repair taken, none given up first: \(replay.recovered)")
        #expect(replay.tracker.outstanding == 0)
        // The last repair comes eighteen spacings after the first: the
        // jitter buffer is told to wait that much longer meanwhile.
        #expect(replay.allowanceAtWorst >= .milliseconds(4) * 17 && replay.allowanceAtWorst <= .milliseconds(4) * 19,
                "the burst's allowance: \(replay.allowanceAtWorst)")
        #expect(replay.tracker.burstAllowance == .zero, "nothing left on the way, nothing more waited for")
    }

    @Test func aRepairThatNeverComesIsStillAskedForAgainAndGivenUp() {
        // The same burst, but the link delivers the repairs far slower than
        // its spacing says (they were lost): they are asked for again, and
        // given up within the wait plus the burst's allowance.
        let lost = 3..<22
        let replay = Self.replay(spacing: .milliseconds(4), repairSpacing: .milliseconds(60), lost: lost)
        #expect(replay.asks.values.contains { $0 > 1 }, "late repairs are asked for again")
        #expect(replay.recovered < lost.count, "the last ones are given up")
        #expect(replay.tracker.outstanding == 0, "and nothing waits past the wait and its allowance")
    }

    @Test func aFastLinksBurstKeepsTheUsualWait() {
        // Packets that arrive back to back teach no spacing to wait for:
        // the repairs of a short burst come within the round trip, once.
        let replay = Self.replay(spacing: .microseconds(100), repairSpacing: .microseconds(100), lost: 3..<8)
        #expect(replay.asks.values.allSatisfy { $0 == 1 })
        #expect(replay.recovered == 5)
        #expect(replay.allowanceAtWorst <= .milliseconds(1))
    }

    @Test func theJitterBufferWaitsTheBurstsAllowanceBeyondItsDelay() {
        let start = MonotonicTime(nanoseconds: 1_000_000_000)
        func deadline(allowance: Duration) -> MonotonicTime? {
            var assembler = H264FrameAssembler(maxDelay: .milliseconds(100))
            assembler.burstAllowance = allowance
            let nal: [UInt8] = [0x41, 0x9A, 0x00]
            _ = assembler.insert(RTPPacket(marker: true, payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 1,
                                           payload: nal[...]), now: start)
            // Sequence 2 is lost; 3 waits behind it from 1 ms on.
            _ = assembler.insert(RTPPacket(marker: true, payloadType: 96, sequenceNumber: 3, timestamp: 6000, ssrc: 1,
                                           payload: nal[...]), now: start + .milliseconds(1))
            return assembler.deadline
        }
        #expect(deadline(allowance: .zero) == start + .milliseconds(101), "the delay alone")
        #expect(deadline(allowance: .milliseconds(60)) == start + .milliseconds(161), "the delay and the burst's allowance")
    }
}
