/// Finds the 16x16 macroblocks in which a picture differs from the one
/// before it, byte for byte, in any of its three planes: what changed when
/// the source says nothing about it (a compositor that sends no damage
/// metadata). The encoder skips every other macroblock without analysis,
/// and since the comparison is exact, a skipped macroblock is one whose
/// pixels are the same. Reading both pictures once costs far less than
/// analysing the unchanged parts of one (`Benchmarks/wayland.py`).
package struct ChangeFinder {
    /// Per macroblock column of the row being compared: the bits that differed.
    private var differences: [UInt64] = []

    package init() {}

    /// The macroblocks of `new` that differ from `old` (a picture of the
    /// same size), as one rectangle per run of changed macroblocks in a
    /// macroblock row, runs of the same columns in consecutive rows joined.
    /// Rectangles are clamped to the picture; empty when nothing changed.
    package mutating func changes(in new: I420Planes, since old: I420Planes) -> [Rectangle] {
        precondition(new.width == old.width && new.height == old.height, "pictures of one size compared")
        let columns = (new.width + 15) / 16
        let chromaWidth = (new.width + 1) / 2, chromaHeight = (new.height + 1) / 2
        var found: [Rectangle] = []
        // Rectangles that reach the row before, by their first and last column.
        var open: [(first: Int, last: Int, index: Int)] = [], reaching: [(first: Int, last: Int, index: Int)] = []
        for macroblockRow in 0..<((new.height + 15) / 16) {
            differences.removeAll(keepingCapacity: true)
            differences.append(contentsOf: repeatElement(0, count: columns))
            let lumaRows = (macroblockRow * 16)..<min(new.height, macroblockRow * 16 + 16)
            for row in lumaRows {
                Self.compare(new.y + row * new.lumaStride, old.y + row * old.lumaStride, bytes: new.width,
                             perColumn: 16, into: &differences)
            }
            let chromaRows = (macroblockRow * 8)..<min(chromaHeight, macroblockRow * 8 + 8)
            for row in chromaRows {
                Self.compare(new.u + row * new.chromaStride, old.u + row * old.chromaStride, bytes: chromaWidth,
                             perColumn: 8, into: &differences)
                Self.compare(new.v + row * new.chromaStride, old.v + row * old.chromaStride, bytes: chromaWidth,
                             perColumn: 8, into: &differences)
            }
            reaching.removeAll(keepingCapacity: true)
            var column = 0
            while column < columns {
                guard differences[column] != 0 else {
                    column += 1
                    continue
                }
                let first = column
                while column < columns, differences[column] != 0 { column += 1 }
                let last = column - 1
                if let above = open.first(where: { $0.first == first && $0.last == last }) {
                    found[above.index].height = lumaRows.upperBound - found[above.index].y
                    reaching.append(above)
                } else {
                    let x = first * 16
                    found.append(Rectangle(x: x, y: lumaRows.lowerBound, width: min(new.width, column * 16) - x,
                                           height: lumaRows.count))
                    reaching.append((first, last, found.count - 1))
                }
            }
            swap(&open, &reaching)
        }
        return found
    }

    /// ORs the differences of one row of `bytes` bytes into the columns
    /// of `perColumn` bytes each (16 for luma, 8 for chroma): eight bytes
    /// at a time, then the last few one by one.
    private static func compare(_ a: UnsafeMutablePointer<UInt8>, _ b: UnsafeMutablePointer<UInt8>, bytes: Int,
                                perColumn: Int, into differences: inout [UInt64]) {
        let words = bytes / 8
        let rawA = UnsafeRawPointer(a), rawB = UnsafeRawPointer(b)
        let shift = perColumn == 16 ? 1 : 0
        differences.withUnsafeMutableBufferPointer { columns in
            for word in 0..<words {
                let offset = word &* 8
                let differ = rawA.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    ^ rawB.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                columns[word &>> shift] |= differ
            }
            for byte in (words * 8)..<bytes where a[byte] != b[byte] {
                columns[byte / perColumn] |= 1
            }
        }
    }
}
