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
    // Safe: `emit` is set before x264 is called and cleared after it
    // returns (its threads start and finish inside the call); everything
    // else is in `state`, behind its lock.
    private var emit: ((UnsafeBufferPointer<UInt8>, Bool) -> Void)?
    private let state: Locked<State>

    /// Where the picture's units are: what waits for its slice, the
    /// slices held for their turn, and what the picture came to.
    // Safe: only ever touched inside `state.withLock`.
    private struct State: ~Copyable, @unchecked Sendable {
        /// Macroblocks in a picture: the slice that ends with the last one ends the frame.
        let macroblocks: Int32
        /// Units waiting for the slice they precede.
        var pending: [UInt8] = []
        /// Where `x264_nal_encode` writes a unit (x264 asks for
        /// payload x 3/2 + 5 + 64 bytes: escaping may grow it).
        var scratch: UnsafeMutablePointer<UInt8>
        var scratchCapacity = 64 * 1024
        var bytes = 0
        var idr = false
        /// The first macroblock of the slice whose turn it is.
        var nextMacroblock: Int32 = 0
        /// Slices written before their turn, escaped, by first macroblock.
        var early: [Int32: Slice] = [:]

        init(macroblocks: Int32) {
            self.macroblocks = macroblocks
            scratch = .allocate(capacity: scratchCapacity)
            pending.reserveCapacity(1024)
        }

        deinit { scratch.deallocate() }
    }

    /// A slice held for its turn.
    private struct Slice {
        var unit: [UInt8]
        var type: Int32
        var lastMacroblock: Int32
    }

    init(macroblocks: Int32) {
        state = Locked(State(macroblocks: macroblocks))
    }

    /// Starts a picture whose parts go to `emit`.
    func begin(_ emit: @escaping (UnsafeBufferPointer<UInt8>, Bool) -> Void) {
        self.emit = emit
        state.withLock { s in
            s.pending.removeAll(keepingCapacity: true)
            s.early.removeAll(keepingCapacity: true)
            s.nextMacroblock = 0
            s.bytes = 0
            s.idr = false
        }
    }

    /// Ends the picture. Slices still waiting for one before them (none:
    /// x264's slices cover the picture) leave in order, and units left
    /// without a slice after them (none with our settings: x264 writes no
    /// filler without NAL HRD) leave as the last part.
    func end() {
        state.withLock { s in
            for first in s.early.keys.sorted() {
                if let slice = s.early.removeValue(forKey: first) { send(slice, &s) }
            }
            if !s.pending.isEmpty {
                s.pending.withUnsafeBufferPointer { emit?($0, true) }
                s.pending.removeAll(keepingCapacity: true)
            }
        }
        emit = nil
    }

    /// What the picture came to, once ended: nil if x264 wrote nothing.
    var finished: (bytes: Int, idr: Bool)? {
        state.withLock { s in s.bytes > 0 ? (s.bytes, s.idr) : nil }
    }

    /// A unit x264 has just finished, not yet escaped, from any of its
    /// threads: written into the scratch space with its start code
    /// (x264_nal_encode), then taken.
    func encapsulate(_ nal: UnsafeMutablePointer<x264_nal_t>, encoder: OpaquePointer) {
        state.withLock { s in
            let needed = Int(nal.pointee.i_payload) * 3 / 2 + 5 + 64
            if needed > s.scratchCapacity {
                s.scratch.deallocate()
                s.scratchCapacity = max(needed, s.scratchCapacity * 2)
                s.scratch = .allocate(capacity: s.scratchCapacity)
            }
            x264_nal_encode(encoder, s.scratch, nal)
            arrive(nal.pointee, &s)
        }
    }

    /// A finished unit (escaped, with its start code), in the picture's order.
    func take(_ nal: x264_nal_t) {
        state.withLock { s in arrive(nal, &s) }
    }

    /// A slice whose turn it is leaves at once with what waited for it, and
    /// then the slices held for it; one written early is held; anything
    /// else waits for its slice.
    private func arrive(_ nal: x264_nal_t, _ s: inout State) {
        guard let payload = nal.p_payload, nal.i_payload > 0 else { return }
        let unit = UnsafeBufferPointer(start: payload, count: Int(nal.i_payload))
        s.bytes += unit.count
        let type = nal.i_type
        guard type == Int32(NAL_SLICE.rawValue) || type == Int32(NAL_SLICE_IDR.rawValue) else {
            s.pending.append(contentsOf: unit)
            return
        }
        guard nal.i_first_mb <= s.nextMacroblock else {
            s.early[nal.i_first_mb] = Slice(unit: Array(unit), type: type, lastMacroblock: nal.i_last_mb)
            return
        }
        send(unit, type: type, lastMacroblock: nal.i_last_mb, &s)
        while let slice = s.early.removeValue(forKey: s.nextMacroblock) { send(slice, &s) }
    }

    /// Sends a slice held for its turn.
    private func send(_ slice: Slice, _ s: inout State) {
        slice.unit.withUnsafeBufferPointer { send($0, type: slice.type, lastMacroblock: slice.lastMacroblock, &s) }
    }

    private func send(_ unit: UnsafeBufferPointer<UInt8>, type: Int32, lastMacroblock: Int32, _ s: inout State) {
        // With intra refresh x264 also flags the frame a sweep starts on as a
        // keyframe; only an IDR picture is one for a decoder joining here.
        if type == Int32(NAL_SLICE_IDR.rawValue) { s.idr = true }
        s.nextMacroblock = max(s.nextMacroblock, lastMacroblock + 1)
        let last = lastMacroblock >= s.macroblocks - 1
        if s.pending.isEmpty {
            emit?(unit, last)
        } else {
            s.pending.append(contentsOf: unit)
            s.pending.withUnsafeBufferPointer { emit?($0, last) }
            s.pending.removeAll(keepingCapacity: true)
        }
    }
}
