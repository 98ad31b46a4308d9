import Foundation
import TestSupport
import Testing

/// Glass-to-glass measurement and the benchmark harness, on real binaries.
@Suite("Frame stamps and the benchmark harness", .serialized, .alone)
struct BenchmarkHarnessTests {
    /// `share scene --stamp` → `share send` → `share recv --read-stamps`:
    /// nearly every decoded picture carries a new, readable stamp, and the
    /// latency is that of a loopback stream (not 0, not seconds). On a
    /// 30-bit display too: the scene draws its colours in the display's
    /// layout and capture reads them back (stamps are black and white).
    @Test(arguments: [24, 30])
    func glassToGlassIsReadFromDecodedPictures(depth: Int) throws {
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let display = try VirtualDisplay(width: 1280, height: 720, depth: depth)
        let scene = try ShareBinary.start(["scene", "--display", display.display, "--stamp"])
        defer { scene.stop() }
        usleep(300_000)
        let port = freeUDPPort()
        let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                              "--read-stamps", "--duration", "8", "--stats-json", dir.path("recv.json")])
        usleep(300_000)
        let sender = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", display.display,
                                          "--key-file", key, "--audio", "none", "--duration", "5"])
        #expect(sender.status == 0, "\(sender.output)")
        let received = receiver.wait(timeout: 15)
        #expect(received.output.contains("glass to glass:"), "\(received.output)")
        let stats = try readStats(dir.path("recv.json"))
        let decoded = stats["framesDecoded"] as? Int ?? 0
        let fresh = stats["stampsNew"] as? Int ?? 0
        let unreadable = stats["stampsUnreadable"] as? Int ?? -1
        #expect(decoded >= 140, "\(stats)")
        #expect(Double(fresh) >= 0.95 * Double(decoded), "new stamps \(fresh) of \(decoded) pictures")
        #expect(unreadable >= 0 && unreadable <= decoded / 50, "unreadable \(unreadable)")
        let g2g = stats["glassToGlass"] as? [String: Any] ?? [:]
        let p50 = g2g["p50"] as? Double ?? -1
        #expect(p50 > 0.5 && p50 < 100, "glass-to-glass p50 \(p50) ms")
        #expect(g2g["samples"] as? Int == fresh)
    }

    /// The harness end to end, small: share, ffmpeg and GStreamer, moving
    /// (the default scene and the scene redrawn at 59 Hz) and still screen,
    /// into one receiver; every sender's stream decoded with stamps read,
    /// and the table, JSON and plot written; share with an option of `share
    /// send` added (`share[--threads 2]`) is measured beside them as a
    /// sender of its own. 320x240 keeps its load off the suites running beside it.
    @Test func harnessComparesTheThreeSenders() throws {
        let dir = try TemporaryDirectory()
        let bin = URL(fileURLWithPath: try ShareBinary.path()).deletingLastPathComponent().path
        let script = ShareBinary.packageRoot.appendingPathComponent("Benchmarks/harness.py").path
        let result = try ChildProcess("python3", [script, "--bin", bin, "--sizes", "320x240", "--seconds", "3",
                                                  "--repeats", "1", "--no-audio", "--scene-rates", "59",
                                                  "--senders", "share,share[--threads 2],ffmpeg,gstreamer",
                                                  "--out", dir.path("out")]).wait(timeout: 300)
        #expect(result.status == 0, "\(result.output)")
        let table = (try? String(contentsOfFile: dir.path("out/results.md"), encoding: .utf8)) ?? ""
        for sender in ["share", "share[--threads 2]", "ffmpeg", "gstreamer"] {
            #expect(table.contains("| 320x240 | \(sender) |"), "\(table)")
            #expect(table.contains("| 320x240 static | \(sender) |"), "\(table)")
            #expect(table.contains("| 320x240 @ 59 Hz | \(sender) |"), "\(table)")
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.path("out/results.json")))
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        let results = json["results"] as? [[String: Any]] ?? []
        #expect(results.count == 12)
        #expect(table.contains("| 320x240 (share[--threads 2]) |"), "its own row of where the time goes: \(table)")
        for row in results where ["320x240", "320x240 @ 59 Hz"].contains(row["run"] as? String ?? "") {
            let sender = row["sender"] as? String ?? "?"
            let decoded = row["frames_decoded"] as? Int ?? 0
            #expect(decoded >= 60, "\(sender) decoded \(decoded)")
            let p50 = row["g2g_p50"] as? Double ?? -1
            #expect(p50 > 0 && p50 < 300, "\(sender) glass-to-glass p50 \(p50)")
            #expect((row["g2g_samples"] as? Int ?? 0) >= decoded / 2, "\(sender): stamps read from its pictures")
            #expect((row["cpu_ms_per_frame"] as? Double ?? 0) > 0)
        }
        let svg = (try? String(contentsOfFile: dir.path("out/results.svg"), encoding: .utf8)) ?? ""
        #expect(svg.hasPrefix("<svg") && svg.contains("gstreamer"))
    }

    /// The picture-quality benchmark, small: scrolling text and a still
    /// page, share and ffmpeg into one receiver that keeps numbered
    /// pictures, compared with the scene's references drawn again on the
    /// same display. Both senders' pictures are close to their references,
    /// far closer than to another frame's (the measure tells frames apart),
    /// and the still page is read after 1 s and 5 s.
    @Test func qualityBenchmarkComparesShownPicturesWithReferences() throws {
        let dir = try TemporaryDirectory()
        let bin = URL(fileURLWithPath: try ShareBinary.path()).deletingLastPathComponent().path
        let script = ShareBinary.packageRoot.appendingPathComponent("Benchmarks/quality.py").path
        let result = try ChildProcess("python3", [script, "--bin", bin, "--sizes", "640x360", "--seconds", "4",
                                                  "--scenes", "text,still-text", "--rates", "full",
                                                  "--senders", "share,ffmpeg", "--every", "6",
                                                  "--out", dir.path("out")]).wait(timeout: 240)
        #expect(result.status == 0, "\(result.output)")
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.path("out/quality.json")))
        let rows = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["rows"] as? [[String: Any]] ?? []
        #expect(rows.count == 4, "\(rows)")
        for row in rows {
            let name = "\(row["sender"] ?? "?") on \(row["scene"] ?? "?")"
            #expect((row["sent_kbps"] as? Double ?? 0) > 50, "\(name): \(row)")
            if row["scene"] as? String == "text" {
                let ssim = row["ssim"] as? Double ?? 0, control = row["control_ssim"] as? Double ?? 1
                #expect(ssim > 0.85 && (row["psnr"] as? Double ?? 0) > 25, "\(name): \(row)")
                #expect(control < ssim - 0.1, "\(name): a later frame's reference scores \(control), its own \(ssim)")
                #expect((row["pictures"] as? [Any] ?? []).count >= 5, "\(name): pictures compared")
            } else {
                for key in ["ssim_1s", "ssim_5s", "text_ssim_1s", "text_ssim_5s"] {
                    let value = row[key] as? Double ?? 0
                    #expect(value > 0.5 && value <= 1, "\(name): \(key) \(value)")
                }
            }
        }
        let table = (try? String(contentsOfFile: dir.path("out/quality.md"), encoding: .utf8)) ?? ""
        #expect(table.contains("| 640x360 | still-text | full | share |"), "\(table)")
    }

    /// The receiver's benchmark, small: a build against itself, the scene
    /// moving with the pointer drawn in and sent apart (last packet to
    /// display measured, pictures converted for the window while their last
    /// slices came), and the pointer moving over a still screen (the
    /// receiver's CPU measured); the table and JSON written.
    @Test func receiverBenchmarkMeasuresTheWindowAndThePointer() throws {
        let dir = try TemporaryDirectory()
        let bin = URL(fileURLWithPath: try ShareBinary.path()).deletingLastPathComponent().path
        let script = ShareBinary.packageRoot.appendingPathComponent("Benchmarks/receiver.py").path
        let result = try ChildProcess("python3", [script, "--bin", bin, "--size", "640x360", "--seconds", "3", "--runs", "1",
                                                  "--out", dir.path("out")]).wait(timeout: 180)
        #expect(result.status == 0, "\(result.output)")
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.path("out/receiver.json")))
        let rows = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
        #expect(rows.map { $0["mode"] as? String ?? "?" } == ["embed", "metadata", "pointer"], "\(rows)")
        for row in rows.prefix(2) {
            let shown = row["shown"] as? Int ?? 0
            #expect(shown >= 45, "\(row)")
            #expect((row["convertedEarly"] as? Int ?? 0) >= shown / 2, "\(row)")
            let lastPacket = row["lastPacketToDisplayP50"] as? Double ?? -1
            #expect(lastPacket > 0 && lastPacket < 100, "\(row)")
        }
        #expect((rows.last?["cpuPercent"] as? Double ?? 0) > 0 && (rows.last?["moves"] as? Int ?? 0) >= 100, "\(rows)")
        let table = (try? String(contentsOfFile: dir.path("out/receiver.md"), encoding: .utf8)) ?? ""
        #expect(table.contains("| embed | \(bin) |") && table.contains("| sent apart, every 10 ms | \(bin) |"), "\(table)")
    }

    /// The fan-out benchmark, small: Janus, `share send --janus`, none and
    /// then two light WebRTC viewers (aiortc) and a headless Chromium joining:
    /// every viewer receives at the sender's rate, Janus's CPU is measured
    /// (and per viewer), the browser has a picture within a second; then the
    /// sender feeding one and two Janus servers, each fed.
    @Test func fanoutBenchmarkMeasuresJanusAndAJoiningBrowser() throws {
        let dir = try TemporaryDirectory()
        let bin = URL(fileURLWithPath: try ShareBinary.path()).deletingLastPathComponent().path
        let script = ShareBinary.packageRoot.appendingPathComponent("Benchmarks/fanout.py").path
        let result = try ChildProcess("python3", [script, "--quick", "--bin", bin, "--out", dir.path("out")]).wait(timeout: 180)
        #expect(result.status == 0, "\(result.output)")
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.path("out/fanout.json")))
        let report = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        let rows = report["rows"] as? [[String: Any]] ?? []
        let row = try #require(rows.first { $0["viewers"] as? Int == 2 }, "\(rows)")
        #expect(row["viewers"] as? Int == 2 && row["receiving"] as? Int == 2, "\(row)")
        #expect((row["janusCorePercent"] as? Double ?? 0) > 0)
        #expect((row["framesPerViewerPerSecond"] as? Double ?? 0) >= 20, "\(row)")
        let join = row["browserJoinMs"] as? Int ?? -1
        #expect(join >= 0 && join < 1000, "\(row)")
        let table = (try? String(contentsOfFile: dir.path("out/fanout.md"), encoding: .utf8)) ?? ""
        #expect(table.contains("| 2 | 2 |"), "\(table)")
        #expect((row["janusMiBPerViewer"] as? Double) != nil && (row["forwardedMbps"] as? Double ?? 0) > 0, "\(row)")
        let edges = report["edges"] as? [[String: Any]] ?? []
        // Each count fed directly and through an ingest, every edge fed.
        #expect(edges.map { $0["edges"] as? Int } == [1, 1, 2, 2] && edges.map { $0["feed"] as? String } == ["direct", "tree", "direct", "tree"]
                && edges.allSatisfy { $0["fed"] as? Int == $0["edges"] as? Int }, "\(edges)")
        #expect(edges.allSatisfy { ($0["cpuMsPerFrame"] as? Double ?? 0) > 0 && ($0["fps"] as? Double ?? 0) > 20 }, "\(edges)")
        // Through the ingest the sender uploads one stream, and the ingest's CPU is measured.
        let tree = edges.filter { $0["feed"] as? String == "tree" }
        #expect(tree.allSatisfy { ($0["uploadMbps"] as? Double ?? 99) < 3 && ($0["ingestCorePercent"] as? Double ?? 0) > 0 }, "\(tree)")
        #expect(table.contains("| edges | feed | fed |"), "\(table)")
        // The capacity plan works from that output alone.
        let plan = try ChildProcess("python3", [ShareBinary.packageRoot.appendingPathComponent("Benchmarks/capacity.py").path,
                                                dir.path("out/fanout.json"), "--out", dir.path("out/capacity.md")]).wait(timeout: 30)
        #expect(plan.status == 0 && plan.output.contains("First limit") && plan.output.contains("1920x1080"), "\(plan.output)")
    }
}
