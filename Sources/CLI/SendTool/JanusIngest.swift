import Foundation
import ShareCommands
import ShareFanout
import ShareSender
import Synchronization

/// The ingest Janus of a tree (`--janus-ingest`): a private VideoRoom room
/// in which the sender is one remote publisher, and RTP forwarders from it
/// to each edge's mountpoint. The sender uploads one stream whatever the
/// number of edges; the ingest passes the SRTP packets on without a key.
final class JanusIngest: Sendable {
    let client: JanusClient
    let relay: Relay
    private let secret: String
    /// The streams' SSRCs, as sent and as forwarded.
    private let ssrcs: [UInt32]
    /// Each edge's forwarders, by the edge's index in the fleet.
    private let forwardings: Mutex<[Int: Forwarding]> = Mutex([:])

    private init(client: JanusClient, relay: Relay, secret: String, ssrcs: [UInt32]) {
        self.client = client
        self.relay = relay
        self.secret = secret
        self.ssrcs = ssrcs
    }

    /// Makes the room and the sender's remote publisher on `target`,
    /// taking the streams the edges' `request` describes.
    static func create(_ target: JanusTarget, rule: HTTPTransportRule, request: MountpointRequest) throws -> JanusIngest {
        let client = try target.client(rule: rule)
        let relayRequest = RelayRequest(description: request.description, videoProfile: "42e01f", audio: request.audio.map(\.stereo),
                                        secret: request.secret)
        return JanusIngest(client: client, relay: try client.createRelay(relayRequest), secret: request.secret, ssrcs: relayRequest.ssrcs)
    }

    /// Starts forwarding to the edge `mount` (fleet index `index`).
    func feed(_ index: Int, _ mount: JanusMount) throws {
        let forwarding = try client.forward(relay, secret: secret, host: mount.client.url.host, to: mount.mountpoint, ssrcs: ssrcs)
        forwardings.withLock { $0[index] = forwarding }
    }

    /// Stops forwarding to an edge that went away (the others go on).
    func stopFeeding(_ index: Int) {
        guard let forwarding = forwardings.withLock({ $0.removeValue(forKey: index) }) else { return }
        do { try client.stopForwarding(forwarding, relay: relay, secret: secret) } catch {
            warn("janus: the ingest \(client.url) could not stop forwarding to a lost edge: \(error)")
        }
    }

    /// Edges fed now.
    var fed: Int { forwardings.withLock { $0.count } }

    /// Points `configuration` at the remote publisher: one destination,
    /// every stream on its port told apart by SSRC (video at m-line 0, each
    /// audio stream after it), keyframe requests from its RTCP port.
    func direct(_ configuration: inout SenderConfiguration) {
        configuration.host = client.url.host
        configuration.port = relay.port
        configuration.rtcpPort = relay.rtcpPort
        configuration.audioPorts = []
        configuration.copies = []
        configuration.ssrcs = ChosenSSRCs(video: ssrcs[0], audio: Array(ssrcs.dropFirst()))
    }

    /// Destroys the room: the remote publisher and every forwarder go with it.
    func remove() {
        do {
            try client.destroyRelay(relay, secret: secret)
            note("janus: relay room \(relay.room) at \(client.url) removed")
        } catch {
            warn("janus: relay room \(relay.room) at \(client.url) could not be removed: \(error)")
        }
    }
}
