#if canImport(Glibc)
internal import Glibc
#endif

/// Key bytes in one allocation that is never copied: every copy of a
/// `SRTPKeyingMaterial` shares it, an SRTP context reads the key from it in
/// place, and it is wiped when the last reference goes. An array would not
/// do: writing zeros into an array whose storage is shared copies it first,
/// so the key it meant to wipe stays in memory.
package final class SecretBytes: @unchecked Sendable {
    // Safe: the bytes are written once, in init, and only read after, until
    // deinit wipes them (when no other reference exists).
    private let storage: UnsafeMutableRawBufferPointer

    package init(_ bytes: some Collection<UInt8>) {
        storage = .allocate(byteCount: max(1, bytes.count), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        _ = UnsafeMutableRawBufferPointer(rebasing: storage[0..<bytes.count]).initializeMemory(as: UInt8.self, from: bytes)
        count = bytes.count
    }

    deinit {
        wipe()
        storage.deallocate()
    }

    /// The number of bytes.
    package let count: Int

    /// Lends the bytes; the pointer must not escape `body`. libsrtp2's
    /// policy takes a mutable pointer to the key, which it only reads.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeMutableBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(storage.bindMemory(to: UInt8.self).extracting(0..<count))
    }

    /// Overwrites the bytes with zeros in a way the optimiser keeps
    /// (`explicit_bzero`, which exists for this).
    package func wipe() {
        explicit_bzero(storage.baseAddress!, storage.count)
    }

    /// A copy of the bytes as an array, for the few callers that need one
    /// (writing a key file, keying a handshake); the copy is theirs to wipe.
    package var array: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Compares in time independent of where the bytes differ.
    package func hasSameBytes(as other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { a in
            other.withUnsafeBytes { b in zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0 }
        }
    }
}
