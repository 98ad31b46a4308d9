import Foundation
import TestSupport
import Testing

/// Sharing part of a display with the real binaries: the picture sent is
/// the part asked for, at its size, and `--list` names what there is.
@Suite("End to end: a region, a window, the list", .serialized)
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
                                   (["--cursor", "sometimes"], "is not embed or none")] {
            let result = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--display", screen.name,
                                              "--srtp-key-file", key, "--audio", "none", "--duration", "1"] + options)
            #expect(result.status != 0 && result.output.contains(message), "\(options): \(result.output)")
        }
    }
}
