public import ShareColor

/// What part of the desktop to share.
public enum CaptureSource: Sendable, Equatable, CustomStringConvertible {
    /// The whole screen (the root window).
    case screen
    /// A fixed rectangle of the screen.
    case region(Rectangle)
    /// One RandR monitor, by name (as `share send --list` prints it) or index.
    case monitor(String)
    /// One top-level window, by id (decimal or 0x hex) or name; followed as it moves.
    case window(String)

    public var description: String {
        switch self {
        case .screen: "the screen"
        case .region(let r): "region \(r)"
        case .monitor(let name): "monitor \(name)"
        case .window(let name): "window \(name)"
        }
    }
}

/// A RandR monitor.
public struct Monitor: Sendable, Equatable {
    public var name: String
    public var bounds: Rectangle
    public var primary: Bool

    public init(name: String, bounds: Rectangle, primary: Bool) {
        (self.name, self.bounds, self.primary) = (name, bounds, primary)
    }
}

/// A top-level window.
public struct TopLevelWindow: Sendable, Equatable {
    public var id: UInt32
    public var name: String
    public var bounds: Rectangle

    public init(id: UInt32, name: String, bounds: Rectangle) {
        (self.id, self.name, self.bounds) = (id, name, bounds)
    }
}

/// The mouse pointer, read apart from the pictures.
public struct PointerState: Sendable, Equatable {
    /// The hot spot, in the captured area's pixels (outside it when the
    /// pointer is elsewhere on the screen).
    public var x: Int
    public var y: Int
    /// The captured area's size then.
    public var areaWidth: Int
    public var areaHeight: Int
    /// The shape's serial (XFixes).
    public var serial: UInt32
    /// Whether the hot spot is within the captured area.
    public var visible: Bool
    /// The shape, when it changed since the pointer was last read.
    public var shape: PointerShape?

    public init(x: Int, y: Int, areaWidth: Int, areaHeight: Int, serial: UInt32, visible: Bool, shape: PointerShape?) {
        (self.x, self.y, self.areaWidth, self.areaHeight) = (x, y, areaWidth, areaHeight)
        (self.serial, self.visible, self.shape) = (serial, visible, shape)
    }
}

/// The pointer's image: premultiplied ARGB, row by row, with its hot spot.
public struct PointerShape: Sendable, Equatable {
    public var serial: UInt32
    public var width: Int
    public var height: Int
    public var hotX: Int
    public var hotY: Int
    public var pixels: [UInt32]

    public init(serial: UInt32, width: Int, height: Int, hotX: Int, hotY: Int, pixels: [UInt32]) {
        (self.serial, self.width, self.height, self.hotX, self.hotY, self.pixels) = (serial, width, height, hotX, hotY, pixels)
    }
}
