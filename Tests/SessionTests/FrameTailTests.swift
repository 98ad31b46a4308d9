import ShareSession
import ShareWire
import TestSupport
import Testing
import ShareBase

@Suite("A frame's lost last packets asked for before the next frame shows the gap (sans-IO)")
struct FrameTailTests {
    /// Packets of one stream told to a tracker: frames 33 ms apart, each
    /// of `count` packets `spacing(i)` apart (i counts the packets sent),
    /// the marker on each frame's last.
    struct Stream {
        var tracker = NACKTracker(maxAge: .milliseconds(300))
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        var sequence: Int64 = 0
        var frame: UInt32 = 0
        /// What `due` asked for, with the time it asked.
        var asked: [(sequence: UInt16, at: MonotonicTime)] = []

        /// One frame; `lost` packets (indexes within it) are not heard.
        /// `due` is polled every millisecond, through the frame and up to
        /// the next one's start.
        mutating func frame(count: Int = 5, lost: Set<Int> = [], marked: Bool = true,
                            spacing: (Int) -> Duration = { _ in .milliseconds(2) }) {
            let start = now
            for index in 0..<count {
                if !lost.contains(index) {
                    tracker.received(sequence, now: now, timestamp: frame * 3000, marker: marked && index == count - 1)
                }
                sequence += 1
                if index < count - 1 { wait(spacing(Int(sequence))) }
            }
            wait((start + .milliseconds(33)).since(now))
            frame += 1
        }

        /// Lets `duration` pass, polling `due` every millisecond.
        mutating func wait(_ duration: Duration) {
            let end = now + duration
            while now < end {
                now = min(now + .milliseconds(1), end)
                asked += tracker.due(now: now).map { ($0, now) }
            }
        }
    }

    @Test func aFramesLostLastPacketIsAskedForWithinItsSpacingNotAFrameLater() {
        var stream = Stream()
        for _ in 0..<20 { stream.frame() }
        #expect(stream.asked.isEmpty, "whole frames: nothing asked for")
        let lastHeard = stream.now + .milliseconds(6)  // the fourth packet of the next frame
        stream.frame(lost: [4])
        let asked = stream.asked.first
        #expect(asked?.sequence == 104, "the marker packet, before the next frame shows the gap")
        let after = asked.map { $0.at.since(lastHeard) } ?? .zero
        #expect(after >= .milliseconds(2) && after <= .milliseconds(6), "within the spacing learned: \(after)")
        #expect(stream.tracker.tailRequests == 1)
        stream.frame()
        #expect(stream.asked.count == 1, "the next frame's gap does not ask again within a round trip")
    }

    /// A path whose packets arrive unevenly teaches a longer wait: once the
    /// first guesses turned out late, later ones are rare, and each is
    /// counted needless when its original arrives.
    @Test func unevenArrivalsTeachALongerWaitAndLateGuessesAreCounted() {
        var stream = Stream()
        for _ in 0..<20 { stream.frame(spacing: { _ in .milliseconds(1) }) }
        for _ in 0..<60 { stream.frame(spacing: { $0 % 2 == 0 ? .milliseconds(1) : .milliseconds(8) }) }
        let requests = stream.tracker.tailRequests
        #expect(requests >= 1, "the first 8 ms gap is later than the even 1 ms spacing before explains")
        #expect(requests <= 3, "then the wait covers the spacing: \(requests) guesses")
        #expect(stream.tracker.needlessRequests == requests, "every guess was only late")
        #expect(stream.tracker.recovered == 0, "nothing was lost")
    }

    /// A burst taking a frame's last two packets: each is asked for in turn,
    /// the second once the repair of the first (no marker either) is heard.
    @Test func aRepairWithoutTheMarkerLeavesTheTailOpen() {
        var stream = Stream()
        for _ in 0..<10 { stream.frame() }
        stream.tracker.received(50, now: stream.now, timestamp: 10 * 3000, marker: false)
        stream.wait(.milliseconds(8))
        #expect(stream.asked.map(\.sequence) == [51])
        stream.tracker.received(51, now: stream.now, isRepair: true, timestamp: 10 * 3000, marker: false)
        stream.wait(.milliseconds(8))
        #expect(stream.asked.map(\.sequence) == [51, 52])
        #expect(stream.tracker.recovered == 1)
        #expect(stream.tracker.needlessRequests == 0)
    }

    /// Through the sessions: a frame whose marker packet is lost is
    /// repaired on the RTX stream and shown before the next frame is sent,
    /// where the next frame's first packet would have shown the gap.
    @Test func aFrameMissingItsLastPacketIsWholeBeforeTheNextFrame() throws {
        let link = try Link { $0.retransmission = (0xCCCC, 97) }
        func spaced(_ n: Int, losingMarker: Bool = false) throws {
            let start = link.now
            try link.send(n, size: n == 0 ? 20_000 : 6000, keyframe: n == 0)
            let packets = link.toReceiver
            link.toReceiver.removeAll()
            for bytes in packets {
                let isMarker = ssrc(of: bytes) == 0xAAAA && bytes[1] & 0x80 != 0
                link.toReceiver.append(bytes)
                link.deliver { _, _ in losingMarker && isMarker }
                link.advance(.milliseconds(2))
            }
            while link.now < start + .milliseconds(33) {
                link.deliver()
                link.advance(.milliseconds(1))
            }
        }
        for n in 0..<10 { try spaced(n) }
        #expect(link.frames.count == 10)
        try spaced(10, losingMarker: true)
        #expect(link.frames.count == 11, "whole within its frame interval")
        #expect(link.frames.last.map { $0.data == accessUnit(10, size: 6000, keyframe: false) } == true, "the whole frame")
        #expect(link.receiver.statistics.repairsReceived == 1)
        #expect(link.receiver.statistics.needlessNACKs == 0)
        #expect(link.losses == 0)
    }

    /// A sender that ends its frames without the marker (RFC 6184 asks for
    /// it, but a receiver meets what it meets) is not guessed at: every
    /// frame would look unfinished.
    @Test func aSenderThatNeverMarksFramesIsNotGuessedAt() {
        var stream = Stream()
        for _ in 0..<30 { stream.frame(marked: false) }
        #expect(stream.tracker.tailRequests <= 1, "at most the first frame, before its end showed no marker")
    }
}
