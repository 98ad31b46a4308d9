import Foundation
import TestSupport
import Testing

/// The real thing: an Xvfb display with moving content, the `share` binary,
/// real UDP on loopback, and ffmpeg and GStreamer as third-party peers.
@Suite("End to end: share, ffmpeg and GStreamer over SRTP", .busy)
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

    /// GStreamer sending `frames` pictures of its live test source
    /// (`pattern`, `format` added to its raw caps) at 30 fps as H.264
    /// (x264enc: zerolatency, ultrafast) in RTP, payload type 96, with the
    /// SSRC given or its own, through `suite` keyed with `key` (hex), to
    /// 127.0.0.1:`port`.
    static func gstreamerSends(frames: Int, width: Int, height: Int, pattern: String = "ball", format: String = "",
                               keyframeInterval: Int = 60, ssrc: UInt32? = nil, suite: GStreamerSRTP = .aes128,
                               key: String, to port: Int) throws -> ChildProcess {
        try ChildProcess("gst-launch-1.0", [
            "-q", "videotestsrc", "num-buffers=\(frames)", "is-live=true", "pattern=\(pattern)", "!",
            "video/x-raw,width=\(width),height=\(height),framerate=30/1\(format)", "!",
            "x264enc", "tune=zerolatency", "speed-preset=ultrafast", "key-int-max=\(keyframeInterval)", "!",
            "rtph264pay", "config-interval=-1", "pt=96", "mtu=1200", "!",
        ] + (ssrc.map { ["application/x-rtp,ssrc=(uint)\($0)", "!"] } ?? [])
          + suite.encoder(key: key) + ["!", "udpsink", "host=127.0.0.1", "port=\(port)"])
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
        // Frames begun before their last packet came have their top rows
        // converted for the window meanwhile, the rest once whole.
        let begun = got["framesDecodedEarly"] as? Int ?? 0
        let convertedEarly = got["framesConvertedEarly"] as? Int ?? 0
        #expect(begun >= shown / 2 && convertedEarly >= begun * 9 / 10,
                "\(begun) of \(shown) frames begun early, \(convertedEarly) of them converted early")
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
    /// that sweep (30 frames) has crossed the picture. Each case keys with
    /// another suite: AES-128 (share's default), AES-256 in GCM.
    @Test(arguments: [(true, GStreamerSRTP.aes128), (false, .aes256GCM)])
    func gstreamerReceivesOurStream(periodicKeyframes: Bool, suite: GStreamerSRTP) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir, profile: suite.name)
        let screen = try Screen()
        let port = freeUDPPort()
        let sdp = dir.path("stream.sdp")
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--srtp-key-file",
                                            key, "--duration", "9", "--keyint", "30", "--sdp", sdp,
                                            "--stats-json", dir.path("send.json")]
                                           + (periodicKeyframes ? ["--periodic-keyframes"] : []))
        let text = try textWhenWritten(sdp)
        let ssrcLine = try #require(text.components(separatedBy: "\r\n").first { $0.hasPrefix("a=ssrc:") })
        let ssrc = String(ssrcLine.dropFirst("a=ssrc:".count).prefix { $0 != " " })
        let inline = try ShareBinary.inlineKey(key)
        let hexKey = ShareBinary.hexKey(inline: inline)
        let recording = dir.path("gst.mkv")
        let caps = "application/x-srtp,media=(string)video,clock-rate=(int)90000,encoding-name=(string)H264,payload=(int)96,"
            + "ssrc=(uint)\(ssrc),\(suite.decoderCaps(key: hexKey))"
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

    /// An SDP for `share recv` describing another sender's H.264 on `port`
    /// with the SDES key `inline` (mode 0600: it holds the key).
    private func peerSDP(in dir: TemporaryDirectory, port: Int, inline: String,
                         suite: String = "AES_CM_128_HMAC_SHA1_80") throws -> String {
        let sdp = dir.path("peer.sdp")
        try """
            v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=peer\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
            m=video \(port) RTP/SAVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n\
            a=crypto:1 \(suite) inline:\(inline)\r\n
            """.write(toFile: sdp, atomically: true, encoding: .utf8)
        chmod(sdp, 0o600)
        return sdp
    }

    @Test(arguments: ["mkv", "mp4"])
    func gstreamerSendsToShare(container: String) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let inline = try ShareBinary.inlineKey(key)
        let hexKey = ShareBinary.hexKey(inline: inline)
        let port = freeUDPPort()
        let sdp = try peerSDP(in: dir, port: port, inline: inline)
        let recording = dir.path("gst.\(container)")
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--no-window", "--record", recording, "--duration", "14",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let gst = try Self.gstreamerSends(frames: 300, width: 1280, height: 720, ssrc: 4242, key: hexKey, to: port)
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

    /// GStreamer's srtpenc offers AES-256 and GCM besides AES-128 counter
    /// mode; a user who picks one writes its suite into the SDP (RFC 6188,
    /// RFC 7714 names), and `share recv` opens every packet of it.
    @Test(arguments: [GStreamerSRTP.aes256, .aes256ShortTag, .aes128GCM, .aes256GCM])
    func gstreamersOtherCiphersReachShare(suite: GStreamerSRTP) throws {
        let dir = try TemporaryDirectory()
        let inline = try ShareBinary.inlineKey(try ShareBinary.keyFile(in: dir, profile: suite.name))
        let port = freeUDPPort()
        let sdp = try peerSDP(in: dir, port: port, inline: inline, suite: suite.name)
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--no-window", "--duration", "6",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let gst = try Self.gstreamerSends(frames: 90, width: 640, height: 360, ssrc: 4243, suite: suite,
                                          key: ShareBinary.hexKey(inline: inline), to: port)
        let sent = gst.wait(timeout: 20)
        #expect(sent.status == 0, "gst-launch: \(sent.output)")
        let received = receiver.wait(timeout: 10)
        #expect(received.status == 0, "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        #expect((stats["framesDecoded"] as? Int ?? 0) >= 85, "\(stats)")
        #expect(stats["authenticationFailures"] as? Int == 0 && stats["decodeErrors"] as? Int == 0, "\(stats)")
    }

    /// ffmpeg's arguments for sending its 720p30 test picture over SRTP
    /// (a fresh key) to `port` for `seconds`, a keyframe every
    /// `keyframeInterval` frames, `rtp` added to its RTP muxer's options;
    /// and its SDP, written by a short run of the same (ffmpeg writes it as
    /// it starts) and made mode 0600 (ffmpeg writes it readable by all; it
    /// holds the key).
    private func ffmpegSRTPSender(in dir: TemporaryDirectory, port: Int, seconds: Int, keyframeInterval: Int,
                                  rtp: [String] = [], encoder: [String] = ["-preset", "ultrafast", "-tune", "zerolatency"])
        throws -> (arguments: [String], sdp: String) {
        let inline = try ShareBinary.inlineKey(try ShareBinary.keyFile(in: dir))
        let sdp = dir.path("ffmpeg.sdp")
        func arguments(duration: String) -> [String] {
            ["-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
             "-i", "testsrc=size=1280x720:rate=30", "-t", duration, "-c:v", "libx264"] + encoder
                + ["-g", "\(keyframeInterval)", "-f", "rtp"] + rtp
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

    /// What ffmpeg and GStreamer send when told nothing about pixels: ffmpeg
    /// encodes a picture it got as RGB (a screen, an image) in 4:4:4;
    /// GStreamer's x264enc takes its test source in 10-bit 4:4:4, BT.709.
    /// `share recv` shows both in their colours in its window (it read them
    /// as 8-bit 4:2:0 BT.601 and showed garbled colours before).
    @Test(arguments: ["ffmpeg", "gstreamer"])
    func theDefaultPicturesOfFFmpegAndGStreamerAreShownInTheirColours(sender: String) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let inline = try ShareBinary.inlineKey(key)
        let port = freeUDPPort()
        let sdp = try peerSDP(in: dir, port: port, inline: inline)
        let viewer = try VirtualDisplay(width: 1280, height: 720)
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--display", viewer.display, "--duration", "8",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        // Where to look (on the window, at the picture's own size at 0, 0) and what is there.
        let expected: [(x: Int, y: Int, rgb: UInt32)]
        let peer: ChildProcess
        if sender == "ffmpeg" {
            // Orange top left, blue top right, green below; RGB in, as from x11grab.
            let picture = "color=c=0xFF8000:s=320x240:r=30,format=rgb24[a];color=c=0x2040C0:s=320x240:r=30,format=rgb24[b];"
                + "color=c=0x20C040:s=640x240:r=30,format=rgb24[c];[a][b]hstack[t];[t][c]vstack"
            peer = try ChildProcess("ffmpeg", [
                "-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi", "-i", picture, "-t", "4",
                "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-f", "rtp",
                "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", inline, "srtp://127.0.0.1:\(port)",
            ])
            expected = [(160, 120, 0xFF8000), (480, 120, 0x2040C0), (320, 360, 0x20C040)]
        } else {
            let hexKey = ShareBinary.hexKey(inline: inline)
            // BT.709 is GStreamer's colorimetry from 720p up; said here at a
            // quarter of the pixels (a lighter neighbour for the suites that
            // run alongside), x264enc still takes 10-bit 4:4:4.
            peer = try Self.gstreamerSends(frames: 120, width: 640, height: 360, pattern: "smpte", format: ",colorimetry=bt709",
                                           keyframeInterval: 30, key: hexKey, to: port)
            // Yellow, cyan, green, magenta, red and blue bars, seven across.
            let bars: [UInt32] = [0xFFFF00, 0x00FFFF, 0x00FF00, 0xFF00FF, 0xFF0000, 0x0000FF]
            expected = bars.enumerated().map { index, rgb in ((2 * index + 3) * 640 / 14, 100, rgb) }
        }
        let looker = try TestClient(display: viewer.display)
        /// The largest difference of a channel between two 0xRRGGBB colours.
        func distance(_ a: UInt32, _ b: UInt32) -> Int {
            [0, 8, 16].map { abs(Int((a >> $0) & 0xff) - Int((b >> $0) & 0xff)) }.max()!
        }
        // 16 a channel: BT.709's most saturated blue reads up to 12.5 short
        // through libyuv's fixed point (PictureFormatTests).
        for (x, y, rgb) in expected {
            let got = (looker.pixel(x: x, y: y, within: 4) { distance($0 & 0xffffff, rgb) <= 16 } ?? 0) & 0xffffff
            #expect(distance(got, rgb) <= 16, "\(sender): at (\(x), \(y)) 0x\(String(got, radix: 16)), sent 0x\(String(rgb, radix: 16))")
        }
        #expect(peer.wait(timeout: 20).status == 0)
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        #expect((stats["framesShown"] as? Int ?? 0) >= 60 && stats["decodeErrors"] as? Int == 0, "\(stats)")
    }

    /// ffmpeg's libx264 without `-tune zerolatency` sends B-frames: pictures
    /// ahead of ones shown before them. Every one is shown (in display order,
    /// two frames late) and recorded in the order sent with decode times, so
    /// the file plays; before, every picture held back by the reordering
    /// counted as a decode error and half the stream waited for keyframes.
    @Test(arguments: ["mkv", "mp4"])
    func ffmpegsBFramesAreShownAndRecorded(container: String) throws {
        let dir = try TemporaryDirectory()
        let (ffmpegArguments, sdp) = try ffmpegSRTPSender(in: dir, port: freeUDPPort(), seconds: 6, keyframeInterval: 60,
                                                          encoder: ["-preset", "ultrafast", "-bf", "3", "-pix_fmt", "yuv420p"])
        let viewer = try VirtualDisplay(width: 1280, height: 720)
        let recording = dir.path("bframes.\(container)")
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--display", viewer.display, "--record", recording,
                                              "--duration", "9", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ChildProcess("ffmpeg", ffmpegArguments).wait(timeout: 30)
        #expect(sender.status == 0, "ffmpeg: \(sender.output)")
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        // 180 sent; the last two stay in the decoder when the stream ends.
        #expect((stats["framesShown"] as? Int ?? 0) >= 170, "\(stats)")
        #expect(stats["decodeErrors"] as? Int == 0 && stats["framesSkippedForKeyframe"] as? Int == 0, "\(stats)")
        let probe = try probeVideo(recording)
        #expect(probe.videoFrames >= 175, "\(probe.errors)")
        // Stored in the order sent: presentation times go back at each B-frame.
        let packets = try run("ffprobe", ["-v", "error", "-show_entries", "packet=pts", "-of", "csv=p=0", recording])
        let times = packets.stdout.split(separator: "\n").compactMap { Int($0) }
        #expect(times.count >= 175 && times != times.sorted(), "\(times.prefix(12))")
        // The whole file decodes without a complaint.
        let decode = try run("ffmpeg", ["-v", "error", "-i", recording, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
    }

    /// ffmpeg stopped and run again with the same key: a new stream (new
    /// SSRC, new sequence numbers) whose BYE and reports go to another port.
    /// The receiver follows it after a second of silence, as a new session:
    /// a second recording file beside the first, each whole.
    @Test func anFFmpegStartedAgainIsFollowedIntoANewRecording() throws {
        let dir = try TemporaryDirectory()
        let (ffmpegArguments, sdp) = try ffmpegSRTPSender(in: dir, port: freeUDPPort(), seconds: 3, keyframeInterval: 60)
        let recording = dir.path("again.mkv")
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--no-window", "--record", recording, "--duration", "11",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        for run in 1...2 {
            let sender = try ChildProcess("ffmpeg", ffmpegArguments).wait(timeout: 30)
            #expect(sender.status == 0, "ffmpeg run \(run): \(sender.output)")
            usleep(1_500_000)
        }
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        #expect(stats["streamsReplaced"] as? Int == 1 && stats["decodeErrors"] as? Int == 0, "\(stats)")
        #expect((stats["framesDecoded"] as? Int ?? 0) >= 171, "95% of 2 x 90: \(stats)")
        for file in [recording, dir.path("again-2.mkv")] {
            let probe = try probeVideo(file)
            #expect(probe.videoFrames >= 85, "\(file): \(probe.videoFrames) frames \(probe.errors)")
        }
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
        // The impostor tried again after each refusal (a refusal it cannot authenticate is not final) until its 2 s ran out.
        #expect((1...3).contains(stats["handshakesRefused"] as? Int ?? 0), "\(stats)")
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

    /// A port out of range is a usage error that names it, never a trap.
    @Test(arguments: ["70000", "-1", "65536"])
    func aPortOutOfRangeIsRefusedWithItsReason(port: String) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let result = try ShareBinary.run(["recv", "--port=\(port)", "--no-window", "--no-audio", "--duration", "1", "--key-file", key])
        #expect(result.status == 64 && result.output.contains("--port \(port) is outside 0-65535"), "\(result.output)")
    }
}
