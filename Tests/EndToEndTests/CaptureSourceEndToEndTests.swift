import Foundation
import TestSupport
import Testing

/// A white 1280x720 screen to share, with the pointer over it, a display
/// of the same size for the receiver's window, and a key file.
private struct PointerStage {
    let dir: TemporaryDirectory
    let key: String
    let display: VirtualDisplay
    let viewer: VirtualDisplay
    let client: TestClient

    init() throws {
        dir = try TemporaryDirectory()
        key = try ShareBinary.keyFile(in: dir)
        display = try VirtualDisplay(width: 1280, height: 720)
        viewer = try VirtualDisplay(width: 1280, height: 720)
        client = try TestClient(display: display.display)
        _ = client.window(x: 0, y: 0, width: 1280, height: 720, rgb: 0xFFFFFF, name: "white")
    }

    /// Moves the pointer from `from` to `to` in ten steps 16 ms apart.
    func glide(from: (x: Int, y: Int), to: (Int, Int)) {
        for t in 1...10 {
            client.movePointer(x: from.x + (to.0 - from.x) * t / 10, y: from.y + (to.1 - from.y) * t / 10)
            usleep(16_000)
        }
    }
}

/// Sharing part of a display with the real binaries: the picture sent is
/// the part asked for, at its size, and `--list` names what there is.
@Suite("End to end: a region, a window, the list", .serialized, .alone)
struct CaptureSourceEndToEndTests {
    @Test func aRegionIsSentAtItsSizeAndRecorded() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 1280, height: 720)
        let port = freeUDPPort()
        let recording = dir.path("region.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "7", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                          "--audio", "none", "--region", "640x360+320+180", "--duration", "4",
                                          "--stats-json", dir.path("send.json")])
        #expect(sender.status == 0, "\(sender.output)")
        #expect(sender.output.contains("sending 640x360"), "\(sender.output)")
        _ = receiver.wait(timeout: 15)
        let probe = try probeVideo(recording)
        #expect(probe.width == 640 && probe.height == 360, "recorded \(probe.width)x\(probe.height)")
        let sent = try readStats(dir.path("send.json"))["framesEncoded"] as? Int ?? 0
        #expect(sent >= 100 && probe.videoFrames >= sent * 95 / 100, "recorded \(probe.videoFrames) of \(sent)")
    }

    /// A region under 16 pixels a side (a thin toolbar, a single pixel) is
    /// scaled up to the encoder's smallest picture, not refused by it.
    @Test func aRegionUnder16PixelsASideIsScaledUpToTheSmallestPicture() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 640, height: 480)
        for (region, picture) in [("300x9+10+20", "300x16"), ("1x1+0+0", "16x16")] {
            let port = freeUDPPort()
            let stats = dir.path("recv-\(picture).json")
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                                  "--duration", "4", "--stats-json", stats])
            usleep(300_000)
            let sender = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                              "--key-file", key, "--audio", "none", "--region", region, "--every-frame",
                                              "--duration", "1.5"])
            #expect(sender.status == 0, "\(region): \(sender.output)")
            #expect(sender.output.contains("as \(picture)"), "\(region): \(sender.output)")
            _ = receiver.wait(timeout: 15)
            let received = try readStats(stats)
            #expect((received["framesDecoded"] as? Int ?? 0) >= 20, "\(region): \(received)")
            #expect("\(received["width"] ?? 0)x\(received["height"] ?? 0)" == picture, "\(region): \(received)")
        }
    }

    /// A display with 10 bits a channel (depth 30) stores a pixel as
    /// x2R10G10B10, not BGRX: what it shows is sent in its own colours, and
    /// a receiver's window on one shows what was sent in them.
    @Test func aThirtyBitDisplayIsCapturedAndShownInItsColours() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        // Orange, #ff8000: 8 bits a channel, and 10 (0x3ff, 0x200, 0).
        let (orange, orange10): (UInt32, UInt32) = (0xff8000, 0x3ff << 20 | 0x200 << 10)
        let deep = try VirtualDisplay(width: 640, height: 480, depth: 30)
        let plain = try VirtualDisplay(width: 320, height: 240)
        let deepClient = try TestClient(display: deep.display)
        let plainClient = try TestClient(display: plain.display)
        _ = deepClient.window(x: 0, y: 0, width: 640, height: 480, rgb: orange10, name: "orange, 10 bits")
        _ = plainClient.window(x: 0, y: 0, width: 320, height: 240, rgb: orange, name: "orange, 8 bits")

        // Sent from the 30-bit display, recorded.
        var port = freeUDPPort()
        let recording = dir.path("deep.mkv")
        let recorder = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "4"])
        usleep(300_000)
        let fromDeep = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", deep.display,
                                            "--key-file", key, "--audio", "none", "--cursor", "none", "--duration", "1.5"])
        #expect(fromDeep.status == 0, "\(fromDeep.output)")
        _ = recorder.wait(timeout: 15)
        let pixelFile = dir.path("pixel.rgb")
        // Every picture's 2x2 pixels at (40, 40) (4:2:0 crops in pairs);
        // the last picture's first is looked at.
        _ = try run("ffmpeg", ["-v", "error", "-y", "-i", recording, "-vf", "crop=2:2:40:40", "-f", "rawvideo",
                               "-pix_fmt", "rgb24", pixelFile])
        let rgb = Array((FileManager.default.contents(atPath: pixelFile) ?? Data()).suffix(12).prefix(3)).map(Int.init)
        #expect(rgb.count == 3 && abs(rgb[0] - 255) <= 8 && abs(rgb[1] - 128) <= 8 && rgb[2] <= 8,
                "sent from 30 bits: \(rgb), not orange (255, 128, 0)")

        // Sent from the 24-bit display, shown in a window on the 30-bit one.
        port = freeUDPPort()
        let viewer = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--display", deep.display,
                                            "--no-audio", "--duration", "5"])
        usleep(300_000)
        let toDeep = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", plain.display,
                                            "--key-file", key, "--audio", "none", "--cursor", "none", "--duration", "4"])
        #expect(viewer.waitForOutput("receiving 320x240"), "\(viewer.output)")
        usleep(1_000_000)
        // The receiver's window is the top one at (0, 0), over the orange
        // one, black until its first picture.
        let shown = deepClient.pixel(x: 40, y: 40, within: 2) { $0 != orange10 && $0 & 0x3fff_ffff != 0 }
        let channels = shown.map { [Int($0 >> 20 & 0x3ff), Int($0 >> 10 & 0x3ff), Int($0 & 0x3ff)] } ?? []
        #expect(channels.count == 3 && abs(channels[0] - 0x3ff) <= 32 && abs(channels[1] - 0x200) <= 32 && channels[2] <= 32,
                "shown on 30 bits: \(channels), not orange (1023, 512, 0)")
        _ = toDeep.wait(timeout: 15)
        _ = viewer.wait(timeout: 15)
    }

    /// The receiver's window on a screen smaller than the picture opens
    /// made smaller to fit, and shows the whole picture; resized by the
    /// person, it shows it scaled to the new size, aspect kept, black
    /// around it, at once (the screen is still: no new picture comes).
    @Test func theReceiversWindowFitsTheScreenAndScalesWhenResized() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let shared = try VirtualDisplay(width: 640, height: 480)
        let small = try VirtualDisplay(width: 320, height: 240)
        // Four quadrants of four colours.
        let colours: [UInt32] = [0xff0000, 0x00ff00, 0x0000ff, 0xffff00]
        let painter = try TestClient(display: shared.display)
        for (index, colour) in colours.enumerated() {
            _ = painter.window(x: index % 2 * 320, y: index / 2 * 240, width: 320, height: 240, rgb: colour, name: "q\(index)")
        }
        let port = freeUDPPort()
        let viewer = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--display", small.display,
                                            "--no-audio", "--duration", "8"])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", shared.display,
                                            "--key-file", key, "--audio", "none", "--cursor", "none", "--duration", "7"])
        #expect(viewer.waitForOutput("receiving 640x480"), "\(viewer.output)")
        let looker = try TestClient(display: small.display)
        /// Whether two 0xRRGGBB colours are within 40 a channel.
        func near(_ got: UInt32, _ want: UInt32) -> Bool {
            for shift: UInt32 in [0, 8, 16] {
                let a = Int((got >> shift) & 0xff)
                let b = Int((want >> shift) & 0xff)
                if abs(a - b) > 40 { return false }
            }
            return true
        }
        /// The colour at (x, y) of the small screen, once it is near `want` (3 s at most).
        func colour(_ x: Int, _ y: Int, near want: UInt32) -> UInt32 {
            (looker.pixel(x: x, y: y) { near($0 & 0xffffff, want) } ?? 0) & 0xffffff
        }
        let window = try #require(looker.window(namedLike: "share"))
        let size = looker.size(of: window)
        #expect(size?.width == 320 && size?.height == 240, "fitted to the 320x240 screen: \(String(describing: size))")
        for (index, want) in colours.enumerated() {
            let (x, y) = (80 + index % 2 * 160, 60 + index / 2 * 120)
            let got = colour(x, y, near: want)
            #expect(near(got, want), "quadrant \(index) at half size: \(String(got, radix: 16))")
        }
        // Resized to 200x100 (as a person drags it): the picture is 133x100,
        // centred between black bars.
        looker.resize(window, width: 200, height: 100)
        let black = colour(10, 50, near: 0)
        #expect(near(black, 0), "black bar: \(String(black, radix: 16))")
        for (index, want) in colours.enumerated() {
            let (x, y) = (66 + index % 2 * 66, 25 + index / 2 * 50)
            let got = colour(x, y, near: want)
            #expect(near(got, want), "quadrant \(index) in 200x100: \(String(got, radix: 16))")
        }
        _ = sender.wait(timeout: 15)
        _ = viewer.wait(timeout: 15)
    }

    /// A shared window resized mid-stream: the sender follows (a new
    /// encoder, a new SPS in band) without ending the session; the
    /// receiver's recording holds pictures of both sizes and plays.
    @Test func aResizedWindowIsFollowedAndTheRecordingPlays() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 1280, height: 720)
        let client = try TestClient(display: screen.name)
        let window = client.window(x: 100, y: 100, width: 640, height: 360, rgb: 0x3366CC, name: "share e2e window")
        let port = freeUDPPort()
        let recording = dir.path("window.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "9", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                            "--audio", "none", "--window", "share e2e", "--every-frame", "--duration", "6",
                                            "--stats-json", dir.path("send.json")])
        usleep(2_500_000)
        client.resize(window, width: 480, height: 270)
        let sent = sender.wait(timeout: 15)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 15)
        let (sizes, errors) = try recordedFrameSizes(recording)
        #expect(errors.isEmpty, "\(errors)")
        #expect(sizes.first == "640x360" && sizes.last == "480x270", "sizes: \(Set(sizes))")
        #expect(sizes.filter { $0 == "480x270" }.count >= 60, "the smaller window for the rest of the run")
        let stats = try readStats(dir.path("send.json"))
        #expect(sizes.count >= (stats["framesEncoded"] as? Int ?? 0) * 95 / 100, "\(sizes.count) recorded")
    }

    /// The screen changing size mid-stream (RandR, `xrandr -s`, in Xephyr):
    /// the sender follows with a new encoder (a new SPS in band) and does
    /// not end; the recording holds both sizes and every frame plays.
    @Test func aScreenThatChangesSizeIsFollowedAndTheRecordingPlays() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let display = try VirtualDisplay(width: 1280, height: 720, resizable: true)
        let scene = try ShareBinary.start(["scene", "--display", display.display])
        defer { scene.stop() }
        let port = freeUDPPort()
        let recording = dir.path("screen.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "10", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", display.display, "--key-file", key,
                                            "--audio", "none", "--duration", "7", "--stats-json", dir.path("send.json")])
        usleep(2_500_000)
        try display.resize(width: 1024, height: 768)
        let sent = sender.wait(timeout: 15)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 15)
        let (sizes, errors) = try recordedFrameSizes(recording)
        #expect(errors.isEmpty, "\(errors)")
        #expect(sizes.first == "1280x720" && sizes.last == "1024x768", "sizes: \(Set(sizes))")
        #expect(sizes.filter { $0 == "1024x768" }.count >= 60, "the new size for the rest of the run")
        let stats = try readStats(dir.path("send.json"))
        #expect(stats["encodedWidth"] as? Int == 1024 && stats["encodedHeight"] as? Int == 768, "\(stats)")
        #expect(sizes.count >= (stats["framesEncoded"] as? Int ?? 0) * 95 / 100, "\(sizes.count) recorded")
    }

    /// Small changes over a still screen (a small window moving, the
    /// pointer moving) are grabbed in their bands only and x264 is told
    /// every other macroblock is unchanged: the picture received must still
    /// be the screen, block for block, with nothing left behind.
    @Test func smallChangesArriveWithNothingLeftBehind() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let display = try VirtualDisplay(width: 1280, height: 720)
        let scene = try ShareBinary.start(["scene", "--display", display.display, "--static"])
        defer { scene.stop() }
        let client = try TestClient(display: display.display)
        let port = freeUDPPort()
        let recording = dir.path("small.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "9", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", display.display, "--key-file", key,
                                            "--audio", "none", "--duration", "6", "--stats-json", dir.path("send.json")])
        usleep(1_000_000)
        let window = client.window(x: 100, y: 100, width: 40, height: 30, rgb: 0xFFFF00, name: "mover")
        for step in 0..<30 {
            client.move(window, x: 100 + step * 33, y: 100 + step * 17)
            client.movePointer(x: 1100 - step * 30, y: 600 - step * 15)
            usleep(60_000)
        }
        usleep(1_500_000)  // still again: the last picture settles
        let screen = dir.path("screen.gray")
        let grabbed = try run("ffmpeg", ["-v", "error", "-f", "x11grab", "-video_size", "1280x720", "-i", display.display,
                                         "-frames:v", "1", "-pix_fmt", "gray", "-f", "rawvideo", "-y", screen])
        #expect(grabbed.status == 0, "\(grabbed.stderr)")
        let sent = sender.wait(timeout: 15)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 15)
        let last = dir.path("last.gray")
        let decoded = try run("ffmpeg", ["-v", "error", "-i", recording, "-update", "1", "-pix_fmt", "gray",
                                         "-f", "image2", "-c:v", "rawvideo", "-y", last])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let expected = try [UInt8](Data(contentsOf: URL(fileURLWithPath: screen)))
        let received = try [UInt8](Data(contentsOf: URL(fileURLWithPath: last)))
        try #require(expected.count == 1280 * 720 && received.count == 1280 * 720, "\(expected.count), \(received.count)")
        // The worst 16x16 block: its mean difference in luma.
        var worst = (difference: 0.0, x: 0, y: 0)
        for by in stride(from: 0, to: 720, by: 16) {
            for bx in stride(from: 0, to: 1280, by: 16) {
                var sum = 0
                for y in by..<(by + 16) { for x in bx..<(bx + 16) { sum += abs(Int(expected[y * 1280 + x]) - Int(received[y * 1280 + x])) } }
                let mean = Double(sum) / 256
                if mean > worst.difference { worst = (mean, bx, by) }
            }
        }
        #expect(worst.difference < 12, "the worst block, at \(worst.x),\(worst.y), differs by \(worst.difference) on average")
        let stats = try readStats(dir.path("send.json"))
        let (grabbedBands, kept) = (stats["bandsGrabbed"] as? Int ?? 0, stats["bandsKept"] as? Int ?? 0)
        #expect(grabbedBands * 4 < (grabbedBands + kept) * 3, "bands kept: \(grabbedBands) grabbed, \(kept) kept")
    }

    /// `--cursor metadata`: the pointer moving over a still screen costs no
    /// picture (nothing grabbed, only the still screen's refresh encoded);
    /// `share recv` draws it over the picture in its window where it is,
    /// and the pictures themselves do not hold it.
    @Test func thePointerSentApartIsDrawnByTheReceiverAndCostsNoPicture() throws {
        let stage = try PointerStage()
        let (dir, key, display, viewer, client) = (stage.dir, stage.key, stage.display, stage.viewer, stage.client)
        client.movePointer(x: 100, y: 100)
        let port = freeUDPPort()
        let recording = dir.path("pointer.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--display", viewer.display,
                                              "--no-audio", "--record", recording, "--duration", "18",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        // Long enough for the steps below on a loaded machine (each grabs
        // the viewer's screen twice or more with ffmpeg): its status is read after them.
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", display.display, "--key-file", key,
                                            "--audio", "none", "--cursor", "metadata", "--duration", "14",
                                            "--control", dir.path("send.sock"), "--stats-json", dir.path("send.json")])
        usleep(1_500_000)
        func dark(around x: Int, _ y: Int) throws -> Int { try Self.darkPixels(on: viewer.display, around: x, y, in: dir) }
        let before = try Self.status(dir.path("send.sock"))
        let beganMoving = Date()
        var was = (x: 100, y: 100)
        for (step, spot) in [(900, 500), (300, 600), (640, 80), (1200, 300)].enumerated() {
            stage.glide(from: was, to: spot)
            usleep(200_000)
            #expect(try Self.settles { try dark(around: spot.0, spot.1) >= 10 }, "step \(step): the pointer drawn at \(spot)")
            #expect(try Self.settles { try dark(around: was.x, was.y) == 0 }, "step \(step): and not left at \(was)")
            was = (spot.0, spot.1)
        }
        let after = try Self.status(dir.path("send.sock"))
        let moving = Date().timeIntervalSince(beganMoving)
        let sent = sender.wait(timeout: 25)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 25)
        // Seconds of a moving pointer (about four; more on a loaded machine):
        // the still screen's refresh (one a second), not 30 pictures a second.
        let encoded = (after["framesEncoded"] as? Int ?? 0) - (before["framesEncoded"] as? Int ?? 0)
        #expect(Double(encoded) <= 2 * max(4, moving), "\(encoded) pictures in \(moving) s while only the pointer moved")
        let grabbed = (after["bandsGrabbed"] as? Int ?? -1) - (before["bandsGrabbed"] as? Int ?? 0)
        #expect(grabbed == 0, "nothing on screen changed, nothing was grabbed: \(grabbed) bands")
        // The pictures hold no pointer: the recording's last one is white where it was left.
        let picture = try Self.lastPicture(of: recording, in: dir)
        #expect(picture.count == 1280 * 720 && picture[300 * 1280 + 1200] > 200 && picture[302 * 1280 + 1203] > 200)
    }

    /// The sender's statistics, asked over its control socket.
    static func status(_ socket: String) throws -> [String: Any] {
        let answer = try ShareBinary.run(["ctl", "status", "--socket", socket]).output
        let object = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]
        return object?["statistics"] as? [String: Any] ?? [:]
    }

    /// Dark pixels around (x, y) of a 1280x720 gray picture.
    static func darkPixels(_ pixels: [UInt8], around x: Int, _ y: Int) -> Int {
        var count = 0
        for dy in -12...12 {
            for dx in -12...12 where (0..<1280).contains(x + dx) && (0..<720).contains(y + dy) {
                if pixels[(y + dy) * 1280 + x + dx] < 128 { count += 1 }
            }
        }
        return count
    }

    /// Dark pixels of a 1280x720 display's screen around (x, y), its own
    /// pointer left out (a receiver's window sits at 0,0 of its display).
    static func darkPixels(on display: String, around x: Int, _ y: Int, in dir: TemporaryDirectory) throws -> Int {
        let grab = dir.path("viewer.gray")
        let result = try run("ffmpeg", ["-v", "error", "-f", "x11grab", "-draw_mouse", "0", "-video_size", "1280x720",
                                        "-i", display, "-frames:v", "1", "-pix_fmt", "gray", "-f", "rawvideo", "-y", grab])
        guard result.status == 0 else { throw TestEnvironmentError("x11grab: \(result.stderr)") }
        return darkPixels(try [UInt8](Data(contentsOf: URL(fileURLWithPath: grab))), around: x, y)
    }

    /// The last picture of a 1280x720 recording, gray.
    static func lastPicture(of recording: String, in dir: TemporaryDirectory) throws -> [UInt8] {
        let last = dir.path("last.gray")
        let decoded = try run("ffmpeg", ["-v", "error", "-i", recording, "-update", "1", "-pix_fmt", "gray",
                                         "-f", "image2", "-c:v", "rawvideo", "-y", last])
        guard decoded.status == 0 else { throw TestEnvironmentError("decoding \(recording): \(decoded.stderr)") }
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: last)))
    }

    /// Whether `condition` holds, looked at again for a second at most
    /// (a loaded machine draws late).
    static func settles(_ condition: () throws -> Bool) throws -> Bool {
        let until = Date().addingTimeInterval(1)
        while try !condition() {
            guard Date() < until else { return false }
            usleep(50_000)
        }
        return true
    }

    /// By default (`--cursor auto`) the pointer goes apart once the
    /// receiver says it draws it: a `share recv` showing the picture, so a
    /// pointer moving over a still screen costs no picture and the window
    /// shows it where it is. A `share recv` that records says it does not:
    /// the pointer stays in the pictures, and so in the recording.
    @Test func byDefaultThePointerGoesApartForAWindowAndIntoTheRecording() throws {
        let stage = try PointerStage()
        let (dir, key, display, viewer, client) = (stage.dir, stage.key, stage.display, stage.viewer, stage.client)
        for recording in [nil, dir.path("pointer.mkv")] {
            client.movePointer(x: 200, y: 200)
            let port = freeUDPPort()
            let socket = dir.path(recording == nil ? "window.sock" : "recording.sock")
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--display", viewer.display,
                                                  "--no-audio", "--duration", "12"] + (recording.map { ["--record", $0] } ?? []))
            usleep(300_000)
            let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", display.display,
                                                "--key-file", key, "--audio", "none", "--duration", "8", "--control", socket])
            // The receiver's first report comes within a second of the first picture.
            usleep(3_000_000)
            let before = try Self.status(socket)
            let beganMoving = Date()
            var was = (x: 200, y: 200)
            for spot in [(900, 500), (300, 600), (640, 300)] {
                stage.glide(from: was, to: spot)
                usleep(200_000)
                #expect(try Self.settles { try Self.darkPixels(on: viewer.display, around: spot.0, spot.1, in: dir) >= 10 },
                        "\(recording == nil ? "window" : "recording"): the pointer shown at \(spot)")
                was = (spot.0, spot.1)
            }
            let after = try Self.status(socket)
            let moving = Date().timeIntervalSince(beganMoving)
            let sent = sender.wait(timeout: 20)
            #expect(sent.status == 0, "\(sent.output)")
            _ = receiver.wait(timeout: 20)
            let encoded = (after["framesEncoded"] as? Int ?? 0) - (before["framesEncoded"] as? Int ?? 0)
            let grabbed = (after["bandsGrabbed"] as? Int ?? -1) - (before["bandsGrabbed"] as? Int ?? 0)
            if let recording {
                #expect(before["pointerSentApart"] as? Bool == false && after["pointerSentApart"] as? Bool == false,
                        "a recording receiver: \(before["pointerSentApart"] ?? "none"), \(after["pointerSentApart"] ?? "none")")
                // A picture of the pointer moved grabs its old and new places
                // again: one at least for each of the three moves, however
                // many steps a loaded machine's capture took together.
                #expect(grabbed >= 3 && encoded >= 3, "the pointer in the pictures: \(grabbed) bands grabbed, \(encoded) pictures")
                // The recording's last picture holds the pointer where it was left.
                let picture = try Self.lastPicture(of: recording, in: dir)
                #expect(picture.count == 1280 * 720 && Self.darkPixels(picture, around: 640, 300) >= 10)
            } else {
                #expect(before["pointerSentApart"] as? Bool == true && after["pointerSentApart"] as? Bool == true,
                        "a window: \(before["pointerSentApart"] ?? "none"), \(after["pointerSentApart"] ?? "none")")
                // Nothing grabbed, and the still screen's refresh (about one a second), not 30 pictures a second.
                #expect(grabbed == 0, "nothing on screen changed, nothing was grabbed: \(grabbed) bands")
                #expect(Double(encoded) <= 2 * max(4, moving), "\(encoded) pictures in \(moving) s while only the pointer moved")
            }
        }
    }

    @Test func theListNamesMonitorsAndWindowsAndBadChoicesAreRefused() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 640, height: 480)
        let list = try ShareBinary.run(["send", "--list", "--display", screen.name])
        #expect(list.status == 0, "\(list.output)")
        #expect(list.output.contains("monitors (--monitor NAME or INDEX):") && list.output.contains("640x480+0+0"), "\(list.output)")
        #expect(list.output.contains("windows (--window ID or NAME):"))
        for (options, message) in [(["--region", "700x100+0+0"], "not within the 640x480 screen"),
                                   (["--region", "wide"], "is not WxH+X+Y"),
                                   (["--monitor", "HDMI-9"], "no monitor HDMI-9"),
                                   (["--window", "no such window"], "no window named"),
                                   (["--region", "10x10+0+0", "--monitor", "0"], "share one thing"),
                                   (["--cursor", "sometimes"], "is not auto, embed, metadata or none")] {
            let result = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--display", screen.name,
                                              "--srtp-key-file", key, "--audio", "none", "--duration", "1"] + options)
            #expect(result.status != 0 && result.output.contains(message), "\(options): \(result.output)")
        }
    }
}
