import Foundation
public import ShareHandshake
import ShareSRTP
internal import ShareSync

/// How `share send` and `share recv` get their keys from their options:
/// `--srtp-key-file` is a static SDES key (the interop mode, no handshake);
/// `--key-file` authenticates a handshake as a pre-shared key; with neither,
/// the handshake is authenticated by this install's identity and the short
/// authentication string.
public enum Keying {
    public static func resolve(keyFile: String?, srtpKeyFile: String?, name: String?) throws -> SessionKeying {
        if keyFile != nil && srtpKeyFile != nil {
            throw KeyFile.Problem(description: "give --key-file (a handshake) or --srtp-key-file (a static key for other tools), not both")
        }
        if let problem = name.flatMap(PeerName.problem) { throw KeyFile.Problem(description: problem) }
        if let srtpKeyFile { return .staticKey(try KeyFile.read(srtpKeyFile)) }
        if let keyFile {
            return try .keyFile(keyFile)
        }
        let store = IdentityStore.user()
        let identity = try store.identity(name: name)
        let known = try store.loadKnownPeers()
        for line in known.skipped { warn(line) }
        return .handshake(.identity(identity, known: known.peers), store: store)
    }
}

/// Asks the person at the terminal (standard input) whether a peer never
/// met before may have a session, one question at a time; no answer (end
/// of input) is no.
public enum ConfirmationPrompt {
    private static let lock = Locked()

    public static func ask(_ request: PeerConfirmationRequest) -> Bool {
        lock.withLock {
            warn("\"\(request.peerName)\" is new here (\(request.fingerprint))")
            warn("its screen shows a code; this screen's code is:  \(request.shortAuthenticationString)")
            guard let line = StandardError.shared.ask("share: accept it if the codes are the same [y/N] ") else {
                warn("no answer (nothing to read one from): refused; for unattended use give --accept, "
                     + "or pair with a key file both ends hold (--key-file)")
                return false
            }
            let answer = line.trimmingCharacters(in: .whitespaces).lowercased()
            return answer == "y" || answer == "yes"
        }
    }
}
