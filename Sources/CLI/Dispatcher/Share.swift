import ArgumentParser
import ShareCommands

@main
struct Share: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Share a Linux screen over standard RTP, encrypted with SRTP.",
        discussion: """
            On the viewing machine:   share keygen share.key && share recv --key-file share.key
            On the sharing machine:   share send <viewer-host> --key-file share.key
            (copy share.key to both machines over a channel you trust; it stays mode 0600)
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
