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
///
/// A numbered stamp (`share scene --stamp --number-frames`) has a second
/// row two blocks below: two sync blocks, the scene's frame number (24
/// bits, modulo 2^24) and an 8-bit CRC of it. The scene is a function of
/// its frame number, so a receiver that reads the number knows which
/// reference picture (`share scene --render N`) a shown picture should be.
public struct FrameStamp: Sendable, Equatable {
    public static let dataBits = 40
    public static let checkBits = 8
    public static let syncBlocks = 2
    public static let blockCount = syncBlocks + dataBits + checkBits
    /// Bits of the frame number in the second row.
    public static let frameBits = 24
    /// Blocks of the second row.
    public static let frameBlockCount = syncBlocks + frameBits + checkBits
    /// Blocks per picture width.
    public static let columns = 64

    /// Microseconds of CLOCK_MONOTONIC, modulo 2^40 (about 12.7 days).
    public let microseconds: UInt64
    /// The scene's frame number, modulo 2^24; nil for a stamp of time alone.
    public let frame: UInt32?

    public init(microseconds: UInt64, frame: UInt32? = nil) {
        self.microseconds = microseconds & Self.mask
        self.frame = frame.map { $0 & Self.frameMask }
    }

    static let mask: UInt64 = (1 << UInt64(dataBits)) - 1
    static let frameMask: UInt32 = (1 << UInt32(frameBits)) - 1

    /// Side of one block in pixels for a picture `width` wide.
    public static func blockSize(width: Int) -> Int { max(2, width / columns) }

    /// Top edge of the stamp row.
    public static func top(width: Int) -> Int { 2 * blockSize(width: width) }

    /// The backing band: every pixel the stamp may cover, plus one block
    /// of margin; with `numbered`, the second row's too.
    public static func band(width: Int, numbered: Bool = false) -> (x: Int, y: Int, width: Int, height: Int) {
        let size = blockSize(width: width)
        return (0, top(width: width) - size, (blockCount + 2) * size, (numbered ? 5 : 3) * size)
    }

    /// Each block's colour, left to right: true is white.
    public var blocks: [Bool] { Self.row(value: microseconds, bits: Self.dataBits) }

    /// The second row's blocks, left to right; nil without a frame number.
    public var frameBlocks: [Bool]? { frame.map { Self.row(value: UInt64($0), bits: Self.frameBits) } }

    /// Sync blocks, `bits` of `value` (most significant first), then its CRC.
    private static func row(value: UInt64, bits: Int) -> [Bool] {
        var blocks: [Bool] = [true, false]
        for bit in (0..<bits).reversed() { blocks.append(value >> UInt64(bit) & 1 == 1) }
        let check = crc8(value)
        for bit in (0..<checkBits).reversed() { blocks.append(check >> UInt8(bit) & 1 == 1) }
        return blocks
    }

    /// Where block `index` sits in a picture `width` wide (`row` 1 is the frame number's).
    public static func rect(block index: Int, width: Int, row: Int = 0) -> (x: Int, y: Int, size: Int) {
        let size = blockSize(width: width)
        return ((index + 1) * size, top(width: width) + row * 2 * size, size)
    }

    /// Draws this stamp in a picture `width` wide through `fill` (a
    /// rectangle and whether it is white): the band black, then the white
    /// blocks over it.
    public func paint(width: Int, fill: (_ x: Int, _ y: Int, _ width: Int, _ height: Int, _ white: Bool) -> Void) {
        let band = Self.band(width: width, numbered: frame != nil)
        fill(band.x, band.y, band.width, band.height, false)
        for (row, blocks) in [blocks, frameBlocks ?? []].enumerated() {
            for (index, white) in blocks.enumerated() where white {
                let r = Self.rect(block: index, width: width, row: row)
                fill(r.x, r.y, r.size, r.size, true)
            }
        }
    }

    /// Reads a stamp from a luma plane through `luma(x, y)`; nil when the
    /// picture is too small, the sync blocks are wrong or the CRC fails.
    /// The frame number is read when a second row is there and sound.
    public static func read(width: Int, height: Int, luma: (_ x: Int, _ y: Int) -> UInt8) -> FrameStamp? {
        let size = blockSize(width: width)
        guard size >= 2, (blockCount + 2) * size <= width, top(width: width) + size <= height else { return nil }
        // Average the middle half of each block (a 2x2 grid of samples).
        func isWhite(_ index: Int, _ row: Int) -> Bool {
            let r = rect(block: index, width: width, row: row)
            let (a, b) = (r.size / 4, r.size - 1 - r.size / 4)
            let sum = Int(luma(r.x + a, r.y + a)) + Int(luma(r.x + b, r.y + a)) + Int(luma(r.x + a, r.y + b))
                + Int(luma(r.x + b, r.y + b))
            return sum >= 4 * 128
        }
        func value(row: Int, bits: Int) -> UInt64? {
            guard isWhite(0, row), !isWhite(1, row) else { return nil }
            var value: UInt64 = 0
            for index in syncBlocks..<(syncBlocks + bits) { value = value << 1 | (isWhite(index, row) ? 1 : 0) }
            var check: UInt8 = 0
            for index in (syncBlocks + bits)..<(syncBlocks + bits + checkBits) { check = check << 1 | (isWhite(index, row) ? 1 : 0) }
            return crc8(value) == check ? value : nil
        }
        guard let time = value(row: 0, bits: dataBits) else { return nil }
        let numbered = rect(block: 0, width: width, row: 1).y + size <= height
        return FrameStamp(microseconds: time, frame: numbered ? value(row: 1, bits: frameBits).map { UInt32($0) } : nil)
    }

    /// Microseconds from this stamp to `now` (also CLOCK_MONOTONIC
    /// microseconds), modulo 2^40; nil when `now` is before the stamp or
    /// more than a minute after (a stale or foreign stamp).
    public func microseconds(until now: UInt64) -> UInt64? {
        let elapsed = (now &- microseconds) & Self.mask
        return elapsed < 60_000_000 ? elapsed : nil
    }

    /// CRC-8 (polynomial x^8 + x^2 + x + 1) over the 5 data bytes, big-endian
    /// (a frame number's leading zero bytes leave the CRC as it would be over its 3).
    static func crc8(_ value: UInt64) -> UInt8 {
        var crc: UInt8 = 0
        for shift in stride(from: 32, through: 0, by: -8) {
            crc ^= UInt8(truncatingIfNeeded: value >> UInt64(shift))
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? crc << 1 ^ 0x07 : crc << 1 }
        }
        return crc
    }
}
