public import ShareBase

/// The tests' seeded generator: property tests replay exactly from their seed.
public typealias SeededGenerator = SplitMix64

extension SplitMix64 {
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}

/// Parses a hex string, ignoring spaces and newlines.
public func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    var out: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        out.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return out
}
