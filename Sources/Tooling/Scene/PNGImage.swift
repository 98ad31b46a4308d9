/// A PNG file of 8-bit RGB pixels, written without compression (stored
/// deflate blocks): the reference pictures of `share scene --render` are
/// read back by the harness and by image viewers, and a size here matters
/// less than needing no compression library.
public enum PNGImage {
    /// The PNG bytes of `width` x `height` pixels, 0xRRGGBB row by row.
    public static func encode(rgb pixels: [UInt32], width: Int, height: Int) -> [UInt8] {
        precondition(width > 0 && height > 0 && pixels.count >= width * height, "a picture needs its pixels")
        // Each row: filter type 0 (none), then R, G, B.
        let rowBytes = 1 + width * 3
        var raw = [UInt8](repeating: 0, count: height * rowBytes)
        for row in 0..<height {
            for column in 0..<width {
                let (pixel, at) = (pixels[row * width + column], row * rowBytes + 1 + column * 3)
                (raw[at], raw[at + 1], raw[at + 2]) = (UInt8(pixel >> 16 & 0xFF), UInt8(pixel >> 8 & 0xFF), UInt8(pixel & 0xFF))
            }
        }
        var header = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0]  // 8 bits a channel, RGB, deflate, no filter choice, not interlaced
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + chunk("IHDR", header) + chunk("IDAT", zlibStored(raw)) + chunk("IEND", [])
    }

    /// A zlib stream of stored blocks (at most 65535 bytes each) and its Adler-32.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var start = 0
        repeat {
            let length = min(65_535, data.count - start)
            let last: UInt8 = start + length == data.count ? 1 : 0
            out += [last, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8 & 0xFF)]
            out += data[start..<(start + length)]
            start += length
        } while start < data.count
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + bigEndian(b << 16 | a)
    }

    private static func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + body
        return bigEndian(UInt32(body.count)) + typed + bigEndian(crc32(typed))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// CRC-32 as PNG and zlib's gzip use it (reflected, 0xEDB88320).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
