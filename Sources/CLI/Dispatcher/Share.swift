import ArgumentParser
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
        subcommands: [Send.self, Receive.self, KeyGen.self, Ctl.self, Scene.self, Relay.self])
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
