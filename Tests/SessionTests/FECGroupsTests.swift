@testable import ShareSession
import ShareWire
import Testing

@Suite("FlexFEC groups: rows, and columns across them (sans-IO)")
struct FECGroupsTests {
    /// The groups closed while `frames` (packet counts) are sent from `start`.
    static func groups(size: Int, crossing: Bool, frames: [Int], start: UInt16 = 65_530) -> [[UInt16]] {
        var groups = FECGroups()
        groups.size = size
        groups.crossing = crossing
        var sequence = start
        var closed: [[UInt16]] = []
        for count in frames {
            for index in 0..<count {
                closed += groups.sent(sequence, endsFrame: index == count - 1)
                sequence &+= 1
            }
        }
        return closed
    }

    /// What repairs over `groups` rebuild when `lost` are lost: any group
    /// missing exactly one packet rebuilds it, until none can (as `FECDecoder`).
    static func unrecovered(_ lost: Set<UInt16>, groups: [[UInt16]]) -> Set<UInt16> {
        var missing = lost
        var progress = true
        while progress {
            progress = false
            for group in groups {
                let gone = group.filter { missing.contains($0) }
                if gone.count == 1 {
                    missing.remove(gone[0])
                    progress = true
                }
            }
        }
        return missing
    }

    @Test func rowsCloseWhenFullAndAtEachFramesEnd() {
        let rows = Self.groups(size: 4, crossing: false, frames: [6, 3], start: 0)
        #expect(rows == [[0, 1, 2, 3], [4, 5], [6, 7, 8]])
    }

    /// Two losses in one row are lost for a round trip with rows alone;
    /// crossing, every pair of losses among a stream's packets is rebuilt,
    /// across the wrap of the sequence numbers and frames of every size.
    @Test func crossingRebuildsAnyTwoLossesThatRowsAloneCannot() {
        let frames = [11, 3, 1, 7, 14, 2, 5, 9]
        let sent = (0..<UInt16(frames.reduce(0, +))).map { 65_530 &+ $0 }
        // Three one-packet frames after them close the last columns.
        let rows = Self.groups(size: 5, crossing: false, frames: frames + [1, 1, 1])
        let crossed = Self.groups(size: 5, crossing: true, frames: frames + [1, 1, 1])
        #expect(crossed.filter { rows.contains($0) }.count == rows.count, "the rows are kept")
        var rowFailures = 0
        for (i, first) in sent.enumerated() {
            for second in sent[(i + 1)...] {
                let lost: Set = [first, second]
                if !Self.unrecovered(lost, groups: rows).isEmpty { rowFailures += 1 }
                #expect(Self.unrecovered(lost, groups: crossed).isEmpty, "lost \(first) and \(second)")
            }
        }
        #expect(rowFailures > 20, "rows alone lose pairs in one row: \(rowFailures)")
        #expect(crossed.count - rows.count <= rows.count, "columns add no more repairs than the rows: \(crossed.count)")
    }

    /// A column's repair comes within `columnFrames` frames of its first
    /// packet, though not full (small frames), and a column of one packet
    /// (a copy of a packet its row protects already) is not sent.
    @Test func aColumnClosesWithinAFewFramesAndNeverCoversOnePacket() {
        var groups = FECGroups()
        groups.size = 3
        groups.crossing = true
        var closed: [[[UInt16]]] = []
        for (sequence, ends) in [(0, false), (1, false), (2, true), (3, true), (4, true)] as [(UInt16, Bool)] {
            closed.append(groups.sent(sequence, endsFrame: ends))
        }
        #expect(closed == [[], [], [[0, 1, 2]], [[3]], [[4], [0, 3], [1, 4]]], "at the third frame's end: \(closed)")
    }

    /// The size follows the loss from one feedback report to the next: a
    /// new size keeps every packet sent before it protected, in its row and
    /// in its column.
    @Test func aNewSizeLeavesNoPacketSentBeforeItUnprotected() {
        var groups = FECGroups()
        groups.size = 5
        groups.crossing = true
        var closed: [[UInt16]] = []
        var sequence: UInt16 = 0
        for size in [5, 3, 6, 4] {
            groups.size = size
            for index in 0..<7 {
                closed += groups.sent(sequence, endsFrame: index == 6)
                sequence += 1
            }
        }
        for _ in 0..<3 {
            closed += groups.sent(sequence, endsFrame: true)
            sequence += 1
        }
        for first in 0..<UInt16(28) {
            for second in (first + 1)..<28 {
                #expect(Self.unrecovered([first, second], groups: closed).isEmpty, "lost \(first) and \(second)")
            }
        }
    }

    /// A column never reaches further than a flexible mask does.
    @Test func aColumnSpansAtMostAMask() {
        let crossed = Self.groups(size: 40, crossing: true, frames: [200], start: 0)
        #expect(crossed.allSatisfy { Int($0.last! &- $0.first!) < FlexFEC.maxProtected }, "\(crossed.map { $0.count })")
        #expect(crossed.contains { $0.count == 2 && $0[1] - $0[0] == 40 }, "columns of packets 40 apart")
    }
}
