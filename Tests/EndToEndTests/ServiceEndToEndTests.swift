import Foundation
import TestSupport
import Testing

/// `share recv` left running as a service: `share ctl` reaches it (its
/// status as one JSON line, and stop), and `--stats-interval` keeps its
/// `--stats-json` fresh while it runs.
@Suite("End to end: the receiver as a service", .busy)
struct ServiceEndToEndTests {
    private func ctl(_ arguments: [String]) throws -> (status: Int32, json: [String: Any]?, output: String) {
        let result = try ShareBinary.run(["ctl"] + arguments, timeout: 10)
        let json = try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]
        return (result.status, json, result.output)
    }

    @Test func ctlReachesARunningReceiverAndItsCountersStayFresh() throws {
        let dir = try TemporaryDirectory()
        let socket = dir.path("recv.sock")
        let stats = dir.path("recv.json")
        let receiver = try ShareBinary.start(["recv", "--port", "0", "--no-window", "--control", socket, "--duration", "30",
                                              "--stats-json", stats, "--stats-interval", "0.5"])
        defer { receiver.stop() }
        #expect(receiver.waitForOutput("listening on UDP port", timeout: 10), "\(receiver.output)")
        // The file is there while it runs, and rewritten: later counters, later.
        func elapsed() -> Double {
            guard let data = FileManager.default.contents(atPath: stats),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return -1 }
            return (object["elapsedSeconds"] as? NSNumber)?.doubleValue ?? -1
        }
        usleep(1_200_000)
        let first = elapsed()
        usleep(1_100_000)
        #expect(first > 0 && elapsed() >= first + 0.9, "\(first) then \(elapsed())")

        let status = try ctl(["status", "--socket", socket])
        #expect(status.status == 0 && status.json?["state"] as? String == "receiving"
                && (status.json?["statistics"] as? [String: Any])?["framesDecoded"] != nil, "\(status.output)")
        // A receiver has nothing to pause: said so, and it runs on.
        let pause = try ctl(["pause", "--socket", socket])
        #expect(pause.json?["ok"] as? Bool == false && (pause.json?["error"] as? String ?? "").contains("status and stop"), "\(pause.output)")
        let refused = try ctl(["--receiver", "budget", "32M"])
        #expect(refused.status == 64 && refused.output.contains("a receiver takes status and stop"), "\(refused.output)")
        #expect(receiver.isRunning)
        let stop = try ctl(["stop", "--socket", socket])
        #expect(stop.json?["state"] as? String == "stopping", "\(stop.output)")
        let ended = receiver.wait(timeout: 10)
        #expect(ended.status == 0 && ended.output.contains("received 0 frames"), "\(ended.output)")
    }

    @Test func statsIntervalNeedsAFileAndSeconds() throws {
        let noFile = try ShareBinary.run(["recv", "--no-window", "--stats-interval", "1", "--duration", "1"], timeout: 20)
        #expect(noFile.status == 64 && noFile.output.contains("give --stats-json too"), "\(noFile.output)")
        let tooOften = try ShareBinary.run(["send", "127.0.0.1", "--stats-json", "/tmp/x.json", "--stats-interval", "0"], timeout: 20)
        #expect(tooOften.status == 64 && tooOften.output.contains("--stats-interval"), "\(tooOften.output)")
    }
}
