import Foundation
import TestSupport
import Testing

/// One encode, many viewers: `share send --janus` into Debian's Janus, real
/// headless Chromium viewers decoding through WebRTC, and a standard
/// receiver (ffmpeg) joining a stream it never asks anything of.
@Suite("Fan-out: Janus and browsers, standard receivers joining late", .serialized, .alone)
struct FanoutEndToEndTests {
    /// Frames encoded per second over the sender's run (its own count).
    private func senderRate(_ stats: [String: Any]) -> Double {
        let frames = Double(stats["framesEncoded"] as? Int ?? 0)
        let seconds = stats["elapsedSeconds"] as? Double ?? 1
        return frames / max(seconds, 1)
    }

    private func number(_ report: [String: Any]?, _ key: String) -> Double {
        (report?[key] as? NSNumber)?.doubleValue ?? -1
    }

    @Test func browsersWatchThroughJanusAndALateViewerHasAPictureWithinASecond() throws {
        let janus = try JanusServer()
        let dir = try TemporaryDirectory()
        let screen = try EndToEndTests.Screen()
        let sender = try ShareBinary.start(["send", "--janus", janus.url, "--janus-secrets", janus.secretsFile,
                                            "--display", screen.name, "--audio-tone", "440", "--duration", "17",
                                            "--stats-json", dir.path("send.json")])
        #expect(sender.waitForOutput("watch:", timeout: 10), "\(sender.output)")
        let link = try #require(ViewerLink(senderOutput: sender.output), "\(sender.output)")
        let (id, pin) = (link.mountpoint, link.pin)
        #expect(link.line.contains("file://") && link.line.contains("examples/fanout/viewer.html?janus="), "\(link.line)")
        // The mountpoint is private: the link carries the pin a viewer needs.
        #expect(pin.count == 32, "\(link.line)")

        let first = try BrowserViewer(janus: janus.url, mountpoint: id, pin: pin, apiSecret: janus.apiSecret)
        // The first viewer's picture, then ten seconds of it.
        let start = first.waitForReport(timeout: 10) { number($0, "framesDecoded") > 0 }
        #expect(start != nil, "no picture in the first viewer: \(first.statuses) \(janus.log.suffix(2000))")
        usleep(2_000_000)
        let second = try BrowserViewer(janus: janus.url, mountpoint: id, pin: pin, apiSecret: janus.apiSecret)
        let guessing = try BrowserViewer(janus: janus.url, mountpoint: id, pin: String(pin.reversed()), apiSecret: janus.apiSecret)
        let joined = second.waitForReport(timeout: 10) { number($0, "joinMs") >= 0 && number($0, "framesDecoded") > 0 }
        let end = first.waitForReport(timeout: 14) { number($0, "elapsedMs") >= number(start, "elapsedMs") + 10_000 }
        let result = sender.wait(timeout: 20)
        #expect(result.status == 0, "\(result.output)")
        let stats = try readStats(dir.path("send.json"))

        // Over ten seconds the first viewer decodes at least 95% of what was sent.
        let seconds = (number(end, "elapsedMs") - number(start, "elapsedMs")) / 1000
        let decoded = number(end, "framesDecoded") - number(start, "framesDecoded")
        #expect(seconds >= 9.5, "\(String(describing: end))")
        #expect(decoded >= 0.95 * senderRate(stats) * seconds,
                "decoded \(decoded) in \(seconds) s at \(senderRate(stats)) fps sent: \(String(describing: end))")
        #expect(number(end, "videoPacketsLost") == 0)
        #expect(number(end, "frameWidth") == 1280 && number(end, "frameHeight") == 720)
        // Sound reaches the browser too: 48 kHz for the ten seconds, hardly concealed.
        let samples = number(end, "audioSamplesReceived") - number(start, "audioSamplesReceived")
        #expect(samples >= 0.95 * 48_000 * seconds, "audio: \(String(describing: end))")
        #expect(number(end, "audioConcealedSamples") < 0.02 * number(end, "audioSamplesReceived"))

        // The late viewer: Janus asks us for a keyframe (plain PLI on its RTCP
        // port) and the picture is there within a second of asking to watch.
        #expect(number(joined, "joinMs") >= 0 && number(joined, "joinMs") < 1000, "\(String(describing: joined))")
        #expect((stats["plainKeyframeRequests"] as? Int ?? 0) >= 2, "one per viewer: \(stats)")
        #expect(stats["controlPortRefused"] as? Int == 0)
        #expect(result.output.contains("mountpoint \(id) at \(janus.url) removed"), "\(result.output)")
        // A viewer with a wrong pin is refused and decodes nothing.
        #expect(!guessing.reports.contains { number($0, "framesDecoded") > 0 }, "\(guessing.reports.suffix(1))")
        #expect(guessing.statuses.contains { $0.contains("error") }, "\(guessing.statuses)")
        first.stop()
        second.stop()
        guessing.stop()
    }

    /// Whether a UDP socket is bound to `port` on this machine (/proc/net/udp).
    private func udpPortIsBound(_ port: Int) -> Bool {
        let hex = String(format: ":%04X ", port)
        return ["/proc/net/udp", "/proc/net/udp6"].contains { path in
            ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").contains { line in
                line.split(separator: " ").dropFirst().first.map { "\($0) ".contains(hex) } ?? false
            }
        }
    }

    /// ffmpeg opens our SDP three seconds into the stream and never asks for
    /// a keyframe: the short intra-refresh sweeps `--sdp` uses give it a
    /// whole picture within half a second, so it decodes at least 95% of
    /// the frames sent after it started listening. Audio on a port of its
    /// own, as the SDP says, is decoded too.
    @Test func ffmpegJoiningLateDecodesNearlyEveryFrameFromItsStart() throws {
        let dir = try TemporaryDirectory()
        let screen = try EndToEndTests.Screen()
        let port = freeUDPPort()
        let audioPort = freeUDPPort()
        let sdp = dir.path("stream.sdp")
        let sender = try ShareBinary.start(["send", "127.0.0.1", "--port", "\(port)", "--audio-port", "\(audioPort)",
                                            "--display", screen.name, "--audio-tone", "440", "--sdp", sdp,
                                            "--duration", "13.5", "--stats-json", dir.path("send.json")])
        usleep(3_000_000)
        let text = try String(contentsOfFile: sdp, encoding: .utf8)
        #expect(text.contains("m=video \(port) RTP/SAVP") && text.contains("m=audio \(audioPort) RTP/SAVP"), "\(text)")
        let md5 = dir.path("frames.md5")
        let ffmpeg = try ChildProcess("ffmpeg", ["-hide_banner", "-nostdin", "-loglevel", "error",
                                                 "-protocol_whitelist", "file,udp,rtp,srtp,crypto", "-i", sdp,
                                                 "-map", "0:v", "-map", "0:a", "-f", "framemd5", "-y", md5],
                                      // Its warnings (SRTP's "HMAC mismatch" among them) go to a
                                      // report of their own, shown if anything goes wrong.
                                      environment: ["FFREPORT": "file=\(dir.path("ffmpeg.log")):level=24"])
        let deadline = Date().addingTimeInterval(5)
        while !udpPortIsBound(port) && Date() < deadline { usleep(5_000) }
        let listening = Date().timeIntervalSince1970
        #expect(udpPortIsBound(port), "ffmpeg never bound port \(port)")
        let sent = sender.wait(timeout: 20)
        #expect(sent.status == 0, "\(sent.output)")
        let result = ffmpeg.wait(timeout: 10)  // it ends on our RTCP BYE
        let lines = ((try? String(contentsOfFile: md5, encoding: .utf8)) ?? "").split(separator: "\n")
        let decoded = lines.filter { $0.hasPrefix("0,") }.count
        let audioFrames = lines.filter { $0.hasPrefix("1,") }.count

        // Frames the sender encoded after ffmpeg listened, from its timeline (every 250 ms).
        let stats = try readStats(dir.path("send.json"))
        let origin = stats["timelineOriginUnix"] as? Double ?? 0
        let timeline = (stats["rateTimeline"] as? [[String: Any]] ?? []).map {
            (seconds: $0["seconds"] as? Double ?? 0, frames: $0["framesEncoded"] as? Int ?? 0)
        }
        let total = stats["framesEncoded"] as? Int ?? 0
        // Frames encoded by the instant ffmpeg listened, between the samples around it.
        let at = listening - origin
        let previous = timeline.last { $0.seconds <= at } ?? (seconds: 0, frames: 0)
        let next = timeline.first { $0.seconds > at } ?? previous
        let span = next.seconds - previous.seconds
        let before = Double(previous.frames) + (span > 0 ? Double(next.frames - previous.frames) * (at - previous.seconds) / span : 0)
        let after = total - Int(before.rounded())
        let report = ((try? String(contentsOfFile: dir.path("ffmpeg.log"), encoding: .utf8)) ?? "").split(separator: "\n")
        let warnings = "ffmpeg's report: \(report.filter { $0.contains("HMAC mismatch") }.count) HMAC mismatches; "
            + report.filter { !$0.contains("HMAC mismatch") }.suffix(12).joined(separator: " | ")
        #expect(after >= 250, "\(after) frames after ffmpeg started: \(timeline.count) samples")
        #expect(Double(decoded) >= 0.95 * Double(after),
                "ffmpeg decoded \(decoded) of the \(after) frames sent after it started; \(warnings)")
        #expect(audioFrames >= 400, "ffmpeg decoded \(audioFrames) audio frames from the audio port; ports \(port) and \(audioPort); \(warnings)")
        #expect(errorsBesidesTheJoin(result.output).isEmpty, "ffmpeg reported: \(result.output)")
    }

    /// ffmpeg's error lines, less those a late joiner cannot avoid. When the
    /// first frame a decoder sees happens to carry one of the frame numbers it
    /// starts counting from (one join in eight or sixteen: x264 numbers frames
    /// in 4 bits here), it makes no stand-in pictures, finds no reference, and
    /// drops that frame: "Missing reference picture" followed at once by
    /// "decode_slice_header error" from the same decoder. That pair can only
    /// come from a decoder holding no picture yet, so it marks the join;
    /// a missing reference later in the stream is concealed with a picture the
    /// decoder holds and does not come paired. Every other error counts.
    private func errorsBesidesTheJoin(_ output: String) -> [Substring] {
        let lines = output.split(separator: "\n")
        var left: [Substring] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            let decoder = line.prefix { $0 != "]" }
            if line.contains("Missing reference picture"), index + 1 < lines.count,
               lines[index + 1].hasPrefix(decoder), lines[index + 1].contains("decode_slice_header error") {
                index += 2
                continue
            }
            if line.lowercased().contains("error") { left.append(line) }
            index += 1
        }
        return left
    }
}
