import ShareSender

/// A BGRA picture: red on the left, blue on the right, a white bar at `bar`.
func frame(width: Int, height: Int, bar: Int) -> [UInt8] {
    var pixels = [UInt8](repeating: 0, count: width * height * 4)
    for y in 0..<height {
        for x in 0..<width {
            let i = (y * width + x) * 4
            let white = abs(x - bar) < 8
            pixels[i] = white || x >= width / 2 ? 0xFF : 0
            pixels[i + 1] = white ? 0xFF : 0
            pixels[i + 2] = white || x < width / 2 ? 0xFF : 0
            pixels[i + 3] = 0xFF
        }
    }
    return pixels
}
