import Foundation
import TestSupport
import Testing

/// The xdg-desktop-portal ScreenCast path for real: the portal and its
/// GNOME backend (xdg-desktop-portal-gnome) in a headless GNOME session,
/// whose dialog is answered as a person answers it, with the pointer
/// (Mutter's RemoteDesktop API).
@Suite("End to end: the desktop's screen cast portal", .serialized, .alone)
struct PortalEndToEndTests {
    /// Where the portal's dialog puts its parts on a 1280x720 monitor.
    static let monitorRow = (x: 470, y: 386), share = (x: 852, y: 233), cancel = (x: 430, y: 233)

    /// `share send --capture portal` started in `session` for `seconds`,
    /// its SDP and statistics in `dir` as `name`.sdp and `name`.json.
    static func sendThroughPortal(in session: GnomeSession, _ dir: TemporaryDirectory, name: String,
                                  seconds: Int) throws -> ChildProcess {
        try session.start(["send", "127.0.0.1", "--port", "\(freeUDPPort())", "--sdp", dir.path("\(name).sdp"),
                           "--capture", "portal", "--audio", "none", "--duration", "\(seconds)",
                           "--stats-json", dir.path("\(name).json")])
    }

    /// Clicks `spots` in turn, again and again, until `sender` says
    /// `done` (the dialog opens a moment after the request, and a click
    /// before it is lost).
    static func answer(_ input: RemoteInput, clicking spots: [(x: Int, y: Int)], until done: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if done() { return true }
            for spot in spots {
                input.click(x: spot.x, y: spot.y)
                usleep(300_000)
            }
            usleep(700_000)
        }
        return done()
    }

    /// The first time the desktop asks, and the answer is remembered: the
    /// restore token is kept (mode 0600) and the next run shares without asking.
    @Test func thePortalAsksOnceThenRemembers() throws {
        let session = try GnomeSession()
        let dir = try TemporaryDirectory()
        session.lend(dir)
        let input = try session.remoteInput()
        let first = try Self.sendThroughPortal(in: session, dir, name: "first", seconds: 3)
        #expect(Self.answer(input, clicking: [Self.monitorRow, Self.share]) { first.output.contains("capturing") },
                "the dialog was answered: \(first.output)")
        let ran = first.wait(timeout: 30)
        #expect(ran.status == 0, "\(ran.output)")
        #expect(ran.output.contains("chosen in the desktop's dialog") && ran.output.contains("screen cast portal"), "\(ran.output)")
        #expect((try readStats(dir.path("first.json"))["framesEncoded"] as? Int ?? 0) >= 2)
        let token = session.environment["XDG_STATE_HOME"]! + "/share/portal-monitor.token"
        let attributes = try FileManager.default.attributesOfItem(atPath: token)
        #expect(attributes[.posixPermissions] as? Int == 0o600, "the restore token is private")

        let again = try Self.sendThroughPortal(in: session, dir, name: "again", seconds: 2)
        let second = again.wait(timeout: 20)
        #expect(second.status == 0 && second.output.contains("remembered it"), "shared without asking: \(second.output)")
    }

    /// Cancel in the dialog: the sender ends at once, saying so.
    @Test func cancellingTheDialogEndsTheSenderWithItsReason() throws {
        let session = try GnomeSession()
        let dir = try TemporaryDirectory()
        session.lend(dir)
        let input = try session.remoteInput()
        let sender = try Self.sendThroughPortal(in: session, dir, name: "no", seconds: 5)
        #expect(Self.answer(input, clicking: [Self.cancel]) { !sender.isRunning }, "the sender ended: \(sender.output)")
        let ran = sender.wait(timeout: 10)
        #expect(ran.status != 0 && ran.output.contains("cancelled in the desktop's dialog"), "\(ran.output)")
    }
}
