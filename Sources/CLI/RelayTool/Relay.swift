import ArgumentParser
import Foundation
import ShareCommands
import ShareImpairment
import ShareTransport

/// `share-relay`: a UDP relay through a simulated network, for tests and the
/// benchmark harness (this machine has no netem).
@main
struct ShareRelay: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "share-relay", subcommands: [Relay.self])
}

struct Relay: ParsableCommand {
    static let configuration = CommandText.relay
    @OptionGroup var options: RelayOptions

    /// What the relay writes with --stats-json.
    struct Report: Encodable {
        var network: String
        var forwardProfile: String
        var reverseProfile: String
        var forward: ImpairedLink.Counters
        var reverse: ImpairedLink.Counters
    }

    func run() throws {
        let o = options
        var profile = NetworkProfile(name: "custom", forward: .init(), reverse: .init())
        do {
            if let name = o.network { profile = try NetworkProfile.named(name) }
            if let text = o.forward { profile.forward = try ImpairmentProfile(parsing: text) }
            if let text = o.reverse { profile.reverse = try ImpairmentProfile(parsing: text) }
        } catch {
            fail("\(error)")
        }
        let parts = o.to.split(separator: ":")
        guard parts.count >= 2, let port = Int(parts.last!) else { fail("--to wants HOST:PORT, got \"\(o.to)\"") }
        let host = parts.dropLast().joined(separator: ":").trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let relay: ShareImpairment.Relay
        do {
            relay = try ShareImpairment.Relay(listenPort: o.listen, target: try SocketAddress(host: host, port: port),
                                              profile: profile, seed: o.seed)
        } catch {
            fail("\(error)")
        }
        note("relaying :\(relay.port) -> \(o.to); forward \(profile.forward), reverse \(profile.reverse)")
        let stop = StopSignal(duration: o.duration)
        let worker = Thread {
            do { try relay.run() } catch { note("relay stopped: \(error)") }
            stop.fire("finished")
        }
        worker.start()
        stop.wait()
        relay.stop()
        usleep(100_000)
        if let path = o.statsJson {
            let counters = relay.counters
            writeJSON(Report(network: profile.name, forwardProfile: profile.forward.description,
                             reverseProfile: profile.reverse.description, forward: counters.forward,
                             reverse: counters.reverse), to: path)
        }
    }
}
