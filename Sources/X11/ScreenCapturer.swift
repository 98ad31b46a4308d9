internal import CXCB
import Synchronization
#if canImport(Glibc)
internal import Glibc
internal import ShareSync
#endif

/// When a frame was captured: a monotonic instant for pacing and RTP
/// timestamps, and the wall clock for the capture-time header extension.
public struct CaptureTime: Sendable, Equatable {
    public var monotonicNanoseconds: UInt64
    public var unixNanoseconds: UInt64

    public static func now() -> CaptureTime {
        var mono = timespec()
        var wall = timespec()
        clock_gettime(CLOCK_MONOTONIC, &mono)
        clock_gettime(CLOCK_REALTIME, &wall)
        return CaptureTime(monotonicNanoseconds: UInt64(mono.tv_sec) * 1_000_000_000 + UInt64(mono.tv_nsec),
                           unixNanoseconds: UInt64(wall.tv_sec) * 1_000_000_000 + UInt64(wall.tv_nsec))
    }
}

/// A fixed set of capture buffers (MIT-SHM segments when the server offers
/// them). Slots are handed out as `FrameLease`s and come back when a lease
/// ends; the pool never grows.
final class SlotPool: Sendable {
    struct Slot: @unchecked Sendable {
        // Safe: the memory is written by the capturing thread only while the
        // slot is leased to it, and read by the lease holder after that.
        let pixels: UnsafeMutableRawPointer
        let segment: xcb_shm_seg_t?
    }

    let slots: [Slot]
    private let free: Locked<[Int]>
    /// Keeps segments (or heap buffers) alive while any lease exists.
    private let owners: [any AnyObject & Sendable]

    init(slots: [Slot], owners: [any AnyObject & Sendable]) {
        self.slots = slots
        self.owners = owners
        free = Locked(Array(slots.indices))
    }

    func acquire() -> Int? { free.withLock { $0.popLast() } }
    func release(_ index: Int) { free.withLock { $0.append(index) } }
    var available: Int { free.withLock { $0.count } }
}

/// A captured screen image in a pool slot. It cannot be copied, so nothing
/// downstream can keep a capture buffer: the slot goes back to the pool the
/// moment the lease is consumed or dropped (after colour conversion).
public struct FrameLease: ~Copyable, Sendable {
    private let pool: SlotPool
    private let slot: Int
    public let width: Int
    public let height: Int
    /// Bytes per row.
    public let stride: Int
    public let time: CaptureTime
    /// Frame number from the capturer, counting dropped frames too.
    public let sequence: UInt64

    init(pool: SlotPool, slot: Int, width: Int, height: Int, stride: Int, time: CaptureTime, sequence: UInt64) {
        self.pool = pool
        self.slot = slot
        self.width = width
        self.height = height
        self.stride = stride
        self.time = time
        self.sequence = sequence
    }

    /// Lends the BGRX pixels (X11 ZPixmap, 32 bits per pixel) to `body`.
    public func withPixels<R>(_ body: (UnsafeRawPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawPointer(pool.slots[slot].pixels))
    }

    /// The B, G, R bytes at (x, y): for tests and probes.
    public func pixel(x: Int, y: Int) -> (blue: UInt8, green: UInt8, red: UInt8) {
        let p = pool.slots[slot].pixels.assumingMemoryBound(to: UInt8.self) + y * stride + x * 4
        return (p[0], p[1], p[2])
    }

    deinit { pool.release(slot) }
}

/// Captures the screen of an X display, or a part of it (a region, a
/// monitor, a window it follows as it moves), into a small fixed pool of
/// MIT-SHM slots (or heap slots through GetImage when the server has no
/// MIT-SHM, as over a network), with the mouse pointer drawn in when asked.
/// One capturing thread; leases may end on any.
public final class ScreenCapturer: @unchecked Sendable {
    // Safe: the connection, `sequence`, `area` and the window and cursor
    // state are used by the capturing thread only; the counters other
    // threads read are atomic; the pool is locked.
    /// The size of the pictures, which follows a resized window (read on
    /// the capturing thread once capture runs; each lease carries its own).
    public private(set) var width: Int
    public private(set) var height: Int
    /// What is captured, and where it is on the screen now (a followed
    /// window moves and resizes it).
    public let source: CaptureSource
    public private(set) var area: Rectangle
    /// Whether the mouse pointer is drawn into the pictures (XFixes).
    public let drawsCursor: Bool
    /// The followed window is not shown (unmapped, minimised): nothing is grabbed.
    public private(set) var windowHidden = false
    private let followedWindow: xcb_window_t?
    private let screenSize: (width: Int, height: Int)
    public let usesSharedMemory: Bool
    private let connection: X11Connection
    private var pool: SlotPool
    private let slotsWanted: Int
    private var sequence: UInt64 = 0
    /// Captures refused because every slot was leased out, and captures
    /// made (read from any thread: atomic).
    public var droppedForPool: Int { dropped.load(ordering: .relaxed) }
    public var captured: Int { grabbed.load(ordering: .relaxed) }
    private let dropped = Atomic<Int>(0)
    private let grabbed = Atomic<Int>(0)

    public static let defaultSlots = 3

    public init(display: String? = nil, slots: Int = ScreenCapturer.defaultSlots, source: CaptureSource = .screen,
                drawsCursor: Bool = false) throws(X11Error) {
        let connection = try X11Connection(display: display)
        guard connection.bitsPerPixel == 32 else {
            throw X11Error("the screen's depth \(connection.screen.root_depth) is not stored in 32 bits per pixel")
        }
        let (area, window) = try Self.resolve(source, on: connection)
        let (width, height) = (area.width, area.height)
        let shm = connection.hasSharedMemory
        let pool = try Self.makePool(connection: connection, width: width, height: height, slots: slots, sharedMemory: shm)
        self.connection = connection
        self.width = width
        self.height = height
        self.source = source
        self.area = area
        self.followedWindow = window
        self.screenSize = (connection.width, connection.height)
        self.drawsCursor = drawsCursor && Self.enableCursor(on: connection)
        self.usesSharedMemory = shm
        self.pool = pool
        self.slotsWanted = slots
    }

    /// A pool of `slots` pictures of `width` x `height`.
    private static func makePool(connection: X11Connection, width: Int, height: Int, slots: Int,
                                 sharedMemory: Bool) throws(X11Error) -> SlotPool {
        let size = width * height * 4
        var poolSlots: [SlotPool.Slot] = []
        var owners: [any AnyObject & Sendable] = []
        for _ in 0..<max(1, slots) {
            if sharedMemory {
                let segment = try SharedMemorySegment(connection: connection, size: size)
                poolSlots.append(.init(pixels: segment.address, segment: segment.segment))
                owners.append(SendableBox(segment))
            } else {
                let buffer = HeapBuffer(size: size)
                poolSlots.append(.init(pixels: buffer.address, segment: nil))
                owners.append(buffer)
            }
        }
        return SlotPool(slots: poolSlots, owners: owners + [SendableBox(connection)])
    }

    /// New pictures of another size: a new pool (leases of the old one end
    /// as they would; its memory goes with the last of them).
    private func resize(to newArea: Rectangle) throws(X11Error) {
        pool = try Self.makePool(connection: connection, width: newArea.width, height: newArea.height, slots: slotsWanted,
                                 sharedMemory: usesSharedMemory)
        width = newArea.width
        height = newArea.height
        area = newArea
        resizes += 1
    }

    /// Times the picture size changed (a followed window was resized).
    public private(set) var resizes = 0

    /// XDamage on the root window, once `trackChanges()` has turned it on.
    private var damage: xcb_damage_damage_t?
    private var damageEvent: UInt8 = 0
    private var changedSinceGrab = true
    /// Where the pointer was when it was last drawn.
    private var drawnPointer = (x: Int.min, y: Int.min)

    /// Starts tracking whether anything on screen changed between grabs
    /// (XDamage, reporting only "no longer empty": one event per change
    /// after each grab, not one per drawing request). Returns false when the
    /// server has no DAMAGE extension: then every grab counts as a change.
    @discardableResult
    public func trackChanges() -> Bool {
        if damage != nil { return true }
        let c = connection.connection
        guard let ext = share_xcb_damage_extension(c), ext.pointee.present != 0 else { return false }
        // DAMAGE must be told which version the client speaks before use.
        free(xcb_damage_query_version_reply(c, xcb_damage_query_version(c, 1, 1), nil))
        let id = xcb_generate_id(c)
        let level = UInt8(XCB_DAMAGE_REPORT_LEVEL_NON_EMPTY.rawValue)
        guard (try? connection.check(xcb_damage_create_checked(c, id, connection.root, level), "XDamage")) != nil else {
            return false
        }
        damage = id
        damageEvent = ext.pointee.first_event + UInt8(XCB_DAMAGE_NOTIFY)
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
        while let event = xcb_poll_for_event(c) {
            let type = event.pointee.response_type & 0x7F
            if type == damageEvent || (drawsCursor && type == cursorEvent) { changedSinceGrab = true }
            free(event)
        }
        if !changedSinceGrab && drawsCursor && pointerMoved() { changedSinceGrab = true }
        return changedSinceGrab
    }

    /// Waits until the screen changes (a damage event) or `timeoutNanoseconds`
    /// pass, on the X connection's socket; true when it changed. Without
    /// change tracking (or on a broken connection, so the next grab reports
    /// the error) it returns true at once.
    public func waitForChange(timeoutNanoseconds: UInt64) -> Bool {
        if screenChanged { return true }
        let c = connection.connection
        var descriptor = pollfd(fd: xcb_get_file_descriptor(c), events: Int16(POLLIN), revents: 0)
        // poll(2) counts in milliseconds: round up, so a short wait still waits.
        _ = poll(&descriptor, 1, Int32(min((timeoutNanoseconds + 999_999) / 1_000_000, 60_000)))
        return screenChanged || xcb_connection_has_error(c) != 0
    }

    /// Slots not leased out right now.
    public var freeSlots: Int { pool.available }
    public var slotCount: Int { pool.slots.count }

    /// Grabs the screen into a free slot. Returns nil, counting a drop, when
    /// every slot is still leased: capture never waits for the consumer.
    public func capture() throws(X11Error) -> FrameLease? {
        sequence += 1
        if let followedWindow {
            switch connection.windowState(followedWindow) {
            case .gone:
                throw X11Error("the window 0x\(String(followedWindow, radix: 16)) was closed")
            case .hidden:
                windowHidden = true
                return nil
            case .visible(let bounds):
                windowHidden = false
                // The picture follows the window: where it is, and its size
                // (up to the screen's; partly off screen, the same size from
                // the screen's edge, so dragging it makes no new encoder).
                let visible = bounds.clamped(width: screenSize.width, height: screenSize.height)
                if visible.width != width || visible.height != height {
                    try resize(to: visible)
                } else {
                    area = visible
                }
            }
        }
        guard let slot = pool.acquire() else {
            dropped.add(1, ordering: .relaxed)
            return nil
        }
        if let damage {
            // Empty the damage region first: whatever is drawn from here on,
            // during the grab included, marks the screen changed again.
            xcb_damage_subtract(connection.connection, damage, xcb_xfixes_region_t(XCB_NONE), xcb_xfixes_region_t(XCB_NONE))
            changedSinceGrab = false
        }
        let time = CaptureTime.now()
        do {
            try grab(into: pool.slots[slot])
            if drawsCursor { drawCursor(into: pool.slots[slot].pixels) }
        } catch {
            pool.release(slot)
            throw error
        }
        grabbed.add(1, ordering: .relaxed)
        return FrameLease(pool: pool, slot: slot, width: width, height: height, stride: width * 4, time: time,
                          sequence: sequence)
    }

    private func grab(into slot: SlotPool.Slot) throws(X11Error) {
        let c = connection.connection
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        let format = UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue)
        if let segment = slot.segment {
            let cookie = xcb_shm_get_image_unchecked(c, connection.root, Int16(area.x), Int16(area.y), UInt16(width),
                                                     UInt16(height), ~0, format, segment, 0)
            let reply = xcb_shm_get_image_reply(c, cookie, &error)
            free(reply)
        } else {
            let cookie = xcb_get_image_unchecked(c, format, connection.root, Int16(area.x), Int16(area.y), UInt16(width),
                                                 UInt16(height), ~0)
            if let reply = xcb_get_image_reply(c, cookie, &error) {
                let length = Int(xcb_get_image_data_length(reply))
                if let data = xcb_get_image_data(reply) {
                    slot.pixels.copyMemory(from: data, byteCount: min(length, width * height * 4))
                }
                free(reply)
            }
        }
        if let error {
            let code = error.pointee.error_code
            free(error)
            throw X11Error("GetImage of the root window failed", code: code)
        }
        if xcb_connection_has_error(c) != 0 { throw X11Error("the X connection was lost") }
    }
}

// MARK: what to capture, and the pointer

extension ScreenCapturer {
    /// The monitors and named top-level windows of a display (`share send --list`).
    public static func inventory(display: String? = nil) throws(X11Error) -> (monitors: [Monitor], windows: [TopLevelWindow]) {
        let connection = try X11Connection(display: display)
        return (connection.monitors(), connection.topLevelWindows())
    }

    /// The rectangle a source names now, and the window to follow.
    static func resolve(_ source: CaptureSource, on connection: X11Connection) throws(X11Error) -> (Rectangle, xcb_window_t?) {
        let (screenWidth, screenHeight) = (connection.width, connection.height)
        switch source {
        case .screen:
            return (Rectangle(x: 0, y: 0, width: screenWidth, height: screenHeight), nil)
        case .region(let region):
            guard region.fits(width: screenWidth, height: screenHeight) else {
                throw X11Error("region \(region) is not within the \(screenWidth)x\(screenHeight) screen")
            }
            return (region, nil)
        case .monitor(let name):
            let monitors = connection.monitors()
            let list = monitors.enumerated().map { "\($0.offset): \($0.element.name) \($0.element.bounds)" }.joined(separator: ", ")
            guard let monitor = monitors.first(where: { $0.name == name }) ?? Int(name).flatMap({ monitors.indices.contains($0) ? monitors[$0] : nil })
            else { throw X11Error("no monitor \(name) (the display has \(list.isEmpty ? "none" : list))") }
            return (monitor.bounds.clamped(width: screenWidth, height: screenHeight), nil)
        case .window(let name):
            let window = try findWindow(name, on: connection)
            switch connection.windowState(window) {
            case .visible(let bounds):
                return (bounds.clamped(width: screenWidth, height: screenHeight), window)
            case .hidden:
                throw X11Error("window \(name) is not shown (unmapped or minimised)")
            case .gone:
                throw X11Error("no window \(name)")
            }
        }
    }

    private static func findWindow(_ name: String, on connection: X11Connection) throws(X11Error) -> xcb_window_t {
        let number = name.lowercased().hasPrefix("0x") ? UInt32(name.dropFirst(2), radix: 16) : UInt32(name)
        if let number { return number }
        let windows = connection.topLevelWindows()
        if let exact = windows.first(where: { $0.name == name }) { return exact.id }
        let matches = windows.filter { $0.name.lowercased().contains(name.lowercased()) }
        if matches.count == 1 { return matches[0].id }
        let shown = (matches.isEmpty ? windows : matches).prefix(8)
            .map { "0x\(String($0.id, radix: 16)) \"\($0.name)\"" }.joined(separator: ", ")
        throw X11Error(matches.isEmpty ? "no window named \(name) (\(shown.isEmpty ? "none has a name" : shown))"
                       : "\(matches.count) windows match \(name): \(shown); give its id")
    }

    /// Turns on XFixes (cursor images, and events when the cursor's shape
    /// changes); false when the server has no XFixes.
    static func enableCursor(on connection: X11Connection) -> Bool {
        let c = connection.connection
        guard let ext = share_xcb_xfixes_extension(c), ext.pointee.present != 0 else { return false }
        free(xcb_xfixes_query_version_reply(c, xcb_xfixes_query_version(c, 4, 0), nil))
        xcb_xfixes_select_cursor_input(c, connection.root, UInt32(XCB_XFIXES_CURSOR_NOTIFY_MASK_DISPLAY_CURSOR.rawValue))
        connection.flush()
        return true
    }

    private var cursorEvent: UInt8 {
        guard let ext = share_xcb_xfixes_extension(connection.connection) else { return 0 }
        return ext.pointee.first_event + UInt8(XCB_XFIXES_CURSOR_NOTIFY)
    }

    /// Whether the pointer moved, since it was last drawn, in a way that
    /// shows in the picture (it was or is over the captured area).
    private func pointerMoved() -> Bool {
        let c = connection.connection
        guard let reply = xcb_query_pointer_reply(c, xcb_query_pointer(c, connection.root), nil) else { return false }
        let position = (x: Int(reply.pointee.root_x), y: Int(reply.pointee.root_y))
        free(reply)
        guard position != drawnPointer else { return false }
        // A cursor is at most 64 pixels from its hot spot either way.
        let near = { (p: (x: Int, y: Int)) in
            p.x > self.area.x - 64 && p.x < self.area.x + self.width + 64 && p.y > self.area.y - 64 && p.y < self.area.y + self.height + 64
        }
        return near(position) || near(drawnPointer)
    }

    /// Blends the cursor image (XFixes, premultiplied ARGB) onto the BGRX picture.
    private func drawCursor(into pixels: UnsafeMutableRawPointer) {
        let c = connection.connection
        guard let reply = xcb_xfixes_get_cursor_image_reply(c, xcb_xfixes_get_cursor_image(c), nil) else { return }
        defer { free(reply) }
        let info = reply.pointee
        drawnPointer = (Int(info.x), Int(info.y))
        guard let image = xcb_xfixes_get_cursor_image_cursor_image(reply) else { return }
        let (cursorWidth, cursorHeight) = (Int(info.width), Int(info.height))
        let left = Int(info.x) - Int(info.xhot) - area.x
        let top = Int(info.y) - Int(info.yhot) - area.y
        let rows = max(0, -top)..<max(0, min(cursorHeight, height - top))
        let columns = max(0, -left)..<max(0, min(cursorWidth, width - left))
        let bytes = pixels.assumingMemoryBound(to: UInt8.self)
        for row in rows {
            let line = bytes + (top + row) * width * 4
            for column in columns {
                let argb = image[row * cursorWidth + column]
                let alpha = argb >> 24
                guard alpha > 0 else { continue }
                let pixel = line + (left + column) * 4
                let keep = 255 - alpha
                pixel[0] = UInt8(min(255, (argb & 0xFF) + (UInt32(pixel[0]) * keep + 127) / 255))
                pixel[1] = UInt8(min(255, (argb >> 8 & 0xFF) + (UInt32(pixel[1]) * keep + 127) / 255))
                pixel[2] = UInt8(min(255, (argb >> 16 & 0xFF) + (UInt32(pixel[2]) * keep + 127) / 255))
            }
        }
    }
}

/// Heap memory for capture slots when MIT-SHM is not available.
final class HeapBuffer: @unchecked Sendable {
    // Safe: the address never changes; the bytes are guarded as a slot's are.
    let address: UnsafeMutableRawPointer
    init(size: Int) { address = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64) }
    deinit { address.deallocate() }
}

/// Carries an owner whose only use after creation is its deinit.
final class SendableBox<T: AnyObject>: @unchecked Sendable {
    // Safe: nothing calls into `value` after it is boxed; it is only released.
    let value: T
    init(_ value: T) { self.value = value }
}
