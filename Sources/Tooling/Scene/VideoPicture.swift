internal import ShareBase

/// The pictures of a video-like region, a pure function of the frame
/// number: a detailed texture (soft shapes, fine detail and grain, as a
/// camera sees a scene) panning diagonally, a bright disc crossing it, and
/// a grain that is new every frame. Every pixel changes every frame and
/// most of the motion is a pan, as in a window playing a film: content an
/// encoder can predict in part but never skip, which is what makes a shared
/// video hard to send.
public struct VideoPicture: Sendable {
    /// The texture panned across (wraps both ways).
    private static let side = 1024
    private let texture: [UInt32]
    /// Grain levels (-8 to 7), read from a place that moves every frame.
    private let grain: [Int8]

    public init() {
        texture = Self.makeTexture(side: Self.side, seed: 0x5EED_CAFE)
        var random = SplitMix64(seed: 0x6EA1_5EED)
        grain = (0..<65_536).map { _ in Int8(truncatingIfNeeded: Int(random.next() & 0xF) - 8) }
    }

    /// Writes frame `number`'s `width` x `height` pixels, 0xRRGGBB, row by
    /// row into `out` (which must hold `width * height`).
    public func render(frame number: Int, width: Int, height: Int, into out: UnsafeMutableBufferPointer<UInt32>) {
        precondition(out.count >= width * height, "the buffer holds too few pixels")
        let side = Self.side
        let (panX, panY) = (number * 3, number * 2)
        // The disc crosses the region in about four seconds at 30 fps.
        let radius = max(4, min(width, height) / 6)
        let discX = bounce(number * 5, span: max(1, width)), discY = bounce(number * 3 + height / 3, span: max(1, height))
        let grainStart = number &* 40_503
        for y in 0..<height {
            let row = ((y + panY) % side) * side
            let dy = y - discY
            for x in 0..<width {
                var rgb = texture[row + (x + panX) % side]
                let dx = x - discX
                if dx * dx + dy * dy < radius * radius { rgb = brighten(rgb) }
                // A grain of a few levels, new every frame.
                let noise = Int(grain[(grainStart &+ y &* width &+ x) & 0xFFFF])
                out[y * width + x] = Self.add(noise, to: rgb)
            }
        }
    }

    private func brighten(_ rgb: UInt32) -> UInt32 {
        let r = (rgb >> 16 & 0xFF) / 2 + 128, g = (rgb >> 8 & 0xFF) / 2 + 120, b = (rgb & 0xFF) / 2 + 60
        return r << 16 | g << 8 | b
    }

    private func bounce(_ value: Int, span: Int) -> Int {
        let position = value % (2 * span)
        return position < span ? position : 2 * span - position
    }

    private static func add(_ noise: Int, to rgb: UInt32) -> UInt32 {
        func channel(_ shift: UInt32) -> UInt32 { UInt32(max(0, min(255, Int(rgb >> shift & 0xFF) + noise))) << shift }
        return channel(16) | channel(8) | channel(0)
    }

    /// Value noise at two scales (soft shapes 64 pixels across, detail 8
    /// across) in three colour channels, and a fixed fine texture.
    private static func makeTexture(side: Int, seed: UInt64) -> [UInt32] {
        var random = SplitMix64(seed: seed)
        func grid(_ cells: Int) -> [Double] { (0..<cells * cells * 3).map { _ in Double(random.next() % 1000) / 1000 } }
        let (coarse, fine) = (side / 64, side / 8)
        let (soft, detail) = (grid(coarse), grid(fine))
        func sample(_ values: [Double], cells: Int, x: Int, y: Int, channel: Int) -> Double {
            let span = Double(side) / Double(cells)
            let (fx, fy) = (Double(x) / span, Double(y) / span)
            let (x0, y0) = (Int(fx) % cells, Int(fy) % cells)
            let (x1, y1) = ((x0 + 1) % cells, (y0 + 1) % cells)
            let (tx, ty) = (fx - fx.rounded(.down), fy - fy.rounded(.down))
            func at(_ gx: Int, _ gy: Int) -> Double { values[(gy * cells + gx) * 3 + channel] }
            let top = at(x0, y0) + (at(x1, y0) - at(x0, y0)) * tx
            let bottom = at(x0, y1) + (at(x1, y1) - at(x0, y1)) * tx
            return top + (bottom - top) * ty
        }
        var pixels = [UInt32](repeating: 0, count: side * side)
        for y in 0..<side {
            for x in 0..<side {
                var rgb: UInt32 = 0
                for channel in 0..<3 {
                    let value = 0.65 * sample(soft, cells: coarse, x: x, y: y, channel: channel)
                        + 0.3 * sample(detail, cells: fine, x: x, y: y, channel: channel)
                        + 0.05 * Double(random.next() % 1000) / 1000
                    rgb = rgb << 8 | UInt32(max(0, min(255, value * 255)))
                }
                pixels[y * side + x] = rgb
            }
        }
        return pixels
    }
}
