public import ShareBase
public import ShareColor
internal import ShareSync
#if canImport(Glibc)
internal import Glibc
#endif

/// When a frame was captured: a monotonic instant for pacing and RTP
/// timestamps, and the wall clock for the capture-time header extension.
public struct CaptureTime: Sendable, Equatable {
    /// On the monotonic clock (CLOCK_MONOTONIC), for intervals on this machine.
    public var monotonic: MonotonicTime
    /// On the wall clock (CLOCK_REALTIME), in nanoseconds since 1970, sent to
    /// the receiver (abs-capture-time).
    public var unixNanoseconds: UInt64

    /// The instant read on both clocks.
    public init(monotonic: MonotonicTime, unixNanoseconds: UInt64) {
        self.monotonic = monotonic
        self.unixNanoseconds = unixNanoseconds
    }

    /// Now, on both clocks.
    public static func now() -> CaptureTime {
        CaptureTime(monotonic: SystemClock.now(), unixNanoseconds: SystemClock.wall())
    }

    /// The same instant moved by `offset` (either way) on both clocks.
    public static func + (time: CaptureTime, offset: Duration) -> CaptureTime {
        let ns = offset.signedNanoseconds
        return CaptureTime(monotonic: ns >= 0 ? time.monotonic + offset : time.monotonic - (.zero - offset),
                           unixNanoseconds: UInt64(bitPattern: Int64(bitPattern: time.unixNanoseconds) &+ ns))
    }

    /// The same instant moved back by `offset` on both clocks.
    public static func - (time: CaptureTime, offset: Duration) -> CaptureTime { time + (.zero - offset) }
}

/// A fixed set of pictures (I420, at the size they are encoded at), handed
/// out as `FrameLease`s; a slot comes back when its lease ends. The pool
/// never grows; a new size is a new pool.
public final class FramePool: Sendable {
    public let width: Int
    public let height: Int
    private let buffers: [HeapBuffer]
    private let free: Locked<[Int]>
    /// The slot holding the newest picture written, if any (its contents
    /// stay valid until the slot is written again).
    private let newest = Locked<Int?>(nil)

    public init(width: Int, height: Int, slots: Int) {
        precondition(width > 0 && height > 0, "a picture needs a size")
        self.width = width
        self.height = height
        let size = I420Planes.packedBytes(width: width, height: height)
        buffers = (0..<max(1, slots)).map { _ in HeapBuffer(size: size) }
        free = Locked(Array(buffers.indices))
    }

    /// Bytes the pool's pictures take.
    public var bytes: Int { buffers.count * I420Planes.packedBytes(width: width, height: height) }
    public var slotCount: Int { buffers.count }
    public var available: Int { free.withLock { $0.count } }

    /// A free slot, the one holding the newest picture when it is free (so
    /// what did not change need not be written again), or with
    /// `besideNewest` another one when there is one (so the newest stays
    /// to be compared with); nil when every slot is leased.
    func acquire(besideNewest: Bool = false) -> Int? {
        let newest = newest.withLock { $0 }
        return free.withLock { slots in
            guard let newest, let index = slots.firstIndex(of: newest) else { return slots.popLast() }
            if besideNewest, let other = slots.lastIndex(where: { $0 != newest }) { return slots.remove(at: other) }
            return slots.remove(at: index)
        }
    }

    func release(_ slot: Int) { free.withLock { $0.append(slot) } }

    func planes(_ slot: Int) -> I420Planes {
        I420Planes(packedAt: buffers[slot].address.assumingMemoryBound(to: UInt8.self), width: width, height: height)
    }

    /// A lease on a free slot for its writer to fill, or nil (nothing free).
    /// `besideNewest`: a writer that will find what changed by comparing
    /// with the newest picture takes another slot when one is free.
    package func lease(time: CaptureTime, sequence: UInt64, sourceWidth: Int, sourceHeight: Int,
                       besideNewest: Bool = false) -> FrameLease? {
        guard let slot = acquire(besideNewest: besideNewest) else { return nil }
        return FrameLease(pool: self, slot: slot, time: time, sequence: sequence, sourceWidth: sourceWidth,
                          sourceHeight: sourceHeight)
    }

    /// Records that `slot` now holds the newest picture.
    func wrote(_ slot: Int) { newest.withLock { $0 = slot } }
    /// The slot with the newest picture, for a writer that copies what did not change.
    func newestSlot() -> Int? { newest.withLock { $0 } }

    /// The newest picture written, to carry into a pool of another size
    /// (valid while nobody writes its slot: a pool no longer leased from).
    package func newestPlanes() -> I420Planes? { newestSlot().map(planes) }
}

/// A captured picture in a pool slot. It cannot be copied, so nothing
/// downstream can keep a capture buffer: the slot goes back to the pool the
/// moment the lease is consumed or dropped (after encoding has taken it).
public struct FrameLease: ~Copyable, Sendable {
    private let pool: FramePool
    private let slot: Int
    public var width: Int { pool.width }
    public var height: Int { pool.height }
    /// The size of what was captured (the picture is scaled from it when smaller).
    public let sourceWidth: Int
    public let sourceHeight: Int
    public let time: CaptureTime
    /// Frame number from the capturer, counting dropped frames too.
    public let sequence: UInt64
    /// Pictures written before this one (by its writer, in any pool): the
    /// one before it is numbered one less.
    public package(set) var number: UInt64 = 0
    /// What changed since the picture numbered one less: the rest is the
    /// same, pixel for pixel. Nil: anything may have.
    public package(set) var changes: [Rectangle]?

    init(pool: FramePool, slot: Int, time: CaptureTime, sequence: UInt64, sourceWidth: Int, sourceHeight: Int) {
        self.pool = pool
        self.slot = slot
        self.time = time
        self.sequence = sequence
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
    }

    /// The picture's planes (valid while the lease lives).
    package var planes: I420Planes { pool.planes(slot) }

    /// The planes of the newest picture written before this one, when it is
    /// in another slot of the same pool: what did not change since can be
    /// copied from it. Nil when this slot holds it already, or there is none.
    package var previousPlanes: I420Planes? {
        guard let newest = pool.newestSlot(), newest != slot else { return nil }
        return pool.planes(newest)
    }

    /// Whether another slot holds the picture before this one.
    package var hasPrevious: Bool { previousPlanes != nil }

    /// Whether this slot holds the newest picture already (filled before,
    /// so only what changed needs writing).
    package var holdsNewest: Bool { pool.newestSlot() == slot }

    /// Marks this picture as written: the newest.
    package func written() { pool.wrote(slot) }

    /// The Y value at (x, y).
    public func luma(x: Int, y: Int) -> UInt8 { pool.planes(slot).y[y * pool.width + x] }

    /// The colour at (x, y) as R, G, B (BT.601, limited range, the way it
    /// was converted), for tests and probes: within a few steps of what was
    /// on screen where colours do not change between neighbouring pixels.
    public func pixel(x: Int, y: Int) -> (blue: UInt8, green: UInt8, red: UInt8) {
        let planes = pool.planes(slot)
        let luma = 1.164 * (Double(planes.y[y * planes.lumaStride + x]) - 16)
        let chroma = (y / 2) * planes.chromaStride + x / 2
        let (u, v) = (Double(planes.u[chroma]) - 128, Double(planes.v[chroma]) - 128)
        let clamp = { (value: Double) in UInt8(max(0, min(255, value.rounded()))) }
        return (clamp(luma + 2.018 * u), clamp(luma - 0.813 * v - 0.391 * u), clamp(luma + 1.596 * v))
    }

    deinit { pool.release(slot) }
}

/// Memory that never moves, for pictures and bands.
public final class HeapBuffer: @unchecked Sendable {
    // Safe: the address never changes; the bytes are guarded by whoever
    // holds the slot or band (a lease, the capturing thread).
    public let address: UnsafeMutableRawPointer
    public let size: Int
    public init(size: Int) {
        self.size = size
        address = UnsafeMutableRawPointer.allocate(byteCount: max(1, size), alignment: 64)
    }
    deinit { address.deallocate() }
}
