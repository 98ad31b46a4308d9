internal import Foundation
public import ShareSRTP

/// The `--key-file` format: one line, `[SUITE ]inline:BASE64` or just the
/// base64 key-salt (SDES inline form, RFC 4568). The file must not be
/// readable by group or others; keys are never taken on the command line.
public enum KeyFile {
    /// Why a key file cannot be used (missing, readable by others, malformed).
    public struct Problem: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) { self.description = description }
    }

    public static func read(_ path: String) throws -> SRTPKeyingMaterial {
        let fields = try secretFields(path)
        guard let last = fields.last else { throw Problem(description: "key file \(path) is empty") }
        let profile: SRTPProfile
        if fields.count >= 2 {
            guard let named = SRTPProfile(name: fields[fields.count - 2]) else {
                throw Problem(description: "key file \(path): unknown suite \(fields[fields.count - 2]); use one of \(SRTPProfile.allNames)")
            }
            profile = named
        } else {
            profile = .aes128CmHmacSha1_80
        }
        do {
            return try SRTPKeyingMaterial(profile: profile, inline: last)
        } catch {
            throw Problem(description: "key file \(path): \(error)")
        }
    }

    /// The file's secret as a pre-shared key for the handshake (it is then
    /// never an SRTP key itself).
    public static func readPreSharedKey(_ path: String) throws -> [UInt8] {
        // The same file format as an SRTP key: its key and salt are the secret.
        let secret = try read(path).bytes
        guard secret.count >= 16 else {
            throw Problem(description: "key file \(path) holds no key of at least 16 bytes (write one with `share keygen`)")
        }
        return secret
    }

    /// The whitespace-separated fields of a file that holds a secret,
    /// refused when others can read it.
    static func secretFields(_ path: String) throws -> [Substring] {
        try refuseIfReadableByOthers(path, what: "key file")
        guard access(path, R_OK) == 0 else {
            throw Problem(description: "cannot read key file \(path): \(String(cString: strerror(errno)))")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Problem(description: "key file \(path) is not text (write one with `share keygen`)")
        }
        return text.split(whereSeparator: { $0.isWhitespace })
    }

    /// Refuses a file holding a secret that group or others can read.
    public static func refuseIfReadableByOthers(_ path: String, what: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Problem(description: "cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT != S_IFDIR else { throw Problem(description: "\(what) \(path) is a directory") }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 {
            throw Problem(description: "\(what) \(path) is readable by group or others (mode \(String(mode, radix: 8))): run chmod 600 \(path)")
        }
    }

    /// Writes fresh keying material with mode 0600, refusing to overwrite.
    public static func create(_ path: String, profile: SRTPProfile) throws {
        let keying = SRTPKeyingMaterial.random(profile: profile)
        let line = "\(profile.rawValue) inline:\(keying.inlineKeySalt())\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw Problem(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let bytes = Array(line.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            throw Problem(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Writes text that contains a key (an SDP) with mode 0600.
    public static func writeSecret(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw Problem(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            throw Problem(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}

extension SessionKeying {
    /// The keying of `share send --key-file` and `share recv --key-file`: a
    /// handshake authenticated by the key in the file (`share keygen`
    /// writes one; mode 0600), so an embedded sender or receiver meets the
    /// command-line tools with the same file.
    public static func keyFile(_ path: String) throws -> SessionKeying {
        .handshake(.preSharedKey(try KeyFile.readPreSharedKey(path)), store: nil)
    }
}
