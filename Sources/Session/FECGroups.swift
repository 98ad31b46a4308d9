internal import ShareWire

/// Which media packets each FlexFEC repair protects, sans-IO: told each
/// packet as it is sent, it says which groups close. A row is `size`
/// packets in a row (or fewer, closed by the frame's last packet, so a
/// frame's repair leaves right behind it); one repair rebuilds any one
/// packet of its row.
///
/// A row that loses two packets is not rebuilt, and waits a round trip for
/// retransmissions: on a long path that is a freeze of the round trip. With
/// `crossing`, each packet is also in one of `size` columns (the packets
/// sent `size` apart), so two losses in one row fall in two columns, each
/// rebuilt by its column's repair, and the row's repair rebuilds the rest
/// (RFC 8627's two-dimensional protection, in flexible masks). A column
/// closes once it holds `size` packets, or at the end of the `columnFrames`th
/// frame since it opened: its repair comes at most that many frames after
/// the loss, under what a viewer sees as a freeze (the receiver's
/// `ShownGaps`: the frame spacing plus 100 ms).
struct FECGroups: Sendable {
    /// Frames a column stays open at most.
    static let columnFrames = 3

    /// Media packets per row (and per column); nil protects nothing.
    /// A new size applies from the next packet: the open row closes at it,
    /// and columns are added or closed in `sent`, so no packet already sent
    /// loses its protection.
    var size: Int? {
        didSet {
            if let size { self.size = min(max(size, 2), FlexFEC.maxProtected) } else { reset() }
        }
    }
    /// Whether columns are kept across the rows.
    var crossing = false {
        didSet { if !crossing { columns.removeAll() } }
    }

    private var row: [UInt16] = []
    private var columns: [Column] = []
    /// The column the next packet goes into.
    private var nextColumn = 0

    private struct Column {
        var members: [UInt16] = []
        /// Frames that ended since the column's first packet.
        var framesEnded = 0
    }

    /// A media packet just sent: the groups it closes (the row first, then
    /// columns), each as the sequence numbers its repair protects.
    mutating func sent(_ sequence: UInt16, endsFrame: Bool) -> [[UInt16]] {
        guard let size else { return [] }
        var closed: [[UInt16]] = []
        row.append(sequence)
        if row.count >= size || endsFrame {
            closed.append(row)
            row.removeAll(keepingCapacity: true)
        }
        guard crossing else { return closed }
        if columns.count > size {
            // Fewer columns now: those beyond them close as they stand, one
            // packet too (its row may have lost another).
            closed += columns[size...].map(\.members).filter { !$0.isEmpty }
            columns.removeLast(columns.count - size)
        }
        if columns.count < size { columns += Array(repeating: Column(), count: size - columns.count) }
        nextColumn %= size
        let index = nextColumn
        nextColumn += 1
        // A flexible mask reaches `maxProtected` packets past its first.
        if let first = columns[index].members.first, Int(sequence &- first) >= FlexFEC.maxProtected {
            close(index, into: &closed)
        }
        columns[index].members.append(sequence)
        if columns[index].members.count >= size { close(index, into: &closed) }
        guard endsFrame else { return closed }
        for index in columns.indices where !columns[index].members.isEmpty {
            columns[index].framesEnded += 1
            if columns[index].framesEnded >= Self.columnFrames { close(index, into: &closed) }
        }
        return closed
    }

    /// Ends column `index`, its repair going into `closed`; but a column of
    /// one packet is left out (it would be a copy): its row is rebuilt
    /// through the other columns, unless two of its packets sat alone
    /// (frames far smaller than a row).
    private mutating func close(_ index: Int, into closed: inout [[UInt16]]) {
        if columns[index].members.count > 1 { closed.append(columns[index].members) }
        columns[index] = Column()
    }

    private mutating func reset() {
        row.removeAll()
        columns.removeAll()
        nextColumn = 0
    }
}
