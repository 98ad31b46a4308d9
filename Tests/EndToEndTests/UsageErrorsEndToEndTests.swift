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
        (["recv", "--port", "0"], "--port 0 is outside 1-65535"),
        (["recv", "--duration", "0"], "--duration 0.0 must be a number of seconds above 0"),
        (["relay", "--listen", "0", "--to", "127.0.0.1:5004"], "--listen 0 is outside 1-65535"),
        (["scene", "--fps", "0"], "--fps 0 is outside 1-240"),
    ])
    func aNumberOutOfItsRangeIsAUsageError(arguments: [String], message: String) throws {
        let result = try ShareBinary.run(arguments, timeout: 20)
        #expect(result.status == 64, "\(arguments): \(result.output)")
        #expect(result.output.split(separator: "\n").first?.contains(message) == true, "\(arguments): \(result.output)")
    }
}
