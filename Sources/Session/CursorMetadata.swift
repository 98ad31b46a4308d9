public import ShareWire
public import ShareBase

/// The mouse pointer's image: premultiplied ARGB pixels, row by row, and
/// its hot spot. `serial` names it (XFixes' cursor serial).
public struct CursorShape: Sendable, Equatable {
    public var serial: UInt32
    public var width: Int
    public var height: Int
    public var hotX: Int
    public var hotY: Int
    public var pixels: [UInt32]

    public init(serial: UInt32, width: Int, height: Int, hotX: Int, hotY: Int, pixels: [UInt32]) {
        self.serial = serial
        self.width = width
        self.height = height
        self.hotX = hotX
        self.hotY = hotY
        self.pixels = pixels
    }

    /// The shape as packets: one chunk per `CursorShapeChunk.pixelsPerChunk`
    /// pixels. Empty when the shape is too big to send (or has no pixels).
    public func chunks() -> [CursorShapeChunk] {
        let side = Int(CursorShapeChunk.maximumSide)
        guard (1...side).contains(width), (1...side).contains(height), hotX >= 0, hotX < width, hotY >= 0, hotY < height,
              pixels.count == width * height else { return [] }
        return stride(from: 0, to: pixels.count, by: CursorShapeChunk.pixelsPerChunk).map { offset in
            CursorShapeChunk(serial: serial, width: UInt16(width), height: UInt16(height), hotX: UInt16(hotX), hotY: UInt16(hotY),
                             offset: offset,
                             pixels: Array(pixels[offset..<min(pixels.count, offset + CursorShapeChunk.pixelsPerChunk)]))
        }
    }
}

/// The pointer as a receiver draws it: where, and (once it has come) what.
public struct CursorOverlay: Sendable, Equatable {
    public var position: CursorPosition
    /// The shape named by the position; nil until all of it has arrived.
    public var shape: CursorShape?

    public init(position: CursorPosition, shape: CursorShape?) {
        self.position = position
        self.shape = shape
    }

    /// Where the shape's top left corner goes on a `width` x `height`
    /// picture: the position scaled from the sender's captured area, less
    /// the hot spot. Anywhere the 16-bit fields reach: far off the picture too.
    public func origin(width: Int, height: Int) -> (x: Int, y: Int) {
        let x = Int(position.x) * width / max(1, Int(position.areaWidth))
        let y = Int(position.y) * height / max(1, Int(position.areaHeight))
        return (x - (shape?.hotX ?? 0), y - (shape?.hotY ?? 0))
    }

    /// The rows of a `width` x `height` picture the pointer covers when it
    /// shows, within 0..<height; nil when it is hidden, has no shape yet, or
    /// falls off the picture. A sender chooses the position: nothing about
    /// it may be taken to be in range.
    public func rows(width: Int, height: Int) -> Range<Int>? {
        guard position.visible, let shape else { return nil }
        return Self.rowsCovered(top: origin(width: width, height: height).y, rows: shape.height, height: height)
    }

    /// The rows of a picture `height` rows high that an image `rows` high
    /// placed at `top` covers, or nil when it is off the picture.
    public static func rowsCovered(top: Int, rows: Int, height: Int) -> Range<Int>? {
        let first = min(max(0, top), height)
        let end = min(max(first, top + rows), height)
        return first < end ? first..<end : nil
    }
}

/// The sender's side of `--cursor metadata`, sans-IO: a new position is
/// sent at once (at most every `minimumInterval`) and repeated every
/// `positionRepeat`; a new shape is sent whole at once, before the position
/// that names it, and repeated every `shapeRepeat` (RTCP is not answered:
/// repeats are how a lost part or a late receiver is covered).
public struct CursorAnnouncer: Sendable {
    public private(set) var position: CursorPosition?
    public private(set) var shape: CursorShape?
    private var positionDue: MonotonicTime?
    private var shapeDue: MonotonicTime?
    private var positionSent: MonotonicTime?
    public var minimumInterval: Duration = .milliseconds(8)
    public var positionRepeat: Duration = .seconds(1)
    public var shapeRepeat: Duration = .seconds(3)

    public init() {}

    /// The pointer now; `shape` when it may have changed (a shape with the
    /// serial already sent changes nothing).
    public mutating func update(position newPosition: CursorPosition, shape newShape: CursorShape?, now: MonotonicTime) {
        if let newShape, newShape.serial != shape?.serial || newShape.pixels != shape?.pixels {
            shape = newShape
            shapeDue = now
        }
        guard newPosition != position else { return }
        position = newPosition
        // A pointer no longer shown leaves at once: the pictures are about
        // to hold it, and the receiver must not draw it a second time.
        let earliest = newPosition.visible ? positionSent.map { $0 + minimumInterval } ?? now : now
        positionDue = max(now, earliest)
    }

    /// Everything is sent again at the next poll (a new session's receiver
    /// has seen none of it).
    public mutating func resend() {
        if shape != nil { shapeDue = MonotonicTime(nanoseconds: 0) }
        if position != nil { positionDue = MonotonicTime(nanoseconds: 0) }
        positionSent = nil
    }

    /// Packets due now: the shape's chunks first, then the position.
    public mutating func poll(now: MonotonicTime, ssrc: UInt32) -> [RTCPPacket] {
        var packets: [RTCPPacket] = []
        if let due = shapeDue, now >= due, let shape {
            packets += shape.chunks().map { $0.packet(ssrc: ssrc) }
            shapeDue = now + shapeRepeat
        }
        if let due = positionDue, now >= due, let position {
            packets.append(position.packet(ssrc: ssrc))
            positionSent = now
            positionDue = now + positionRepeat
        }
        return packets
    }

    /// When `poll` next has something.
    public var deadline: MonotonicTime? {
        [positionDue, shapeDue].compactMap { $0 }.min()
    }
}

/// The receiver's side, sans-IO: puts shapes together from their chunks
/// (one shape at a time, bounded by the largest allowed) and keeps the
/// newest position. Chunks that do not fit the shape being built start it
/// again; nothing a sender sends can make it hold more than one shape
/// being built and one complete.
public struct CursorAssembler: Sendable {
    private struct Building: Sendable {
        var header: CursorShapeChunk
        var pixels: [UInt32]
        var received: Set<Int>
        var chunkCount: Int
    }

    public private(set) var position: CursorPosition?
    public private(set) var shape: CursorShape?
    private var building: Building?
    /// Chunks refused (not matching their shape's layout).
    public private(set) var refused = 0

    public init() {}

    /// What to draw now, if anything.
    public var overlay: CursorOverlay? {
        position.map { CursorOverlay(position: $0, shape: shape?.serial == $0.shape ? shape : nil) }
    }

    /// Returns true when what to draw changed.
    public mutating func receive(_ newPosition: CursorPosition) -> Bool {
        guard newPosition != position else { return false }
        position = newPosition
        return true
    }

    /// Returns true when a shape was completed (and it is the one to draw).
    public mutating func receive(_ chunk: CursorShapeChunk) -> Bool {
        let total = Int(chunk.width) * Int(chunk.height)
        let per = CursorShapeChunk.pixelsPerChunk
        guard chunk.offset % per == 0, chunk.pixels.count == min(per, total - chunk.offset) else {
            refused += 1
            return false
        }
        if shape?.serial == chunk.serial, shape?.width == Int(chunk.width), shape?.height == Int(chunk.height) { return false }
        if var current = building, current.header.serial == chunk.serial, current.header.width == chunk.width,
           current.header.height == chunk.height, current.header.hotX == chunk.hotX, current.header.hotY == chunk.hotY {
            current.pixels.replaceSubrange(chunk.offset..<(chunk.offset + chunk.pixels.count), with: chunk.pixels)
            current.received.insert(chunk.offset / per)
            building = current
        } else {
            var pixels = [UInt32](repeating: 0, count: total)
            pixels.replaceSubrange(chunk.offset..<(chunk.offset + chunk.pixels.count), with: chunk.pixels)
            building = Building(header: chunk, pixels: pixels, received: [chunk.offset / per], chunkCount: (total + per - 1) / per)
        }
        guard let done = building, done.received.count == done.chunkCount else { return false }
        let h = done.header
        shape = CursorShape(serial: h.serial, width: Int(h.width), height: Int(h.height), hotX: Int(h.hotX), hotY: Int(h.hotY),
                            pixels: done.pixels)
        building = nil
        return position?.shape == h.serial
    }
}
