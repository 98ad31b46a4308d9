/// A reusable packet buffer with room after the packet for an SRTP trailer,
/// so protection happens in place and a steady stream allocates nothing.
public struct PacketBuffer: Sendable {
    /// Backing store; its count is the capacity, `count` bytes are the packet.
    public private(set) var storage: [UInt8]
    /// Bytes of the packet.
    public var count: Int {
        didSet { precondition(count >= 0 && count <= storage.count, "packet length outside its buffer") }
    }

    /// Space for a packet of up to `capacity` bytes plus `tailroom` bytes.
    public init(capacity: Int, tailroom: Int = PacketBuffer.defaultTailroom) {
        storage = [UInt8](repeating: 0, count: capacity + tailroom)
        count = 0
    }

    /// A buffer holding `bytes`, with `tailroom` spare bytes after them.
    public init(_ bytes: some Collection<UInt8>, tailroom: Int = PacketBuffer.defaultTailroom) {
        storage = Array(bytes)
        count = storage.count
        storage.append(contentsOf: repeatElement(0, count: tailroom))
    }

    /// Room for the largest SRTP/SRTCP trailer (auth tag, MKI, SRTCP index).
    public static let defaultTailroom = 32 + 4 + 128

    public var capacity: Int { storage.count }

    /// The packet's bytes (no copy).
    public var bytes: ArraySlice<UInt8> { storage[..<count] }

    public mutating func removeAll() { count = 0 }

    /// Appends `bytes`; returns false (and writes nothing) when they do not fit.
    @discardableResult
    public mutating func append(contentsOf bytes: some Collection<UInt8>) -> Bool {
        let n = bytes.count
        guard count + n <= storage.count else { return false }
        var index = count
        for byte in bytes {
            storage[index] = byte
            index += 1
        }
        count = index
        return true
    }

    /// Appends a contiguous slice with one copy.
    @discardableResult
    public mutating func append(slice bytes: ArraySlice<UInt8>) -> Bool {
        let n = bytes.count
        guard count + n <= storage.count else { return false }
        storage.replaceSubrange(count..<count + n, with: bytes)
        count += n
        return true
    }

    @discardableResult
    public mutating func append(_ byte: UInt8) -> Bool {
        guard count < storage.count else { return false }
        storage[count] = byte
        count += 1
        return true
    }

    @discardableResult
    public mutating func appendUInt16(_ value: UInt16) -> Bool {
        guard count + 2 <= storage.count else { return false }
        storage[count] = UInt8(truncatingIfNeeded: value >> 8)
        storage[count + 1] = UInt8(truncatingIfNeeded: value)
        count += 2
        return true
    }

    @discardableResult
    public mutating func appendUInt32(_ value: UInt32) -> Bool {
        guard count + 4 <= storage.count else { return false }
        storage[count] = UInt8(truncatingIfNeeded: value >> 24)
        storage[count + 1] = UInt8(truncatingIfNeeded: value >> 16)
        storage[count + 2] = UInt8(truncatingIfNeeded: value >> 8)
        storage[count + 3] = UInt8(truncatingIfNeeded: value)
        count += 4
        return true
    }

    /// Lends the whole storage (packet and tailroom) mutably, with the packet
    /// length; the closure returns the new length. Used by in-place transforms
    /// such as SRTP protect.
    public mutating func withMutableStorage<R, E: Error>(
        _ body: (inout [UInt8], inout Int) throws(E) -> R
    ) throws(E) -> R {
        var length = count
        defer { count = length }
        return try body(&storage, &length)
    }
}
