import ArgumentParser
import Foundation
import ShareCommands

@main
struct Share: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Share a Linux screen over standard RTP, encrypted with SRTP.",
        discussion: """
            On the viewing machine:   share recv
            On the sharing machine:   share send <viewer-host>
            The first time, both ends show a five-character code and ask: accept if the codes are the same.
            Or with a key file both hold (copied over a channel you trust; mode 0600):
              share keygen share.key, then share recv --key-file share.key and share send <host> --key-file share.key
            For ffmpeg, GStreamer or VLC: share send <host> --sdp stream.sdp (a static key, no handshake).
            """,
        version: shareVersion,
        subcommands: [Send.self, Receive.self, KeyGen.self, Ctl.self, Scene.self, Relay.self])

    /// A first word that names no subcommand is one mistyped: say so, and
    /// which one was meant, rather than "Unexpected argument".
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        if let first = arguments.first, !first.hasPrefix("-"), !names.contains(first) {
            let nearest = names.map { ($0, SubcommandGuess.distance(first, $0)) }.min { $0.1 < $1.1 }
            let hint = nearest.map { $0.1 <= 2 ? " (did you mean \($0.0)?)" : "" } ?? ""
            FileHandle.standardError.write(Data("share: unknown subcommand '\(first)'\(hint); see share --help\n".utf8))
            Foundation.exit(64)
        }
        main(arguments)
    }
}

/// How far apart two words are (Levenshtein), for "did you mean".
enum SubcommandGuess {
    static func distance(_ a: String, _ b: String) -> Int {
        let (a, b) = (Array(a), Array(b))
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var previous = row[0]
            row[0] = i
            for j in 1...b.count {
                let kept = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = kept
            }
        }
        return row[b.count]
    }
}

struct Send: ParsableCommand {
    static let configuration = CommandText.send
    @OptionGroup var options: SendOptions
    func run() throws { execTool("share-send") }
}

struct Receive: ParsableCommand {
    static let configuration = CommandText.receive
    @OptionGroup var options: ReceiveOptions
    func run() throws { execTool("share-recv") }
}

struct Scene: ParsableCommand {
    static let configuration = CommandText.scene
    @OptionGroup var options: SceneOptions
    func run() throws { execTool("share-send") }
}

struct Relay: ParsableCommand {
    static let configuration = CommandText.relay
    @OptionGroup var options: RelayOptions
    func run() throws { execTool("share-relay") }
}
