internal import CX264
#if canImport(Glibc)
internal import Glibc
#endif

/// Groups the NAL units x264 writes for one picture into parts that can
/// leave one by one: each slice with the parameter sets and SEI written
/// just before it. Fed either from x264's `nalu_process` callback while the
/// picture is encoded (`encapsulate`: the unit still has to be escaped and
/// given its start code) or from the finished picture's list (`take`).
/// Used by one thread at a time: the encoder's caller, or x264 calling back
/// on that same thread.
final class SliceCollector {
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

    init(macroblocks: Int32) {
        self.macroblocks = macroblocks
        scratchCapacity = 64 * 1024
        scratch = .allocate(capacity: scratchCapacity)
        pending.reserveCapacity(1024)
    }

    deinit { scratch.deallocate() }

    /// Starts a picture whose parts go to `emit`.
    func begin(_ emit: @escaping (UnsafeBufferPointer<UInt8>, Bool) -> Void) {
        self.emit = emit
        pending.removeAll(keepingCapacity: true)
        bytes = 0
        idr = false
    }

    /// Ends the picture. Units left without a slice after them (none with
    /// our settings: x264 writes no filler without NAL HRD) leave as the
    /// last part.
    func end() {
        if !pending.isEmpty {
            pending.withUnsafeBufferPointer { emit?($0, true) }
            pending.removeAll(keepingCapacity: true)
        }
        emit = nil
    }

    /// What the picture came to, once ended: nil if x264 wrote nothing.
    var finished: (bytes: Int, idr: Bool)? { bytes > 0 ? (bytes, idr) : nil }

    /// A unit x264 has just finished, not yet escaped: written into the
    /// scratch space with its start code (x264_nal_encode), then taken.
    func encapsulate(_ nal: UnsafeMutablePointer<x264_nal_t>, encoder: OpaquePointer) {
        let needed = Int(nal.pointee.i_payload) * 3 / 2 + 5 + 64
        if needed > scratchCapacity {
            scratch.deallocate()
            scratchCapacity = max(needed, scratchCapacity * 2)
            scratch = .allocate(capacity: scratchCapacity)
        }
        x264_nal_encode(encoder, scratch, nal)
        take(nal.pointee)
    }

    /// A finished unit (escaped, with its start code): a slice leaves at
    /// once with what waited for it; anything else waits for its slice.
    func take(_ nal: x264_nal_t) {
        guard let payload = nal.p_payload, nal.i_payload > 0 else { return }
        let unit = UnsafeBufferPointer(start: payload, count: Int(nal.i_payload))
        bytes += unit.count
        let type = nal.i_type
        guard type == Int32(NAL_SLICE.rawValue) || type == Int32(NAL_SLICE_IDR.rawValue) else {
            pending.append(contentsOf: unit)
            return
        }
        // With intra refresh x264 also flags the frame a sweep starts on as a
        // keyframe; only an IDR picture is one for a decoder joining here.
        if type == Int32(NAL_SLICE_IDR.rawValue) { idr = true }
        let last = nal.i_last_mb >= macroblocks - 1
        if pending.isEmpty {
            emit?(unit, last)
        } else {
            pending.append(contentsOf: unit)
            pending.withUnsafeBufferPointer { emit?($0, last) }
            pending.removeAll(keepingCapacity: true)
        }
    }
}
