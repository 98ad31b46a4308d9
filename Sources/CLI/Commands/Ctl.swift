public import ArgumentParser

/// `share ctl`: drives a running `share send` through its control channel.
public struct Ctl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ctl", abstract: "Ask a running `share send` for its status, or pause, resume or stop it.")

    @Argument(help: "status, pause, resume or stop.") var command: String
    @Option(help: "The sender's control socket (default: the only running sender's).") var socket: String?

    public init() {}

    public func run() throws {
        guard ["status", "pause", "resume", "stop"].contains(command) else {
            fail("unknown command \(command): use status, pause, resume or stop")
        }
        do {
            let path = try socket ?? ControlChannel.findSender()
            print(try ControlChannel.send(command, to: path))
        } catch {
            fail("\(error)")
        }
    }
}
