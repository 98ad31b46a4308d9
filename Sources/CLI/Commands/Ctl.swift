public import ArgumentParser

/// `share ctl`: drives a running `share send` through its control channel.
public struct Ctl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ctl", abstract: "Ask a running `share send` for its status, pause, resume or stop it, or give it a new memory budget.")

    @Argument(help: "status, pause, resume, stop, or budget SIZE (e.g. budget 32M).") var command: String
    @Argument(help: "The size, for budget.") var value: String?
    @Option(help: "The sender's control socket (default: the only running sender's).") var socket: String?

    public init() {}

    public func run() throws {
        guard ["status", "pause", "resume", "stop", "budget"].contains(command) else {
            fail("unknown command \(command): use status, pause, resume, stop or budget SIZE")
        }
        if command == "budget" && value == nil { fail("budget needs a size, e.g. share ctl budget 32M") }
        if command != "budget" && value != nil { fail("\(command) takes no value") }
        do {
            let path = try socket ?? ControlChannel.findSender()
            print(try ControlChannel.send([command, value].compactMap { $0 }.joined(separator: " "), to: path))
        } catch {
            fail("\(error)")
        }
    }
}
