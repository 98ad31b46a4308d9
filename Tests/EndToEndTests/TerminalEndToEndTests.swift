import Foundation
import Testing
import TestSupport

extension EndToEndTests {
    /// `share` on a terminal, through a pseudo-terminal (`script`): the
    /// first-meeting question stays on screen until it is answered.
    @Suite("A terminal: the question is not drawn over", .serialized, .busy)
    struct TerminalTests {
        @Test func theFirstMeetingQuestionStaysVisibleUntilAnswered() throws {
            let (sending, receiving) = (try SessionTests.Install(), try SessionTests.Install())
            let screen = try Screen(width: 320, height: 240)
            let port = freeUDPPort()
            let receiver = try ShareBinary.start(["recv", "--port", "\(port)", "--no-window", "--no-audio", "--name", "viewer",
                                                  "--duration", "12"], environment: receiving.environment, input: true)
            usleep(300_000)
            let command = ([try ShareBinary.path(), "send", "127.0.0.1", "--port", "\(port)", "--display", screen.name,
                            "--name", "sharer", "--audio", "none", "--duration", "8"]).joined(separator: " ")
            // The sender on a pseudo-terminal: its status line is drawn every second.
            let sender = try ChildProcess("/usr/bin/script", ["-qfec", "exec \(command)", "/dev/null"],
                                          environment: sending.environment, input: true)
            #expect(sender.waitForOutput("[y/N]", timeout: 10), "\(sender.output)")
            #expect(receiver.waitForOutput("[y/N]", timeout: 10), "\(receiver.output)")
            // Three status ticks pass while the question waits.
            usleep(3_000_000)
            let waiting = sender.output
            let afterQuestion = waiting.components(separatedBy: "[y/N] ").last ?? ""
            #expect(!afterQuestion.contains("fps") && !afterQuestion.contains("\u{1B}[K"),
                    "the status line was drawn over the question: \(afterQuestion.debugDescription)")
            receiver.type("y\n")
            sender.type("y\n")
            let sent = sender.wait(timeout: 20)
            #expect(sent.status == 0, "\(sent.output)")
            // Once answered, the status line comes back.
            let answered = sent.output.components(separatedBy: "[y/N] ").last ?? ""
            #expect(answered.contains("fps"), "\(answered.debugDescription)")
            // The governor's state in words, not a bare rung name.
            #expect(answered.contains("of 50.0 MiB, full quality"), "\(answered.debugDescription)")
            // A note clears the status line before it, rather than running into it.
            #expect(answered.contains("\r\u{1B}[Kshare: "), "\(answered.debugDescription)")
            _ = receiver.wait(timeout: 15)
        }
    }
}
