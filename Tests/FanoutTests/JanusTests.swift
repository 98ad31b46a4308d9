import Foundation
import ShareFanout
import TestSupport
import Testing

@Suite("Janus's HTTP API: messages (canned answers) and a real Janus", .serialized, .busy)
struct JanusTests {
    private func json(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
    }

    private let request = MountpointRequest(description: "share test", videoPayloadType: 96,
                                            videoFormatParameters: "packetization-mode=1;profile-level-id=42e01f",
                                            audio: [.init(payloadType: 111, stereo: true)], srtpSuite: 80,
                                            srtpKeySalt: "WbTBosdVUZqEb6Htqhn+m3z7wUh4RJVR8nE15GbN", secret: "s3cret",
                                            pin: "p1n")

    @Test func requestsCarryTheSecretsAndTheMedia() {
        let credentials = JanusCredentials(apiSecret: "api", adminKey: "admin")
        let create = json(JanusMessages.createMountpoint(request, transaction: "t1", credentials: credentials))
        #expect(create["apisecret"] as? String == "api" && create["janus"] as? String == "message")
        let body = create["body"] as? [String: Any] ?? [:]
        #expect(body["admin_key"] as? String == "admin" && body["srtpsuite"] as? Int == 80 && body["type"] as? String == "rtp")
        // Not listed, and watched only with the pin.
        #expect(body["is_private"] as? Bool == true && body["pin"] as? String == "p1n")
        let media = body["media"] as? [[String: Any]] ?? []
        #expect(media.count == 2)
        #expect(media.first?["codec"] as? String == "h264" && media.first?["rtcpport"] as? Int == 0)
        #expect(media.last?["codec"] as? String == "opus" && media.last?["fmtp"] as? String == "stereo=1;sprop-stereo=1")
        let bare = json(JanusMessages.createSession(transaction: "t", credentials: JanusCredentials()))
        #expect(bare["apisecret"] == nil)
    }

    @Test func answersAreReadOrRefusedWithTheirReason() throws {
        let created = Array(#"{"janus":"success","transaction":"a","data":{"id":704810640401256}}"#.utf8)
        #expect(try JanusMessages.createdID(created, what: "x") == 704_810_640_401_256)
        let unauthorized = Array(#"{"janus":"error","error":{"code":403,"reason":"Unauthorized request (wrong or missing secret/token)"}}"#.utf8)
        let refused = #expect(throws: JanusError.self) { try JanusMessages.createdID(unauthorized, what: "create an API session") }
        #expect(refused?.description.contains("Unauthorized") == true && refused?.description.contains("--janus-secrets") == true)
        let mountpoint = Array(#"""
            {"janus":"success","plugindata":{"plugin":"janus.plugin.streaming","data":{"streaming":"created","created":"mp",
            "permanent":false,"stream":{"id":8567847626124261,"type":"live","ports":[{"type":"video","mid":"v","port":41000,
            "rtcp_port":41001},{"type":"audio","mid":"a0","port":41002}]}}}}
            """#.utf8)
        #expect(try JanusMessages.mountpoint(mountpoint, audioStreams: 1)
                == Mountpoint(id: 8_567_847_626_124_261, videoPort: 41000, videoRTCPPort: 41001, audioPorts: [41002]))
        #expect(throws: JanusError.self) { try JanusMessages.mountpoint(mountpoint, audioStreams: 2) }
        let pluginError = Array(#"{"janus":"success","plugindata":{"plugin":"janus.plugin.streaming","data":{"streaming":"event","error_code":456,"error":"Unauthorized (wrong admin_key)"}}}"#.utf8)
        let wrongKey = #expect(throws: JanusError.self) { try JanusMessages.mountpoint(pluginError, audioStreams: 1) }
        #expect(wrongKey?.description.contains("wrong admin_key") == true)
        #expect(throws: JanusError.self) { try JanusMessages.createdID(Array("<html>".utf8), what: "x") }
    }

    /// What a server says is printed without its control characters: an
    /// escape sequence could otherwise rewrite the user's terminal, and a
    /// bidirectional override could make the text read as something else.
    @Test func theServersTextIsPrintedWithoutControlCharacters() throws {
        // JSON escapes, decoded by the parser into the characters themselves.
        let hostile = #"bad\u001B]0;owned\u0007 \u202Eevil\u200B\r\nfake: line"# + String(repeating: "x", count: 300)
        let answer = Array(#"{"janus":"error","error":{"code":490,"reason":"\#(hostile)"}}"#.utf8)
        let error = try #require(#expect(throws: JanusError.self) { try JanusMessages.createdID(answer, what: "x") })
        let text = error.description
        #expect(!text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format })
        #expect(text.contains("bad?]0;owned? ?evil???fake: line") && text.hasSuffix("...") && text.count < 300, "\(text)")
    }

    @Test func credentialsFilesAreReadAndNeverPrinted() throws {
        let credentials = try JanusCredentials(parsing: "# Janus\napi_secret = \"abc\"\n\nadmin_key=def  # the plugin's\n")
        #expect(credentials == JanusCredentials(apiSecret: "abc", adminKey: "def"))
        #expect(!"\(credentials)".contains("abc") && !String(reflecting: credentials).contains("def"))
        #expect(throws: JanusError.self) { try JanusCredentials(parsing: "token = x") }
        #expect(throws: JanusError.self) { try JanusCredentials(parsing: "api_secret") }
        #expect(throws: JanusError.self) { try JanusCredentials(parsing: "admin_key = ") }
    }

    @Test func aRealJanusCreatesAndRemovesTheMountpoint() throws {
        let janus = try JanusServer()
        let url = try HTTPURL(janus.url)
        let client = JanusClient(url: url, credentials: JanusCredentials(apiSecret: janus.apiSecret, adminKey: janus.adminKey))
        let mountpoint = try client.create(request)
        #expect(mountpoint.videoRTCPPort != nil && mountpoint.audioPorts.count == 1)
        #expect(Set([mountpoint.videoPort, mountpoint.videoRTCPPort ?? 0] + mountpoint.audioPorts).count == 3)
        // Only the mountpoint's own secret removes it.
        #expect(throws: JanusError.self) { try client.destroy(mountpoint, secret: "guess") }
        try client.destroy(mountpoint, secret: request.secret)
        let again = #expect(throws: JanusError.self) { try client.destroy(mountpoint, secret: request.secret) }
        #expect(again?.description.contains("No such mountpoint") == true, "\(String(describing: again))")

        let stranger = JanusClient(url: url, credentials: JanusCredentials(apiSecret: "wrong", adminKey: janus.adminKey))
        let unauthorized = #expect(throws: JanusError.self) { try stranger.create(request) }
        #expect(unauthorized?.description.contains("--janus-secrets") == true, "\(String(describing: unauthorized))")
        let noAdmin = JanusClient(url: url, credentials: JanusCredentials(apiSecret: janus.apiSecret))
        #expect(throws: JanusError.self) { try noAdmin.create(request) }
        let nobody = JanusClient(url: try HTTPURL("http://127.0.0.1:\(freeTCPPort())/janus"), credentials: JanusCredentials())
        let refused = #expect(throws: JanusError.self) { try nobody.create(request) }
        #expect(refused?.description.contains("Connection refused") == true, "\(String(describing: refused))")
    }

    private let relayRequest = RelayRequest(description: "share test", videoProfile: "42e01f", audio: [true], secret: "r00m")

    @Test func aRelayIsARemotePublisherWhoseForwardersKeepItsSSRCs() {
        // The streams come on Janus's SSRCs for m-lines 0 and 1.
        #expect(relayRequest.ssrcs == [1000, 1010])
        let room = RelayMessages.createRoom(relayRequest)
        #expect(room["is_private"] as? Bool == true && room["secret"] as? String == "r00m" && room["videocodec"] as? String == "h264")
        let publisher = RelayMessages.addPublisher(relayRequest, room: 7)
        let streams = publisher["streams"] as? [[String: Any]] ?? []
        #expect(streams.map { $0["mindex"] as? Int } == [0, 1] && streams.map { $0["mid"] as? String } == ["0", "1"])
        #expect(streams.map { $0["type"] as? String } == ["video", "audio"] && streams.last?["stereo"] as? Bool == true)
        // The ingest holds no key: nothing to decrypt with, nothing to re-encrypt with.
        let relay = Relay(room: 7, publisher: 9, port: 10_000, rtcpPort: 10_001)
        let edge = Mountpoint(id: 3, videoPort: 20_200, videoRTCPPort: 20_201, audioPorts: [20_202])
        let forward = RelayMessages.forward(relay, secret: "r00m", host: "edge.example", to: edge, ssrcs: relayRequest.ssrcs)
        for message in [publisher, forward] { #expect(message.keys.allSatisfy { !$0.hasPrefix("srtp") }, "\(message)") }
        let forwarded = forward["streams"] as? [[String: Any]] ?? []
        #expect(forwarded.map { $0["port"] as? Int } == [20_200, 20_202] && forwarded.map { $0["ssrc"] as? UInt32 } == [1000, 1010])
        #expect(forwarded.first?["rtcp_port"] as? Int == 20_201 && forwarded.last?["rtcp_port"] == nil)
        #expect(forward["publisher_id"] as? UInt64 == 9 && forward["host"] as? String == "edge.example")
    }

    @Test func relayAnswersAreReadOrRefusedWithTheirReason() throws {
        func answer(_ data: String) -> [UInt8] {
            Array(#"{"janus":"success","plugindata":{"plugin":"janus.plugin.videoroom","data":\#(data)}}"#.utf8)
        }
        #expect(try RelayMessages.room(answer(#"{"videoroom":"created","room":42}"#)) == 42)
        let relay = try RelayMessages.relay(answer(#"{"videoroom":"success","room":42,"id":5,"port":10004,"rtcp_port":10005}"#), room: 42)
        #expect(relay == Relay(room: 42, publisher: 5, port: 10_004, rtcpPort: 10_005))
        #expect(throws: JanusError.self) { try RelayMessages.relay(answer(#"{"videoroom":"success","id":5,"port":0}"#), room: 42) }
        let two = answer(#"{"videoroom":"rtp_forward","forwarders":[{"stream_id":11},{"stream_id":12}]}"#)
        #expect(try RelayMessages.forwarding(two, streams: 2) == Forwarding(streamIDs: [11, 12]))
        // Janus 1.1.2 answers success with no forwarder for a mid it does not know.
        let none = #expect(throws: JanusError.self) { try RelayMessages.forwarding(answer(#"{"videoroom":"rtp_forward","forwarders":[]}"#), streams: 2) }
        #expect(none?.description == "Janus made 0 forwarders for 2 streams")
        let refused = #expect(throws: JanusError.self) {
            try RelayMessages.room(answer(#"{"videoroom":"event","error_code":429,"error":"Missing mandatory element (admin_key)"}"#))
        }
        #expect(refused?.description.contains("videoroom plugin refused") == true && refused?.description.contains("429") == true,
                "\(String(describing: refused))")
    }

    @Test func aRealJanusRelaysToAMountpointAndRemovesTheRoom() throws {
        let ingest = try JanusServer(relay: true)
        let client = JanusClient(url: try HTTPURL(ingest.url), credentials: JanusCredentials(apiSecret: ingest.apiSecret, adminKey: ingest.adminKey))
        let relay = try client.createRelay(relayRequest)
        #expect(relay.port != relay.rtcpPort)
        let edge = try client.create(request)
        let forwarding = try client.forward(relay, secret: relayRequest.secret, host: "127.0.0.1", to: edge, ssrcs: relayRequest.ssrcs)
        #expect(forwarding.streamIDs.count == 2)
        try client.stopForwarding(forwarding, relay: relay, secret: relayRequest.secret)
        #expect(throws: JanusError.self) { try client.stopForwarding(forwarding, relay: relay, secret: relayRequest.secret) }
        // Only the room's secret removes it; then it is gone.
        #expect(throws: JanusError.self) { try client.destroyRelay(relay, secret: "guess") }
        try client.destroyRelay(relay, secret: relayRequest.secret)
        let again = #expect(throws: JanusError.self) { try client.destroyRelay(relay, secret: relayRequest.secret) }
        #expect(again?.description.contains("No such room") == true, "\(String(describing: again))")
        try client.destroy(edge, secret: request.secret)
        // Rooms and forwarders need the admin key.
        let noAdmin = JanusClient(url: try HTTPURL(ingest.url), credentials: JanusCredentials(apiSecret: ingest.apiSecret))
        #expect(throws: JanusError.self) { try noAdmin.createRelay(relayRequest) }
        // A Janus without the VideoRoom plugin says so.
        let plain = try JanusServer()
        let streamingOnly = JanusClient(url: try HTTPURL(plain.url), credentials: JanusCredentials(apiSecret: plain.apiSecret, adminKey: plain.adminKey))
        let missing = #expect(throws: JanusError.self) { try streamingOnly.createRelay(relayRequest) }
        #expect(missing?.description.contains("videoroom") == true, "\(String(describing: missing))")
    }
}
