import Foundation
import TestSupport
import Testing

/// The real thing: an Xvfb display with moving content, the `share` binary,
/// real UDP on loopback, and ffmpeg and GStreamer as third-party peers.
@Suite("End to end: share, ffmpeg and GStreamer over SRTP", .serialized)
struct EndToEndTests {
    /// A display of `width` x `height` with the demo scene moving on it.
    final class Screen: @unchecked Sendable {
        let display: VirtualDisplay
        let scene: ChildProcess
        init(width: Int = 1280, height: Int = 720) throws {
            display = try VirtualDisplay(width: width, height: height)
            scene = try ShareBinary.start(["scene", "--display", display.display])
            usleep(200_000)
        }
        var name: String { display.display }
    }

    @Test func shareToShareAt720p30ShowsEveryFrameAndRecords() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try Screen()
        let viewer = try VirtualDisplay(width: 1280, height: 720)
        let port = freeUDPPort()
        let recording = dir.path("out.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--display", viewer.display,
                                              "--record", recording, "--duration", "13", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file",
                                          key, "--duration", "10", "--stats-json", dir.path("send.json")])
        #expect(sender.status == 0, "\(sender.output)")
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let sent = try readStats(dir.path("send.json"))
        let got = try readStats(dir.path("recv.json"))
        let framesSent = sent["framesEncoded"] as? Int ?? 0
        let shown = got["framesShown"] as? Int ?? 0
        #expect(framesSent >= 280, "the sender kept 30 fps: \(sent)")
        #expect(Double(shown) >= 0.99 * Double(framesSent), "shown \(shown) of \(framesSent)")
        #expect(got["decodeErrors"] as? Int == 0)
        let latency = got["captureToDisplay"] as? [String: Any]
        #expect((latency?["p50"] as? Double ?? 1e9) < 100, "latency \(String(describing: latency))")
        let probe = try probeVideo(recording)
        #expect(probe.width == 1280 && probe.height == 720, "recorded \(probe.width)x\(probe.height); sender said: \(sender.output)")
        #expect(probe.videoFrames == got["framesRecorded"] as? Int, "ffprobe reads every recorded frame")
        #expect(Double(probe.videoFrames) >= 0.99 * Double(framesSent))
    }

    @Test func ffmpegReceivesOurStreamFromOurSDP() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try Screen()
        let port = freeUDPPort()
        let sdp = dir.path("stream.sdp")
        // Write the SDP first (a short run to a port nobody reads yet), then start ffmpeg, then the real stream.
        _ = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--srtp-key-file",
                                 key, "--duration", "0.2", "--sdp", sdp])
        let md5 = dir.path("frames.md5")
        let ffmpeg = try ChildProcess("ffmpeg", ["-hide_banner", "-nostdin", "-loglevel", "error",
                                                 "-protocol_whitelist", "file,udp,rtp,srtp,crypto", "-i", sdp,
                                                 "-f", "framemd5", "-y", md5])
        usleep(800_000)
        let sender = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--srtp-key-file",
                                          key, "--duration", "10", "--stats-json", dir.path("send.json")])
        #expect(sender.status == 0, "\(sender.output)")
        let result = ffmpeg.wait(timeout: 8)  // ffmpeg ends on our RTCP BYE
        let decoded = (try? String(contentsOfFile: md5, encoding: .utf8))?.split(separator: "\n").filter { $0.hasPrefix("0,") }.count ?? 0
        let framesSent = try readStats(dir.path("send.json"))["framesEncoded"] as? Int ?? 0
        #expect(framesSent >= 280)
        #expect(Double(decoded) >= 0.95 * Double(framesSent), "ffmpeg decoded \(decoded) of \(framesSent)")
        #expect(!result.output.lowercased().contains("error"), "ffmpeg reported: \(result.output)")
    }

    /// GStreamer's sdpdemux takes SRTP keys only through MIKEY, so GStreamer
    /// receives with an srtpdec pipeline built from our SDP's a=ssrc and a=crypto.
    /// It joins without asking for a keyframe: with periodic keyframes it
    /// starts at the next one (every 30 frames here); with intra refresh (the
    /// default) at the first sweep that begins after it joined, whole once
    /// that sweep (30 frames) has crossed the picture.
    @Test(arguments: [true, false])
    func gstreamerReceivesOurStream(periodicKeyframes: Bool) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try Screen()
        let port = freeUDPPort()
        let sdp = dir.path("stream.sdp")
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--srtp-key-file",
                                            key, "--duration", "9", "--keyint", "30", "--sdp", sdp,
                                            "--stats-json", dir.path("send.json")]
                                           + (periodicKeyframes ? ["--periodic-keyframes"] : []))
        usleep(300_000)
        let text = try String(contentsOfFile: sdp, encoding: .utf8)
        let ssrcLine = try #require(text.components(separatedBy: "\r\n").first { $0.hasPrefix("a=ssrc:") })
        let ssrc = String(ssrcLine.dropFirst("a=ssrc:".count).prefix { $0 != " " })
        let inline = try ShareBinary.inlineKey(key)
        let hexKey = Data(base64Encoded: inline)!.map { String(format: "%02x", $0) }.joined()
        let recording = dir.path("gst.mkv")
        let caps = "application/x-srtp,media=(string)video,clock-rate=(int)90000,encoding-name=(string)H264,payload=(int)96,"
            + "ssrc=(uint)\(ssrc),srtp-key=(buffer)\(hexKey),srtp-cipher=(string)aes-128-icm,srtp-auth=(string)hmac-sha1-80,"
            + "srtcp-cipher=(string)aes-128-icm,srtcp-auth=(string)hmac-sha1-80"
        let gst = try ChildProcess("gst-launch-1.0", [
            "-q", "-e", "udpsrc", "port=\(port)", "caps=\(caps)", "!", "srtpdec", "name=srtp",
            // rtcp-mux: srtpdec hands our sender reports to its RTCP pad.
            "srtp.rtcp_src", "!", "fakesink", "async=false",
            "srtp.rtp_src", "!", "rtpjitterbuffer", "latency=50", "!",
            "rtph264depay", "!", "h264parse", "!", "matroskamux", "streamable=true", "!", "filesink", "location=\(recording)",
        ])
        let sent = sender.wait(timeout: 20)
        #expect(sent.status == 0, "\(sent.output)")
        usleep(500_000)
        gst.stop(signal: SIGINT, timeout: 5)
        let framesSent = try readStats(dir.path("send.json"))["framesEncoded"] as? Int ?? 0
        let probe = try probeVideo(recording)
        // GStreamer joins ~0.4 s into the stream; from its first keyframe or
        // recovery point on, every frame must arrive.
        #expect(framesSent >= 260)
        let wait = periodicKeyframes ? 45 : 75
        #expect(probe.videoFrames >= framesSent - wait, "GStreamer got \(probe.videoFrames) of \(framesSent): \(gst.output)")
        let decode = try run("ffmpeg", ["-v", "error", "-i", recording, "-f", "null", "-"])
        #expect(decode.status == 0 && !decode.stderr.contains("error"), "\(decode.stderr)")
    }

    @Test(arguments: ["mkv", "mp4"])
    func gstreamerSendsToShare(container: String) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let inline = try ShareBinary.inlineKey(key)
        let hexKey = Data(base64Encoded: inline)!.map { String(format: "%02x", $0) }.joined()
        let port = freeUDPPort()
        let sdp = dir.path("gst.sdp")
        try """
            v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=gstreamer\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
            m=video \(port) RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n\
            a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(inline)\r\n
            """.write(toFile: sdp, atomically: true, encoding: .utf8)
        chmod(sdp, 0o600)  // it holds the key
        let recording = dir.path("gst.\(container)")
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--no-window", "--record", recording, "--duration", "14",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let gst = try ChildProcess("gst-launch-1.0", [
            "-q", "videotestsrc", "num-buffers=300", "is-live=true", "pattern=ball", "!",
            "video/x-raw,width=1280,height=720,framerate=30/1", "!",
            "x264enc", "tune=zerolatency", "speed-preset=ultrafast", "key-int-max=60", "!",
            "rtph264pay", "config-interval=-1", "pt=96", "mtu=1200", "!",
            "application/x-rtp,ssrc=(uint)4242", "!",
            "srtpenc", "key=\(hexKey)", "rtp-cipher=aes-128-icm", "rtp-auth=hmac-sha1-80",
            "rtcp-cipher=aes-128-icm", "rtcp-auth=hmac-sha1-80", "!",
            "udpsink", "host=127.0.0.1", "port=\(port)",
        ])
        let sent = gst.wait(timeout: 30)
        #expect(sent.status == 0, "gst-launch: \(sent.output)")
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        #expect((stats["framesDecoded"] as? Int ?? 0) >= 285, "\(stats)")
        #expect(stats["decodeErrors"] as? Int == 0)
        let probe = try probeVideo(recording)
        #expect(probe.videoFrames >= 285 && probe.codec == "h264", "\(probe.errors)")
    }

    /// ffmpeg's arguments for sending its 720p30 test picture over SRTP
    /// (a fresh key) to `port` for `seconds`, a keyframe every
    /// `keyframeInterval` frames, `rtp` added to its RTP muxer's options;
    /// and its SDP, written by a short run of the same (ffmpeg writes it as
    /// it starts) and made mode 0600 (ffmpeg writes it readable by all; it
    /// holds the key).
    private func ffmpegSRTPSender(in dir: TemporaryDirectory, port: Int, seconds: Int, keyframeInterval: Int,
                                  rtp: [String] = []) throws -> (arguments: [String], sdp: String) {
        let inline = try ShareBinary.inlineKey(try ShareBinary.keyFile(in: dir))
        let sdp = dir.path("ffmpeg.sdp")
        func arguments(duration: String) -> [String] {
            ["-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
             "-i", "testsrc=size=1280x720:rate=30", "-t", duration, "-c:v", "libx264", "-preset", "ultrafast",
             "-tune", "zerolatency", "-g", "\(keyframeInterval)", "-f", "rtp"] + rtp
                + ["-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", inline, "-sdp_file", sdp,
                   "srtp://127.0.0.1:\(port)"]
        }
        _ = try ChildProcess("ffmpeg", arguments(duration: "0.1")).wait(timeout: 10)
        chmod(sdp, 0o600)
        return (arguments(duration: "\(seconds)"), sdp)
    }

    @Test func ffmpegSendsToShare() throws {
        let dir = try TemporaryDirectory()
        let (ffmpegArguments, sdp) = try ffmpegSRTPSender(in: dir, port: freeUDPPort(), seconds: 8, keyframeInterval: 60)
        let recording = dir.path("ffmpeg.mkv")
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--no-window", "--record", recording, "--duration", "11",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ChildProcess("ffmpeg", ffmpegArguments).wait(timeout: 30)
        #expect(sender.status == 0, "ffmpeg: \(sender.output)")
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        #expect((stats["framesDecoded"] as? Int ?? 0) >= 228, "\(stats)")  // 95% of 240
        #expect(stats["decodeErrors"] as? Int == 0)
        let probe = try probeVideo(recording)
        #expect(probe.videoFrames >= 228, "\(probe.errors)")
    }

    /// A static key carries no SRTP rollover counter: a receiver that opens
    /// the SDP after the sender's sequence numbers wrapped would assume 0
    /// and authenticate nothing (ffmpeg and GStreamer do). ffmpeg starts its
    /// sequence 136 packets short of the wrap; `share recv` joins 3 s later,
    /// finds the counter from the first packet's tag and shows the stream.
    @Test func aReceiverJoiningAfterTheSendersSequenceWrappedShowsTheStream() throws {
        let dir = try TemporaryDirectory()
        let (ffmpegArguments, sdp) = try ffmpegSRTPSender(in: dir, port: freeUDPPort(), seconds: 9, keyframeInterval: 30,
                                                          rtp: ["-seq", "65400"])
        let sender = try ChildProcess("ffmpeg", ffmpegArguments)
        sleep(3)
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--no-window", "--duration", "6",
                                              "--stats-json", dir.path("recv.json")])
        #expect(sender.wait(timeout: 30).status == 0)
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        // About 6 s x 30 frames reach it; the first keyframe comes within a second.
        #expect((stats["framesDecoded"] as? Int ?? 0) >= 120, "\(stats)")
        #expect(stats["streamsResumed"] as? Int == 1 && stats["decodeErrors"] as? Int == 0, "\(stats)")
    }

    @Test(arguments: ["mkv", "mp4"])
    func recordingStaysPlayableAfterKillDashNine(container: String) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try Screen(width: 640, height: 480)
        let port = freeUDPPort()
        let recording = dir.path("killed.\(container)")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window",
                                              "--record", recording])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                            "--key-file", key, "--duration", "8"])
        sleep(4)
        kill(receiver.pid, SIGKILL)
        _ = receiver.wait(timeout: 5)
        sender.stop()
        let probe = try probeVideo(recording)
        // About 4 s at 30 fps were written before the kill.
        #expect(probe.videoFrames >= 90, "ffprobe read \(probe.videoFrames) frames: \(probe.errors)")
        #expect(probe.width == 640 && probe.height == 480)
        // Every frame in the file decodes: ffmpeg reports no error reading it to the end.
        let decode = try run("ffmpeg", ["-v", "error", "-i", recording, "-f", "null", "-"])
        #expect(decode.status == 0, "\(decode.stderr)")
    }

    /// A receiver that joins mid-stream cannot decode until a keyframe: it
    /// sends PLI and the sender answers at once, long before the next
    /// scheduled keyframe (5 s away by default). With a static key (no
    /// handshake, which would bring a keyframe of its own).
    @Test func lateReceiverGetsAKeyframeThroughPLI() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try Screen(width: 640, height: 480)
        let port = freeUDPPort()
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--srtp-key-file",
                                            key, "--duration", "6", "--stats-json", dir.path("send.json")])
        sleep(2)
        let received = try ShareBinary.run(["recv", "--port", "\(port)", "--srtp-key-file", key, "--no-window", "--duration", "3",
                                            "--stats-json", dir.path("recv.json")], timeout: 15)
        #expect(received.status == 0, "\(received.output)")
        _ = sender.wait(timeout: 10)
        let got = try readStats(dir.path("recv.json"))
        let sent = try readStats(dir.path("send.json"))
        #expect((got["keyframeRequests"] as? Int ?? 0) >= 1)
        #expect((sent["keyframeRequests"] as? Int ?? 0) >= 1, "the sender honoured the PLI: \(sent)")
        #expect((sent["keyframes"] as? Int ?? 0) >= 2)
        // 3 s at 30 fps is 90 frames; at most a few are skipped before the keyframe arrives.
        #expect((got["framesDecoded"] as? Int ?? 0) >= 80, "\(got)")
        #expect((got["framesSkippedForKeyframe"] as? Int ?? 99) <= 5, "\(got)")
    }

    @Test func sigtermFinishesTheRecording() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try Screen(width: 640, height: 480)
        let port = freeUDPPort()
        let recording = dir.path("stopped.mp4")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--record",
                                              recording, "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file",
                                            key, "--duration", "6"])
        sleep(3)
        receiver.stop(signal: SIGTERM, timeout: 5)
        let status = receiver.wait(timeout: 1)
        #expect(status.status == 0, "a clean exit on SIGTERM: \(status.output)")
        sender.stop(signal: SIGTERM, timeout: 5)
        let stats = try readStats(dir.path("recv.json"))
        let probe = try probeVideo(recording)
        #expect(probe.videoFrames == stats["framesRecorded"] as? Int, "every frame written is in the file")
        #expect(probe.videoFrames >= 70)
    }

    @Test func wrongKeyAndStrangersAreDroppedAndCounted() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir, name: "right.key")
        let wrong = try ShareBinary.keyFile(in: dir, name: "wrong.key")
        let screen = try Screen(width: 640, height: 480)
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--duration", "9",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        // A sender with another key file: its handshake is refused, it says
        // so and stops; nothing of it is shown.
        let impostor = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                            "--key-file", wrong, "--duration", "2"])
        #expect(impostor.status != 0)
        #expect(impostor.output.contains("authentication failed"), "\(impostor.output)")
        // A sender with a static key (no handshake): every packet is dropped.
        _ = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                 "--srtp-key-file", key, "--duration", "1"])
        // Then the right sender, with a stranger spraying garbage at the same port.
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                            "--key-file", key, "--duration", "4", "--stats-json", dir.path("send.json")])
        sendGarbage(to: port, count: 500, seed: 7)
        _ = sender.wait(timeout: 15)
        let received = receiver.wait(timeout: 15)
        #expect(received.status == 0, "the receiver survived: \(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        let sent = try readStats(dir.path("send.json"))
        let framesSent = sent["framesEncoded"] as? Int ?? 0
        let decoded = stats["framesDecoded"] as? Int ?? 0
        // Only the right sender's frames are decoded, all of them.
        #expect(decoded <= framesSent)
        #expect(Double(decoded) >= 0.95 * Double(framesSent), "decoded \(decoded) of \(framesSent)")
        #expect(stats["handshakesRefused"] as? Int == 1, "\(stats)")
        #expect(stats["sessions"] as? Int == 1, "\(stats)")
        #expect((stats["packetsWithoutSession"] as? Int ?? 0) >= 25, "the static sender's second was dropped: \(stats)")
        // Garbage before the session began is without one; after, from a stranger.
        let refused = (stats["packetsFromStrangers"] as? Int ?? 0) + (stats["authenticationFailures"] as? Int ?? 0)
            + (stats["malformed"] as? Int ?? 0) + (stats["packetsWithoutSession"] as? Int ?? 0)
        #expect(refused >= 500, "garbage counted: \(stats)")
    }

    @Test func keyFileReadableByOthersIsRefused() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        chmod(key, 0o644)
        let result = try ShareBinary.run(["send", "127.0.0.1", "--key-file", key, "--duration", "1"])
        #expect(result.status != 0)
        #expect(result.output.contains("readable by group or others"))
        // keygen never overwrites an existing key.
        chmod(key, 0o600)
        let again = try ShareBinary.run(["keygen", key])
        #expect(again.status != 0)
    }

    /// Files named on the command line that cannot serve are refused before
    /// anything is received, each with what is wrong with it (a recording
    /// used to fail only when the first session began, and was lost).
    @Test func unusableFilesAreRefusedAtOnceAndSaySo() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let notText = dir.path("binary.key")
        _ = FileManager.default.createFile(atPath: notText, contents: Data([0xff, 0xfe, 0x00, 0xc3, 0x28]),
                                       attributes: [.posixPermissions: 0o600])
        let folder = dir.path("folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        let locked = dir.path("locked")
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o500])
        var cases: [([String], String)] = [
            (["--key-file", key, "--record", dir.path("missing/rec.mkv")], "there is no directory \(dir.path("missing"))"),
            (["--key-file", key, "--record", "\(key)/rec.mkv"], "\(key) is not a directory"),
            (["--key-file", key, "--record", dir.path("rec.avi")], "must end in .mkv or .mp4"),
            (["--key-file", notText], "is not text"),
            (["--key-file", folder], "is a directory"),
        ]
        // root writes anywhere: the unwritable directory says so only to others.
        if geteuid() != 0 { cases.append((["--key-file", key, "--record", "\(locked)/rec.mkv"], "is not writable")) }
        for (options, message) in cases {
            let result = try ShareBinary.run(["recv", "--port", "\(freeUDPPort())", "--no-window", "--no-audio",
                                              "--duration", "1"] + options)
            #expect(result.status != 0 && result.output.contains(message), "\(options): \(result.output)")
            #expect(!result.output.contains("listening on"), "refused before listening: \(result.output)")
        }
    }
}
