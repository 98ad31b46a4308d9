import Foundation
import TestSupport
import Testing

/// One encode, several Janus servers: three Janus processes on this
/// machine, one `share send` feeding all three, a headless Chromium on each.
@Suite("Fan-out to several Janus servers from one encode", .serialized, .alone)
struct FanoutEdgesEndToEndTests {
    private func number(_ report: [String: Any]?, _ key: String) -> Double {
        (report?[key] as? NSNumber)?.doubleValue ?? -1
    }

    @Test func threeJanusServersAreFedByOneEncodeAndOneGoingAwayDisturbsNoOther() throws {
        // Open to viewers (no API secret): the admin key guards creating, the pin watching.
        let servers = try (0..<3).map { _ in try JanusServer(openToViewers: true) }
        let dir = try TemporaryDirectory()
        let screen = try EndToEndTests.Screen()
        // The first on the command line, the others from a list with their own secrets.
        let list = dir.path("janus.list")
        try "# edges\n\(servers[1].url) \(servers[1].secretsFile)\n\n\(servers[2].url)   \(servers[2].secretsFile) # last\n"
            .write(toFile: list, atomically: true, encoding: .utf8)
        let sender = try ShareBinary.start(["send", "--janus", servers[0].url, "--janus-secrets", servers[0].secretsFile,
                                            "--janus-list", list, "--display", screen.name, "--audio-tone", "440",
                                            "--duration", "20", "--stats-json", dir.path("send.json")])
        #expect(sender.waitForOutput("sending 1280x720", timeout: 15), "\(sender.output)")
        let links = ViewerLink.all(senderOutput: sender.output)
        #expect(links.map(\.janus) == servers.map(\.url), "\(sender.output)")
        guard links.count == 3 else { return }
        // One encode: the same stream at three mountpoints, one pin for all.
        #expect(Set(links.map(\.pin)).count == 1)
        // Viewers come through examples/fanout/spread.py, which sends each to the next edge.
        try sender.output.write(toFile: dir.path("send.log"), atomically: true, encoding: .utf8)
        let spreadPort = freeTCPPort()
        let spread = try ChildProcess("/usr/bin/python3", [ShareBinary.packageRoot.appendingPathComponent("examples/fanout/spread.py").path,
                                                          dir.path("send.log"), "--listen", "127.0.0.1:\(spreadPort)"])
        defer { spread.stop() }
        #expect(spread.waitForOutput("spreading viewers over 3 edges", timeout: 10), "\(spread.output)")
        let spreadURL = "http://127.0.0.1:\(spreadPort)/"
        // One at a time, so the round robin's order is the servers' order.
        var viewers: [BrowserViewer] = []
        var starts: [[String: Any]?] = []
        for index in servers.indices {
            viewers.append(try BrowserViewer(opening: spreadURL))
            starts.append(viewers[index].waitForReport(timeout: 10) { number($0, "framesDecoded") > 0 })
            #expect(starts[index] != nil, "no picture from Janus \(index): \(viewers[index].statuses) \(servers[index].log.suffix(1500))")
            // The page names the edge it watches.
            #expect(starts[index]?["edge"] as? String == "127.0.0.1:\(servers[index].httpPort)", "\(String(describing: starts[index]))")
        }
        // The second server dies mid-stream; the sender notices, says so and drops it.
        usleep(2_000_000)
        kill(servers[1].pid, SIGKILL)
        #expect(sender.waitForOutput("went away", timeout: 8), "\(sender.output)")
        #expect(sender.output.contains("\(servers[1].url) went away") && sender.output.contains("2 of 3 still fed"), "\(sender.output)")
        // A viewer joining late (the round robin's turn is the first edge again)
        // has its picture within a second.
        let late = try BrowserViewer(opening: spreadURL)
        let joined = late.waitForReport(timeout: 10) { number($0, "joinMs") >= 0 && number($0, "framesDecoded") > 0 }
        #expect(joined?["edge"] as? String == "127.0.0.1:\(servers[0].httpPort)", "\(String(describing: joined))")
        #expect(number(joined, "joinMs") >= 0 && number(joined, "joinMs") < 1000, "\(String(describing: joined))")
        let ends = [0, 2].map { index in
            viewers[index].waitForReport(timeout: 14) { number($0, "elapsedMs") >= number(starts[index], "elapsedMs") + 10_000 }
        }
        let result = sender.wait(timeout: 25)
        #expect(result.status == 0, "\(result.output)")
        let stats = try readStats(dir.path("send.json"))
        let rate = Double(stats["framesEncoded"] as? Int ?? 0) / max(stats["elapsedSeconds"] as? Double ?? 1, 1)

        // The two that stayed: ten seconds across the loss of the third, at
        // least 95% of the frames sent decoded, nothing lost.
        for (position, index) in [0, 2].enumerated() {
            let (start, end) = (starts[index], ends[position])
            let seconds = (number(end, "elapsedMs") - number(start, "elapsedMs")) / 1000
            let decoded = number(end, "framesDecoded") - number(start, "framesDecoded")
            #expect(seconds >= 9.5 && decoded >= 0.95 * rate * seconds,
                    "Janus \(index): decoded \(decoded) in \(seconds) s at \(rate) fps sent: \(String(describing: end))")
            #expect(number(end, "videoPacketsLost") == 0, "Janus \(index): \(String(describing: end))")
        }
        // Each server's keyframe requests are its own; the first's include the late viewer's.
        let destinations = stats["destinations"] as? [[String: Any]] ?? []
        #expect(destinations.map { $0["dropped"] as? Bool } == [false, true, false], "\(destinations)")
        let asked = destinations.map { $0["keyframeRequests"] as? Int ?? 0 }
        #expect(asked.count == 3 && asked[0] >= 2 && asked[1] >= 1 && asked[2] >= 1, "\(asked)")
        // Every mountpoint of a server still there is removed; the dead one is not tried.
        #expect(result.output.contains("mountpoint \(links[0].mountpoint) at \(servers[0].url) removed")
                && result.output.contains("mountpoint \(links[2].mountpoint) at \(servers[2].url) removed")
                && !result.output.contains("mountpoint \(links[1].mountpoint) at \(servers[1].url) removed")
                && !result.output.contains("could not be removed"), "\(result.output)")
        (viewers + [late]).forEach { $0.stop() }
    }

    /// A tree: the sender uploads one stream to an ingest Janus (a remote
    /// publisher in its VideoRoom), whose forwarders feed two edges'
    /// mountpoints, each leg on a key of its own.
    @Test func anIngestJanusFeedsTheEdgesFromOneUpload() throws {
        let ingest = try JanusServer(openToViewers: true, relay: true)
        let edges = try (0..<2).map { _ in try JanusServer(openToViewers: true) }
        let dir = try TemporaryDirectory()
        let screen = try EndToEndTests.Screen()
        let list = dir.path("edges.list")
        try edges.map { "\($0.url) \($0.secretsFile)\n" }.joined().write(toFile: list, atomically: true, encoding: .utf8)
        let sender = try ShareBinary.start(["send", "--janus-ingest", ingest.url, "--janus-ingest-secrets", ingest.secretsFile,
                                            "--janus-list", list, "--display", screen.name, "--audio-tone", "440",
                                            "--duration", "20", "--stats-json", dir.path("send.json")])
        #expect(sender.waitForOutput("sending 1280x720", timeout: 15), "\(sender.output)\n\(ingest.log.suffix(1500))")
        #expect(sender.output.contains("relaying through \(ingest.url)") && sender.output.contains("forwarded to 2 edges"), "\(sender.output)")
        let links = ViewerLink.all(senderOutput: sender.output)
        #expect(links.map(\.janus) == edges.map(\.url), "\(sender.output)")
        guard links.count == 2 else { return }
        var viewers: [BrowserViewer] = []
        var starts: [[String: Any]?] = []
        for (index, link) in links.enumerated() {
            viewers.append(try BrowserViewer(janus: link.janus, mountpoint: link.mountpoint, pin: link.pin, apiSecret: nil))
            starts.append(viewers[index].waitForReport(timeout: 10) { number($0, "framesDecoded") > 0 })
            #expect(starts[index] != nil, "no picture through edge \(index): \(viewers[index].statuses)\n\(ingest.log.suffix(1500))")
        }
        // The second edge dies; the sender has the ingest stop feeding it.
        usleep(2_000_000)
        kill(edges[1].pid, SIGKILL)
        #expect(sender.waitForOutput("went away", timeout: 8), "\(sender.output)")
        #expect(sender.output.contains("\(edges[1].url) went away") && sender.output.contains("1 of 2 still fed"), "\(sender.output)")
        // A viewer joining late on the first edge: its keyframe request
        // climbs the tree to the sender, and its picture comes within a second.
        let late = try BrowserViewer(janus: links[0].janus, mountpoint: links[0].mountpoint, pin: links[0].pin, apiSecret: nil)
        let joined = late.waitForReport(timeout: 10) { number($0, "joinMs") >= 0 && number($0, "framesDecoded") > 0 }
        #expect(number(joined, "joinMs") >= 0 && number(joined, "joinMs") < 1000, "\(String(describing: joined))")
        let end = viewers[0].waitForReport(timeout: 14) { number($0, "elapsedMs") >= number(starts[0], "elapsedMs") + 10_000 }
        let result = sender.wait(timeout: 25)
        #expect(result.status == 0, "\(result.output)")
        let stats = try readStats(dir.path("send.json"))
        let rate = Double(stats["framesEncoded"] as? Int ?? 0) / max(stats["elapsedSeconds"] as? Double ?? 1, 1)
        let seconds = (number(end, "elapsedMs") - number(starts[0], "elapsedMs")) / 1000
        let decoded = number(end, "framesDecoded") - number(starts[0], "framesDecoded")
        #expect(seconds >= 9.5 && decoded >= 0.95 * rate * seconds, "decoded \(decoded) in \(seconds) s at \(rate) fps sent: \(String(describing: end))")
        #expect(number(end, "videoPacketsLost") == 0, "\(String(describing: end))")
        // One upload: no copies, and every packet to the ingest's port.
        #expect((stats["destinations"] as? [Any] ?? []).count <= 1, "\(stats)")
        // Keyframe requests come up the tree: the viewers' joins, the late one's among them.
        #expect((stats["plainKeyframeRequests"] as? Int ?? 0) >= 2, "\(stats)")
        #expect(!ingest.log.contains("SRTP unprotect error"), "\(ingest.log.suffix(1500))")
        #expect(result.output.contains("mountpoint \(links[0].mountpoint) at \(edges[0].url) removed")
                && !result.output.contains("mountpoint \(links[1].mountpoint) at \(edges[1].url) removed")
                && result.output.contains("relay room") && result.output.contains("at \(ingest.url) removed")
                && !result.output.contains("could not be removed"), "\(result.output)")
        (viewers + [late]).forEach { $0.stop() }
    }

    /// Every edge is fed through the ingest: when it goes away the run ends
    /// with why, and the edges' mountpoints are still removed.
    @Test func theIngestGoingAwayEndsTheRunWithWhy() throws {
        let ingest = try JanusServer(openToViewers: true, relay: true)
        let edge = try JanusServer(openToViewers: true)
        let screen = try EndToEndTests.Screen()
        let sender = try ShareBinary.start(["send", "--janus-ingest", ingest.url, "--janus-ingest-secrets", ingest.secretsFile,
                                            "--janus", edge.url, "--janus-secrets", edge.secretsFile, "--display", screen.name,
                                            "--duration", "30"])
        #expect(sender.waitForOutput("sending 1280x720", timeout: 15), "\(sender.output)")
        let link = try #require(ViewerLink.all(senderOutput: sender.output).first, "\(sender.output)")
        kill(ingest.pid, SIGKILL)
        let result = sender.wait(timeout: 15)
        #expect(result.status == 1 && result.output.contains("the ingest \(ingest.url) went away")
                && result.output.contains("janus: the ingest Janus went away"), "\(result.output)")
        #expect(result.output.contains("mountpoint \(link.mountpoint) at \(edge.url) removed") && !result.output.contains("relay room"),
                "\(result.output)")
    }

    /// A list of servers that cannot be right is a usage error before anything starts.
    @Test func aBadServerListIsAUsageErrorThatNamesTheLine() throws {
        let dir = try TemporaryDirectory()
        let list = dir.path("janus.list")
        try "# edges\nhttp://127.0.0.1:8088/janus\nftp://elsewhere/janus secrets\n".write(toFile: list, atomically: true, encoding: .utf8)
        let bad = try ShareBinary.run(["send", "--janus-list", list, "--duration", "1"])
        #expect(bad.status == 64 && bad.output.contains("--janus-list line 3"), "\(bad.output)")
        let missing = try ShareBinary.run(["send", "--janus-list", dir.path("none.list"), "--duration", "1"])
        #expect(missing.status == 64 && missing.output.contains("no such readable file"), "\(missing.output)")
        try "# nothing\n\n".write(toFile: list, atomically: true, encoding: .utf8)
        let empty = try ShareBinary.run(["send", "--janus-list", list, "--duration", "1"])
        #expect(empty.status == 64 && empty.output.contains("names no server"), "\(empty.output)")
        try "http://127.0.0.1:8088/janus\n".write(toFile: list, atomically: true, encoding: .utf8)
        let twice = try ShareBinary.run(["send", "--janus", "http://127.0.0.1:8088/janus", "--janus-list", list, "--duration", "1"])
        #expect(twice.status == 64 && twice.output.contains("given twice"), "\(twice.output)")
        // An ingest relays to edges: none named, a key file kept across runs
        // (its SSRCs are fixed), or its secrets alone are usage errors.
        let ingest = "http://127.0.0.1:8088/janus"
        let cases: [([String], String)] = [
            (["--janus-ingest", ingest], "give at least one"),
            (["--janus-ingest", "ftp://x/janus", "--janus", ingest], "give an http:// or https:// address"),
            (["--janus-ingest", ingest, "--janus", "http://127.0.0.1:8089/janus", "--srtp-key-file", list], "fresh key each run"),
            (["--janus", ingest, "--janus-ingest-secrets", list], "give --janus-ingest too"),
        ]
        for (arguments, message) in cases {
            let refused = try ShareBinary.run(["send"] + arguments + ["--duration", "1"])
            #expect(refused.status == 64 && refused.output.contains(message), "\(arguments): \(refused.output)")
        }
    }
}
