internal import CPipeWire
internal import ShareBase
public import ShareCapture
internal import ShareColor
public import ShareFrames
internal import ShareSync
import Synchronization

/// Captures a Wayland desktop through a PipeWire screen cast (GNOME's own
/// API or the desktop portal) into the same small pool of I420 pictures as
/// X11 capture. PipeWire's thread keeps only the newest buffer and hands
/// every older one back at once; `capture` converts the newest band by band
/// straight from PipeWire's shared memory into a lease and hands it back
/// before it returns. Damage metadata says which bands changed; without
/// it, comparing with the picture before does. A still desktop sends no
/// buffers at all, so it costs nothing until the loop's refresh copies the
/// newest picture. The pointer comes as metadata, apart from the pictures.
public final class PipeWireCapturer: ScreenSource, @unchecked Sendable {
    // Safe: the pool, plan, sizes and pointer state are the capturing
    // thread's; the stream is used under its own lock; counters are atomic.
    /// Which desktop API grants the cast.
    public enum Backend: String, Sendable, CaseIterable {
        /// The xdg-desktop-portal ScreenCast portal (any desktop with a backend).
        case portal
        /// GNOME's org.gnome.Mutter.ScreenCast (no dialog).
        case gnome
    }

    public private(set) var width: Int
    public private(set) var height: Int
    /// What is cast, in words, for the person sharing ("monitor Meta-0").
    public let summary: String
    public let backend: Backend
    /// Times what is cast changed size.
    public internal(set) var resizes = 0
    public var wakeDescriptor: Int32 = -1

    /// The cast and its stream; GNOME's are opened again when it ends the
    /// cast because the monitors changed (`followDisplayChange`).
    var session: any ScreenCastSession
    var stream: PipeWireStream
    let cursor: MutterScreenCast.CursorMode
    let source: CaptureSource
    let maxFPS: Int
    /// Casts opened again after the desktop reconfigured its monitors.
    public internal(set) var reopened = 0
    /// Pictures delivered by the casts before this one.
    var deliveredBefore = 0
    private var pool: FramePool?
    /// The pool before a change of picture size, while its newest picture
    /// is the only one there is (a still screen sends nothing new to
    /// convert at the new size: that picture is scaled instead).
    private var carried: FramePool?
    private let rescaler = PixelConverter()
    private var changeFinder = ChangeFinder()
    private var plan: BandPlan?
    /// Room for one band in BGRX when the stream's layout is another, and
    /// for a band's scaled rows.
    private var convertedBand: HeapBuffer?
    private var scaledBand: HeapBuffer?
    private let slotsWanted: Int
    let bandBytes: Int
    private var sequence: UInt64 = 0
    private var pictures: UInt64 = 0
    /// Whether the pool's newest picture is the stream's picture before the next one.
    var pictureKept = false
    /// Whether any picture came yet.
    var hasPicture = false
    var pointerApart: Bool
    var pointerShape: [UInt32] = []
    var pointerSerial: UInt32 = 0
    var pointerChangesSeen: UInt64 = 0
    var pointerMovedAt = MonotonicTime.zero
    /// Arrivals seen at the last capture (`changesSeen` counts from them).
    var arrivalsTaken: UInt64 = 0
    var ended: ScreenCastError?

    private let dropped = Atomic<Int>(0), grabbed = Atomic<Int>(0), grabbedBands = Atomic<Int>(0)
    private let keptBands = Atomic<Int>(0), held = Atomic<Int>(0)
    public var droppedForPool: Int { dropped.load(ordering: .relaxed) }
    public var captured: Int { grabbed.load(ordering: .relaxed) }
    public var bandsGrabbed: Int { grabbedBands.load(ordering: .relaxed) }
    public var bandsKept: Int { keptBands.load(ordering: .relaxed) }
    public var heldBytes: Int { held.load(ordering: .relaxed) }
    public var picturesDelivered: Int? { delivered.load(ordering: .relaxed) }
    let delivered = Atomic<Int>(0)

    public static let defaultSlots = 3
    public static let defaultBandBytes = 1 << 20
    /// How long the first picture's format may take to be agreed.
    static let negotiation = Duration.seconds(10)

    /// Asks the desktop for a cast of `source` through `backend` and waits
    /// until PipeWire agreed a format. The pointer comes as metadata with
    /// `tracksPointer`, drawn in by the compositor with `drawsCursor` alone,
    /// and not at all otherwise. Through the portal, the desktop's
    /// remembered choice is used unless `askAgain`.
    public init(backend: Backend, source: CaptureSource = .screen, slots: Int = PipeWireCapturer.defaultSlots,
                drawsCursor: Bool = false, tracksPointer: Bool = false, maxFPS: Int = 60, askAgain: Bool = false,
                bandBytes: Int = PipeWireCapturer.defaultBandBytes) throws(ScreenCastError) {
        let cursor: MutterScreenCast.CursorMode = tracksPointer ? .metadata : drawsCursor ? .embedded : .hidden
        (session, stream) = try Self.open(backend, source: source, cursor: cursor, maxFPS: maxFPS, askAgain: askAgain)
        self.backend = backend
        (self.cursor, self.source, self.maxFPS) = (cursor, source, maxFPS)
        summary = session.summary
        slotsWanted = max(1, slots)
        self.bandBytes = bandBytes
        pointerApart = tracksPointer
        (width, height) = (0, 0)
        let format = try awaitFormat()
        (width, height) = (format.width, format.height)
    }

    deinit { session.stop() }

    /// A cast of `source` and its PipeWire stream.
    static func open(_ backend: Backend, source: CaptureSource, cursor: MutterScreenCast.CursorMode, maxFPS: Int,
                     askAgain: Bool) throws(ScreenCastError) -> (any ScreenCastSession, PipeWireStream) {
        let session: any ScreenCastSession
        switch backend {
        case .gnome: session = try MutterScreenCast(source: source, cursor: cursor)
        case .portal: session = try ScreenCastPortal(source: source, cursor: cursor, remembered: !askAgain)
        }
        do {
            return (session, try PipeWireStream(node: session.node, descriptor: session.pipeWireDescriptor, maxFPS: maxFPS))
        } catch {
            session.stop()
            throw error
        }
    }

    /// Waits for the stream's format (and its buffers), or says why it never came.
    func awaitFormat() throws(ScreenCastError) -> (width: Int, height: Int) {
        let deadline = SystemClock.now() + Self.negotiation
        while true {
            let (state, format) = stream.locked { ($0.state, $0.format) }
            if case .failed(let why) = state { throw .failed("PipeWire: \(why)") }
            if state == .ended { throw .ended("the screen cast ended before its first picture") }
            if let format, state == .streaming || state == .paused { return (format.width, format.height) }
            let now = SystemClock.now()
            guard now < deadline else { throw .failed("PipeWire agreed no video format with the screen cast within 10 s") }
            Poll.wait(on: [stream.wakeupDescriptor], timeout: min(.milliseconds(100), deadline.since(now)))
            stream.clearWakeup()
        }
    }

    public var pause: CapturePause? {
        stream.locked { $0.state } == .paused
            ? CapturePause(reason: "the desktop paused the screen cast", resumed: "the desktop resumed the screen cast") : nil
    }

    /// Converts the newest picture into a free picture of the pool (the one
    /// before, again, when nothing new came); nil when the pool is all
    /// leased or no picture came yet. Throws when the cast ended.
    public func capture(size: PictureSizing?) throws -> FrameLease? {
        sequence += 1
        try checkEnded()
        return try stream.locked { locked throws(ScreenCastError) -> FrameLease? in
            if case .failed(let why) = locked.state { throw ScreenCastError.failed("PipeWire: \(why)") }
            let frame = locked.take()
            defer { if frame != nil { locked.giveBack() } }
            arrivalsTaken = locked.counts.arrived
            delivered.store(deliveredBefore + Int(arrivalsTaken), ordering: .relaxed)
            if let frame, Int(frame.width) != width || Int(frame.height) != height {
                resizes += 1
                (width, height) = (Int(frame.width), Int(frame.height))
                pictureKept = false
            }
            guard frame != nil || hasPicture else { return nil }
            let wanted = size?(width, height) ?? (width: width, height: height)
            preparePool(width: max(2, wanted.width), height: max(2, wanted.height), mapped: locked.bufferBytes)
            guard let pool, let plan else { return nil }
            let time = frame.map { Self.captureTime(arrived: $0.arrived_ns) } ?? CaptureTime.now()
            // A picture whose damage is not known is compared with the one before, which must stay.
            let comparing = frame.map { !damageKnown($0) } ?? false
            guard var lease = pool.lease(time: time, sequence: sequence, sourceWidth: width, sourceHeight: height,
                                         besideNewest: comparing) else {
                dropped.add(1, ordering: .relaxed)
                // The damage went with the frame: the next picture is converted whole.
                if frame != nil { pictureKept = false }
                return nil
            }
            let changes: [Rectangle]?
            if let frame {
                changes = convert(frame, into: lease, plan: plan)
                hasPicture = true
            } else if lease.holdsNewest || lease.hasPrevious {
                // Nothing came since: the newest picture again.
                if let previous = lease.previousPlanes { lease.planes.copyRows(0..<plan.height, from: previous) }
                keptBands.add(plan.bands.count, ordering: .relaxed)
                changes = pictureKept ? [] : nil
            } else if let old = carried?.newestPlanes() {
                // A new picture size and nothing new from the desktop: the last picture, scaled.
                rescaler.convert(.i420(y: old.y, yStride: old.lumaStride, u: old.u, uStride: old.chromaStride, v: old.v,
                                       vStride: old.chromaStride), width: old.width, height: old.height, into: lease.planes)
                changes = nil
            } else {
                return nil
            }
            carried = nil
            pictures += 1
            lease.number = pictures
            lease.changes = changes
            lease.written()
            grabbed.add(1, ordering: .relaxed)
            return lease
        }
    }

    /// The monotonic and wall instants of a picture's arrival (PipeWire's
    /// thread read the monotonic clock, in nanoseconds, as it came).
    private static func captureTime(arrived: UInt64) -> CaptureTime {
        let now = CaptureTime.now()
        return now - now.monotonic.since(MonotonicTime(nanoseconds: arrived))
    }

    /// Converts the bands of `frame` that changed since the picture before
    /// (all of them when that is not known) into the lease, copying the
    /// others from the picture before; returns what changed, in the
    /// picture's pixels (nil: everything may have).
    private func convert(_ frame: share_pw_frame, into lease: borrowing FrameLease, plan: BandPlan) -> [Rectangle]? {
        let changed = damageKnown(frame) ? Self.damage(frame, width: width, height: height) : nil
        pictureKept = true
        let planes = lease.planes
        var bands = Array(plan.bands.indices)
        if let changed {
            bands = plan.bands(touching: changed.map { $0.y..<($0.y + $0.height) })
            if !lease.holdsNewest, let previous = lease.previousPlanes {
                for index in Set(plan.bands.indices).subtracting(bands).sorted() { planes.copyRows(plan.bands[index].rows, from: previous) }
            }
            keptBands.add(plan.bands.count - bands.count, ordering: .relaxed)
        }
        let layout = Self.layout(frame.layout)
        let stride = Int(frame.stride)
        for index in bands {
            let band = plan.bands[index]
            var rows = UnsafeRawPointer(frame.pixels!) + band.sourceRows.lowerBound * stride
            var rowStride = stride
            if layout != .bgrx {
                let bytes = plan.maxSourceRows * width * 4
                if (convertedBand?.size ?? 0) < bytes { convertedBand = HeapBuffer(size: bytes) }
                guard let convertedBand else { continue }
                // PipeWire's memory is only read: the band is rewritten in a copy.
                rowStride = width * 4
                for r in 0..<band.sourceRows.count {
                    (convertedBand.address + r * rowStride).copyMemory(from: rows + r * stride, byteCount: rowStride)
                }
                ColorConversion.toBGRX(convertedBand.address, stride: rowStride, width: width, rows: band.sourceRows.count,
                                       from: layout)
                rows = UnsafeRawPointer(convertedBand.address)
            }
            ColorConversion.convertBand(rows, stride: rowStride, sourceWidth: width,
                                        sourceHeight: height, sourceRows: band.sourceRows, into: planes, rows: band.rows,
                                        scaled: scaledBand?.address)
        }
        grabbedBands.add(bands.count, ordering: .relaxed)
        if let changed { return changed.map(plan.pictureArea) }
        // No damage came with it (Mutter 43 sends none): what changed is
        // found against the picture before, so the encoder still skips
        // what did not.
        guard !lease.holdsNewest, let previous = lease.previousPlanes else { return nil }
        return changeFinder.changes(in: planes, since: previous)
    }

    /// Whether `frame`'s damage says all that changed since the pool's
    /// newest picture: it came with damage metadata, and the picture
    /// before it from the stream is that newest picture.
    private func damageKnown(_ frame: share_pw_frame) -> Bool { pictureKept && frame.damage_all == 0 }

    private static func damage(_ frame: share_pw_frame, width: Int, height: Int) -> [Rectangle] {
        withUnsafeBytes(of: frame.damage) { raw in
            let rects = raw.bindMemory(to: share_pw_rect.self)
            return (0..<Int(frame.damage_count)).map { i in
                Rectangle(x: Int(rects[i].x), y: Int(rects[i].y), width: Int(rects[i].width), height: Int(rects[i].height))
                    .clamped(width: width, height: height)
            }.filter { $0.width > 0 && $0.height > 0 }
        }
    }

    static func layout(_ code: Int32) -> PixelLayout {
        switch code {
        case Int32(SHARE_PW_LAYOUT_RGBX.rawValue): .rgbx
        case Int32(SHARE_PW_LAYOUT_BGR10.rawValue): .bgr10
        case Int32(SHARE_PW_LAYOUT_RGB10.rawValue): .rgb10
        default: .bgrx
        }
    }

    /// The pool and band plan for pictures of this size from what is cast
    /// now; `mapped`: PipeWire's buffers, which count as held (each is read whole).
    private func preparePool(width pictureWidth: Int, height pictureHeight: Int, mapped: Int) {
        if pool?.width != pictureWidth || pool?.height != pictureHeight {
            if pool?.newestPlanes() != nil { carried = pool }
            pool = FramePool(width: pictureWidth, height: pictureHeight, slots: slotsWanted)
        }
        if plan?.sourceWidth != width || plan?.sourceHeight != height || plan?.width != pictureWidth
            || plan?.height != pictureHeight {
            let newPlan = BandPlan(sourceWidth: width, sourceHeight: height, width: pictureWidth, height: pictureHeight,
                                   bandBytes: bandBytes)
            let scaledRows = newPlan.bands.map(\.rows.count).max() ?? 0
            scaledBand = newPlan.scales ? HeapBuffer(size: scaledRows * pictureWidth * 4) : nil
            convertedBand = nil
            plan = newPlan
            pictureKept = false
        }
        held.store((pool?.bytes ?? 0) + (scaledBand?.size ?? 0) + (convertedBand?.size ?? 0) + mapped, ordering: .relaxed)
    }
}
