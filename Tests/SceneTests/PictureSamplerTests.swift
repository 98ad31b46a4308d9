import Foundation
import ShareBase
import ShareColor
import ShareScene
import Testing

@Suite("Picture samples: which shown pictures a quality measurement keeps, and how")
struct PictureSamplerTests {
    /// Every tenth frame, the first time it is shown; repeats, unread
    /// numbers and other frames are not kept.
    @Test func keepsTheFirstShowingOfEveryNthFrame() {
        var schedule = PictureSampleSchedule(every: 10, after: [])
        let shown: [UInt32?] = [9, 10, 10, 11, nil, 20, 19, 30, 30, 40, 10]
        let kept = shown.enumerated().compactMap { index, frame in
            schedule.shown(frame: frame, at: .milliseconds(33 * index)).saveAsFrame
        }
        #expect(kept == [10, 20, 30, 40])
        var none = PictureSampleSchedule(every: 0, after: [])
        let decision = none.shown(frame: 0, at: .zero)
        #expect(decision.saveAsFrame == nil && !decision.hold, "every 0 keeps nothing by number")
    }

    /// What was on screen at an instant is the last picture shown at or
    /// before it: the schedule asks to hold each picture while an instant
    /// is pending, and names the instants the next picture comes after.
    @Test func anInstantKeepsThePictureShownAtIt() {
        var schedule = PictureSampleSchedule(every: 0, after: [.seconds(1), .seconds(5)])
        // A still screen: pictures at 0, 0.9 and 2.5 s, then none until 6 s.
        #expect(schedule.shown(frame: 0, at: .seconds(10)).hold, "the first picture is held")
        let second = schedule.shown(frame: 0, at: .milliseconds(10_900))
        #expect(second.heldWasShownAt.isEmpty && second.hold)
        let third = schedule.shown(frame: 0, at: .milliseconds(12_500))
        #expect(third.heldWasShownAt == [.seconds(1)], "the picture of 0.9 s was on screen at 1 s")
        #expect(third.hold, "5 s is still to come")
        let last = schedule.shown(frame: 0, at: .seconds(16))
        #expect(last.heldWasShownAt == [.seconds(5)] && !last.hold)
        #expect(schedule.finish(at: .seconds(20)).isEmpty)
    }

    /// A run that ends after an instant with no picture since: the held
    /// picture was on screen then. One that ends before it keeps nothing.
    @Test func theEndOfARunSettlesTheInstantsItReached() {
        var schedule = PictureSampleSchedule(every: 0, after: [.seconds(1), .seconds(5)])
        _ = schedule.shown(frame: 3, at: .seconds(2))
        #expect(schedule.finish(at: .milliseconds(4_000)) == [.seconds(1)])
        var unseen = PictureSampleSchedule(every: 0, after: [.seconds(1)])
        #expect(unseen.finish(at: .seconds(9)).isEmpty, "no picture, nothing on screen")
    }

    /// The sampler writes each kept picture as a one-picture Y4M file
    /// (header, planes as the decoder gave them) and lists them in
    /// index.json with their frame, instant and colour space.
    @Test func writesYUV4MPEGFilesAndAnIndex() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sampler-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sampler = try PictureSampler(directory: directory,
                                         schedule: PictureSampleSchedule(every: 2, after: [.milliseconds(50)]))
        let start = MonotonicTime(nanoseconds: 1_000_000_000)
        var copies = 0
        func picture(_ value: UInt8) -> I420Image {
            copies += 1
            var image = I420Image(width: 6, height: 4)
            image.withMutablePlanes { y, u, v in
                for i in 0..<24 { y[i] = value &+ UInt8(i) }
                for i in 0..<6 { u[i] = 100; v[i] = 200 }
            }
            return image
        }
        let hd = ColorSpace(matrix: .bt709, fullRange: false)
        for (index, frame) in [UInt32(0), 1, 2, 3].enumerated() {
            sampler.offer(frame: frame, keyframe: index == 0, colors: hd,
                          now: start + .milliseconds(40 * index)) { picture(UInt8(frame * 50)) }
        }
        let (saved, failures) = sampler.finish(now: start + .milliseconds(200))
        #expect(failures.isEmpty, "\(failures)")
        // Frame 2's showing, at 80 ms, settles the 50 ms instant first.
        #expect(saved.map(\.file) == ["frame-0.y4m", "after-50ms.y4m", "frame-2.y4m"])
        #expect(copies == 3, "only pictures kept or held are copied (frames 0, 1 and 2; none after 50 ms)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/frame-2.y4m")))
        let header = Array("YUV4MPEG2 W6 H4 F30:1 Ip A1:1 C420jpeg\nFRAME\n".utf8)
        #expect(Array(bytes.prefix(header.count)) == header)
        #expect(Array(bytes.dropFirst(header.count)) == picture(100).storage)
        // What was on screen at 50 ms is the picture shown at 40 ms: frame 1.
        let after = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/after-50ms.y4m")))
        #expect(after.dropFirst(header.count).first == 50)
        let index = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/index.json")))
        let entries = try #require(index as? [[String: Any]])
        #expect(entries.count == 3)
        #expect(entries[0]["frame"] as? Int == 0 && entries[0]["keyframe"] as? Bool == true)
        #expect(entries[0]["matrix"] as? String == "bt709" && entries[0]["fullRange"] as? Bool == false)
        #expect(entries[1]["afterSeconds"] as? Double == 0.05 && entries[1]["frame"] == nil)
    }

    /// A path that is a file cannot hold the pictures: said at the start, not at the first picture.
    @Test func aFileInTheWayIsRefusedUpFront() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sampler-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data([1])))
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(throws: SampleDirectoryError.self) {
            _ = try PictureSampler(directory: file, schedule: PictureSampleSchedule(every: 1, after: []))
        }
    }

    /// The reference pictures' PNG, read by an independent decoder
    /// (Python's zlib): chunk CRCs, the header and every pixel, across
    /// more than one stored deflate block.
    @Test func pngFilesReadBackExactly() throws {
        let (width, height) = (200, 120)  // 72 KB of rows: two stored blocks
        let pixels = (0..<(width * height)).map { UInt32(truncatingIfNeeded: $0 &* 2_654_435_761) & 0xFF_FFFF }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("png-\(UUID().uuidString).png").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(PNGImage.encode(rgb: pixels, width: width, height: height)).write(to: URL(fileURLWithPath: path))
        let check = """
        import struct, sys, zlib
        d = open(sys.argv[1], 'rb').read()
        assert d[:8] == b'\\x89PNG\\r\\n\\x1a\\n'
        at, idat, ihdr = 8, b'', None
        while at < len(d):
            n, kind = struct.unpack('>I4s', d[at:at + 8])
            body = d[at + 8:at + 8 + n]
            assert zlib.crc32(kind + body) == struct.unpack('>I', d[at + 8 + n:at + 12 + n])[0], kind
            ihdr = struct.unpack('>IIBBBBB', body) if kind == b'IHDR' else ihdr
            idat += body if kind == b'IDAT' else b''
            at += 12 + n
        w, h = ihdr[0], ihdr[1]
        raw = zlib.decompress(idat)
        rows = [raw[r * (1 + 3 * w):(r + 1) * (1 + 3 * w)] for r in range(h)]
        assert all(row[0] == 0 for row in rows)
        print(ihdr, sum(int.from_bytes(row[1 + 3 * x:4 + 3 * x], 'big') * (r * w + x + 1) for r, row in enumerate(rows) for x in range(w)) % 1000000007)
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", check, path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let sum = pixels.enumerated().reduce(0) { ($0 + Int($1.element) * ($1.offset + 1)) % 1_000_000_007 }
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output == "(\(width), \(height), 8, 2, 0, 0, 0) \(sum)\n", "\(output)")
    }
}
