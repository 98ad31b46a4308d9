internal import CX264
internal import ShareSync
#if canImport(Glibc)
internal import Glibc
#endif

/// Groups the NAL units x264 writes for one picture into parts that can
/// leave one by one, in the picture's order: each slice with the parameter
/// sets and SEI written just before it. Fed either from x264's
/// `nalu_process` callback while the picture is encoded (`encapsulate`: the
/// unit still has to be escaped and given its start code) or from the
/// finished picture's list (`take`).
///
/// On sliced threads x264 calls back from each of its threads at once, each
/// writing its own band of the picture top to bottom: a slice that comes
/// before its turn (the lower band's, while the upper is still being
/// written) waits here, copied, and leaves as soon as the slices above it
/// have. So the top band's slices leave as they are written whatever the
/// thread count, and the others as soon as order allows. Parts are handed
/// on one at a time, under a lock, from whichever thread finished them.
final class SliceCollector: @unchecked Sendable {
    // Safe: every field below is touched under `lock` only (x264's threads
    // call in during an encode; the encoder's caller before and after).
    private let lock = Locked(())
    /// Macroblocks in a picture: the slice that ends with the last one ends the frame.
    private let macroblocks: Int32
    /// Units waiting for the slice they precede.
    private var pending: [UInt8] = []
    /// Where `x264_nal_encode` writes a unit (x264 asks for
    /// payload x 3/2 + 5 + 64 bytes: escaping may grow it).
    private var scratch: UnsafeMutablePointer<UInt8>
    private var scratchCapacity: Int
    private var emit: ((UnsafeBufferPointer<UInt8>, Bool) -> Void)?
    private var bytes = 0
    private var idr = false
    /// The first macroblock of the slice whose turn it is.
    private var nextMacroblock: Int32 = 0
    /// Slices written before their turn, escaped, by first macroblock.
    private var early: [Int32: Slice] = [:]

    /// A slice held for its turn.
    private struct Slice {
        var unit: [UInt8]
        var type: Int32
        var lastMacroblock: Int32
    }

    init(macroblocks: Int32) {
        self.macroblocks = macroblocks
        scratchCapacity = 64 * 1024
        scratch = .allocate(capacity: scratchCapacity)
        pending.reserveCapacity(1024)
    }

    deinit { scratch.deallocate() }

    /// Starts a picture whose parts go to `emit`.
    func begin(_ emit: @escaping (UnsafeBufferPointer<UInt8>, Bool) -> Void) {
        lock.withLock { _ in
            self.emit = emit
            pending.removeAll(keepingCapacity: true)
            early.removeAll(keepingCapacity: true)
            nextMacroblock = 0
            bytes = 0
            idr = false
        }
    }

    /// Ends the picture. Slices still waiting for one before them (none:
    /// x264's slices cover the picture) leave in order, and units left
    /// without a slice after them (none with our settings: x264 writes no
    /// filler without NAL HRD) leave as the last part.
    func end() {
        lock.withLock { _ in
            for first in early.keys.sorted() {
                if let slice = early.removeValue(forKey: first) {
                    slice.unit.withUnsafeBufferPointer { send($0, type: slice.type, lastMacroblock: slice.lastMacroblock) }
                }
            }
            if !pending.isEmpty {
                pending.withUnsafeBufferPointer { emit?($0, true) }
                pending.removeAll(keepingCapacity: true)
            }
            emit = nil
        }
    }

    /// What the picture came to, once ended: nil if x264 wrote nothing.
    var finished: (bytes: Int, idr: Bool)? {
        lock.withLock { _ in bytes > 0 ? (bytes, idr) : nil }
    }

    /// A unit x264 has just finished, not yet escaped, from any of its
    /// threads: written into the scratch space with its start code
    /// (x264_nal_encode), then taken.
    func encapsulate(_ nal: UnsafeMutablePointer<x264_nal_t>, encoder: OpaquePointer) {
        lock.withLock { _ in
            let needed = Int(nal.pointee.i_payload) * 3 / 2 + 5 + 64
            if needed > scratchCapacity {
                scratch.deallocate()
                scratchCapacity = max(needed, scratchCapacity * 2)
                scratch = .allocate(capacity: scratchCapacity)
            }
            x264_nal_encode(encoder, scratch, nal)
            arrive(nal.pointee)
        }
    }

    /// A finished unit (escaped, with its start code), in the picture's order.
    func take(_ nal: x264_nal_t) {
        lock.withLock { _ in arrive(nal) }
    }

    /// A slice whose turn it is leaves at once with what waited for it, and
    /// then the slices held for it; one written early is held; anything
    /// else waits for its slice.
    private func arrive(_ nal: x264_nal_t) {
        guard let payload = nal.p_payload, nal.i_payload > 0 else { return }
        let unit = UnsafeBufferPointer(start: payload, count: Int(nal.i_payload))
        bytes += unit.count
        let type = nal.i_type
        guard type == Int32(NAL_SLICE.rawValue) || type == Int32(NAL_SLICE_IDR.rawValue) else {
            pending.append(contentsOf: unit)
            return
        }
        guard nal.i_first_mb <= nextMacroblock else {
            early[nal.i_first_mb] = Slice(unit: Array(unit), type: type, lastMacroblock: nal.i_last_mb)
            return
        }
        send(unit, type: type, lastMacroblock: nal.i_last_mb)
        while let slice = early.removeValue(forKey: nextMacroblock) {
            slice.unit.withUnsafeBufferPointer { send($0, type: slice.type, lastMacroblock: slice.lastMacroblock) }
        }
    }

    private func send(_ unit: UnsafeBufferPointer<UInt8>, type: Int32, lastMacroblock: Int32) {
        // With intra refresh x264 also flags the frame a sweep starts on as a
        // keyframe; only an IDR picture is one for a decoder joining here.
        if type == Int32(NAL_SLICE_IDR.rawValue) { idr = true }
        nextMacroblock = max(nextMacroblock, lastMacroblock + 1)
        let last = lastMacroblock >= macroblocks - 1
        if pending.isEmpty {
            emit?(unit, last)
        } else {
            pending.append(contentsOf: unit)
            pending.withUnsafeBufferPointer { emit?($0, last) }
            pending.removeAll(keepingCapacity: true)
        }
    }
}
