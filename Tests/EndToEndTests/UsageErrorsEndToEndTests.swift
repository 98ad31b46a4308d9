import Foundation
import TestSupport
import Testing

/// The command line as a user meets it: a number out of its range is a
/// usage error (exit 64, one line naming the option and its range) before
/// anything starts, through the `share` dispatcher and the tool alike.
@Suite("Usage errors: numbers out of range")
struct UsageErrorsEndToEndTests {
    @Test(arguments: [
        (["send", "127.0.0.1", "--bitrate", "-5"], "--bitrate -5 is outside 50-200000 kbit/s"),
        (["send", "127.0.0.1", "--duration=-1"], "--duration -1.0 must be a number of seconds above 0"),
        (["send", "127.0.0.1", "--duration", "nan"], "--duration nan must be a number of seconds above 0"),
        (["send", "127.0.0.1", "--fps", "500"], "--fps 500 is outside 1-120"),
        (["send", "127.0.0.1", "--port", "70000"], "--port 70000 is outside 1-65535"),
        (["send", "127.0.0.1", "--rtcp-port", "-1"], "--rtcp-port -1 is outside 1-65535"),
        (["send", "127.0.0.1", "--mtu", "100"], "--mtu 100 is outside 400-9000 bytes"),
        (["send", "127.0.0.1", "--audio-tone", "0"], "--audio-tone 0.0 is outside 1.0-24000.0 Hz"),
        (["send", "127.0.0.1", "--memory-budget", "1K"], "--memory-budget 1K is below 4 MiB"),
        (["send", "127.0.0.1", "--memory-budget", "lots"], "--memory-budget lots is not a size"),
        (["recv", "--port", "65536"], "--port 65536 is outside 0-65535"),
        (["recv", "--duration", "0"], "--duration 0.0 must be a number of seconds above 0"),
        (["relay", "--listen", "0", "--to", "127.0.0.1:5004"], "--listen 0 is outside 1-65535"),
        (["scene", "--fps", "0"], "--fps 0 is outside 1-240"),
    ])
    func aNumberOutOfItsRangeIsAUsageError(arguments: [String], message: String) throws {
        let result = try ShareBinary.run(arguments, timeout: 20)
        #expect(result.status == 64, "\(arguments): \(result.output)")
        #expect(result.output.split(separator: "\n").first?.contains(message) == true, "\(arguments): \(result.output)")
    }

    /// Messages say what is wrong in words, with no library's internals:
    /// no "xcb error 1", no Foundation error domain, no enum case names.
    @Test func messagesNameTheCauseInWords() throws {
        let dir = try TemporaryDirectory()
        let sdp = try ShareBinary.run(["recv", "--sdp", dir.path("missing.sdp"), "--duration", "1"], timeout: 20)
        #expect(sdp.status == 1 && sdp.output.contains("cannot use SDP") && sdp.output.contains("no such readable text file")
                && !sdp.output.contains("NSCocoaErrorDomain"), "\(sdp.output)")
        let hostPort = try ShareBinary.run(["send", "127.0.0.1:6000"], timeout: 20)
        #expect(hostPort.status == 64 && hostPort.output.contains("share send 127.0.0.1 --port 6000"), "\(hostPort.output)")
        let key = dir.path("short.key")
        try "AES_CM_128_HMAC_SHA1_80 inline:AAAA\n".write(toFile: key, atomically: true, encoding: .utf8)
        chmod(key, 0o600)
        let badKey = try ShareBinary.run(["send", "127.0.0.1", "--srtp-key-file", key, "--audio", "none", "--duration", "1"], timeout: 20)
        #expect(badKey.status == 1 && badKey.output.contains("bad SRTP key: AES_CM_128_HMAC_SHA1_80 needs 30 bytes")
                && !badKey.output.contains("badKey"), "\(badKey.output)")
        // A display nobody serves (no socket of that number).
        let number = (1000..<2000).first { !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\($0)") } ?? 1999
        let noDisplay = try ShareBinary.run(["send", "127.0.0.1", "--display", ":\(number)", "--audio", "none", "--duration", "1"],
                                            timeout: 20)
        #expect(noDisplay.status == 1 && noDisplay.output.contains("cannot connect to display :\(number): no X server answers there")
                && !noDisplay.output.contains("xcb error"), "\(noDisplay.output)")
        // A receiver that could not show a picture refuses before it listens,
        // not at the first picture of a session it accepted.
        let noWindow = try ShareBinary.run(["recv", "--port", "0", "--display", ":\(number)", "--duration", "5"], timeout: 20)
        #expect(noWindow.status == 1 && noWindow.output.contains("window: cannot connect to display :\(number)")
                && noWindow.output.contains("--no-window") && !noWindow.output.contains("listening"), "\(noWindow.output)")
    }

    /// `share --version` names the commit it was built from, as `git
    /// describe` gives it; a mistyped subcommand is named as one.
    @Test func theVersionIsTheBuildsAndAMistypedSubcommandIsNamed() throws {
        let described = try run("/usr/bin/git", ["-C", ShareBinary.packageRoot.path, "describe", "--tags", "--always", "--dirty"])
        let version = try ShareBinary.run(["--version"], timeout: 20)
        #expect(version.status == 0 && version.output.trimmingCharacters(in: .whitespacesAndNewlines)
                == described.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\(version.output) vs \(described.stdout)")
        let typo = try ShareBinary.run(["sned", "127.0.0.1"], timeout: 20)
        #expect(typo.status == 64 && typo.output.contains("unknown subcommand 'sned' (did you mean send?)"), "\(typo.output)")
        let nothingLike = try ShareBinary.run(["frobnicate"], timeout: 20)
        #expect(nothingLike.status == 64 && nothingLike.output.contains("unknown subcommand 'frobnicate'")
                && !nothingLike.output.contains("did you mean"), "\(nothingLike.output)")
    }
}
