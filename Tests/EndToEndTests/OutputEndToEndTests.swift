import Foundation
import TestSupport
import Testing

/// What `share send` and `share recv` say on standard error when nobody
/// watches it: lines stamped with the time (unless systemd's journal
/// stamps them), `--quiet` down to warnings, `--verbose` up to details.
@Suite("End to end: output for unattended use", .busy)
struct OutputEndToEndTests {
    /// An ISO 8601 UTC instant to the millisecond, then the line.
    private let stamped = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z share: /#

    private func stderrLines(_ output: String) -> [Substring] {
        output.split(separator: "\n").filter { $0.contains("share: ") }
    }

    @Test func linesAreStampedUnlessTheJournalStampsThem() throws {
        let plain = try ShareBinary.run(["recv", "--no-window", "--port", "0", "--duration", "0.5"], timeout: 20)
        let lines = stderrLines(plain.output)
        #expect(!lines.isEmpty && lines.allSatisfy { $0.firstMatch(of: stamped) != nil }, "\(plain.output)")
        // Standard error is the journal's stream (its device and inode in JOURNAL_STREAM): no stamp of ours.
        let share = try ShareBinary.path()
        let journal = try run("/bin/bash", ["-c", "JOURNAL_STREAM=$(stat -L -c '%d:%i' /proc/self/fd/2) exec \"$0\" recv --no-window --port 0 --duration 0.5", share])
        let journalLines = stderrLines(journal.stdout + journal.stderr)
        #expect(!journalLines.isEmpty && journalLines.allSatisfy { $0.hasPrefix("share: ") }, "\(journal.stderr)")
    }

    @Test func quietSaysOnlyWarningsAndVerboseSaysTheDetails() throws {
        // No display and no --no-window: a warning, said even with --quiet; the listening note is not.
        let quiet = try ShareBinary.run(["recv", "--quiet", "--port", "0", "--duration", "0.5"], timeout: 20, environment: ["DISPLAY": ""])
        #expect(quiet.status == 0 && quiet.output.contains("no display: receiving without a window")
                && !quiet.output.contains("listening on UDP port") && quiet.output.contains("received 0 frames"), "\(quiet.output)")
        let both = try ShareBinary.run(["send", "127.0.0.1", "--quiet", "--verbose"], timeout: 20)
        #expect(both.status == 64 && both.output.contains("--quiet or --verbose"), "\(both.output)")

        // A session: with --verbose the sender logs its network estimates; without it, none.
        let dir = try TemporaryDirectory()
        let key = try ShareBinary.keyFile(in: dir)
        let screen = try EndToEndTests.Screen(width: 320, height: 240)
        var logs: [String] = []
        for verbosity in [["--verbose"], []] {
            let port = freeUDPPort()
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--key-file", key, "--no-window", "--no-audio",
                                                  "--duration", "5"])
            #expect(receiver.waitForOutput("listening", timeout: 10))
            let sender = try ShareBinary.run(["send", "127.0.0.1", "--port", "\(port)", "--display", screen.name, "--key-file", key,
                                              "--audio", "none", "--duration", "3"] + verbosity, timeout: 30)
            #expect(sender.status == 0, "\(sender.output)")
            logs.append(sender.output)
            _ = receiver.wait(timeout: 10)
        }
        #expect(logs[0].contains("share: network: target ") && logs[0].contains("kbit/s"), "\(logs[0])")
        #expect(!logs[1].contains("share: network: target "), "\(logs[1])")
    }
}
