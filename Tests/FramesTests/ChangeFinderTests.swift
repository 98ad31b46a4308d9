import ShareColor
import Testing

/// Two packed I420 pictures of one size: `old` with detail everywhere and
/// `new` a copy of it that the test then changes.
private struct Pair {
    let width: Int, height: Int
    var old: [UInt8], new: [UInt8]

    init(width: Int, height: Int, seed: UInt32 = 0x2468_ACE1) {
        (self.width, self.height) = (width, height)
        var state = seed
        old = (0..<I420Planes.packedBytes(width: width, height: height)).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: state >> 24)
        }
        new = old
    }

    var chromaWidth: Int { (width + 1) / 2 }
    var chromaHeight: Int { (height + 1) / 2 }
    mutating func changeLuma(x: Int, y: Int) { new[y * width + x] &+= 1 }
    mutating func changeU(x: Int, y: Int) { new[width * height + y * chromaWidth + x] &+= 1 }
    mutating func changeV(x: Int, y: Int) { new[width * height + chromaWidth * chromaHeight + y * chromaWidth + x] &+= 1 }

    mutating func changes() -> [Rectangle] {
        var finder = ChangeFinder()
        let (width, height) = (width, height)
        return new.withUnsafeMutableBufferPointer { n in
            old.withUnsafeMutableBufferPointer { o in
                finder.changes(in: I420Planes(packedAt: n.baseAddress!, width: width, height: height),
                               since: I420Planes(packedAt: o.baseAddress!, width: width, height: height))
            }
        }
    }

    /// Whether any byte of the macroblock at (column, row) differs.
    func differs(column: Int, row: Int) -> Bool {
        for y in (row * 16)..<min(height, row * 16 + 16) {
            for x in (column * 16)..<min(width, column * 16 + 16) where new[y * width + x] != old[y * width + x] { return true }
        }
        let planes = [width * height, width * height + chromaWidth * chromaHeight]
        for base in planes {
            for y in (row * 8)..<min(chromaHeight, row * 8 + 8) {
                for x in (column * 8)..<min(chromaWidth, column * 8 + 8) {
                    let i = base + y * chromaWidth + x
                    if new[i] != old[i] { return true }
                }
            }
        }
        return false
    }
}

/// What changed in a `width` x `height` pair after `edit`.
private func changes(_ width: Int, _ height: Int, after edit: (inout Pair) -> Void) -> [Rectangle] {
    var pair = Pair(width: width, height: height)
    edit(&pair)
    return pair.changes()
}

private func covers(_ rects: [Rectangle], x: Int, y: Int) -> Bool {
    rects.contains { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height }
}

@Suite struct ChangeFinderTests {
    @Test func theSamePictureHasNoChanges() {
        var pair = Pair(width: 1280, height: 720)
        #expect(pair.changes().isEmpty)
    }

    @Test func oneLumaByteNamesItsMacroblock() {
        #expect(changes(1280, 720) { $0.changeLuma(x: 100, y: 40) } == [Rectangle(x: 96, y: 32, width: 16, height: 16)])
    }

    @Test func aChangeOnlyInColourIsFound() {
        #expect(changes(640, 360) { $0.changeU(x: 9, y: 17) } == [Rectangle(x: 16, y: 32, width: 16, height: 16)])
        #expect(changes(640, 360) { $0.changeV(x: 319, y: 179) } == [Rectangle(x: 624, y: 352, width: 16, height: 8)])
    }

    @Test func aBlockIsOneRectangleAcrossMacroblockRows() {
        var pair = Pair(width: 1920, height: 1080)
        for y in 200..<330 { for x in 500..<700 { pair.changeLuma(x: x, y: y) } }
        // Columns 31...43 (x 496..<704), rows 12...20 (y 192..<336).
        #expect(pair.changes() == [Rectangle(x: 496, y: 192, width: 208, height: 144)])
    }

    @Test func runsApartInARowAreApart() {
        var pair = Pair(width: 320, height: 48)
        pair.changeLuma(x: 0, y: 0)
        pair.changeLuma(x: 40, y: 5)
        pair.changeLuma(x: 47, y: 20)
        #expect(pair.changes() == [Rectangle(x: 0, y: 0, width: 16, height: 16), Rectangle(x: 32, y: 0, width: 16, height: 32)])
    }

    /// Odd sizes end in a partial macroblock and rows whose last bytes are
    /// compared one by one: changes there are found and clamped.
    @Test func theLastPartialMacroblockIsFoundAndClamped() {
        #expect(changes(37, 23) { $0.changeLuma(x: 36, y: 22) } == [Rectangle(x: 32, y: 16, width: 5, height: 7)])
        #expect(changes(37, 23) { $0.changeV(x: 18, y: 11) } == [Rectangle(x: 32, y: 16, width: 5, height: 7)])
    }

    /// Scattered changes in pictures of several sizes: every changed byte
    /// is covered, and every macroblock named holds a change (the
    /// encoder skips the others, so naming too few would freeze them).
    @Test(arguments: [(1280, 720), (1366, 768), (33, 65), (1920, 1080)])
    func everyChangeIsCoveredAndNothingElse(size: (Int, Int)) {
        var pair = Pair(width: size.0, height: size.1)
        var state: UInt32 = UInt32(size.0 * 7919 + size.1)
        func next(_ bound: Int) -> Int {
            state = state &* 1_664_525 &+ 1_013_904_223
            return Int(state >> 8) % bound
        }
        var touched: [(x: Int, y: Int)] = []
        for _ in 0..<40 {
            let (x, y) = (next(pair.width), next(pair.height))
            switch next(3) {
            case 0: pair.changeLuma(x: x, y: y)
            case 1: pair.changeU(x: x / 2, y: y / 2)
            default: pair.changeV(x: x / 2, y: y / 2)
            }
            touched.append((x, y))
        }
        let rects = pair.changes()
        for point in touched { #expect(covers(rects, x: point.x, y: point.y), "\(point) not covered") }
        for rect in rects {
            #expect(rect.x % 16 == 0 && rect.y % 16 == 0 && rect.x + rect.width <= pair.width && rect.y + rect.height <= pair.height)
            for row in (rect.y / 16)..<((rect.y + rect.height + 15) / 16) {
                for column in (rect.x / 16)..<((rect.x + rect.width + 15) / 16) {
                    #expect(pair.differs(column: column, row: row), "macroblock \(column),\(row) named but unchanged")
                }
            }
        }
    }
}
