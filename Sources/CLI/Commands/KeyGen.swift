public import ArgumentParser
internal import ShareHandshake
import ShareSRTP

/// `share keygen`: small enough to run in the dispatcher itself.
public struct KeyGen: ParsableCommand {
    public static let configuration = CommandConfiguration(commandName: "keygen", abstract: "Write a new SRTP key file (mode 0600).")

    @Argument(help: "Where to write the key; an existing file is never overwritten.") var path: String
    @Option(help: "SRTP profile: \(SRTPProfile.allNames).")
    var profile = "AES_CM_128_HMAC_SHA1_80"

    public init() {}

    public func run() throws {
        guard let suite = SRTPProfile(name: profile) else {
            fail("unknown profile \(profile); use one of \(SRTPProfile.allNames)")
        }
        do { try KeyFile.create(path, profile: suite) } catch { fail("\(error)") }
        note("wrote \(path); copy it to the other machine over a channel you trust")
    }
}
