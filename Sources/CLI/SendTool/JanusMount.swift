import Foundation
import ShareCommands
import ShareFanout
import ShareHandshake
import ShareSender
import ShareSRTP

/// One Janus's mountpoint for this run: created through its HTTP API,
/// taking our SRTP as it is (its ports, codecs and key), removed when the
/// sender ends.
struct JanusMount {
    let client: JanusClient
    let mountpoint: Mountpoint
    private let secret: String
    /// What a viewer gives to watch (the mountpoint is private); the viewer link carries it.
    let pin: String

    /// Creates the mountpoint `request` asks for on the Janus `target` names.
    static func create(_ target: JanusTarget, rule: HTTPTransportRule, request: MountpointRequest) throws -> JanusMount {
        let client = try target.client(rule: rule)
        return JanusMount(client: client, mountpoint: try client.create(request), secret: request.secret, pin: request.pin)
    }

    /// The mountpoint every Janus of the run gets: the same codecs, this
    /// run's key, one random secret and one random pin.
    static func request(name: String?, configuration: SenderConfiguration) throws -> MountpointRequest {
        guard case .staticKey(let keying) = configuration.keying else {
            throw JanusError("Janus takes a static SRTP key (it cannot handshake): not with --key-file")
        }
        let suite: Int
        switch keying.profile {
        case .aes128CmHmacSha1_80: suite = 80
        case .aes128CmHmacSha1_32: suite = 32
        default: throw JanusError("Janus takes AES_CM_128_HMAC_SHA1_80 or _32 keys, not \(keying.profile.rawValue)")
        }
        let hex = { (count: Int) in randomBytes(count).map { String(format: "%02x", $0) }.joined() }
        return MountpointRequest(
            description: "share from \(name ?? IdentityStore.defaultName())", videoPayloadType: Int(configuration.payloadType),
            // Constrained Baseline, as x264 codes for us; browsers match on the profile.
            videoFormatParameters: "packetization-mode=1;profile-level-id=42e01f",
            audio: configuration.audio.map { .init(payloadType: Int(configuration.audioPayloadType), stereo: $0.channels == 2) },
            srtpSuite: suite, srtpKeySalt: keying.inlineKeySalt(), secret: hex(16), pin: hex(16))
    }

    /// Where a browser watches: the viewer page of examples/, when this
    /// binary sits in a checkout (or the current directory is one).
    var viewerLink: String {
        let query = "?janus=\(client.url)&id=\(mountpoint.id)&pin=\(pin)"
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let directory = executable.deletingLastPathComponent()
        let candidates = [
            // .build/release/ (a link) or .build/<triple>/release/ in a checkout
            directory.appendingPathComponent("../../examples/fanout/viewer.html"),
            directory.appendingPathComponent("../../../examples/fanout/viewer.html"),
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("examples/fanout/viewer.html"),
        ]
        for page in candidates where FileManager.default.fileExists(atPath: page.standardizedFileURL.path) {
            return "file://\(page.standardizedFileURL.path)\(query)"
        }
        return "examples/fanout/viewer.html\(query) (in share's source tree)"
    }

    func remove() {
        do {
            try client.destroy(mountpoint, secret: secret)
            note("janus: mountpoint \(mountpoint.id) at \(client.url) removed")
        } catch {
            warn("janus: mountpoint \(mountpoint.id) at \(client.url) could not be removed: \(error)")
        }
    }
}

extension JanusTarget {
    /// A client of this server's API: its secrets file read (it must be
    /// 0600), and `rule` for how it may be reached.
    func client(rule: HTTPTransportRule) throws -> JanusClient {
        var credentials = JanusCredentials()
        if let secretsFile = secrets {
            try KeyFile.refuseIfReadableByOthers(secretsFile, what: "Janus secrets file")
            credentials = try JanusCredentials(parsing: String(contentsOfFile: secretsFile, encoding: .utf8))
        }
        var client = JanusClient(url: try HTTPURL(url), credentials: credentials)
        client.http.rule = rule
        return client
    }
}
