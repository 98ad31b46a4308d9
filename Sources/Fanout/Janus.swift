import Foundation

/// Why talking to Janus failed, in words for the person running the sender.
public struct JanusError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }

    /// Text from the server, made safe to print: control characters (a
    /// terminal's escape sequences among them), bidirectional overrides and
    /// invisible characters become "?", and it is cut at 200 characters.
    static func quoting(_ text: some StringProtocol) -> String {
        let shown = text.unicodeScalars.prefix(200).map { scalar -> String in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned: "?"
            default: String(scalar)
            }
        }.joined()
        return text.unicodeScalars.count > 200 ? shown + "..." : shown
    }
}

/// The secrets a Janus server may ask for: the core's API secret
/// (`api_secret` in janus.jcfg) and the streaming plugin's admin key
/// (`admin_key`, needed to create mountpoints when it is set).
public struct JanusCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var apiSecret: String?
    public var adminKey: String?

    public init(apiSecret: String? = nil, adminKey: String? = nil) {
        self.apiSecret = apiSecret
        self.adminKey = adminKey
    }

    /// Reads `name = value` lines (Janus's own names, `api_secret` and
    /// `admin_key`; quotes optional; `#` starts a comment).
    public init(parsing text: String) throws(JanusError) {
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw JanusError("not a `name = value` line: \(line.prefix(40))") }
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            var value = parts[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard !value.isEmpty else { throw JanusError("\(name) has no value") }
            switch name {
            case "api_secret", "apisecret": apiSecret = value
            case "admin_key": adminKey = value
            default: throw JanusError("unknown setting \(name) (api_secret or admin_key)")
            }
        }
    }

    public var description: String {
        "JanusCredentials(api_secret: \(apiSecret == nil ? "none" : "set"), admin_key: \(adminKey == nil ? "none" : "set"))"
    }
    public var debugDescription: String { description }
}

/// What the sender asks Janus's streaming plugin for: an RTP mountpoint
/// taking our H.264 and Opus streams as SRTP with our key.
public struct MountpointRequest: Sendable {
    public struct Audio: Sendable {
        public var payloadType: Int
        public var stereo: Bool
        public init(payloadType: Int, stereo: Bool) {
            self.payloadType = payloadType
            self.stereo = stereo
        }
    }

    public var description: String
    public var videoPayloadType: Int
    /// The video's fmtp (packetization-mode, profile-level-id) as browsers are offered it.
    public var videoFormatParameters: String
    public var audio: [Audio]
    /// libsrtp's suite name as Janus takes it: 80 or 32 (AES_CM_128_HMAC_SHA1_*).
    public var srtpSuite: Int
    /// The SDES inline key and salt, base64.
    public var srtpKeySalt: String
    /// The mountpoint's own secret: whoever holds it may destroy it.
    public var secret: String
    /// What a viewer must give to watch: the mountpoint is private (not
    /// listed) and Janus refuses a watch without this pin.
    public var pin: String

    public init(description: String, videoPayloadType: Int, videoFormatParameters: String, audio: [Audio],
                srtpSuite: Int, srtpKeySalt: String, secret: String, pin: String) {
        self.description = description
        self.videoPayloadType = videoPayloadType
        self.videoFormatParameters = videoFormatParameters
        self.audio = audio
        self.srtpSuite = srtpSuite
        self.srtpKeySalt = srtpKeySalt
        self.secret = secret
        self.pin = pin
    }
}

/// A mountpoint Janus created: where to send.
public struct Mountpoint: Sendable, Equatable {
    public var id: UInt64
    public var videoPort: Int
    /// Janus's RTCP port for the video: it sends PLI there (plain RTCP).
    public var videoRTCPPort: Int?
    public var audioPorts: [Int]

    public init(id: UInt64, videoPort: Int, videoRTCPPort: Int?, audioPorts: [Int]) {
        self.id = id
        self.videoPort = videoPort
        self.videoRTCPPort = videoRTCPPort
        self.audioPorts = audioPorts
    }
}

/// The JSON of Janus's HTTP API (janus.plugin.streaming, Janus 1.x
/// multistream): requests as bodies, answers read into values; no I/O, so
/// every step is tested with canned answers as well as a real Janus.
public enum JanusMessages {
    public static func createSession(transaction: String, credentials: JanusCredentials) -> [UInt8] {
        body(["janus": "create", "transaction": transaction], credentials)
    }

    /// Attaches to `plugin` (janus.plugin.streaming, janus.plugin.videoroom).
    public static func attach(plugin: String, transaction: String, credentials: JanusCredentials) -> [UInt8] {
        body(["janus": "attach", "plugin": plugin, "transaction": transaction], credentials)
    }

    /// A request to the plugin a handle is attached to, with the admin key when there is one.
    static func message(_ plugin: [String: Any], transaction: String, credentials: JanusCredentials) -> [UInt8] {
        var plugin = plugin
        if let key = credentials.adminKey { plugin["admin_key"] = key }
        return body(["janus": "message", "transaction": transaction, "body": plugin], credentials)
    }

    public static func destroySession(transaction: String, credentials: JanusCredentials) -> [UInt8] {
        body(["janus": "destroy", "transaction": transaction], credentials)
    }

    public static func createMountpoint(_ request: MountpointRequest, transaction: String,
                                        credentials: JanusCredentials) -> [UInt8] {
        // Port 0: Janus picks free ports from its range and says which.
        var media: [[String: Any]] = [[
            "type": "video", "mid": "v", "port": 0, "rtcpport": 0, "pt": request.videoPayloadType, "codec": "h264",
            "fmtp": request.videoFormatParameters,
        ]]
        for (index, audio) in request.audio.enumerated() {
            var entry: [String: Any] = ["type": "audio", "mid": "a\(index)", "port": 0, "pt": audio.payloadType, "codec": "opus"]
            if audio.stereo { entry["fmtp"] = "stereo=1;sprop-stereo=1" }
            media.append(entry)
        }
        let plugin: [String: Any] = [
            "request": "create", "type": "rtp", "description": request.description, "is_private": true,
            "pin": request.pin, "permanent": false, "secret": request.secret, "media": media,
            "srtpsuite": request.srtpSuite, "srtpcrypto": request.srtpKeySalt,
        ]
        return message(plugin, transaction: transaction, credentials: credentials)
    }

    public static func destroyMountpoint(id: UInt64, secret: String, transaction: String,
                                         credentials: JanusCredentials) -> [UInt8] {
        message(["request": "destroy", "id": id, "secret": secret, "permanent": false], transaction: transaction, credentials: credentials)
    }

    /// The id in a `success` answer (a new session or handle).
    public static func createdID(_ answer: [UInt8], what: String) throws(JanusError) -> UInt64 {
        let object = try envelope(answer, what: what)
        guard let data = object["data"] as? [String: Any], let id = (data["id"] as? NSNumber)?.uint64Value, id > 0 else {
            throw JanusError("Janus's answer to \(what) has no id")
        }
        return id
    }

    /// The plugin's answer to a synchronous request (create, destroy);
    /// `plugin` names it in errors.
    public static func pluginData(_ answer: [UInt8], what: String, plugin: String = "streaming") throws(JanusError) -> [String: Any] {
        let object = try envelope(answer, what: what)
        guard let wrapped = object["plugindata"] as? [String: Any], let data = wrapped["data"] as? [String: Any] else {
            throw JanusError("Janus's answer to \(what) carries no plugin data (is the \(plugin) plugin loaded?)")
        }
        if let error = data["error"] as? String {
            let code = (data["error_code"] as? NSNumber).map { " (code \($0))" } ?? ""
            throw JanusError("the \(plugin) plugin refused to \(what): \(JanusError.quoting(error))\(code)")
        }
        return data
    }

    /// The mountpoint in the plugin's answer to `create`.
    public static func mountpoint(_ answer: [UInt8], audioStreams: Int) throws(JanusError) -> Mountpoint {
        let data = try pluginData(answer, what: "create the mountpoint")
        guard data["streaming"] as? String == "created", let stream = data["stream"] as? [String: Any],
              let id = (stream["id"] as? NSNumber)?.uint64Value, let ports = stream["ports"] as? [[String: Any]]
        else { throw JanusError("Janus's answer to create has no mountpoint id and ports") }
        func port(_ entry: [String: Any], _ key: String) -> Int? {
            guard let value = (entry[key] as? NSNumber)?.intValue, (1...65535).contains(value) else { return nil }
            return value
        }
        guard let video = ports.first(where: { $0["type"] as? String == "video" }), let videoPort = port(video, "port") else {
            throw JanusError("Janus's answer to create names no video port")
        }
        let audio = ports.filter { $0["type"] as? String == "audio" }.compactMap { port($0, "port") }
        guard audio.count == audioStreams else {
            throw JanusError("Janus gave \(audio.count) audio ports for \(audioStreams) audio streams")
        }
        return Mountpoint(id: id, videoPort: videoPort, videoRTCPPort: port(video, "rtcp_port"), audioPorts: audio)
    }

    private static func envelope(_ answer: [UInt8], what: String) throws(JanusError) -> [String: Any] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(answer))) as? [String: Any] else {
            throw JanusError("Janus's answer to \(what) is not JSON: \(JanusError.quoting(String(decoding: answer.prefix(80), as: UTF8.self)))")
        }
        if object["janus"] as? String == "error", let error = object["error"] as? [String: Any] {
            let reason = (error["reason"] as? String).map(JanusError.quoting) ?? "no reason given"
            let code = (error["code"] as? NSNumber)?.intValue
            // 403: wrong or missing API secret (JANUS_ERROR_UNAUTHORIZED).
            let hint = code == 403 ? " (give its api_secret with --janus-secrets)" : ""
            throw JanusError("Janus refused to \(what): \(reason)\(hint)")
        }
        guard object["janus"] as? String == "success" else {
            throw JanusError("Janus's answer to \(what) is \((object["janus"] as? String).map(JanusError.quoting) ?? "unrecognised"), not success")
        }
        return object
    }

    private static func body(_ object: [String: Any], _ credentials: JanusCredentials) -> [UInt8] {
        var object = object
        if let secret = credentials.apiSecret { object["apisecret"] = secret }
        return (try? Array(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))) ?? []
    }
}

/// Creates and removes the sender's mountpoint through Janus's HTTP API.
/// Mountpoints outlive the API session that made them, so each call uses a
/// session of its own and ends it.
public struct JanusClient: Sendable {
    public let url: HTTPURL
    public let credentials: JanusCredentials
    public var http = HTTPClient(rule: HTTPTransportRule(carries: JanusClient.plainTextCarries))

    /// What the API calls carry: why they take https, or stay on this machine.
    public static let plainTextCarries = "this run's SRTP master key, Janus's api_secret and admin_key, and the mountpoint's secret and viewer pin"

    public init(url: HTTPURL, credentials: JanusCredentials) {
        self.url = url
        self.credentials = credentials
    }

    public func create(_ request: MountpointRequest) throws(JanusError) -> Mountpoint {
        try withHandle(plugin: "streaming") { handle, transaction throws(JanusError) in
            let answer = try post(handle, JanusMessages.createMountpoint(request, transaction: transaction(), credentials: credentials),
                                  what: "create the mountpoint")
            return try JanusMessages.mountpoint(answer, audioStreams: request.audio.count)
        }
    }

    public func destroy(_ mountpoint: Mountpoint, secret: String) throws(JanusError) {
        try withHandle(plugin: "streaming") { handle, transaction throws(JanusError) in
            let answer = try post(handle, JanusMessages.destroyMountpoint(id: mountpoint.id, secret: secret,
                                                                          transaction: transaction(), credentials: credentials),
                                  what: "destroy the mountpoint")
            _ = try JanusMessages.pluginData(answer, what: "destroy the mountpoint")
        }
    }

    /// Whether the server answers its API (`GET .../info`, no session): a
    /// cheap check that it is still there, within `timeout`.
    public func ping(timeout: Duration) throws(JanusError) {
        var http = http
        http.timeout = timeout
        let info = url.with(path: url.path.hasSuffix("/") ? "\(url.path)info" : "\(url.path)/info")
        let response: HTTPResponse
        do { response = try http.send("GET", info) } catch { throw JanusError("\(error)") }
        guard response.status == 200,
              let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
              object["janus"] as? String == "server_info"
        else { throw JanusError("\(info) answered HTTP \(response.status), not Janus's server info") }
    }

    /// Runs `body` with a handle on `plugin` ("streaming", "videoroom") in a
    /// session of its own, ended afterwards; `body` gets the handle's URL
    /// and a maker of transaction ids.
    func withHandle<T>(plugin: String, _ body: (HTTPURL, () -> String) throws(JanusError) -> T) throws(JanusError) -> T {
        var counter = 0
        let transaction = { () -> String in
            counter += 1
            return "share-\(counter)-\(UInt32.random(in: 0...UInt32.max))"
        }
        let session = try JanusMessages.createdID(post(url, JanusMessages.createSession(transaction: transaction(), credentials: credentials),
                                                       what: "create an API session"), what: "create an API session")
        let sessionURL = url.with(path: url.path.hasSuffix("/") ? "\(url.path)\(session)" : "\(url.path)/\(session)")
        defer {
            _ = try? post(sessionURL, JanusMessages.destroySession(transaction: transaction(), credentials: credentials),
                          what: "end the API session")
        }
        let attach = "attach to the \(plugin) plugin"
        let handle = try JanusMessages.createdID(post(sessionURL, JanusMessages.attach(plugin: "janus.plugin.\(plugin)", transaction: transaction(),
                                                                                       credentials: credentials),
                                                      what: attach), what: attach)
        return try body(sessionURL.with(path: "\(sessionURL.path)/\(handle)"), transaction)
    }

    func post(_ url: HTTPURL, _ body: [UInt8], what: String) throws(JanusError) -> [UInt8] {
        let response: HTTPResponse
        do {
            response = try http.send("POST", url, body: body)
        } catch {
            throw JanusError("cannot \(what): \(error)")
        }
        guard (200..<300).contains(response.status) else {
            throw JanusError("cannot \(what): Janus answered HTTP \(response.status) at \(url)")
        }
        return response.body
    }
}
