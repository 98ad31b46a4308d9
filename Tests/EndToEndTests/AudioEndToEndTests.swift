import Foundation
import TestSupport
import Testing

/// Sound end to end: a PulseAudio daemon with a null sink, a tone played
/// into it, `share send --audio system` capturing its monitor, `share recv`
/// recording, ffmpeg decoding and measuring the result.
@Suite("End to end: sound", .serialized, .alone)
struct AudioEndToEndTests {
    @Test(arguments: ["mkv", "mp4"])
    func systemAudioToneIsRecordedWithTheVideo(container: String) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let sound = try SoundServer()
        let wav = dir.path("tone.wav")
        try writeToneWAV(wav, hertz: 440, seconds: 16)
        let player = try sound.play(wav)
        let recording = try recordSystemAudio(sound, in: dir, key: key, file: "av.\(container)", width: 640, height: 480,
                                              seconds: 10)
        player.stop()
        let stats = try readStats(dir.path("recv.json"))
        let audio = stats["audio"] as? [String: Any] ?? [:]
        #expect(audio["streams"] as? Int == 1)
        #expect((audio["packetsRecorded"] as? Int ?? 0) >= 350, "\(audio)")
        let samples = try decodeAudio(recording)
        #expect(samples.count >= 48_000 * 7, "at least 7 s of sound: \(samples.count) samples")
        let frequency = try #require(toneFrequency(samples))
        #expect(abs(frequency - 440) <= 2, "recorded tone at \(frequency) Hz")
        #expect(longestGap(samples) < 960, "no gap as long as one 20 ms packet")
        let video = try probeVideo(recording)
        #expect(video.videoFrames >= 285)
    }

    /// `share send --audio system` (the sound server's monitor) for `seconds`
    /// to `share recv --record` on a screen of the size given; both exit
    /// cleanly. The recording's path; stats in recv.json and send.json.
    func recordSystemAudio(_ sound: SoundServer, in dir: TemporaryDirectory, key: String, file: String, width: Int,
                           height: Int, seconds: Int) throws -> String {
        let screen = try EndToEndTests.Screen(width: width, height: height)
        let port = freeUDPPort()
        let recording = dir.path(file)
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "\(seconds + 3)",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file",
                                            key, "--audio", "system", "--duration", "\(seconds)",
                                            "--stats-json", dir.path("send.json")], environment: sound.environment)
        let sent = sender.wait(timeout: 20)
        #expect(sent.status == 0, "\(sent.output)")
        let received = receiver.wait(timeout: 20)
        #expect(received.status == 0, "\(received.output)")
        return recording
    }

    /// A player that keeps a second buffered (PulseAudio's `module-sine`, as
    /// media players do) makes the sink render far ahead and its latency
    /// swing: the recorded sound is still the tone, every second of it, with
    /// no gap, as players decode it (libavcodec's native decoder: it came out
    /// as bursts of noise between near silence).
    @Test func aBufferedPlayerIsRecordedClean() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let sound = try SoundServer()
        try sound.playSine(hertz: 660)
        let recording = try recordSystemAudio(sound, in: dir, key: key, file: "sine.mkv", width: 320, height: 240, seconds: 9)
        let samples = try decodeAudio(recording, nativeDecoder: true)
        guard let first = samples.firstIndex(where: { abs(Int($0)) > 1000 }) else {
            Issue.record("no sound recorded")
            return
        }
        let heard = Array(samples[first...])
        #expect(heard.count >= 48_000 * 6, "at least 6 s of sound: \(heard.count) samples")
        #expect(longestGap(heard) < 960, "no gap as long as one 20 ms packet")
        // Each second on its own: the tone, at its level (module-sine plays at
        // half scale), not noise or near silence.
        for second in 0..<(heard.count / 48_000 - 1) {
            let part = Array(heard[(second * 48_000)..<((second + 1) * 48_000)])
            let frequency = toneFrequency(part) ?? 0
            #expect(abs(frequency - 660) <= 2, "second \(second): tone at \(frequency) Hz")
            var energy = 0.0
            for sample in part { energy += Double(sample) * Double(sample) }
            let rms = (energy / Double(part.count)).squareRoot()
            #expect(rms > 8_000 && rms < 14_000, "second \(second): level \(rms) (the tone's is 11585)")
        }
    }

    /// Lip sync in the recording: `share scene --av-sync` flashes the screen
    /// and beeps at the same instant every 2 s; in the file, each beep starts
    /// within 40 ms of its flash.
    @Test func audioAndVideoLineUpInTheRecording() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let sound = try SoundServer()
        let display = try VirtualDisplay(width: 320, height: 240)
        let probe = try ShareBinary.start(["scene", "--display", display.display, "--av-sync"], environment: sound.environment)
        // An idle null sink renders a second ahead; give it time to drain to
        // the probe's low latency before measuring.
        sleep(2)
        let port = freeUDPPort()
        let recording = dir.path("sync.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "12"])
        usleep(300_000)
        let sent = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", display.display,
                                          "--key-file", key, "--audio", "system", "--duration", "10"],
                                         environment: sound.environment).wait(timeout: 20)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 15)
        probe.stop()
        // A new monitor stream delivers silence for about its first second
        // (PulseAudio; parec shows the same): only flashes after that have
        // their beep on file; and a flash in the last moments may have had
        // its sound still on the way when the sender stopped (seen once on a
        // loaded machine: the last flash 10 s in, the file's nearest beep
        // the one 2 s before): only flashes the recorded sound outlasts count.
        let start = try audioStart(recording)
        let end = try audioEnd(recording)
        let flashes = try flashTimes(recording).filter { $0 > start + 1.5 && $0 < end - 0.2 }
        let beeps = try beepTimes(recording)
        #expect(flashes.count >= 2, "flashes at \(flashes) while audio ran, from \(start) s to \(end) s")
        #expect(beeps.count >= 2, "beeps at \(beeps)")
        for flash in flashes {
            guard let beep = beeps.min(by: { abs($0 - flash) < abs($1 - flash) }) else { continue }
            let offset = (beep - flash) * 1000
            #expect(abs(offset) <= 40, "beep at \(beep) s, flash at \(flash) s: \(offset) ms apart")
        }
    }

    /// The receiver plays what it gets: its own sound server's null sink
    /// carries the sender's tone (captured from the monitor with parec).
    @Test func receiverPlaysTheSound() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let speakers = try SoundServer()
        let display = try VirtualDisplay(width: 320, height: 240)
        let port = freeUDPPort()
        let heard = dir.path("heard.wav")
        let listener = try ChildProcess("parec", ["--device=share_test.monitor", "--file-format=wav", "--rate=48000",
                                                  "--channels=1", "--format=s16le", heard], environment: speakers.environment)
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--duration", "8",
                                              "--stats-json", dir.path("recv.json")], environment: speakers.environment)
        usleep(300_000)
        let sent = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", display.display,
                                          "--key-file", key, "--audio-tone", "440", "--duration", "6"]).wait(timeout: 15)
        #expect(sent.status == 0)
        let received = receiver.wait(timeout: 15)
        #expect(received.status == 0, "\(received.output)")
        listener.stop(signal: SIGINT)
        let samples = try decodeAudio(heard)
        let frequency = try #require(toneFrequency(samples), "nothing was played: \(received.output)")
        #expect(abs(frequency - 440) <= 2, "played at \(frequency) Hz")
        // 6 s of tone were sent; a null sink's monitor needs about a second to
        // start, and 80% of a sine's samples exceed 0.3 of its amplitude.
        #expect(samples.filter { abs(Int($0)) > 3000 }.count > Int(48_000 * 4 * 0.8), "at least 4 s of tone was played")
        #expect(longestGap(samples) < 960, "no gap as long as a packet")
    }

    @Test func withoutASoundServerVideoGoesOnWithOneMessage() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 640, height: 480)
        let port = freeUDPPort()
        let noServer = ["PULSE_SERVER": "unix:\(dir.path("nobody-here"))"]
        for audioArguments in [[String](), ["--audio", "system"]] {
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window",
                                                  "--duration", "5", "--stats-json", dir.path("recv.json")],
                                                 environment: noServer)
            usleep(300_000)
            let sent = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                                              "--key-file", key, "--duration", "3"] + audioArguments,
                                             environment: noServer).wait(timeout: 15)
            #expect(sent.status == 0, "\(sent.output)")
            let lines = sent.output.split(separator: "\n").filter { $0.lowercased().contains("audio") && !$0.hasPrefix("audio:") }
            #expect(lines.count == 1, "one clear message: \(lines)")
            _ = receiver.wait(timeout: 10)
            #expect((try readStats(dir.path("recv.json"))["framesDecoded"] as? Int ?? 0) >= 80)
        }
    }

    @Test func soundServerVanishingMidStreamLeavesVideoRunning() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let sound = try SoundServer()
        let screen = try EndToEndTests.Screen(width: 640, height: 480)
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--duration", "9", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file",
                                            key, "--audio", "system", "--duration", "7", "--stats-json", dir.path("send.json")],
                                           environment: sound.environment)
        sleep(3)
        sound.stop()
        let sent = sender.wait(timeout: 15)
        #expect(sent.status == 0, "\(sent.output)")
        #expect(sent.output.components(separatedBy: "system audio stopped").count == 2, "one message: \(sent.output)")
        _ = receiver.wait(timeout: 15)
        let framesSent = try readStats(dir.path("send.json"))["framesEncoded"] as? Int ?? 0
        let decoded = try readStats(dir.path("recv.json"))["framesDecoded"] as? Int ?? 0
        #expect(framesSent >= 195, "7 s of video")
        #expect(Double(decoded) >= 0.95 * Double(framesSent))
    }

    /// Interop: GStreamer picks our Opus stream off the shared port with
    /// srtpdec (keyed by the SDP's a=ssrc and a=crypto) and decodes the tone.
    @Test func gstreamerReceivesOurOpus() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let port = freeUDPPort()
        let sdp = dir.path("av.sdp")
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--srtp-key-file",
                                            key, "--audio-tone", "440", "--duration", "6", "--sdp", sdp])
        let lines = try textWhenWritten(sdp).components(separatedBy: "\r\n")
        let audioStart = try #require(lines.firstIndex { $0.hasPrefix("m=audio") })
        let ssrcLine = try #require(lines[audioStart...].first { $0.hasPrefix("a=ssrc:") })
        let ssrc = String(ssrcLine.dropFirst("a=ssrc:".count).prefix { $0 != " " })
        let hexKey = ShareBinary.hexKey(inline: try ShareBinary.inlineKey(key))
        let out = dir.path("gst.wav")
        let caps = "application/x-srtp,media=(string)audio,clock-rate=(int)48000,encoding-name=(string)OPUS,payload=(int)111,"
            + "ssrc=(uint)\(ssrc),\(GStreamerSRTP.aes128.decoderCaps(key: hexKey))"
        let gst = try ChildProcess("gst-launch-1.0", [
            "-q", "-e", "udpsrc", "port=\(port)", "caps=\(caps)", "!", "srtpdec", "name=srtp",
            "srtp.rtcp_src", "!", "fakesink", "async=false",
            "srtp.rtp_src", "!", "rtpjitterbuffer", "latency=50", "!", "rtpopusdepay", "!", "opusdec", "!",
            "audioconvert", "!", "audio/x-raw,channels=1", "!", "wavenc", "!", "filesink", "location=\(out)",
        ])
        _ = sender.wait(timeout: 15)
        usleep(300_000)
        gst.stop(signal: SIGINT, timeout: 5)
        let samples = try decodeAudio(out)
        #expect(samples.count >= 48_000 * 4, "GStreamer decoded \(samples.count) samples: \(gst.output)")
        let frequency = try #require(toneFrequency(samples))
        #expect(abs(frequency - 440) <= 2, "\(frequency) Hz")
    }

    /// Interop: ffmpeg sends H.264 and Opus to one port; `share recv` takes
    /// ffmpeg's own SDP and records both.
    @Test func ffmpegSendsVideoAndOpusToShare() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let inline = try ShareBinary.inlineKey(key)
        let port = freeUDPPort()
        let sdp = dir.path("ffmpeg.sdp")
        func ffmpeg(seconds: String) -> [String] {
            // -re and -t on each input: both are paced and both end.
            ["-hide_banner", "-nostdin", "-loglevel", "error", "-re", "-t", seconds, "-f", "lavfi", "-i", "testsrc=size=640x480:rate=30",
             "-re", "-t", seconds, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
             "-map", "0:v", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "60", "-f", "rtp",
             "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", inline, "srtp://127.0.0.1:\(port)",
             "-map", "1:a", "-c:a", "libopus", "-ac", "2", "-b:a", "96k", "-f", "rtp",
             "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", inline, "srtp://127.0.0.1:\(port)",
             "-sdp_file", sdp]
        }
        _ = try ChildProcess("ffmpeg", ffmpeg(seconds: "0.1")).wait(timeout: 10)
        chmod(sdp, 0o600)  // ffmpeg writes it readable by all; it holds the key
        let recording = dir.path("ffmpeg.mkv")
        let receiver = try ShareBinary.start(["recv", "--sdp", sdp, "--no-window", "--no-audio", "--record", recording,
                                              "--duration", "10", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sent = try ChildProcess("ffmpeg", ffmpeg(seconds: "7")).wait(timeout: 20)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 15)
        let samples = try decodeAudio(recording)
        #expect(samples.count >= 48_000 * 5)
        let frequency = try #require(toneFrequency(samples))
        #expect(abs(frequency - 440) <= 2, "\(frequency) Hz")
        #expect(try probeVideo(recording).videoFrames >= 190)
    }
}

/// The memory-budget governor with the real sender on a 1080p screen.
@Suite("End to end: memory budget", .serialized, .busy)
struct MemoryBudgetEndToEndTests {
    @Test func impossibleBudgetFailsCleanlyWithASpecificError() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 1920, height: 1080)
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--duration", "4"])
        usleep(300_000)
        let sent = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                        "--audio", "none", "--memory-budget", "8M", "--duration", "5"], timeout: 15)
        #expect(sent.status != 0, "a non-zero exit, not a kill: \(sent.status)")
        let lines = sent.output.split(separator: "\n").filter { $0.contains("cannot run within 8 MiB: needs at least") }
        #expect(lines.count == 1, "one specific message: \(sent.output)")
        #expect(lines.first?.contains("MiB at 360p") == true)
        let received = receiver.wait(timeout: 10)
        #expect(received.output.contains("cannot run within 8 MiB"), "the receiver is told why: \(received.output)")
    }

    @Test func tightBudgetIsKeptBySteppingDown() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 1920, height: 1080)
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--duration", "10",
                                              "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sent = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                        "--audio", "none", "--memory-budget", "32M", "--duration", "8",
                                        "--stats-json", dir.path("send.json")], timeout: 20)
        #expect(sent.status == 0, "\(sent.output)")
        _ = receiver.wait(timeout: 15)
        let stats = try readStats(dir.path("send.json"))
        let peak = stats["peakFootprintBytes"] as? Int ?? Int.max
        #expect(peak <= 32 << 20, "peak footprint \(peak >> 20) MiB under a 32 MiB budget")
        #expect(stats["memoryRung"] as? String != "full", "it stepped down")
        #expect(sent.output.contains("memory:") && sent.output.contains("->"), "the step is logged")
        // The picture goes on at the lower rung.
        #expect((try readStats(dir.path("recv.json"))["framesDecoded"] as? Int ?? 0) >= 30)
    }

    /// Memory pressure while running: the budget lowered through `share ctl`
    /// mid-stream, then raised again. The governor steps down at once and
    /// back up (after its ten seconds of patience), the picture goes on all
    /// along, and the recording holds the pictures at each size and plays.
    @Test func theGovernorStepsDownAndBackUpWhileRunning() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 1280, height: 720)
        let port = freeUDPPort()
        let recording = dir.path("steps.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "30", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let control = dir.path("send.sock")
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                            "--audio", "none", "--duration", "24", "--control", control,
                                            "--stats-json", dir.path("send.json")])
        func status() throws -> [String: Any] {
            let answer = try ShareBinary.run(["ctl", "status", "--socket", control]).output
            let object = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any]
            return object?["statistics"] as? [String: Any] ?? [:]
        }
        usleep(3_000_000)
        #expect(try status()["memoryRung"] as? String == "full")
        let lowered = try ShareBinary.run(["ctl", "budget", "20M", "--socket", control])
        #expect(lowered.output.contains(#""ok":true"#), "\(lowered.output)")
        usleep(2_000_000)
        let low = try status()
        #expect(low["memoryRung"] as? String != "full" && (low["encodedHeight"] as? Int ?? 720) < 720, "\(low)")
        let framesLow = low["framesEncoded"] as? Int ?? 0
        #expect(try ShareBinary.run(["ctl", "budget", "50M", "--socket", control]).output.contains(#""ok":true"#))
        #expect(try ShareBinary.run(["ctl", "budget", "lots", "--socket", control]).output.contains("is not a size"))
        let sent = sender.wait(timeout: 30)
        #expect(sent.status == 0, "\(sent.output)")
        let stats = try readStats(dir.path("send.json"))
        #expect((stats["memorySteps"] as? Int ?? 0) >= 2, "down and back up: \(sent.output)")
        #expect(sent.output.contains("of a 20.0 MiB budget: full ->") && sent.output.contains("of a 50.0 MiB budget:"),
                "\(sent.output)")
        #expect((stats["framesEncoded"] as? Int ?? 0) > framesLow + 20, "the picture went on")
        _ = receiver.wait(timeout: 15)
        // Every frame of the recording decodes; it holds pictures of more than one size.
        let (frames, errors) = try recordedFrameSizes(recording)
        #expect(errors.isEmpty, "\(errors)")
        let sizes = Set(frames)
        #expect(sizes.contains("1280x720") && sizes.count >= 2, "sizes recorded: \(sizes)")
        let recorded = frames.count
        #expect(recorded >= (try readStats(dir.path("recv.json"))["framesRecorded"] as? Int ?? 0), "ffprobe reads every frame")
    }

    /// A 3840x2160 screen within the default 50 MiB: captured in bands
    /// through two 1 MiB segments and scaled band by band, it is encoded at
    /// 1080p and 30 fps (the governor's first size step for a picture taller
    /// than 1080 lines) for 20 s; every frame sent is decoded and recorded.
    @Test func aFourKScreenIsSentWithinTheDefaultBudget() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 3840, height: 2160)
        let port = freeUDPPort()
        let recording = dir.path("4k.mkv")
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--record", recording, "--duration", "25", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sent = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                        "--audio", "none", "--duration", "20", "--stats-json", dir.path("send.json")], timeout: 40)
        #expect(sent.status == 0, "\(sent.output)")
        #expect(sent.output.contains("sending 3840x2160 as 1920x1080 at 30 fps"), "\(sent.output)")
        _ = receiver.wait(timeout: 15)
        let stats = try readStats(dir.path("send.json"))
        let peak = stats["peakFootprintBytes"] as? Int ?? Int.max
        #expect(peak < 50 << 20, "peak footprint \(peak >> 20) MiB")
        #expect(stats["memoryRung"] as? String == "1080p" && stats["memorySteps"] as? Int == 0, "\(stats)")
        let encoded = stats["framesEncoded"] as? Int ?? 0
        #expect(encoded >= 20 * 30 * 85 / 100, "about 30 fps: \(encoded) frames in 20 s")
        let received = try readStats(dir.path("recv.json"))
        #expect(received["framesDecoded"] as? Int == encoded && received["framesRecorded"] as? Int == encoded,
                "every frame sent is decoded and recorded: \(encoded) sent, \(received)")
        let probe = try probeVideo(recording)
        #expect(probe.width == 1920 && probe.height == 1080 && probe.videoFrames == encoded, "\(probe)")
    }

    /// The default 50 MiB budget holds a 1080p sender: it starts at full
    /// quality and its peak footprint stays within the budget (under heavy
    /// load the governor may step down, which is its job).
    @Test func defaultBudgetHolds1080p() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 1920, height: 1080)
        // A static key: it encodes and sends with no receiver to handshake with.
        let sent = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--display", screen.name,
                                        "--srtp-key-file", key, "--audio", "none", "--duration", "4",
                                        "--stats-json", dir.path("send.json")], timeout: 15)
        #expect(sent.status == 0)
        let stats = try readStats(dir.path("send.json"))
        #expect((stats["framesEncoded"] as? Int ?? 0) >= 60, "it encoded: \(stats)")
        #expect((stats["peakFootprintBytes"] as? Int ?? Int.max) <= 50 << 20,
                "peak \((stats["peakFootprintBytes"] as? Int ?? 0) >> 20) MiB at \(stats["memoryRung"] ?? "?")")
    }
}

@Suite("End to end: control channel", .alone)
struct ControlChannelEndToEndTests {
    func ctl(_ command: String, _ socket: String) throws -> [String: Any] {
        let result = try ShareBinary.run(["ctl", command, "--socket", socket], timeout: 10)
        guard result.status == 0,
              let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any] else {
            throw TestEnvironmentError("share ctl \(command): \(result.output)")
        }
        return object
    }

    /// A sender with a static key (no receiver needed) and its control channel at `socket`.
    func senderWithControl(_ socket: String, screen: EndToEndTests.Screen, in dir: TemporaryDirectory) throws -> ChildProcess {
        let key = try ShareBinary.keyFile(in: dir)
        return try ShareBinary.start(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--display", screen.name,
                                      "--srtp-key-file", key, "--audio", "none", "--duration", "20", "--control", socket])
    }

    /// A client that connects and says nothing gets a second; the next one is answered.
    @Test func aSilentClientCannotWedgeTheChannel() throws {
        let dir = try TemporaryDirectory()
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let socket = dir.path("send.sock")
        let sender = try senderWithControl(socket, screen: screen, in: dir)
        usleep(800_000)
        let silent = try connectControl(socket)
        defer { close(silent) }
        let started = Date()
        #expect(try ctl("status", socket)["state"] as? String == "running")
        #expect(Date().timeIntervalSince(started) < 3, "answered after the silent client's second")
        // A client that drips its request byte by byte is cut off after the
        // same second, with a specific answer, and the channel goes on.
        let dripping = try rawRequest(socket, pieces: Array(repeating: "s", count: 30), pause: 100_000)
        #expect(dripping.contains("unknown command"), "\(dripping)")
        // A request split across writes means what it says; an unknown word
        // and an overlong line get specific answers.
        #expect(try rawRequest(socket, pieces: ["sta", "tus\n"], pause: 50_000).contains(#""state":"running""#))
        #expect(try rawRequest(socket, pieces: ["reboot\n"], pause: 0).contains(#"unknown command \"reboot\""#))
        #expect(try rawRequest(socket, pieces: [String(repeating: "x", count: 400)], pause: 0).contains("malformed request"))
        #expect(try ctl("status", socket)["state"] as? String == "running")
        sender.stop()
    }

    /// Clients that hang up before their reply (Ctrl-C on `share ctl`,
    /// `nc -q0`) cost the sender nothing: before, the reply's write raised
    /// SIGPIPE and ended it, leaving its socket file behind.
    @Test func clientsGoneBeforeTheirReplyLeaveTheSenderRunning() throws {
        let dir = try TemporaryDirectory()
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let socket = dir.path("send.sock")
        let sender = try senderWithControl(socket, screen: screen, in: dir)
        defer { sender.stop() }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket) && Date() < deadline { usleep(50_000) }
        usleep(300_000)
        for _ in 0..<20 {
            let client = try connectControl(socket)
            _ = Array("status\n".utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(client)
        }
        usleep(300_000)
        #expect(sender.isRunning, "\(sender.output)")
        #expect(try ctl("status", socket)["state"] as? String == "running")
    }

    /// `--control PATH` replaces only a socket left by a sender that is
    /// gone: a file there, or a running sender's socket, is refused and
    /// kept.
    @Test func onlyAStaleSocketIsReplaced() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let file = dir.path("notes.txt")
        try "keep me".write(toFile: file, atomically: false, encoding: .utf8)
        let arguments = ["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--display", screen.name, "--srtp-key-file", key,
                         "--audio", "none", "--duration", "5"]
        let refused = try ShareBinary.run(arguments + ["--control", file], timeout: 20)
        #expect(refused.status != 0 && refused.output.contains("not a socket"), "\(refused.output)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "keep me")

        // A socket nobody listens on any more is stale: replaced.
        let stale = dir.path("stale.sock")
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(stale.utf8)) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(fd)
        let first = try ShareBinary.start(arguments + ["--control", stale])
        defer { first.stop() }
        usleep(1_000_000)
        #expect(try ctl("status", stale)["state"] as? String == "running", "\(first.output)")
        // ... and a live one is not taken over.
        let second = try ShareBinary.run(arguments + ["--control", stale], timeout: 20)
        #expect(second.status != 0 && second.output.contains("already listens"), "\(second.output)")
        #expect(try ctl("status", stale)["state"] as? String == "running")
    }

    /// A connected client socket of the control channel at `socket`.
    func connectControl(_ socket: String) throws -> Int32 {
        let client = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socket.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(client)
            throw TestEnvironmentError("cannot connect to \(socket)")
        }
        return client
    }

    /// Writes `pieces` to the control socket `pause` microseconds apart and
    /// returns the reply.
    func rawRequest(_ socket: String, pieces: [String], pause: UInt32) throws -> String {
        let client = try connectControl(socket)
        defer { close(client) }
        for piece in pieces {
            _ = Array(piece.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            usleep(pause)
        }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(client, &buffer, buffer.count)
            if n <= 0 { break }
            reply += buffer[0..<n]
        }
        return String(decoding: reply, as: UTF8.self)
    }

    /// The fallback directory is in a place others can write: one they made,
    /// or left open, is refused.
    @Test func aRuntimeDirectoryOthersCanEnterIsRefused() throws {
        let dir = try TemporaryDirectory()
        let open = dir.path("runtime/share")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(open, 0o777)
        let environment = ["XDG_RUNTIME_DIR": dir.path("runtime")]
        let result = try ShareBinary.run(["ctl", "status"], environment: environment)
        #expect(result.status != 0 && result.output.contains("can be entered by others"), "\(result.output)")
        try FileManager.default.removeItem(atPath: open)
        try FileManager.default.createSymbolicLink(atPath: open, withDestinationPath: "/tmp")
        let linked = try ShareBinary.run(["ctl", "status"], environment: environment)
        #expect(linked.status != 0 && linked.output.contains("not a directory"), "\(linked.output)")
    }

    func framesEncoded(_ status: [String: Any]) -> Int {
        (status["statistics"] as? [String: Any])?["framesEncoded"] as? Int ?? -1
    }

    @Test func statusPauseResumeStop() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let socket = dir.path("send.sock")
        // A static key: no receiver is needed for the sender to run.
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--display", screen.name,
                                            "--srtp-key-file", key, "--audio", "none", "--duration", "30", "--control", socket])
        usleep(1_000_000)
        let running = try ctl("status", socket)
        #expect(running["state"] as? String == "running")
        #expect(framesEncoded(running) > 10)
        #expect(try ctl("pause", socket)["state"] as? String == "paused")
        usleep(300_000)
        let paused = framesEncoded(try ctl("status", socket))
        usleep(1_000_000)
        #expect(framesEncoded(try ctl("status", socket)) <= paused + 1, "no frames while paused")
        #expect(try ctl("resume", socket)["state"] as? String == "running")
        usleep(1_000_000)
        #expect(framesEncoded(try ctl("status", socket)) >= paused + 20, "frames again after resume")
        #expect(try ctl("stop", socket)["state"] as? String == "stopping")
        let ended = sender.wait(timeout: 10)
        #expect(ended.status == 0, "stopped long before its 30 s: \(ended.output)")
        #expect(!FileManager.default.fileExists(atPath: socket), "the socket is removed on exit")
        let missing = try ShareBinary.run(["ctl", "status", "--socket", socket])
        #expect(missing.status != 0 && missing.output.contains("cannot reach"))
    }

    /// Paused, a sender sleeps: its capture thread is not woken by the
    /// screen moving, nor its audio thread by the sound playing (it held
    /// the server's stream), and nothing is sent; resumed, pictures and
    /// sound come again at once.
    @Test func aPausedSenderSleepsAndResumesAtOnce() throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let sound = try SoundServer()
        try sound.playSine(hertz: 440)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        let socket = dir.path("send.sock")
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--display", screen.name,
                                            "--srtp-key-file", key, "--audio", "system", "--duration", "30", "--control", socket],
                                           environment: sound.environment)
        func audioPackets(_ status: [String: Any]) -> Int {
            (status["statistics"] as? [String: Any])?["audioPacketsSent"] as? Int ?? -1
        }
        // The monitor of a sink fed by a buffered player starts delivering
        // a second or two after the stream opens.
        usleep(1_000_000)
        let deadline = Date().addingTimeInterval(8)
        var started = try ctl("status", socket)
        while audioPackets(started) <= 20 && Date() < deadline {
            usleep(250_000)
            started = try ctl("status", socket)
        }
        #expect(audioPackets(started) > 20, "sound is sent before the pause: \(started)")
        #expect(try ctl("pause", socket)["state"] as? String == "paused")
        usleep(300_000)
        let before = (sleeps: threadSleeps(pid: sender.pid), status: try ctl("status", socket))
        usleep(1_500_000)
        let after = (sleeps: threadSleeps(pid: sender.pid), status: try ctl("status", socket))
        for thread in ["share-capture", "share-audio"] {
            let woken = (after.sleeps[thread] ?? 0) - (before.sleeps[thread] ?? 0)
            #expect(before.sleeps[thread] != nil, "\(thread) runs: \(before.sleeps)")
            #expect(woken <= 4, "\(thread) woke \(woken) times in 1.5 s of pause")
        }
        #expect(audioPackets(after.status) == audioPackets(before.status), "no sound while paused")
        #expect(framesEncoded(after.status) <= framesEncoded(before.status) + 1, "no pictures while paused")
        #expect(try ctl("resume", socket)["state"] as? String == "running")
        usleep(1_000_000)
        let resumed = try ctl("status", socket)
        #expect(audioPackets(resumed) >= audioPackets(after.status) + 35, "sound again after resume")
        #expect(framesEncoded(resumed) >= framesEncoded(after.status) + 20, "pictures again after resume")
        #expect(try ctl("stop", socket)["state"] as? String == "stopping")
        let ended = sender.wait(timeout: 10)
        #expect(ended.status == 0, "\(ended.output)")
    }
}
