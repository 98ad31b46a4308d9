import ShareColor
import ShareDecode
import ShareScene
import ShareVideo
import Testing

/// A luma plane with `stamp` drawn the way `share scene --stamp` draws it
/// (its `paint`): a black band, white blocks for the 1 bits, over mid-grey "content".
func stampedLuma(_ stamp: FrameStamp, width: Int, height: Int) -> [UInt8] {
    var luma = [UInt8](repeating: 120, count: width * height)
    stamp.paint(width: width) { x, y, w, h, white in
        for row in y..<min(y + h, height) { for column in x..<min(x + w, width) { luma[row * width + column] = white ? 235 : 16 } }
    }
    return luma
}

@Suite("Frame stamp: drawing time as blocks, read back from pictures")
struct FrameStampTests {
    @Test(arguments: [(640, 360), (1280, 720), (1920, 1080), (3840, 2160)])
    func readsBackWhatWasDrawn(size: (Int, Int)) {
        let (width, height) = size
        for value: UInt64 in [0, 1, 0xAB_CDEF_0123, (1 << 40) - 1, 987_654_321] {
            let luma = stampedLuma(FrameStamp(microseconds: value), width: width, height: height)
            let read = FrameStamp.read(width: width, height: height) { x, y in luma[y * width + x] }
            #expect(read == FrameStamp(microseconds: value), "\(width)x\(height), \(value)")
        }
    }

    @Test func aFlippedBlockOrAMissingSyncIsRejected() {
        let (width, height) = (1280, 720)
        let stamp = FrameStamp(microseconds: 0x12_3456_789A)
        for block in 0..<FrameStamp.blockCount {
            var luma = stampedLuma(stamp, width: width, height: height)
            let r = FrameStamp.rect(block: block, width: width)
            let flipped: UInt8 = stamp.blocks[block] ? 16 : 235
            for row in r.y..<(r.y + r.size) { for column in r.x..<(r.x + r.size) { luma[row * width + column] = flipped } }
            #expect(FrameStamp.read(width: width, height: height) { x, y in luma[y * width + x] } == nil, "block \(block)")
        }
        // No stamp at all (plain content) reads as nothing.
        #expect(FrameStamp.read(width: width, height: height) { _, _ in 120 } == nil)
        // Too small a picture for the row: nothing, not a crash.
        #expect(FrameStamp.read(width: 60, height: 4) { _, _ in 235 } == nil)
    }

    /// A numbered stamp's second row carries the scene's frame number
    /// beside the time; a stamp without one reads back without one.
    @Test(arguments: [(640, 360), (1280, 720), (1920, 1080)])
    func carriesTheFrameNumberInASecondRow(size: (Int, Int)) {
        let (width, height) = size
        for frame: UInt32 in [0, 1, 30, 12_345, (1 << 24) - 1] {
            let stamp = FrameStamp(microseconds: 0xAB_CDEF_0123, frame: frame)
            let luma = stampedLuma(stamp, width: width, height: height)
            let read = FrameStamp.read(width: width, height: height) { x, y in luma[y * width + x] }
            #expect(read == stamp, "\(width)x\(height), frame \(frame)")
        }
        #expect(FrameStamp(microseconds: 1, frame: (1 << 24) + 5).frame == 5, "numbers wrap at 2^24")
        let plain = stampedLuma(FrameStamp(microseconds: 77), width: width, height: height)
        #expect(FrameStamp.read(width: width, height: height) { x, y in plain[y * width + x] } == FrameStamp(microseconds: 77))
        #expect(FrameStamp.band(width: width, numbered: true).height > FrameStamp.band(width: width).height)
    }

    /// Any one block of the number's row flipped loses the number, never
    /// gives a wrong one, and leaves the time readable.
    @Test func aDamagedNumberRowGivesNoNumberButKeepsTheTime() throws {
        let (width, height) = (1280, 720)
        let stamp = FrameStamp(microseconds: 0x12_3456_789A, frame: 4_321)
        let blocks = try #require(stamp.frameBlocks)
        for block in 0..<FrameStamp.frameBlockCount {
            var luma = stampedLuma(stamp, width: width, height: height)
            let r = FrameStamp.rect(block: block, width: width, row: 1)
            for row in r.y..<(r.y + r.size) { for column in r.x..<(r.x + r.size) { luma[row * width + column] = blocks[block] ? 16 : 235 } }
            let read = FrameStamp.read(width: width, height: height) { x, y in luma[y * width + x] }
            #expect(read?.microseconds == stamp.microseconds && read?.frame == nil, "block \(block): \(String(describing: read))")
        }
    }

    @Test func elapsedTimeWrapsAndRefusesNonsense() {
        let stamp = FrameStamp(microseconds: (1 << 40) - 1_000)
        #expect(stamp.microseconds(until: 4_000) == 5_000, "across the 2^40 wrap")
        #expect(FrameStamp(microseconds: 10_000).microseconds(until: 9_000) == nil, "now before the stamp")
        #expect(FrameStamp(microseconds: 0).microseconds(until: 120_000_000) == nil, "two minutes old: foreign")
    }

    /// The stamp must survive the real path: x264 at the sender's default
    /// bitrate for the size, libavcodec decoding, reading the decoded luma.
    @Test func survivesX264AndLibavcodec() throws {
        let (width, height) = (1280, 720)
        let encoder = try H264Encoder(.init(width: width, height: height, fps: 30))
        let decoder = try H264Decoder()
        var unit: [UInt8] = []
        var read: [FrameStamp] = []
        var drawn: [FrameStamp] = []
        for frame in 0..<20 {
            let stamp = FrameStamp(microseconds: 5_000_000_000 + UInt64(frame) * 33_333, frame: UInt32(frame * 7))
            drawn.append(stamp)
            var image = I420Image(width: width, height: height)
            let luma = stampedLuma(stamp, width: width, height: height)
            let chroma = image.chromaStride * image.chromaHeight
            image.withMutablePlanes { y, u, v in
                y.update(from: luma, count: luma.count)
                for i in 0..<chroma { u[i] = 128; v[i] = 128 }
            }
            guard try encoder.encode(image, into: &unit) != nil, decoder.decode(unit) != nil else { continue }
            if let stamp = decoder.withLastPicture({ picture in
                FrameStamp.read(width: picture.width, height: picture.height) { x, row in picture.luma(x: x, y: row) }
            }) ?? nil {
                read.append(stamp)
            }
        }
        #expect(read.count >= 18, "read \(read.count) of 20")
        #expect(read.allSatisfy { drawn.contains($0) }, "every stamp read is one that was drawn")
    }
}
