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
