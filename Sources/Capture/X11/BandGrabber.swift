internal import CXCB
internal import ShareX11
internal import ShareColor
internal import ShareFrames
#if canImport(Glibc)
internal import Glibc
#endif

/// Grabs rows of the screen into one of two band buffers (MIT-SHM segments,
/// or heap buffers filled from GetImage replies when the server has no
/// MIT-SHM). Two, so the server fills the next band while the last one is
/// converted: a request goes out before the previous reply is waited for.
/// Used by the capturing thread only.
final class BandGrabber {
    private struct Buffer {
        let address: UnsafeMutableRawPointer
        let segment: xcb_shm_seg_t?
        let owner: AnyObject
    }

    private enum Pending {
        case shared(xcb_shm_get_image_cookie_t)
        case image(xcb_get_image_cookie_t, byteCount: Int)
    }

    private let connection: X11Connection
    let sharedMemory: Bool
    private var buffers: [Buffer] = []
    private var pending: [Pending?] = [nil, nil]
    /// Bytes each buffer holds.
    private(set) var capacity = 0

    init(connection: X11Connection, sharedMemory: Bool) {
        self.connection = connection
        self.sharedMemory = sharedMemory
    }

    /// Bytes the buffers take.
    var bytes: Int { buffers.count * capacity }

    /// Makes sure both buffers hold `bytes` (new ones when they are smaller).
    func reserve(bytes: Int) throws(X11Error) {
        guard bytes > capacity else { return }
        cancel()
        buffers = []
        for _ in 0..<2 {
            if sharedMemory {
                let segment = try SharedMemorySegment(connection: connection, size: bytes)
                buffers.append(Buffer(address: segment.address, segment: segment.segment, owner: segment))
            } else {
                let heap = HeapBuffer(size: bytes)
                buffers.append(Buffer(address: heap.address, segment: nil, owner: heap))
            }
        }
        capacity = bytes
    }

    /// Asks for the rows of `area` from `firstRow` (count `rows`) into buffer `index`.
    func request(_ index: Int, area: Rectangle, firstRow: Int, rows: Int) {
        let c = connection.connection
        let format = UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue)
        let (x, y) = (Int16(area.x), Int16(area.y + firstRow))
        if let segment = buffers[index].segment {
            pending[index] = .shared(xcb_shm_get_image_unchecked(c, connection.root, x, y, UInt16(area.width), UInt16(rows),
                                                                 ~0, format, segment, 0))
        } else {
            pending[index] = .image(xcb_get_image_unchecked(c, format, connection.root, x, y, UInt16(area.width), UInt16(rows), ~0),
                                    byteCount: area.width * rows * 4)
        }
    }

    /// Waits for buffer `index`'s rows; their address (4 bytes a pixel,
    /// rows packed) once they are there.
    func receive(_ index: Int) throws(X11Error) -> UnsafeMutableRawPointer {
        let c = connection.connection
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        switch pending[index] {
        case nil:
            preconditionFailure("no band was asked for in buffer \(index)")
        case .shared(let cookie)?:
            free(xcb_shm_get_image_reply(c, cookie, &error))
        case .image(let cookie, let byteCount)?:
            if let reply = xcb_get_image_reply(c, cookie, &error) {
                if let data = xcb_get_image_data(reply) {
                    buffers[index].address.copyMemory(from: data, byteCount: min(Int(xcb_get_image_data_length(reply)), byteCount))
                }
                free(reply)
            }
        }
        pending[index] = nil
        if let error {
            let code = error.pointee.error_code
            free(error)
            cancel()
            throw X11Error("GetImage of the root window failed", code: code)
        }
        if xcb_connection_has_error(c) != 0 { throw X11Error("the X connection was lost") }
        return buffers[index].address
    }

    /// Drops replies still to come (after an error).
    func cancel() {
        let c = connection.connection
        for index in pending.indices {
            switch pending[index] {
            case .shared(let cookie)?: xcb_discard_reply(c, cookie.sequence)
            case .image(let cookie, _)?: xcb_discard_reply(c, cookie.sequence)
            case nil: break
            }
            pending[index] = nil
        }
    }
}
