internal import Foundation
internal import ShareWire
internal import ShareBase

/// Where an install keeps its identity and the peers it has met:
/// `$XDG_CONFIG_HOME/share` (else `~/.config/share`), mode 0700, holding
/// `identity` (this install's private key and name) and `known_peers` (one
/// `NAME ed25519 KEY` line per peer), both mode 0600. A directory that is a
/// link, another user's, or that others can enter is refused, as is a file
/// others could read (the identity) or write (either), or a link. Updates of
/// `known_peers` are read-modify-write under a lock (`share send` and
/// `share recv` on one machine share the file), written to a new file and
/// renamed into place.
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

    /// `user@host`, cut to the longest name a handshake carries: the user
    /// from `$USER`, else the login name of this uid; characters a name may
    /// not hold become `-`.
    public static func defaultName() -> String {
        let environment = ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 }
        let user = environment ?? getpwuid(getuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "user"
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        return PeerName.sanitized("\(user)@\(host)") ?? "share"
    }

    /// This install's identity, created on first use; `name` (if given)
    /// replaces the name it was created with.
    public func identity(name: String? = nil) throws(IdentityError) -> LocalIdentity {
        try makeDirectory()
        if let bytes = try read(identityPath, secret: true) {
            let text = String(decoding: bytes, as: UTF8.self)
            var fields: [String: String] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ", maxSplits: 1)
                if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
            }
            guard let encoded = fields["ed25519"], let key = Base64.decode(encoded) else {
                throw IdentityError("\(identityPath) holds no ed25519 key: move it away and a new identity is made")
            }
            // A name stored by an older version that is no longer a name gives way to the default.
            let stored = fields["name"].flatMap { PeerName.isValid($0) ? $0 : nil }
            return try LocalIdentity(name: name ?? stored ?? Self.defaultName(), privateKey: key)
        }
        let identity = try LocalIdentity.generate(name: name ?? Self.defaultName())
        try write("name \(identity.name)\ned25519 \(Base64.encode(identity.privateKeyBytes))\n", to: identityPath,
                  exclusive: true)
        return identity
    }

    /// The peers met so far (none when the file does not exist yet).
    public func knownPeers() throws(IdentityError) -> KnownPeers { try loadKnownPeers().peers }

    /// The peers met so far, and the lines skipped (each named with its
    /// number and why): one bad line costs that line, never the file.
    public func loadKnownPeers() throws(IdentityError) -> (peers: KnownPeers, skipped: [String]) {
        guard let bytes = try read(knownPeersPath, secret: false) else { return (KnownPeers(), []) }
        return KnownPeersFile.parse(bytes, path: knownPeersPath)
    }

    /// Adds (or replaces) a peer: under the store's lock, reads the file,
    /// writes the new one beside it and renames it into place.
    public func remember(name: String, key: [UInt8]) throws(IdentityError) {
        guard PeerName.isValid(name), key.count == 32 else { throw IdentityError("\"\(name)\" cannot be remembered: not a name") }
        try makeDirectory()
        try withLock { () throws(IdentityError) in
            var peers = try knownPeers()
            peers.remember(name: name, key: key)
            var random = SystemRandomNumberGenerator()
            let temporary = knownPeersPath + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max, using: &random)).new"
            try write(KnownPeersFile.text(peers), to: temporary, exclusive: true)
            guard rename(temporary, knownPeersPath) == 0 else {
                let error = errno
                unlink(temporary)
                throw IdentityError("cannot replace \(knownPeersPath): \(String(cString: strerror(error)))")
            }
        }
    }

    /// Runs `body` holding an exclusive lock on the store (`.lock`, flock):
    /// another process updating known_peers waits instead of losing its update.
    private func withLock(_ body: () throws(IdentityError) -> Void) throws(IdentityError) {
        let path = directory + "/.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw IdentityError("cannot lock \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw IdentityError("cannot lock \(path): \(String(cString: strerror(errno)))") }
        }
        defer { flock(fd, LOCK_UN) }
        try body()
    }

    /// Creates the directory (0700), or checks the one there: a real
    /// directory (not a link), this user's, that no one else can enter.
    private func makeDirectory() throws(IdentityError) {
        var info = stat()
        if lstat(directory, &info) != 0 {
            let parent = (directory as NSString).deletingLastPathComponent
            try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw IdentityError("cannot create \(directory): \(String(cString: strerror(errno)))")
            }
            guard lstat(directory, &info) == 0 else {
                throw IdentityError("cannot use \(directory): \(String(cString: strerror(errno)))")
            }
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw IdentityError("\(directory) is not a directory (a link?): refusing it") }
        guard info.st_uid == getuid() else { throw IdentityError("\(directory) belongs to user \(info.st_uid), not you: refusing it") }
        guard info.st_mode & 0o077 == 0 else {
            throw IdentityError("\(directory) can be entered by others (mode \(String(info.st_mode & 0o777, radix: 8))): "
                                + "run chmod 700 \(directory)")
        }
    }

    /// The file's bytes, nil when it does not exist; refuses a link, or a
    /// file others can write, or (a secret) read.
    private func read(_ path: String, secret: Bool) throws(IdentityError) -> [UInt8]? {
        try makeDirectory()
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw IdentityError("\(path) is a link: refusing it") }
            throw IdentityError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw IdentityError("\(path) is not a file") }
        let mode = info.st_mode & 0o777
        if mode & (secret ? 0o077 : 0o022) != 0 {
            throw IdentityError("\(path) is \(secret ? "readable" : "writable") by group or others (mode \(String(mode, radix: 8))): run chmod 600 \(path)")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw IdentityError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            guard bytes.count <= 1 << 20 else { throw IdentityError("\(path) is over 1 MiB: not a file of share's") }
        }
    }

    /// Writes a new file (never through a link: O_NOFOLLOW, and O_EXCL when
    /// it must not exist), mode 0600, synced.
    private func write(_ text: String, to path: String, exclusive: Bool) throws(IdentityError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | (exclusive ? O_EXCL : 0), 0o600)
        guard fd >= 0 else { throw IdentityError("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard fchmod(fd, 0o600) == 0, Glibc.write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            let error = errno
            if exclusive { unlink(path) }
            throw IdentityError("cannot write \(path): \(String(cString: strerror(error)))")
        }
    }
}

/// The `known_peers` format: one `NAME ed25519 KEY` line per peer, `#`
/// comments and blank lines. Read as bytes, split on the space byte alone,
/// so no character can join a name to what follows it.
package enum KnownPeersFile {
    package static func parse(_ bytes: [UInt8], path: String) -> (peers: KnownPeers, skipped: [String]) {
        var peers = KnownPeers()
        var skipped: [String] = []
        for (number, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(separator: 0x20)
            if fields.isEmpty || fields[0].first == UInt8(ascii: "#") { continue }
            guard fields.count == 3, Array(fields[1]) == Array("ed25519".utf8), PeerName.isValid(bytes: fields[0]),
                  let key = Base64.decode(String(decoding: fields[2], as: UTF8.self)), key.count == 32
            else {
                skipped.append("\(path):\(number + 1) is not \"NAME ed25519 KEY\" with a valid name: skipped")
                continue
            }
            peers.remember(name: String(decoding: fields[0], as: UTF8.self), key: key)
        }
        return (peers, skipped)
    }

    package static func text(_ peers: KnownPeers) -> String {
        peers.keys.sorted { $0.key < $1.key }.map { "\($0.key) ed25519 \(Base64.encode($0.value))\n" }.joined()
    }
}
