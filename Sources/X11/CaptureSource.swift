/// What part of the display to share.
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

/// A rectangle in screen pixels.
public struct Rectangle: Sendable, Equatable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// X geometry `WxH+X+Y` (as xrandr and xwininfo write it); `WxH` alone is at +0+0.
    public init?(geometry text: String) {
        let size = text.prefix { $0 != "+" && $0 != "-" }
        let parts = size.split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else { return nil }
        var offsets: [Int] = []
        var rest = text.dropFirst(size.count)
        while let sign = rest.first {
            let digits = rest.dropFirst().prefix { $0.isNumber }
            guard !digits.isEmpty, let value = Int(digits) else { return nil }
            offsets.append(sign == "-" ? -value : value)
            rest = rest.dropFirst(1 + digits.count)
        }
        guard offsets.isEmpty || offsets.count == 2 else { return nil }
        self.init(x: offsets.first ?? 0, y: offsets.last ?? 0, width: width, height: height)
    }

    public var description: String { "\(width)x\(height)+\(x)+\(y)" }

    /// Whether the rectangle lies within a screen of `width` x `height`.
    public func fits(width screenWidth: Int, height screenHeight: Int) -> Bool {
        x >= 0 && y >= 0 && x + width <= screenWidth && y + height <= screenHeight
    }

    /// The part of the rectangle within a picture of `width` x `height` at
    /// (0, 0) (empty, with a zero size, when none is).
    public func intersection(width pictureWidth: Int, height pictureHeight: Int) -> Rectangle {
        let (left, top) = (max(0, x), max(0, y))
        let (right, bottom) = (min(pictureWidth, x + width), min(pictureHeight, y + height))
        return Rectangle(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }

    /// The rectangle moved as little as possible to lie within the screen
    /// (a window partly off screen is captured where it is visible).
    public func clamped(width screenWidth: Int, height screenHeight: Int) -> Rectangle {
        let w = min(width, screenWidth)
        let h = min(height, screenHeight)
        return Rectangle(x: min(max(0, x), screenWidth - w), y: min(max(0, y), screenHeight - h), width: w, height: h)
    }
}

/// A RandR monitor.
public struct Monitor: Sendable, Equatable {
    public var name: String
    public var bounds: Rectangle
    public var primary: Bool
}

/// A top-level window.
public struct TopLevelWindow: Sendable, Equatable {
    public var id: UInt32
    public var name: String
    public var bounds: Rectangle
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
}

/// The pointer's image: premultiplied ARGB, row by row, with its hot spot.
public struct PointerShape: Sendable, Equatable {
    public var serial: UInt32
    public var width: Int
    public var height: Int
    public var hotX: Int
    public var hotY: Int
    public var pixels: [UInt32]
}
