#if canImport(Glibc)
internal import Glibc
#endif

/// Where the portal's restore tokens are kept between runs:
/// `$XDG_STATE_HOME/share/portal-monitor.token` (and `-window`), in a
/// directory of mode 0700 and files of mode 0600, under
/// `~/.local/state` when XDG_STATE_HOME is not set. A token lets the
/// desktop share what was chosen last time without asking again.
struct RestoreTokenStore: Sendable {
    let directory: String?

    init(environment: [String: String] = Self.environment()) {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            directory = state + "/share"
        } else if let home = environment["HOME"], !home.isEmpty {
            directory = home + "/.local/state/share"
        } else {
            directory = nil
        }
    }

    static func environment() -> [String: String] {
        var out: [String: String] = [:]
        for key in ["XDG_STATE_HOME", "HOME"] { if let v = getenv(key) { out[key] = String(cString: v) } }
        return out
    }

    func file(types: UInt32) -> String? {
        directory.map { "\($0)/portal-\(types == 2 ? "window" : "monitor").token" }
    }

    func load(types: UInt32) -> String? {
        guard let file = file(types: types) else { return nil }
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let n = read(fd, &bytes, bytes.count)
        guard n > 0 else { return nil }
        let token = String(decoding: bytes[0..<n], as: UTF8.self).trimmingWhitespace
        return token.isEmpty ? nil : token
    }

    func save(_ token: String, types: UInt32) {
        guard let directory, let file = file(types: types) else { return }
        var path = ""
        for part in directory.split(separator: "/") {
            path += "/" + part
            _ = mkdir(path, 0o700)
        }
        let temporary = file + ".new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array((token + "\n").utf8)
        let written = write(fd, bytes, bytes.count)
        close(fd)
        if written == bytes.count { rename(temporary, file) } else { unlink(temporary) }
    }
}

extension String {
    var trimmingWhitespace: String {
        String(self.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
