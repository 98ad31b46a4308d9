import Foundation

/// How Janus's VideoRoom tells a remote publisher's streams apart: they all
/// come to one port, and the stream at m-line index `i` must carry SSRC
/// 1000 + 10 i (Janus 1.1's REMOTE_PUBLISHER_BASE_SSRC and _SSRC_STEP; the
/// last digit is a simulcast layer, which we do not send).
public enum RemotePublisherSSRC {
    public static func of(mindex: Int) -> UInt32 { 1000 + 10 * UInt32(mindex) }
}

/// What the sender asks an ingest Janus for: a private VideoRoom room that
/// takes our streams as one remote publisher, whose RTP forwarders then feed
/// the edges. Video is m-line 0, each audio stream the next.
///
/// The ingest holds no key. It takes the sender's SRTP packets as if they
/// were plain RTP and forwards them untouched: each forwarder puts back the
/// SSRC the packet came with, so an edge receives the very packet the sender
/// protected and decrypts it with the run's key, as if sent to it directly.
/// (Debian's Janus 1.1.2 could not decrypt them anyway: its remote
/// publishers take plain RTP only.)
public struct RelayRequest: Sendable {
    public var description: String
    /// The profile-level-id the video is coded at (Constrained Baseline: 42e01f).
    public var videoProfile: String
    /// Each audio stream: whether it is stereo.
    public var audio: [Bool]
    /// The room's secret: whoever holds it may change or destroy it.
    public var secret: String

    public init(description: String, videoProfile: String, audio: [Bool], secret: String) {
        self.description = description
        self.videoProfile = videoProfile
        self.audio = audio
        self.secret = secret
    }

    /// The mid of the stream at `mindex`: its index as text, as a Janus's
    /// own `publish_remotely` names them (Janus 1.1.2's `rtp_forward` finds
    /// no remote publisher's stream by a mid such as "v").
    public static func mid(mindex: Int) -> String { "\(mindex)" }

    /// The streams' SSRCs as the sender sends them: video, then each audio stream.
    public var ssrcs: [UInt32] { (0...audio.count).map(RemotePublisherSSRC.of(mindex:)) }
}

/// The room and remote publisher an ingest Janus made: where the sender sends.
public struct Relay: Sendable, Equatable {
    public var room: UInt64
    public var publisher: UInt64
    /// Every stream's RTP, told apart by SSRC (`RemotePublisherSSRC`).
    public var port: Int
    /// Where the sender's RTCP latches Janus's keyframe requests (plain PLI).
    public var rtcpPort: Int

    public init(room: UInt64, publisher: UInt64, port: Int, rtcpPort: Int) {
        self.room = room
        self.publisher = publisher
        self.port = port
        self.rtcpPort = rtcpPort
    }
}

/// One edge's feed from the ingest: its forwarders (one a stream).
public struct Forwarding: Sendable, Equatable {
    public var streamIDs: [UInt64]
    public init(streamIDs: [UInt64]) { self.streamIDs = streamIDs }
}

/// The JSON of Janus's VideoRoom for a relay (Janus 1.1's remote publishers
/// and RTP forwarders), with no I/O, as `JanusMessages` is for mountpoints.
public enum RelayMessages {
    public static func createRoom(_ request: RelayRequest) -> [String: Any] {
        ["request": "create", "description": request.description, "is_private": true, "secret": request.secret,
         "publishers": 1, "audiocodec": "opus", "videocodec": "h264", "h264_profile": request.videoProfile, "permanent": false]
    }

    public static func addPublisher(_ request: RelayRequest, room: UInt64) -> [String: Any] {
        var streams: [[String: Any]] = [["type": "video", "mindex": 0, "mid": RelayRequest.mid(mindex: 0), "codec": "h264",
                                         "h264-profile": request.videoProfile]]
        for (index, stereo) in request.audio.enumerated() {
            streams.append(["type": "audio", "mindex": index + 1, "mid": RelayRequest.mid(mindex: index + 1), "codec": "opus", "stereo": stereo])
        }
        return ["request": "add_remote_publisher", "room": room, "secret": request.secret, "display": request.description,
                "streams": streams]
    }

    /// Forwarders from the publisher to one edge's mountpoint: each stream
    /// to its port with the SSRC it came on (`ssrcs`, so the sender's SRTP
    /// still authenticates), and the video's RTCP to the mountpoint's, so
    /// its keyframe requests come back.
    public static func forward(_ relay: Relay, secret: String, host: String, to mountpoint: Mountpoint,
                               ssrcs: [UInt32]) -> [String: Any] {
        var video: [String: Any] = ["mid": RelayRequest.mid(mindex: 0), "port": mountpoint.videoPort, "ssrc": ssrcs[0]]
        if let rtcp = mountpoint.videoRTCPPort { video["rtcp_port"] = rtcp }
        let audio = mountpoint.audioPorts.enumerated().map { index, port -> [String: Any] in
            ["mid": RelayRequest.mid(mindex: index + 1), "port": port, "ssrc": ssrcs[index + 1]]
        }
        return ["request": "rtp_forward", "room": relay.room, "publisher_id": relay.publisher, "secret": secret, "host": host,
                "streams": [video] + audio]
    }

    public static func stopForward(_ relay: Relay, secret: String, streamID: UInt64) -> [String: Any] {
        ["request": "stop_rtp_forward", "room": relay.room, "publisher_id": relay.publisher, "secret": secret, "stream_id": streamID]
    }

    public static func destroyRoom(_ room: UInt64, secret: String) -> [String: Any] {
        ["request": "destroy", "room": room, "secret": secret, "permanent": false]
    }

    /// The room in the answer to `create`.
    public static func room(_ answer: [UInt8]) throws(JanusError) -> UInt64 {
        let data = try JanusMessages.pluginData(answer, what: "create the relay's room", plugin: "videoroom")
        guard data["videoroom"] as? String == "created", let room = (data["room"] as? NSNumber)?.uint64Value, room > 0 else {
            throw JanusError("Janus's answer to create a room has no room id")
        }
        return room
    }

    /// The remote publisher in the answer to `add_remote_publisher`.
    public static func relay(_ answer: [UInt8], room: UInt64) throws(JanusError) -> Relay {
        let data = try JanusMessages.pluginData(answer, what: "add the sender as a remote publisher", plugin: "videoroom")
        guard let id = (data["id"] as? NSNumber)?.uint64Value, let port = Self.port(data["port"]), let rtcp = Self.port(data["rtcp_port"]) else {
            throw JanusError("Janus's answer to add_remote_publisher has no id, port and rtcp_port")
        }
        return Relay(room: room, publisher: id, port: port, rtcpPort: rtcp)
    }

    /// The forwarders in the answer to `rtp_forward`: one for each stream asked for.
    public static func forwarding(_ answer: [UInt8], streams: Int) throws(JanusError) -> Forwarding {
        let data = try JanusMessages.pluginData(answer, what: "forward to an edge", plugin: "videoroom")
        let ids = (data["forwarders"] as? [[String: Any]] ?? []).compactMap { ($0["stream_id"] as? NSNumber)?.uint64Value }
        guard ids.count == streams else { throw JanusError("Janus made \(ids.count) forwarders for \(streams) streams") }
        return Forwarding(streamIDs: ids)
    }

    private static func port(_ value: Any?) -> Int? {
        guard let port = (value as? NSNumber)?.intValue, (1...65535).contains(port) else { return nil }
        return port
    }
}

extension JanusClient {
    /// Makes the relay's room and the sender's remote publisher in it.
    public func createRelay(_ request: RelayRequest) throws(JanusError) -> Relay {
        try withHandle(plugin: "videoroom") { handle, transaction throws(JanusError) in
            let room = try RelayMessages.room(ask(handle, RelayMessages.createRoom(request), transaction, what: "create the relay's room"))
            do throws(JanusError) {
                return try RelayMessages.relay(ask(handle, RelayMessages.addPublisher(request, room: room), transaction,
                                                   what: "add the sender as a remote publisher"), room: room)
            } catch {
                // A room with no publisher is no use to anyone.
                _ = try? ask(handle, RelayMessages.destroyRoom(room, secret: request.secret), transaction, what: "destroy the room")
                throw error
            }
        }
    }

    /// Starts forwarding the publisher's streams (on `ssrcs`) to `mountpoint` on `host`.
    public func forward(_ relay: Relay, secret: String, host: String, to mountpoint: Mountpoint,
                        ssrcs: [UInt32]) throws(JanusError) -> Forwarding {
        try withHandle(plugin: "videoroom") { handle, transaction throws(JanusError) in
            let body = RelayMessages.forward(relay, secret: secret, host: host, to: mountpoint, ssrcs: ssrcs)
            return try RelayMessages.forwarding(ask(handle, body, transaction, what: "forward to \(host)"),
                                                streams: 1 + mountpoint.audioPorts.count)
        }
    }

    /// Stops one edge's forwarders.
    public func stopForwarding(_ forwarding: Forwarding, relay: Relay, secret: String) throws(JanusError) {
        try withHandle(plugin: "videoroom") { handle, transaction throws(JanusError) in
            for id in forwarding.streamIDs {
                try perform(handle, RelayMessages.stopForward(relay, secret: secret, streamID: id), transaction, what: "stop a forwarder")
            }
        }
    }

    /// Destroys the room: its remote publisher and every forwarder go with it.
    public func destroyRelay(_ relay: Relay, secret: String) throws(JanusError) {
        try withHandle(plugin: "videoroom") { handle, transaction throws(JanusError) in
            try perform(handle, RelayMessages.destroyRoom(relay.room, secret: secret), transaction, what: "destroy the relay's room")
        }
    }

    /// Posts one VideoRoom request on `handle` and returns Janus's answer.
    private func ask(_ handle: HTTPURL, _ request: [String: Any], _ transaction: () -> String,
                     what: String) throws(JanusError) -> [UInt8] {
        try post(handle, JanusMessages.message(request, transaction: transaction(), credentials: credentials), what: what)
    }

    /// A request whose answer says only whether the plugin did it.
    private func perform(_ handle: HTTPURL, _ request: [String: Any], _ transaction: () -> String,
                         what: String) throws(JanusError) {
        _ = try JanusMessages.pluginData(ask(handle, request, transaction, what: what), what: what, plugin: "videoroom")
    }
}
