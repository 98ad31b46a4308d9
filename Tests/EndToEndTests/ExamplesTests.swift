import Foundation
import TestSupport
import Testing

/// The programs in examples/, built by `swift build`, run for a few seconds
/// against the real tools, so none can rot.
@Suite("The examples run", .serialized, .alone)
struct ExamplesTests {
    /// Whether (x, y) of an RGB24 picture `width` wide is near `rgb`.
    private func near(_ pixels: [UInt8], width: Int, _ x: Int, _ y: Int, _ rgb: (Int, Int, Int)) -> Bool {
        let i = (y * width + x) * 3
        return abs(Int(pixels[i]) - rgb.0) < 40 && abs(Int(pixels[i + 1]) - rgb.1) < 40 && abs(Int(pixels[i + 2]) - rgb.2) < 40
    }

    /// push-frames' still squares, background and moving ball where they belong.
    private func showsTheScene(_ pixels: [UInt8]) -> Bool {
        near(pixels, width: 640, 80, 80, (230, 30, 30)) && near(pixels, width: 640, 560, 280, (30, 30, 230))
            && near(pixels, width: 640, 300, 330, (32, 32, 40))
    }

    /// push-frames renders its own pictures and a 440 Hz tone at 44.1 kHz
    /// and pushes them until Ctrl-C; `share recv` records: the squares at
    /// their places, the ball moving, the tone at its pitch, the stream's
    /// title told, and its end (the interrupted example says BYE).
    @Test func pushFramesIsReceivedWithItsPictureAndTone() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let port = freeUDPPort()
        let recording = dir.path("pushed.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "7"])
        usleep(300_000)
        let pusher = try ChildProcess(try ShareBinary.path("push-frames"), ["127.0.0.1:\(port)", key])
        usleep(4_000_000)
        kill(pusher.pid, SIGINT)
        let pushed = pusher.wait(timeout: 20)
        #expect(pushed.status == 0, "\(pushed.output)")
        #expect(pushed.output.contains("sent ") && !pushed.output.contains("sent 0 frames"), "\(pushed.output)")
        let received = receiver.wait(timeout: 20)
        #expect(received.output.contains("the sender calls its stream \"push-frames\""), "\(received.output)")
        #expect(received.output.contains("the sender ended the stream: sender stopped"), "\(received.output)")
        let (sizes, errors) = try recordedFrameSizes(recording)
        #expect(errors.isEmpty, "\(errors)")
        // Every frame the example sent is in the file (it says how many: on a
        // loaded machine fewer than 30 a second of its 4 s leave after the handshake).
        let sent = pushed.output.components(separatedBy: "sent ").dropFirst().first
            .flatMap { Int($0.prefix { $0.isNumber }) } ?? 0
        #expect(sent >= 60, "\(pushed.output)")
        #expect(sizes.count >= sent && Set(sizes) == ["640x360"], "\(sizes.count) frames of \(sent) sent: \(Set(sizes))")
        let last = try lastPictureRGB(recording, width: 640, height: 360)
        #expect(showsTheScene(last), "the squares and the background in the last picture")
        // The ball (green) is somewhere on its line.
        #expect((0..<640).contains { near(last, width: 640, $0, 200, (40, 220, 60)) }, "the ball on its line")
        let sound = try decodeAudio(recording)
        let hertz = try #require(toneFrequency(Array(sound.dropFirst(4800))))
        #expect(abs(hertz - 440) < 2, "\(hertz) Hz")
    }

    /// embedded-viewer takes the decoded pictures and writes a PNG a second:
    /// each one is the pushed scene.
    @Test func embeddedViewerWritesAPictureASecond() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let port = freeUDPPort()
        let pictures = dir.path("pictures")
        let viewer = try ChildProcess(try ShareBinary.path("embedded-viewer"), ["\(port)", key, pictures, "6"])
        usleep(300_000)
        let pusher = try ChildProcess(try ShareBinary.path("push-frames"), ["127.0.0.1:\(port)", key, "4"])
        #expect(pusher.wait(timeout: 20).status == 0)
        let viewed = viewer.wait(timeout: 20)
        #expect(viewed.status == 0, "\(viewed.output)")
        let files = try FileManager.default.contentsOfDirectory(atPath: pictures).filter { $0.hasSuffix(".png") }.sorted()
        #expect(files.count >= 3 && files.count <= 6, "\(files)")
        for file in files {
            let pixels = try lastPictureRGB(pictures + "/" + file, width: 640, height: 360)
            #expect(showsTheScene(pixels), "\(file) shows the scene")
        }
    }

    /// minimal-sender shares an X display (`$DISPLAY`) with `share recv`.
    @Test func minimalSenderSharesTheScreen() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let display = try VirtualDisplay(width: 640, height: 480)
        let scene = try ShareBinary.start(["scene", "--display", display.display])
        defer { scene.stop() }
        let port = freeUDPPort()
        let recording = dir.path("screen.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "6"])
        usleep(300_000)
        let sender = try ChildProcess(try ShareBinary.path("minimal-sender"), ["127.0.0.1:\(port)", key, "3"],
                                      environment: ["DISPLAY": display.display])
        let sent = sender.wait(timeout: 20)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 20)
        let (sizes, errors) = try recordedFrameSizes(recording)
        #expect(errors.isEmpty, "\(errors)")
        #expect(sizes.count >= 60 && Set(sizes) == ["640x480"], "\(sizes.count) frames: \(Set(sizes))")
    }
}
