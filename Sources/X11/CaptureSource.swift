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
