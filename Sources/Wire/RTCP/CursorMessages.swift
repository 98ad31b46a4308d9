/// Where the mouse pointer is, for a receiver that draws it itself
/// (`share send --cursor metadata`): an APP packet named `SHCP`, subtype 0,
/// its data the hot spot's position in the captured area's pixels (x, y,
/// signed 16-bit: the pointer may be outside it), the captured area's size
/// (16-bit each: a receiver scales to its picture), the serial of the shape
/// drawn there (32-bit) and a flags byte (bit 0: the pointer is shown).
public struct CursorPosition: Equatable, Sendable {
    public var x: Int16
    public var y: Int16
    public var areaWidth: UInt16
    public var areaHeight: UInt16
    public var shape: UInt32
    public var visible: Bool

    public static let name = "SHCP"

    public init(x: Int16, y: Int16, areaWidth: UInt16, areaHeight: UInt16, shape: UInt32, visible: Bool) {
        self.x = x
        self.y = y
        self.areaWidth = areaWidth
        self.areaHeight = areaHeight
        self.shape = shape
        self.visible = visible
    }

    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Array(Self.name.utf8), packet.subtype == 0 else { return nil }
        var reader = ByteReader(packet.data[...])
        guard let x = reader.readUInt16(), let y = reader.readUInt16(), let width = reader.readUInt16(),
              let height = reader.readUInt16(), let shape = reader.readUInt32(), let flags = reader.readUInt8(),
              width > 0, height > 0 else { return nil }
        self.init(x: Int16(bitPattern: x), y: Int16(bitPattern: y), areaWidth: width, areaHeight: height, shape: shape,
                  visible: flags & 1 == 1)
    }

    public func packet(ssrc: UInt32) -> RTCPPacket {
        var data: [UInt8] = []
        data.appendUInt16(UInt16(bitPattern: x))
        data.appendUInt16(UInt16(bitPattern: y))
        data.appendUInt16(areaWidth)
        data.appendUInt16(areaHeight)
        data.appendUInt32(shape)
        data.append(visible ? 1 : 0)
        return .application(ApplicationPacket(subtype: 0, ssrc: ssrc, name: Self.name, data: data))
    }
}

/// Part of the pointer's shape: an APP packet named `SHCS`, subtype 0, its
/// data the shape's serial (32-bit), its size and hot spot (16-bit width,
/// height, hot x, hot y; at most `maximumSide` a side), the offset of this
/// part in pixels (32-bit), then whole pixels, premultiplied ARGB as 32-bit
/// big-endian words, row by row. A shape is sent in parts of at most
/// `pixelsPerChunk` pixels, each a packet of its own.
public struct CursorShapeChunk: Equatable, Sendable {
    public var serial: UInt32
    public var width: UInt16
    public var height: UInt16
    public var hotX: UInt16
    public var hotY: UInt16
    public var offset: Int
    public var pixels: [UInt32]

    public static let name = "SHCS"
    public static let maximumSide: UInt16 = 256
    public static let pixelsPerChunk = 256

    public init(serial: UInt32, width: UInt16, height: UInt16, hotX: UInt16, hotY: UInt16, offset: Int, pixels: [UInt32]) {
        self.serial = serial
        self.width = width
        self.height = height
        self.hotX = hotX
        self.hotY = hotY
        self.offset = offset
        self.pixels = pixels
    }

    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Array(Self.name.utf8), packet.subtype == 0 else { return nil }
        var reader = ByteReader(packet.data[...])
        guard let serial = reader.readUInt32(), let width = reader.readUInt16(), let height = reader.readUInt16(),
              let hotX = reader.readUInt16(), let hotY = reader.readUInt16(), let offset = reader.readUInt32(),
              (1...Self.maximumSide).contains(width), (1...Self.maximumSide).contains(height), hotX < width, hotY < height
        else { return nil }
        let total = Int(width) * Int(height)
        var pixels: [UInt32] = []
        while pixels.count < Self.pixelsPerChunk, let pixel = reader.readUInt32() { pixels.append(pixel) }
        guard !pixels.isEmpty, Int(offset) + pixels.count <= total else { return nil }
        self.init(serial: serial, width: width, height: height, hotX: hotX, hotY: hotY, offset: Int(offset), pixels: pixels)
    }

    public func packet(ssrc: UInt32) -> RTCPPacket {
        var data: [UInt8] = []
        data.reserveCapacity(16 + pixels.count * 4)
        data.appendUInt32(serial)
        data.appendUInt16(width)
        data.appendUInt16(height)
        data.appendUInt16(hotX)
        data.appendUInt16(hotY)
        data.appendUInt32(UInt32(offset))
        for pixel in pixels { data.appendUInt32(pixel) }
        return .application(ApplicationPacket(subtype: 0, ssrc: ssrc, name: Self.name, data: data))
    }
}

/// A receiver's word on the pointer, sent with each of its reports: an APP
/// packet named `SHPD`, no data, subtype 1 when it draws the pointer itself
/// from `SHCP` and `SHCS` (it shows the picture in a window and records
/// nothing that would then lack it), 0 when the pictures should hold it.
/// A report without it says 0. A sender with `--cursor auto` sends the
/// pointer apart only while every receiver that reports says 1.
public struct PointerDrawing: Equatable, Sendable {
    public var drawsPointer: Bool

    public static let name = "SHPD"

    public init(drawsPointer: Bool) { self.drawsPointer = drawsPointer }

    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Array(Self.name.utf8), packet.subtype <= 1 else { return nil }
        drawsPointer = packet.subtype == 1
    }

    public func packet(ssrc: UInt32) -> RTCPPacket {
        .application(ApplicationPacket(subtype: drawsPointer ? 1 : 0, ssrc: ssrc, name: Self.name, data: []))
    }
}
