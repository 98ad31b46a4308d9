/// A rectangle in pixels: of the screen (what to capture, where a window
/// is), or of a picture (what changed in it).
public struct Rectangle: Sendable, Equatable, CustomStringConvertible {
    /// The left edge, in pixels from the picture's left.
    public var x: Int
    /// The top edge, in pixels from the picture's top.
    public var y: Int
    /// Pixels across.
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// The rectangle `width` x `height` whose top left corner is at (`x`, `y`).
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

    /// The part of the rectangle (in screen coordinates) within `area`, in
    /// `area`'s coordinates (empty, with a zero size, when none is).
    public func part(within area: Rectangle) -> Rectangle {
        Rectangle(x: x - area.x, y: y - area.y, width: width, height: height).intersection(width: area.width, height: area.height)
    }

    /// The rectangle moved as little as possible to lie within the screen
    /// (a window partly off screen is captured where it is visible).
    public func clamped(width screenWidth: Int, height screenHeight: Int) -> Rectangle {
        let w = min(width, screenWidth)
        let h = min(height, screenHeight)
        return Rectangle(x: min(max(0, x), screenWidth - w), y: min(max(0, y), screenHeight - h), width: w, height: h)
    }
}
