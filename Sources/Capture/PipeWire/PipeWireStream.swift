internal import CPipeWire

/// A PipeWire video stream from a screen cast's node (see
/// `share_pipewire.h`): PipeWire's own thread takes buffers as they come,
/// keeps the newest and gives the others back at once; the capturing
/// thread borrows the newest under the stream's lock.
final class PipeWireStream: @unchecked Sendable {
    // Safe: every call but the descriptor's runs under the stream's lock
    // (`locked`), the lock PipeWire's thread holds in its callbacks.
    private let handle: OpaquePointer

    enum State: Equatable {
        case connecting, paused, streaming, ended, failed(String)
    }

    init(node: UInt32, descriptor: Int32, maxFPS: Int) throws(ScreenCastError) {
        let size = 256
        var error = [CChar](repeating: 0, count: size)
        guard let handle = share_pw_start(descriptor, node, UInt32(clamping: maxFPS), &error, size) else {
            let text = Self.text(error)
            throw text.hasPrefix("no PipeWire") ? .unavailable(text) : .failed(text)
        }
        self.handle = handle
    }

    deinit { share_pw_stop(handle) }

    /// A C string written into `bytes`, up to its terminator.
    static func text(_ bytes: [CChar]) -> String {
        String(decoding: bytes.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Readable when a picture, pointer news or a change of state came.
    var wakeupDescriptor: Int32 { share_pw_wakeup_fd(handle) }
    func clearWakeup() { share_pw_clear_wakeup(handle) }

    /// Runs `body` under the stream's lock, with the calls that need it.
    func locked<R: ~Copyable, E: Error>(_ body: (Locked) throws(E) -> R) throws(E) -> R {
        share_pw_lock(handle)
        defer { share_pw_unlock(handle) }
        return try body(Locked(handle: handle))
    }

    /// The stream while its lock is held.
    struct Locked {
        let handle: OpaquePointer

        var state: State {
            let size = 256
            var text = [CChar](repeating: 0, count: size)
            switch share_pw_state(handle, &text, size) {
            case Int32(SHARE_PW_CONNECTING.rawValue): return .connecting
            case Int32(SHARE_PW_PAUSED.rawValue): return .paused
            case Int32(SHARE_PW_STREAMING.rawValue): return .streaming
            case Int32(SHARE_PW_ENDED.rawValue): return .ended
            default: return .failed(PipeWireStream.text(text))
            }
        }

        /// The negotiated size and layout; nil before negotiation.
        var format: (width: Int, height: Int, layout: Int32)? {
            var (w, h, layout): (UInt32, UInt32, Int32) = (0, 0, 0)
            share_pw_size(handle, &w, &h, &layout)
            return w > 0 && h > 0 && layout != 0 ? (Int(w), Int(h), layout) : nil
        }

        var hasFrame: Bool { share_pw_has_frame(handle) != 0 }

        /// Bytes of PipeWire's buffers mapped into this process (each read whole).
        var bufferBytes: Int { Int(share_pw_buffer_bytes(handle)) }

        var counts: (arrived: UInt64, replaced: UInt64, empty: UInt64) {
            var c: (UInt64, UInt64, UInt64) = (0, 0, 0)
            share_pw_counts(handle, &c.0, &c.1, &c.2)
            return c
        }

        /// The newest picture, lent until `giveBack`; nil: nothing new.
        func take() -> share_pw_frame? {
            var frame = share_pw_frame()
            return share_pw_take(handle, &frame) != 0 ? frame : nil
        }

        func giveBack() { share_pw_give_back(handle) }

        var pointerChanges: UInt64 { share_pw_pointer_changes(handle) }

        func pointer(shape: inout [UInt32]) -> share_pw_pointer {
            var pointer = share_pw_pointer()
            share_pw_pointer_read(handle, &pointer, nil, 0)
            let words = Int(pointer.width) * Int(pointer.height)
            if shape.count != words { shape = [UInt32](repeating: 0, count: words) }
            shape.withUnsafeMutableBufferPointer { share_pw_pointer_read(handle, &pointer, $0.baseAddress, words) }
            return pointer
        }
    }
}
