import Foundation
import ShareColor
import ShareDecode
import ShareVideo
import ShareWire
import Testing
import TestSupport
import ShareBase

/// A detailed picture (noise over moving quadrants, as text and photos
/// are for the encoder): a frame of it takes many packet-sized slices.
func detailedPicture(width: Int, height: Int, frame: Int) -> I420Image {
    var bgra = testPicture(width: width, height: height, offset: frame * 8)
    var random = SplitMix64(seed: UInt64(frame))
    for index in stride(from: 0, to: bgra.count, by: 4) where random.next() % 3 == 0 {
        let value = UInt8(truncatingIfNeeded: random.next())
        bgra[index] = value
        bgra[index + 1] = value
    }
    return ColorConversion.i420(fromBGRA: bgra, width: width, height: height)
}

/// Encodes `image` through the part-by-part API; returns the parts, whether
/// each ended the frame, and when the first came and the call returned, as
/// fractions of the call's time.
func encodeInParts(_ encoder: H264Encoder, _ image: I420Image, forceKeyframe: Bool = false) throws
    -> (info: EncodedFrameInfo?, parts: [[UInt8]], ends: [Bool], firstAt: Double) {
    var parts: [[UInt8]] = []
    var ends: [Bool] = []
    var first: UInt64 = 0
    let began = DispatchTime.now().uptimeNanoseconds
    let info = try image.withPlanes { y, _, _ in
        let planes = I420Planes(packedAt: UnsafeMutablePointer(mutating: y), width: image.width, height: image.height)
        return try encoder.encode(planes, forceKeyframe: forceKeyframe) { part, endsFrame in
            if first == 0 { first = DispatchTime.now().uptimeNanoseconds }
            parts.append(Array(part))
            ends.append(endsFrame)
        }
    }
    let ended = DispatchTime.now().uptimeNanoseconds
    return (info, parts, ends, Double(first &- began) / Double(max(1, ended - began)))
}

/// A slice's first_mb_in_slice: the first Exp-Golomb number after its NAL
/// header (too early in the unit for an emulation-prevention byte).
func firstMacroblock(of unit: ArraySlice<UInt8>) -> Int {
    var bit = (unit.startIndex + 1) * 8
    func next() -> Int {
        defer { bit += 1 }
        return Int(unit[bit / 8] >> (7 - UInt8(bit % 8)) & 1)
    }
    var zeros = 0
    while next() == 0 { zeros += 1 }
    var value = 1
    for _ in 0..<zeros { value = value << 1 | next() }
    return value - 1
}

@Suite("x264 slices, handed over as they are written", .busy)
struct SliceTests {
    /// Every part is one slice (with the parameter sets before an IDR's
    /// first), no slice is larger than a packet's payload, exactly the last
    /// part ends the frame, the parts come in the picture's order, and
    /// together they decode: on one encoder thread and on two (sliced
    /// threads, which write their bands' slices at once, out of order).
    @Test(arguments: [1, 2])
    func slicesFitAPacketAndTogetherDecode(threads: Int) throws {
        let (width, height, budget) = (640, 360, 1100)
        let encoder = try H264Encoder(.init(width: width, height: height, fps: 30, bitrateKbps: 6000, threads: threads,
                                            sliceMaxSize: budget))
        let decoder = try H264Decoder()
        var last: I420Image?
        for frame in 0..<12 {
            let image = detailedPicture(width: width, height: height, frame: frame)
            let (info, parts, ends, _) = try encodeInParts(encoder, image, forceKeyframe: frame == 6)
            let frameInfo = try #require(info)
            #expect(ends.filter { $0 }.count == 1 && ends.last == true, "frame \(frame): \(ends)")
            #expect(parts.count >= 4, "a detailed 640x360 picture takes several slices, got \(parts.count) frame \(frame) \(frameInfo)")
            var sawIDR = false
            var firsts: [Int] = []
            for part in parts {
                let units = AnnexB.nalUnits(in: part)
                let types = units.map { H264NALType.type(of: part[$0.lowerBound]) }
                firsts.append(firstMacroblock(of: part[units.last!]))
                #expect(types.last == H264NALType.slice || types.last == H264NALType.idr, "a part ends with its slice: \(types)")
                #expect(types.dropLast().allSatisfy { $0 != H264NALType.slice && $0 != H264NALType.idr },
                        "one slice per part: \(types)")
                #expect(units.last!.count <= budget, "a slice of \(units.last!.count) bytes, budget \(budget)")
                if types.last == H264NALType.idr { sawIDR = true }
            }
            #expect(frameInfo.isKeyframe == sawIDR)
            #expect(firsts.first == 0 && zip(firsts, firsts.dropFirst()).allSatisfy { $0 < $1 },
                    "frame \(frame): slices start at macroblocks \(firsts)")
            let whole = parts.flatMap { $0 }
            #expect(frameInfo.size == whole.count)
            #expect(decoder.decode(whole) != nil, "frame \(frame) decodes")
            last = image
        }
        #expect(decoder.errors == 0)
        // The last picture came through, every slice in its place: the
        // luma of each 8x8 block (where the noise averages out) close to the source's.
        let shown = try #require(decoder.lastPicture())
        let source = try #require(last)
        func blockMean(_ image: I420Image, _ bx: Int, _ by: Int) -> Double {
            var sum = 0
            for y in by * 8..<by * 8 + 8 { for x in bx * 8..<bx * 8 + 8 { sum += Int(image.luma(x: x, y: y)) } }
            return Double(sum) / 64
        }
        var (worst, total) = (0.0, 0.0)
        for by in 0..<height / 8 {
            for bx in 0..<width / 8 {
                let off = abs(blockMean(shown, bx, by) - blockMean(source, bx, by))
                (worst, total) = (max(worst, off), total + off)
            }
        }
        // Encoding this noise leaves blocks up to about 20 steps off (as
        // much in one slice as in many), about 4 on average; a slice out of
        // place would put another quadrant's colour there (60 steps or more).
        let mean = total / Double((width / 8) * (height / 8))
        #expect(worst < 40 && mean < 8, "8x8 blocks' mean luma off by \(mean) on average, \(worst) at worst")
    }

    /// x264 hands each slice over as soon as it is written and the slices
    /// above it have been: the first part of a large picture (an IDR of a
    /// detailed 720p frame, dozens of slices) comes early in the encode
    /// call, on one thread and on sliced threads (the top band's thread).
    /// Sent once the picture is done, it would come after x264 returned,
    /// at 0.8 or more of the call. On sliced threads the top band may be
    /// written after the other on a busy machine (two threads, cores taken):
    /// its first slice then comes later, and the lower band's wait for it.
    ///
    /// The bitrate leaves the VBV room for IDRs of 60-100 slices: on sliced
    /// threads x264's row-level VBV weighs in the other thread's progress, so
    /// how coarse a buffer-limited IDR comes out depends on scheduling (at
    /// 8 Mbit/s the same picture took 21 to 34 slices from run to run, and 11
    /// once on a loaded machine).
    @Test func slicesLeaveBeforeThePictureIsDone() throws {
        func firstPart(threads: Int) throws -> Double {
            let encoder = try H264Encoder(.init(width: 1280, height: 720, fps: 30, bitrateKbps: 24000, threads: threads,
                                                sliceMaxSize: 1100))
            var firsts: [Double] = []
            for frame in 0..<7 {
                let (_, parts, _, first) = try encodeInParts(encoder, detailedPicture(width: 1280, height: 720, frame: frame),
                                                                forceKeyframe: true)
                #expect(parts.count >= 20, "an IDR of a detailed 720p picture takes many slices, got \(parts.count) on \(threads) thread(s), frame \(frame)")
                firsts.append(first)
            }
            return firsts.sorted()[firsts.count / 2]
        }
        let oneThread = try firstPart(threads: 1)
        let twoThreads = try firstPart(threads: 2)
        #expect(oneThread < 0.3, "on one thread the first slice came at \(oneThread) of the encode call (median)")
        #expect(twoThreads < 0.6, "on sliced threads the first slice came at \(twoThreads) of the encode call (median)")
    }

    /// The receiver's early start: a frame's slices decoded as they come
    /// (`decodeStart`, a few at a time) and the rest when the frame is whole
    /// give, picture after picture, exactly what decoding each whole frame
    /// gives; a frame whose last slice came early is out at the end call
    /// with nothing left; and a frame begun and given up leaves the decoder
    /// ready for the next keyframe.
    @Test func aFrameDecodedAsItsSlicesComeIsTheSamePicture() throws {
        let (width, height) = (640, 360)
        let encoder = try H264Encoder(.init(width: width, height: height, fps: 30, bitrateKbps: 6000, threads: 1,
                                            sliceMaxSize: 1100))
        let whole = try H264Decoder()
        let early = try H264Decoder()
        var begunEarly = 0
        for frame in 0..<16 {
            let (_, parts, _, _) = try encodeInParts(encoder, detailedPicture(width: width, height: height, frame: frame),
                                                     forceKeyframe: frame == 12)
            let unit = parts.flatMap { $0 }
            let reference = try #require(whole.decode(unit), "frame \(frame) decodes whole")
            if frame == 10 {
                // Begun and given up (its last packets lost): frame 11, a P
                // frame, cannot follow; the keyframe 12 starts clean.
                #expect(early.decodeStart(parts.dropLast().flatMap { $0 }[...]))
                early.discardPartial()
                continue
            }
            if frame == 11 { continue }
            // Every frame's parts: the first two, then three at a time;
            // frame 5 hands over all of its slices early, nothing at the end.
            let ahead = frame == 5 ? parts.count : parts.count - 1
            var offset = 0
            for group in stride(from: 0, to: ahead, by: 3) {
                let bytes = parts[group..<min(ahead, group + 3)].flatMap { $0 }
                #expect(early.decodeStart(bytes[...]))
                offset += bytes.count
            }
            begunEarly += 1
            let picture = try #require(early.decode(unit[offset...]), "frame \(frame) decodes in parts")
            #expect(picture == reference)
            let (a, b) = (try #require(whole.lastPicture()), try #require(early.lastPicture()))
            #expect(a.storage == b.storage, "frame \(frame): the picture decoded in parts differs")
        }
        #expect(begunEarly == 14)
        #expect(early.errors == 0 && whole.errors == 0)
    }

    /// The rows of a picture begun in parts that the decoder calls final
    /// (the receiver converts them for its window while the rest is on its
    /// way) are already what they are when the picture is whole: the
    /// deblocking still to come changes none of them, with libavcodec's
    /// slice threads (which deblock a part of several slices once all are
    /// decoded: calling the last decoded row final fails here) and on one
    /// thread (row by row). They grow part by part, and decoding in parts
    /// gives the picture decoding whole gives. Share's own stream is not
    /// deblocked (x264's ultrafast preset), so ffmpeg's libx264 makes one
    /// that is.
    @Test(arguments: [1, 2], [false, true])
    func theRowsCalledFinalWhileAPictureIsDecodedAreTheRowsItEndsWith(decoderThreads: Int, deblocked: Bool) throws {
        let (width, height) = (640, 360)
        let frames = try deblocked ? Self.deblockedFrames(width: width, height: height, count: 8)
            : Self.ownFrames(width: width, height: height, count: 8)
        let decoder = try H264Decoder(threads: decoderThreads)
        let reference = try H264Decoder(threads: decoderThreads)
        /// Rows 0..<rows of the picture lent: luma, then each chroma row's U and V.
        func top(_ picture: PlanarPicture, rows: Int) -> [UInt8] {
            picture.withPlanes { y, yStride, u, uStride, v, vStride in
                var bytes: [UInt8] = []
                for row in 0..<rows { bytes += UnsafeBufferPointer(start: y + row * yStride, count: width) }
                for row in 0..<rows / 2 {
                    bytes += UnsafeBufferPointer(start: u + row * uStride, count: width / 2)
                    bytes += UnsafeBufferPointer(start: v + row * vStride, count: width / 2)
                }
                return bytes
            }
        }
        var partial = 0
        var compared = 0
        for (frame, slices) in frames.enumerated() {
            // Three slices a part (libavcodec deblocks a part of several
            // slices after decoding them all, one slice row by row).
            let parts = stride(from: 0, to: slices.count, by: 3).map { slices[$0..<min(slices.count, $0 + 3)].flatMap { $0 } }
            #expect(decoder.withRowsBegun { _, _ in true } == nil, "no picture is begun between frames")
            var seen: [(rows: Int, bytes: [UInt8])] = []
            for part in parts.dropLast() {
                #expect(decoder.decodeStart(part[...]))
                // Nothing before the first slice (a part of parameter sets).
                let (rows, bytes) = decoder.withRowsBegun { picture, final in (final, top(picture, rows: final)) } ?? (0, [])
                #expect(rows >= (seen.last?.rows ?? 0), "frame \(frame): final rows went back")
                if rows > 0 && rows < height { partial += 1 }
                seen.append((rows, bytes))
            }
            #expect(decoder.decode(parts.last!) != nil, "frame \(frame) decodes in parts")
            let whole = try #require(decoder.withLastPicture { top($0, rows: height) })
            #expect(reference.decode(parts.flatMap { $0 }) != nil)
            #expect(reference.withLastPicture { top($0, rows: height) } == whole, "frame \(frame): in parts, another picture")
            for (part, (rows, bytes)) in seen.enumerated() {
                let chroma = height * width
                let expected = Array(whole[0..<rows * width]) + Array(whole[chroma..<chroma + rows / 2 * width])
                let changed = bytes.indices.first { $0 >= expected.count || bytes[$0] != expected[$0] }
                    .map { $0 < rows * width ? "luma row \($0 / width)" : "a chroma row" }
                #expect(changed == nil && bytes.count == expected.count,
                        "frame \(frame), after part \(part): \(changed ?? "a row") of the \(rows) called final changed")
                compared += 1
            }
        }
        // On one thread libavcodec flags pictures decoded in parts as
        // concealed (decode_error_flags; so before rows were followed too);
        // the receiver decodes on two.
        #expect(decoder.errors == 0 || decoderThreads == 1)
        #expect(compared > 30 && partial > compared / 2, "\(partial) of \(compared) parts left part of the picture final")
    }

    /// Share's encoder's pictures, each in the parts it hands over.
    static func ownFrames(width: Int, height: Int, count: Int) throws -> [[[UInt8]]] {
        let encoder = try H264Encoder(.init(width: width, height: height, fps: 30, bitrateKbps: 6000, threads: 1,
                                            sliceMaxSize: 1100))
        return try (0..<count).map { try encodeInParts(encoder, detailedPicture(width: width, height: height, frame: $0)).parts }
    }

    /// ffmpeg's libx264 (veryfast, deblocked across slices: not its
    /// zerolatency tune, whose sliced threads stop at slice edges) of a
    /// noisy picture, intra every fourth, in slices of at most 1100 bytes:
    /// the deblocking changes pixels at every slice edge. Each picture's
    /// slices, the first with what precedes it.
    static func deblockedFrames(width: Int, height: Int, count: Int) throws -> [[[UInt8]]] {
        let dir = try TemporaryDirectory()
        let out = dir.path("deblocked.h264")
        let result = try run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=30",
                                        "-vf", "noise=alls=30:allf=t", "-frames:v", "\(count)", "-pix_fmt", "yuv420p",
                                        "-c:v", "libx264", "-preset", "veryfast", "-bf", "0", "-b:v", "1500k",
                                        "-x264-params", "aud=1:threads=1:keyint=4:slice-max-size=1100", "-f", "h264", "-y", out])
        guard result.status == 0 else { throw TestEnvironmentError("ffmpeg: \(result.stderr)") }
        return annexBAccessUnits([UInt8](try Data(contentsOf: URL(fileURLWithPath: out)))).map { unit in
            var parts: [[UInt8]] = [[]]
            for nal in AnnexB.nalUnits(in: unit) {
                let isSlice = (1...5).contains(unit[nal.lowerBound] & 0x1F)
                parts[parts.count - 1] += [0, 0, 0, 1] + unit[nal]
                if isSlice { parts.append([]) }
            }
            return parts.filter { !$0.isEmpty }
        }
    }

    /// A picture that takes few bytes (a plain one, moving a little) comes
    /// in one slice when slices end by size only, and in at least the
    /// asked-for number with `minimumSlices`, each part still a slice, the
    /// whole decoding to the same picture size.
    @Test func aSmallPictureIsStillCutIntoTheSlicesAsked() throws {
        func parts(minimumSlices: Int) throws -> [Int] {
            let encoder = try H264Encoder(.init(width: 1280, height: 720, fps: 30, bitrateKbps: 3000, threads: 1,
                                                sliceMaxSize: 4800, minimumSlices: minimumSlices))
            let decoder = try H264Decoder()
            var counts: [Int] = []
            for frame in 0..<8 {
                let image = ColorConversion.i420(fromBGRA: testPicture(width: 1280, height: 720, offset: frame * 2),
                                                 width: 1280, height: 720)
                let (_, pieces, ends, _) = try encodeInParts(encoder, image)
                #expect(ends.last == true)
                #expect(decoder.decode(pieces.flatMap { $0 })?.width == 1280)
                if frame > 0 { counts.append(pieces.count) }
            }
            #expect(decoder.errors == 0)
            return counts
        }
        #expect(try parts(minimumSlices: 1).allSatisfy { $0 == 1 }, "a plain picture fits one slice by size")
        let quartered = try parts(minimumSlices: 4)
        #expect(quartered.allSatisfy { $0 >= 4 }, "slices per picture: \(quartered)")
        #expect(throws: EncoderError.self) { try H264Encoder(.init(width: 320, height: 240, minimumSlices: 0)) }
    }
}
