internal import CXCB
public import ShareCapture
public import ShareFrames
public import ShareColor
public import ShareX11
import Synchronization
#if canImport(Glibc)
internal import Glibc
internal import ShareSync
#endif

/// Captures the screen of an X display, or a part of it (a region, a
/// monitor, a window it follows as it moves), into a small fixed pool of
/// I420 pictures at the size they are encoded at, with the mouse pointer
/// drawn in when asked. The screen is grabbed in horizontal bands through
/// two small MIT-SHM segments (heap buffers filled by GetImage when the
/// server has no MIT-SHM, as over a network), each band converted, and
/// scaled when the picture is smaller, straight into its picture: memory
/// grows with the encoded picture, not with the screen. With change
/// tracking on, only the bands that changed since the last picture are
/// grabbed again. One capturing thread; leases may end on any.
public final class ScreenCapturer: ScreenSource, @unchecked Sendable {
    // Safe: the connection, `sequence`, `area`, the bands and the window and
    // cursor state are used by the capturing thread only; the counters
    // other threads read are atomic; the pool is locked.
    /// The size of what is captured, which follows a resized window (read
    /// on the capturing thread once capture runs; each lease carries its own).
    public private(set) var width: Int
    public private(set) var height: Int
    /// What is captured, and where it is on the screen now (a followed
    /// window moves and resizes it).
    public let source: CaptureSource
    public private(set) var area: Rectangle
    /// Whether the mouse pointer is drawn into the pictures (XFixes).
    public internal(set) var drawsCursor: Bool
    /// Whether the pointer is read apart from the pictures (`readPointer`),
    /// for a receiver that draws it itself; it is then never a change.
    public internal(set) var tracksPointer: Bool
    /// Whether the server tells the pointer's changes (XFixes): what
    /// `placePointer` needs.
    let followsCursor: Bool
    /// The pointer's shape changed since `readPointer` last gave it.
    var pointerShapeChanged = true
    /// The followed window is not shown (unmapped, minimised): nothing is grabbed.
    public var windowHidden: Bool { followedWindow?.hidden ?? false }
    public var pause: CapturePause? {
        windowHidden ? CapturePause(reason: "the shared window is hidden", resumed: "the shared window is shown again") : nil
    }
    private var followedWindow: FollowedWindow?
    /// The screen's size, which RandR may change (a laptop docked, `xrandr -s`).
    private var screenSize: (width: Int, height: Int)
    /// RandR's screen-change event code (nil: the server has no RandR).
    private let screenChangeEvent: UInt8?
    private var screenResized = false
    public var usesSharedMemory: Bool { grabber.sharedMemory }
    let connection: X11Connection
    /// How the display stores a pixel; bands of another layout than BGRX
    /// are rewritten to it as they come in (a 30-bit display).
    public let layout: PixelLayout
    private let grabber: BandGrabber
    private var pool: FramePool?
    private var plan: BandPlan?
    /// Room for one band's scaled rows (when the pictures are scaled).
    private var scaledBand: HeapBuffer?
    private let slotsWanted: Int
    /// Bytes of captured rows a band takes at most.
    public let bandBytes: Int
    private var sequence: UInt64 = 0
    /// Captures refused because every slot was leased out, and captures
    /// made (read from any thread: atomic).
    public var droppedForPool: Int { dropped.load(ordering: .relaxed) }
    public var captured: Int { grabbed.load(ordering: .relaxed) }
    private let dropped = Atomic<Int>(0)
    private let grabbed = Atomic<Int>(0)
    /// Bands grabbed, and bands copied from the picture before because
    /// nothing in them changed (read from any thread: atomic).
    public var bandsGrabbed: Int { grabbedBands.load(ordering: .relaxed) }
    public var bandsKept: Int { keptBands.load(ordering: .relaxed) }
    private let grabbedBands = Atomic<Int>(0)
    private let keptBands = Atomic<Int>(0)
    /// Bytes held for capture now: the pictures and the band buffers
    /// (read from any thread: atomic).
    public var heldBytes: Int { held.load(ordering: .relaxed) }
    /// X11 capture grabs each picture itself.
    public var picturesDelivered: Int? { nil }
    private let held = Atomic<Int>(0)
    /// Times what is captured changed size (a followed window was resized,
    /// the screen changed size).
    public private(set) var resizes = 0
    /// What was drawn since the last grab, once `trackChanges()` has
    /// turned it on.
    var damage: ScreenDamage?
    var changedSinceGrab = true
    /// Damage events read: each the first change drawn after a grab or a
    /// `watchForNextChange`.
    public internal(set) var changesSeen = 0
    /// Where the pointer was drawn in the last picture: what to grab again
    /// when it moves.
    var drawn = DrawnPointer()
    /// Where the pointer is and when it moved (XInput 2's raw events wake a
    /// wait when a resting one moves).
    let pointer: PointerWatch
    /// A descriptor (`Wakeup`) that ends the waits early when signalled (another
    /// thread's news for the capturing one: a keyframe asked for, a pause,
    /// the end); -1: none.
    public var wakeDescriptor: Int32 = -1
    /// The serial of the pointer's shape last read.
    var pointerSerial: UInt32 = 0
    /// Pictures written (numbering leases, so the encoder knows whether it
    /// saw the one before).
    private var pictures: UInt64 = 0
    /// Whether the pool's newest picture shows the captured area as it was at the last grab.
    private var pictureKept = false

    public static let defaultSlots = 3
    /// A band of captured rows takes about 1 MiB: it stays in the cache
    /// between being grabbed and converted, and two of them are all the
    /// shared memory capture needs, whatever the screen's size.
    public static let defaultBandBytes = 1 << 20

    public init(display: String? = nil, slots: Int = ScreenCapturer.defaultSlots, source: CaptureSource = .screen,
                drawsCursor: Bool = false, tracksPointer: Bool = false,
                bandBytes: Int = ScreenCapturer.defaultBandBytes) throws(X11Error) {
        let connection = try X11Connection(display: display)
        layout = try connection.pixelLayout()
        let screenSize = connection.currentSize()
        let (area, window) = try Self.resolve(source, on: connection, screen: screenSize)
        self.connection = connection
        self.width = area.width
        self.height = area.height
        self.source = source
        self.area = area
        self.followedWindow = window.map(FollowedWindow.init)
        self.screenSize = screenSize
        self.screenChangeEvent = Self.watchScreenSize(on: connection)
        let cursorEvents = (drawsCursor || tracksPointer) && Self.enableCursor(on: connection)
        self.drawsCursor = drawsCursor && cursorEvents
        self.tracksPointer = tracksPointer && cursorEvents
        self.followsCursor = cursorEvents
        self.pointer = PointerWatch(connection: connection)
        self.grabber = BandGrabber(connection: connection, sharedMemory: connection.hasSharedMemory)
        self.slotsWanted = max(1, slots)
        self.bandBytes = max(1 << 16, bandBytes)
        // Shared memory is tried at once, so a server that refuses it is
        // found out here, not on the first grab.
        try grabber.reserve(bytes: min(self.bandBytes, area.width * area.height * 4) + 4 * area.width * 4)
        held.store(grabber.bytes, ordering: .relaxed)
    }

    /// The picture size follows what is captured (`width` x `height`) unless
    /// `size` says otherwise: smaller is scaled down.
    public typealias Sizing = PictureSizing

    /// Starts tracking whether anything on screen changed between grabs
    /// (XDamage, reporting only "no longer empty": one event per change
    /// after each grab, not one per drawing request). Returns false when the
    /// server has no DAMAGE extension: then every grab counts as a change.
    @discardableResult
    public func trackChanges() -> Bool {
        if damage != nil { return true }
        guard let tracking = ScreenDamage(connection: connection) else { return false }
        damage = tracking
        changedSinceGrab = true
        return true
    }

    /// Whether the screen may have changed since the last grab: true until
    /// `trackChanges()` succeeded, then true only after a damage event.
    public var screenChanged: Bool {
        guard damage != nil else { return true }
        let c = connection.connection
        // A broken connection: the next grab reports why.
        guard xcb_connection_has_error(c) == 0 else { return true }
        readEvents()
        if !changedSinceGrab && drawsCursor && pointerMoved() { changedSinceGrab = true }
        return changedSinceGrab
    }

    /// Takes the events that have come: damage, the cursor's shape, the
    /// screen's size, the pointer's device moving.
    func readEvents() {
        while let event = xcb_poll_for_event(connection.connection) {
            let type = event.pointee.response_type & 0x7F
            if pointer.take(event) {
                free(event)
                continue
            }
            if let damage, type == damage.eventCode {
                changedSinceGrab = true
                changesSeen += 1
            }
            if drawsCursor && type == cursorEvent { changedSinceGrab = true }
            if tracksPointer && type == cursorEvent { pointerShapeChanged = true }
            if let screenChangeEvent, type == screenChangeEvent {
                screenResized = true
                changedSinceGrab = true
            }
            free(event)
        }
    }

    /// The screen changed size: what is captured follows (the whole screen
    /// at its new size, a monitor where it is now, a region or window
    /// within the new screen). A monitor that is gone ends capture.
    private func followScreen() throws(X11Error) {
        let size = connection.currentSize()
        guard size != screenSize else { return }
        screenSize = size
        let newArea: Rectangle
        switch source {
        case .screen, .monitor:
            newArea = try Self.resolve(source, on: connection, screen: size).0
        case .region(let region):
            newArea = region.clamped(width: size.width, height: size.height)
        case .window:
            newArea = area.clamped(width: size.width, height: size.height)
        }
        if newArea.width != width || newArea.height != height { resizes += 1 }
        area = newArea
        (width, height) = (newArea.width, newArea.height)
        forgetPicture()
    }

    /// Slots not leased out right now.
    public var freeSlots: Int { pool?.available ?? slotsWanted }
    public var slotCount: Int { pool?.slotCount ?? slotsWanted }

    /// Grabs the screen into a free picture, at the size `size` gives for
    /// what is captured (by default the same size). Returns nil, counting a
    /// drop, when every picture is still leased: capture never waits for
    /// the consumer.
    public func capture(size: Sizing? = nil) throws(X11Error) -> FrameLease? {
        sequence += 1
        readEvents()
        if screenResized {
            screenResized = false
            try followScreen()
        }
        if var window = followedWindow {
            let bounds = try window.look(on: connection, screen: screenSize)
            followedWindow = window
            guard let bounds else { return nil }
            if bounds.width != width || bounds.height != height { resizes += 1 }
            if bounds != area { forgetPicture() }
            area = bounds
            (width, height) = (bounds.width, bounds.height)
        }
        let wanted = size?(width, height) ?? (width: width, height: height)
        let (pictureWidth, pictureHeight) = (max(2, wanted.width), max(2, wanted.height))
        try preparePool(width: pictureWidth, height: pictureHeight)
        guard let pool, let plan else { return nil }
        guard var lease = pool.lease(time: CaptureTime.now(), sequence: sequence, sourceWidth: width, sourceHeight: height)
        else {
            dropped.add(1, ordering: .relaxed)
            return nil
        }
        // The pointer's image is asked for with the damage: one round trip for both.
        let cursorAsked = drawsCursor ? CursorImage.ask(connection) : nil
        // Taken only with a picture to put them in: refused, they wait for the next.
        var changed = takeChanges()
        let cursor = cursorAsked.map { CursorImage(connection: connection, asked: $0) }
        // A pointer that moved or changed its image changes where it was
        // drawn and where it is now.
        let pointerParts = drawn.draw(bounds: cursor?.bounds, serial: cursor?.serial, position: cursor?.position, in: area)
        changed?.append(contentsOf: pointerParts)
        let full = !(lease.holdsNewest || lease.hasPrevious)
        do {
            try fill(lease, plan: plan, changedRows: full ? nil : changed?.map { $0.y..<($0.y + $0.height) }, cursor: cursor)
        } catch {
            // A picture half written may be the newest one: the next is grabbed whole.
            forgetPicture()
            throw error
        }
        pictures += 1
        lease.number = pictures
        lease.changes = full ? nil : changed.map { parts in parts.filter { $0.width > 0 && $0.height > 0 }.map(plan.pictureArea) }
        lease.written()
        grabbed.add(1, ordering: .relaxed)
        return lease
    }

    /// The pool and band plan for pictures of this size from what is captured now.
    private func preparePool(width pictureWidth: Int, height pictureHeight: Int) throws(X11Error) {
        if pool?.width != pictureWidth || pool?.height != pictureHeight {
            pool = FramePool(width: pictureWidth, height: pictureHeight, slots: slotsWanted)
        }
        if plan?.sourceWidth != width || plan?.sourceHeight != height || plan?.width != pictureWidth
            || plan?.height != pictureHeight {
            let newPlan = BandPlan(sourceWidth: width, sourceHeight: height, width: pictureWidth, height: pictureHeight,
                                   bandBytes: bandBytes)
            try grabber.reserve(bytes: newPlan.maxSourceRows * width * 4)
            let scaledRows = newPlan.bands.map(\.rows.count).max() ?? 0
            scaledBand = newPlan.scales ? HeapBuffer(size: scaledRows * pictureWidth * 4) : nil
            plan = newPlan
            forgetPicture()
        }
        held.store((pool?.bytes ?? 0) + grabber.bytes + (scaledBand?.size ?? 0), ordering: .relaxed)
    }

    /// The next picture is grabbed whole (what is captured moved, or changed size).
    private func forgetPicture() { pictureKept = false }

    /// The parts of what is captured that changed since the last grab
    /// (nil: everything, when changes are not tracked or nothing is to
    /// build on). Empties the damage: what is drawn from here on, during the
    /// grab included, counts for the next one.
    private func takeChanges() -> [Rectangle]? {
        guard let damage else { return nil }
        let changed = damage.take()
        changedSinceGrab = false
        guard let changed else { return nil }
        guard pictureKept else {
            pictureKept = true
            return nil
        }
        return changed.map { $0.part(within: area) }.filter { $0.width > 0 && $0.height > 0 }
    }

    /// Fills the leased picture: the bands with changed rows (all of them
    /// when `changedRows` is nil, as it is when there is no picture before
    /// to build on) grabbed and converted, the others copied from the
    /// picture before (or left as they are when this is its slot).
    private func fill(_ lease: borrowing FrameLease, plan: BandPlan, changedRows: [Range<Int>]?,
                      cursor: CursorImage?) throws(X11Error) {
        let planes = lease.planes
        var grabs = Array(plan.bands.indices)
        if let changedRows {
            grabs = plan.bands(touching: changedRows)
            if !lease.holdsNewest, let previous = lease.previousPlanes {
                let copy = Set(plan.bands.indices).subtracting(grabs)
                for index in copy.sorted() { planes.copyRows(plan.bands[index].rows, from: previous) }
            }
            keptBands.add(plan.bands.count - grabs.count, ordering: .relaxed)
        }
        guard let first = grabs.first else { return }
        let stride = width * 4
        grabber.request(0, area: area, firstRow: plan.bands[first].sourceRows.lowerBound,
                        rows: plan.bands[first].sourceRows.count)
        for (n, index) in grabs.enumerated() {
            if n + 1 < grabs.count {
                let next = plan.bands[grabs[n + 1]].sourceRows
                grabber.request((n + 1) % 2, area: area, firstRow: next.lowerBound, rows: next.count)
            }
            let band = plan.bands[index]
            let pixels = try grabber.receive(n % 2)
            ColorConversion.toBGRX(pixels, stride: stride, width: width, rows: band.sourceRows.count, from: layout)
            cursor?.draw(into: pixels, stride: stride, area: area, rows: band.sourceRows)
            ColorConversion.convertBand(pixels, stride: stride, sourceWidth: width, sourceHeight: height,
                                        sourceRows: band.sourceRows, into: planes, rows: band.rows,
                                        scaled: scaledBand?.address)
        }
        grabbedBands.add(grabs.count, ordering: .relaxed)
    }
}
