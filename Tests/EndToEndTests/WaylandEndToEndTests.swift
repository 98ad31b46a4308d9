import Foundation
import TestSupport
import Testing

/// Sharing a Wayland desktop: a headless GNOME session (Mutter with a
/// virtual monitor, PipeWire, XWayland for the drawing), captured through
/// GNOME's screen cast by the real `share send` run as the session's user.
@Suite("End to end: a GNOME Wayland desktop through PipeWire", .serialized, .alone)
struct WaylandEndToEndTests {
    /// Orange, #ff8000.
    static let orange: UInt32 = 0xff8000

    /// A GNOME session, a directory and a key file its user may use.
    static func stage() throws -> (GnomeSession, TemporaryDirectory, String) {
        let session = try GnomeSession()
        let dir = try TemporaryDirectory()
        session.lend(dir)
        let key = try ShareBinary.keyFile(in: dir)
        session.lend(file: key)
        return (session, dir, key)
    }

    /// The sender's statistics file, once it exists.
    static func stats(_ path: String) throws -> [String: Any] { try readStats(path) }

    /// A moving desktop (the scene at 30 fps through XWayland), an orange
    /// patch and a white one with the pointer over it: the pictures come
    /// at the rate the compositor draws and are nearly all decoded, the
    /// patch keeps its colour, and the pointer goes apart from the
    /// pictures for `share recv` to draw where a person moves it.
    @Test func aGnomeDesktopIsSentWithItsColoursAndItsPointerApart() throws {
        let (session, dir, key) = try Self.stage()
        let scene = try ShareBinary.start(["scene", "--display", session.xDisplay, "--fps", "30"])
        defer { scene.stop() }
        usleep(500_000)
        let client = try TestClient(display: session.xDisplay)
        _ = client.window(x: 40, y: 40, width: 160, height: 120, rgb: Self.orange, name: "orange")
        _ = client.window(x: 800, y: 400, width: 320, height: 240, rgb: 0xffffff, name: "white")
        let input = try session.remoteInput()
        input.move(x: 850, y: 450)
        let viewer = try VirtualDisplay(width: 1280, height: 720)
        let port = freeUDPPort()
        let recording = dir.path("gnome.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--display", viewer.display,
                                              "--no-audio", "--record", recording, "--duration", "20",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try session.start(["send", "127.0.0.1", "--port", "\(port)", "--key-file", key, "--audio", "none",
                                        "--cursor", "metadata", "--duration", "10", "--stats-json", dir.path("send.json")])
        #expect(sender.waitForOutput("session with", timeout: 10), "\(sender.output)")
        usleep(1_000_000)
        // Mutter tells the pointer's shape and place once it moves under a cast.
        input.move(x: 900, y: 500)
        func dark(around x: Int, _ y: Int) throws -> Int {
            try CaptureSourceEndToEndTests.darkPixels(on: viewer.display, around: x, y, in: dir)
        }
        #expect(try CaptureSourceEndToEndTests.settles { try dark(around: 900, 500) >= 10 }, "the pointer drawn at (900, 500)")
        input.move(x: 1050, y: 560)
        #expect(try CaptureSourceEndToEndTests.settles { try dark(around: 1050, 560) >= 10 }, "the pointer drawn at (1050, 560)")
        #expect(try CaptureSourceEndToEndTests.settles { try dark(around: 900, 500) == 0 }, "and no longer at (900, 500)")
        let sent = sender.wait(timeout: 30)
        #expect(sent.status == 0, "\(sent.output)")
        #expect(sent.output.contains("through GNOME's screen cast") && sent.output.contains("no dialog"),
                "the sender says plainly what it captures: \(sent.output)")
        _ = receiver.wait(timeout: 30)
        let sending = try Self.stats(dir.path("send.json"))
        let receiving = try Self.stats(dir.path("recv.json"))
        let (delivered, encoded) = (sending["framesDelivered"] as? Int ?? 0, sending["framesEncoded"] as? Int ?? 0)
        let decoded = receiving["framesDecoded"] as? Int ?? 0
        // The compositor draws the scene at up to 30 pictures a second; the
        // sender takes every one it is given (at most 30 a second) and the
        // receiver decodes them.
        let offered = min(delivered, 300)
        #expect(offered >= 150, "the compositor delivered \(delivered) pictures in 10 s")
        #expect(Double(encoded) >= 0.9 * Double(offered), "encoded \(encoded) of the \(delivered) delivered")
        #expect(Double(decoded) >= 0.95 * Double(encoded), "decoded \(decoded) of \(encoded)")
        #expect("\(receiving["width"] ?? 0)x\(receiving["height"] ?? 0)" == "1280x720", "\(receiving)")
        // The patch in the recording is orange; the pointer is not in the pictures.
        let pixel = dir.path("patch.rgb")
        _ = try run("ffmpeg", ["-v", "error", "-y", "-sseof", "-1", "-i", recording, "-vf", "crop=2:2:120:100", "-f", "rawvideo",
                               "-pix_fmt", "rgb24", pixel])
        let rgb = Array((FileManager.default.contents(atPath: pixel) ?? Data()).suffix(12).prefix(3)).map(Int.init)
        #expect(rgb.count == 3 && abs(rgb[0] - 255) <= 10 && abs(rgb[1] - 128) <= 10 && rgb[2] <= 10, "the patch is \(rgb), not orange")
        let picture = try CaptureSourceEndToEndTests.lastPicture(of: recording, in: dir)
        #expect(picture.count == 1280 * 720 && CaptureSourceEndToEndTests.darkPixels(picture, around: 1050, 560) == 0,
                "the recorded pictures hold no pointer")
    }

    /// Nothing moves: the compositor sends nothing, and the sender sends
    /// the still screen's refresh (about a picture a second, a few more
    /// while the first picture sharpens), not 30 a second.
    @Test func aStillGnomeDesktopSendsAboutAPictureASecond() throws {
        let session = try GnomeSession()
        let dir = try TemporaryDirectory()
        session.lend(dir)
        let client = try TestClient(display: session.xDisplay)
        _ = client.window(x: 0, y: 0, width: 1280, height: 720, rgb: 0x3060a0, name: "still")
        usleep(500_000)
        let sender = try session.start(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--sdp", dir.path("still.sdp"),
                                        "--audio", "none", "--duration", "8", "--stats-json", dir.path("send.json")])
        let sent = sender.wait(timeout: 30)
        #expect(sent.status == 0, "\(sent.output)")
        let listed = try session.start(["send", "--list"]).wait(timeout: 20)
        #expect(listed.status == 0 && listed.output.contains("Meta-0") && listed.output.contains("1280x720"),
                "--list names GNOME's monitor: \(listed.output)")
        let stats = try Self.stats(dir.path("send.json"))
        let encoded = stats["framesEncoded"] as? Int ?? 0
        #expect(encoded >= 6 && encoded <= 30, "\(encoded) pictures in 8 s of a still screen")
        #expect((stats["framesDelivered"] as? Int ?? 99) <= 5, "the compositor sent \(stats["framesDelivered"] ?? "?") pictures")
    }

    /// A still desktop sends nothing new, yet when the memory governor
    /// steps the picture down (its budget set under the footprint), the
    /// next pictures are the same desktop at the smaller size: the last
    /// picture, scaled.
    @Test func aStillDesktopKeepsItsPictureWhenThePictureGetsSmaller() throws {
        let (session, dir, key) = try Self.stage()
        let client = try TestClient(display: session.xDisplay)
        _ = client.window(x: 0, y: 0, width: 1280, height: 720, rgb: 0x3060a0, name: "still")
        usleep(500_000)
        let (port, recording) = (freeUDPPort(), dir.path("smaller.mkv"))
        let receiver = try ShareBinary.recorder(port: port, key: key, recording: recording, seconds: 16)
        usleep(300_000)
        let socket = dir.path("send.sock")
        let sender = try session.start(["send", "127.0.0.1", "--port", "\(port)", "--key-file", key, "--audio", "none",
                                        "--duration", "8", "--control", socket, "--stats-json", dir.path("send.json")])
        #expect(sender.waitForOutput("session with", timeout: 10), "\(sender.output)")
        usleep(1_500_000)
        let footprint = try CaptureSourceEndToEndTests.status(socket)["footprintBytes"] as? Int ?? 0
        let budget = max(1, (footprint - 3 << 19) >> 20)
        _ = try ShareBinary.run(["ctl", "budget", "\(budget)M", "--socket", socket])
        let sent = sender.wait(timeout: 30)
        _ = receiver.wait(timeout: 30)
        let stats = try Self.stats(dir.path("send.json"))
        #expect((stats["encodedHeight"] as? Int ?? 720) < 720, "stepped down under a \(budget) MiB budget: \(sent.output)")
        #expect((stats["framesDelivered"] as? Int ?? 99) <= 3, "the desktop sent nothing new: \(stats)")
        // The last picture recorded, at the smaller size, is the desktop.
        let pixel = dir.path("last.rgb")
        let decoded = try run("ffmpeg", ["-v", "error", "-y", "-i", recording, "-vf", "crop=2:2:iw/2:ih/2", "-f", "rawvideo",
                                         "-pix_fmt", "rgb24", pixel])
        let rgb = Array((FileManager.default.contents(atPath: pixel) ?? Data()).suffix(12).prefix(3)).map(Int.init)
        #expect(rgb.count == 3 && abs(rgb[0] - 0x30) <= 10 && abs(rgb[1] - 0x60) <= 10 && abs(rgb[2] - 0xa0) <= 10,
                "the smaller picture is \(rgb), not the desktop's (48, 96, 160): \(decoded.stderr)")
    }

    /// The monitor turned a quarter (its pictures now 720x1280): GNOME ends
    /// the cast, the sender casts the monitor again and goes on at the new
    /// size, and the receiver follows.
    @Test func aMonitorThatChangesSizeIsFollowed() throws {
        let (session, dir, key) = try Self.stage()
        let scene = try ShareBinary.start(["scene", "--display", session.xDisplay, "--fps", "15"])
        defer { scene.stop() }
        let input = try session.remoteInput()
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--duration", "16", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try session.start(["send", "127.0.0.1", "--port", "\(port)", "--key-file", key, "--audio", "none",
                                        "--duration", "9", "--stats-json", dir.path("send.json")])
        #expect(sender.waitForOutput("session with", timeout: 10), "\(sender.output)")
        usleep(2_000_000)
        input.rotate(quarterTurns: 1)
        let sent = sender.wait(timeout: 30)
        #expect(sent.status == 0, "goes on after the monitors changed: \(sent.output)")
        _ = receiver.wait(timeout: 30)
        let sending = try Self.stats(dir.path("send.json"))
        let receiving = try Self.stats(dir.path("recv.json"))
        #expect("\(sending["encodedWidth"] ?? 0)x\(sending["encodedHeight"] ?? 0)" == "720x1280", "\(sending)")
        #expect("\(receiving["width"] ?? 0)x\(receiving["height"] ?? 0)" == "720x1280", "\(receiving)")
        #expect((receiving["framesDecoded"] as? Int ?? 0) >= 30, "pictures after the turn too: \(receiving)")
    }

    /// Both ends on the PipeWire desktop, as its user: system sound and the
    /// microphone go through PulseAudio's API, which pipewire-pulse serves
    /// (a tone played into the session is what is recorded), and the
    /// receiver's window opens on the desktop through XWayland.
    @Test func soundAndTheReceiversWindowWorkOnAPipeWireDesktop() throws {
        let (session, dir, key) = try Self.stage()
        let wav = dir.path("tone.wav")
        try writeToneWAV(wav, hertz: 440, seconds: 14)
        let player = try session.start([wav], executable: "/usr/bin/paplay")
        defer { player.stop() }
        let port = freeUDPPort()
        let recording = dir.path("sound.mkv")
        // It plays nothing: played into the desktop it would be captured again, a loop.
        let receiver = try session.start(["recv", "--port", "\(port)", "--key-file", key, "--no-audio", "--record", recording,
                                          "--duration", "13", "--stats-json", dir.path("recv.json")])
        usleep(500_000)
        let sender = try session.start(["send", "127.0.0.1", "--port", "\(port)", "--key-file", key, "--audio", "both",
                                        "--duration", "9", "--stats-json", dir.path("send.json")])
        #expect(sender.waitForOutput("session with", timeout: 10), "\(sender.output)")
        let client = try TestClient(display: session.xDisplay)
        #expect(client.window(namedLike: "share") != nil, "the receiver's window on XWayland: \(receiver.output)")
        let sent = sender.wait(timeout: 30)
        #expect(sent.status == 0 && !sent.output.contains("sending without"), "both sound inputs start: \(sent.output)")
        let received = receiver.wait(timeout: 30)
        #expect(received.status == 0, "\(received.output)")
        let audio = try Self.stats(dir.path("recv.json"))["audio"] as? [String: Any] ?? [:]
        #expect(audio["streams"] as? Int == 2, "system sound and the microphone: \(audio)")
        let samples = try decodeAudio(recording)
        #expect(toneFrequency(samples).map { abs($0 - 440) <= 2 } == true, "the tone played on the desktop is what was sent")
    }

    /// The compositor going away ends the sender at once, with what happened.
    @Test func theDesktopEndingEndsTheSenderWithItsReason() throws {
        var session: GnomeSession? = try GnomeSession()
        let dir = try TemporaryDirectory()
        session!.lend(dir)
        let sender = try session!.start(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--sdp", dir.path("end.sdp"),
                                         "--audio", "none", "--duration", "30"])
        #expect(sender.waitForOutput("capturing", timeout: 15), "\(sender.output)")
        usleep(1_000_000)
        let ended = Date()
        session = nil
        let result = sender.wait(timeout: 15)
        #expect(Date().timeIntervalSince(ended) < 12, "the sender went on for \(Date().timeIntervalSince(ended)) s")
        #expect(result.status != 0, "\(result.output)")
        #expect(result.output.contains("screen cast"), "says the screen cast ended: \(result.output)")
    }
}
