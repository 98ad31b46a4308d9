internal import Foundation
internal import ShareWire

/// Where an install keeps its identity and the peers it has met:
/// `$XDG_CONFIG_HOME/share` (else `~/.config/share`), mode 0700, holding
/// `identity` (this install's private key and name) and `known_peers` (one
/// `NAME ed25519 KEY` line per peer), both mode 0600. A file others could
/// read (the identity) or write (either) is refused.
public struct IdentityStore: Sendable {
    /// The directory holding the identity and known_peers files (mode 0700).
    public let directory: String

    /// A store in `directory` (created when first written).
    public init(directory: String) { self.directory = directory }

    /// The user's store: `$XDG_CONFIG_HOME/share`, else `$HOME/.config/share`.
    public static func user(environment: [String: String]? = nil) -> IdentityStore {
        let environment = environment ?? ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return IdentityStore(directory: config + "/share")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return IdentityStore(directory: home + "/.config/share")
    }

    var identityPath: String { directory + "/identity" }
    /// The known-peers file's path.
    public var knownPeersPath: String { directory + "/known_peers" }

    /// `user@host`, cut to the longest name a handshake carries.
    public static func defaultName() -> String {
        let user = ProcessInfo.processInfo.environment["USER"] ?? "user"
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        let name = String("\(user)@\(host)".filter { !$0.isWhitespace }.utf8.prefix(HandshakeMessage.maximumNameLength)) ?? "share"
        return PeerName.isValid(name) ? name : "share"
    }

    /// This install's identity, created on first use; `name` (if given)
    /// replaces the name it was created with.
    public func identity(name: String? = nil) throws(IdentityError) -> LocalIdentity {
        try makeDirectory()
        if let text = try read(identityPath, secret: true) {
            var fields: [String: String] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
            }
            guard let encoded = fields["ed25519"], let key = Base64.decode(encoded) else {
                throw IdentityError("\(identityPath) holds no ed25519 key: move it away and a new identity is made")
            }
            return try LocalIdentity(name: name ?? fields["name"] ?? Self.defaultName(), privateKey: key)
        }
        let identity = try LocalIdentity.generate(name: name ?? Self.defaultName())
        try write("name \(identity.name)\ned25519 \(Base64.encode(identity.privateKeyBytes))\n", to: identityPath,
                  exclusive: true)
        return identity
    }

    /// The peers met so far (none when the file does not exist yet).
    public func knownPeers() throws(IdentityError) -> KnownPeers {
        guard let text = try read(knownPeersPath, secret: false) else { return KnownPeers() }
        var peers = KnownPeers()
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(separator: " ")
            if fields.isEmpty || fields[0].hasPrefix("#") { continue }
            guard fields.count == 3, fields[1] == "ed25519", let key = Base64.decode(fields[2]), key.count == 32 else {
                throw IdentityError("\(knownPeersPath):\(number + 1) is not \"NAME ed25519 KEY\"")
            }
            peers.remember(name: String(fields[0]), key: key)
        }
        return peers
    }

    /// Adds (or replaces) a peer, rewriting the file atomically.
    public func remember(name: String, key: [UInt8]) throws(IdentityError) {
        try makeDirectory()
        var peers = try knownPeers()
        peers.remember(name: name, key: key)
        let text = peers.keys.sorted { $0.key < $1.key }.map { "\($0.key) ed25519 \(Base64.encode($0.value))\n" }.joined()
        let temporary = knownPeersPath + ".\(getpid()).new"
        try write(text, to: temporary, exclusive: false)
        guard rename(temporary, knownPeersPath) == 0 else {
            throw IdentityError("cannot replace \(knownPeersPath): \(String(cString: strerror(errno)))")
        }
    }

    private func makeDirectory() throws(IdentityError) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        let parent = (directory as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
            throw IdentityError("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
    }

    /// The file's text, nil when it does not exist; refuses one that others
    /// can write, or (a secret) read.
    private func read(_ path: String, secret: Bool) throws(IdentityError) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw IdentityError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let mode = info.st_mode & 0o777
        if mode & (secret ? 0o077 : 0o022) != 0 {
            throw IdentityError("\(path) is \(secret ? "readable" : "writable") by group or others (mode \(String(mode, radix: 8))): run chmod 600 \(path)")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw IdentityError("cannot read \(path)")
        }
        return text
    }

    private func write(_ text: String, to path: String, exclusive: Bool) throws(IdentityError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (exclusive ? O_EXCL : 0), 0o600)
        guard fd >= 0 else { throw IdentityError("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        guard Glibc.write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            throw IdentityError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
