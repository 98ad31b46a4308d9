/// A bounds-checked, big-endian cursor over wire bytes: every read moves the
/// cursor and returns `nil` on short input instead of trapping. Package-wide:
/// the handshake reads its messages with it too.
package struct ByteReader {
    @usableFromInline let bytes: ArraySlice<UInt8>
    @usableFromInline package private(set) var offset: Int

    @inlinable package init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.offset = bytes.startIndex
    }

    @inlinable package var remaining: Int { bytes.endIndex - offset }
    @inlinable package var isAtEnd: Bool { offset >= bytes.endIndex }

    @inlinable package mutating func readUInt8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inlinable package mutating func readUInt16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    @inlinable package mutating func readUInt24() -> UInt32? {
        guard remaining >= 3 else { return nil }
        defer { offset += 3 }
        return UInt32(bytes[offset]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2])
    }

    @inlinable package mutating func readUInt32() -> UInt32? {
        guard remaining >= 4 else { return nil }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    @inlinable package mutating func readUInt64() -> UInt64? {
        guard let high = readUInt32(), let low = readUInt32() else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    /// The next `count` bytes as a slice of the input (no copy).
    @inlinable package mutating func readSlice(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, remaining >= count else { return nil }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    @inlinable package mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, remaining >= count else { return false }
        offset += count
        return true
    }

    /// Everything not read yet.
    @inlinable package mutating func readRest() -> ArraySlice<UInt8> {
        defer { offset = bytes.endIndex }
        return bytes[offset...]
    }
}

/// Big-endian appends, for serializers.
extension Array where Element == UInt8 {
    @inlinable package mutating func appendUInt16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable package mutating func appendUInt24(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable package mutating func appendUInt32(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 24))
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable package mutating func appendUInt64(_ value: UInt64) {
        appendUInt32(UInt32(truncatingIfNeeded: value >> 32))
        appendUInt32(UInt32(truncatingIfNeeded: value))
    }

    @inlinable package mutating func appendZeros(_ count: Int) {
        append(contentsOf: repeatElement(0, count: count))
    }
}
