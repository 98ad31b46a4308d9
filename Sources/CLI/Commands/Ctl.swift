public import ArgumentParser

/// `share ctl`: drives a running `share send` or `share recv` through its control channel.
public struct Ctl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Ask a running `share send` or `share recv` for its status or stop it; pause, resume or give a sender a new memory budget.",
        discussion: """
            share ctl status                 the only running share's counters, as one JSON line
            share ctl --receiver stop        the running receiver, with a sender running too
            share ctl budget 32M             a sender's new memory budget
            """)

    @Argument(help: "status, stop, or for a sender pause, resume, budget SIZE (e.g. budget 32M).") var command: String
    @Argument(help: "The size, for budget.") var value: String?
    @Option(help: "The control socket (default: the only running share's).") var socket: String?
    @Flag(help: "The running `share send`, when a receiver runs too.") var sender = false
    @Flag(help: "The running `share recv`, when a sender runs too.") var receiver = false

    public init() {}

    /// What only a sender does.
    private static let senderCommands: Set = ["pause", "resume", "budget"]

    public func validate() throws {
        guard ["status", "pause", "resume", "stop", "budget"].contains(command) else {
            throw ValidationError("unknown command \(command): use status, stop, pause, resume or budget SIZE")
        }
        if command == "budget" && value == nil { throw ValidationError("budget needs a size, e.g. share ctl budget 32M") }
        if command != "budget" && value != nil { throw ValidationError("\(command) takes no value") }
        if sender && receiver { throw ValidationError("--sender or --receiver: one") }
        if receiver && Self.senderCommands.contains(command) {
            throw ValidationError("a receiver takes status and stop, not \(command)")
        }
    }

    public func run() throws {
        let roles: [ControlChannel.Role] = sender || Self.senderCommands.contains(command) ? [.send]
            : receiver ? [.recv] : ControlChannel.Role.allCases
        do {
            let path = try socket ?? ControlChannel.findRunning(roles)
            print(try ControlChannel.send([command, value].compactMap { $0 }.joined(separator: " "), to: path))
        } catch {
            fail("\(error)")
        }
    }
}
