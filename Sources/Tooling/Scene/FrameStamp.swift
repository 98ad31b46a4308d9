/// A machine-readable time stamp drawn into the picture itself, so a
/// receiver can tell glass-to-glass latency from decoded frames whatever
/// sent them (share, ffmpeg, GStreamer: no RTP extension needed).
///
/// Layout: one row of `blockCount` square blocks, each `width / 64` pixels
/// wide (so it survives scaling), starting one block in from the left at
/// `top(width:)`: two sync blocks (white, black), 40 data bits (the drawing
/// time in CLOCK_MONOTONIC microseconds modulo 2^40, most significant bit
/// first) and an 8-bit CRC of them. White is 1. A band of black one block
/// wide surrounds the row so moving content never touches it. Readers sample
/// the centre of every block in the luma plane; the CRC rejects frames
/// caught mid-draw or smeared by the encoder.
public struct FrameStamp: Sendable, Equatable {
    public static let dataBits = 40
    public static let checkBits = 8
    public static let syncBlocks = 2
    public static let blockCount = syncBlocks + dataBits + checkBits
    /// Blocks per picture width.
    public static let columns = 64

    /// Microseconds of CLOCK_MONOTONIC, modulo 2^40 (about 12.7 days).
    public let microseconds: UInt64

    public init(microseconds: UInt64) {
        self.microseconds = microseconds & Self.mask
    }

    static let mask: UInt64 = (1 << UInt64(dataBits)) - 1

    /// Side of one block in pixels for a picture `width` wide.
    public static func blockSize(width: Int) -> Int { max(2, width / columns) }

    /// Top edge of the stamp row.
    public static func top(width: Int) -> Int { 2 * blockSize(width: width) }

    /// The backing band: every pixel the stamp may cover, plus one block of margin.
    public static func band(width: Int) -> (x: Int, y: Int, width: Int, height: Int) {
        let size = blockSize(width: width)
        return (0, top(width: width) - size, (blockCount + 2) * size, 3 * size)
    }

    /// Each block's colour, left to right: true is white.
    public var blocks: [Bool] {
        var bits: [Bool] = [true, false]
        for bit in (0..<Self.dataBits).reversed() { bits.append(microseconds >> UInt64(bit) & 1 == 1) }
        let check = Self.crc8(microseconds)
        for bit in (0..<Self.checkBits).reversed() { bits.append(check >> UInt8(bit) & 1 == 1) }
        return bits
    }

    /// Where block `index` sits in a picture `width` wide.
    public static func rect(block index: Int, width: Int) -> (x: Int, y: Int, size: Int) {
        let size = blockSize(width: width)
        return ((index + 1) * size, top(width: width), size)
    }

    /// Draws this stamp in a picture `width` wide through `fill` (a
    /// rectangle and whether it is white): the band black, then the white
    /// blocks over it.
    public func paint(width: Int, fill: (_ x: Int, _ y: Int, _ width: Int, _ height: Int, _ white: Bool) -> Void) {
        let band = Self.band(width: width)
        fill(band.x, band.y, band.width, band.height, false)
        for (index, white) in blocks.enumerated() where white {
            let r = Self.rect(block: index, width: width)
            fill(r.x, r.y, r.size, r.size, true)
        }
    }

    /// Reads a stamp from a luma plane through `luma(x, y)`; nil when the
    /// picture is too small, the sync blocks are wrong or the CRC fails.
    public static func read(width: Int, height: Int, luma: (_ x: Int, _ y: Int) -> UInt8) -> FrameStamp? {
        let size = blockSize(width: width)
        guard size >= 2, (blockCount + 2) * size <= width, top(width: width) + size <= height else { return nil }
        // Average the middle half of each block (a 2x2 grid of samples).
        func isWhite(_ index: Int) -> Bool {
            let r = rect(block: index, width: width)
            let (a, b) = (r.size / 4, r.size - 1 - r.size / 4)
            let sum = Int(luma(r.x + a, r.y + a)) + Int(luma(r.x + b, r.y + a)) + Int(luma(r.x + a, r.y + b))
                + Int(luma(r.x + b, r.y + b))
            return sum >= 4 * 128
        }
        guard isWhite(0), !isWhite(1) else { return nil }
        var value: UInt64 = 0
        for index in syncBlocks..<(syncBlocks + dataBits) { value = value << 1 | (isWhite(index) ? 1 : 0) }
        var check: UInt8 = 0
        for index in (syncBlocks + dataBits)..<blockCount { check = check << 1 | (isWhite(index) ? 1 : 0) }
        guard crc8(value) == check else { return nil }
        return FrameStamp(microseconds: value)
    }

    /// Microseconds from this stamp to `now` (also CLOCK_MONOTONIC
    /// microseconds), modulo 2^40; nil when `now` is before the stamp or
    /// more than a minute after (a stale or foreign stamp).
    public func microseconds(until now: UInt64) -> UInt64? {
        let elapsed = (now &- microseconds) & Self.mask
        return elapsed < 60_000_000 ? elapsed : nil
    }

    /// CRC-8 (polynomial x^8 + x^2 + x + 1) over the 5 data bytes, big-endian.
    static func crc8(_ value: UInt64) -> UInt8 {
        var crc: UInt8 = 0
        for shift in stride(from: 32, through: 0, by: -8) {
            crc ^= UInt8(truncatingIfNeeded: value >> UInt64(shift))
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? crc << 1 ^ 0x07 : crc << 1 }
        }
        return crc
    }
}
