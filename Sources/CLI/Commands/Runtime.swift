import Dispatch
import Foundation

/// Waits for the first of: SIGINT/SIGTERM, the duration elapsing, or `finished`.
public final class StopSignal: @unchecked Sendable {
    // Safe: `sources` is set in init and only kept alive after; the rest is a semaphore.
    private let semaphore = DispatchSemaphore(value: 0)
    private var sources: [any DispatchSourceSignal] = []
    private(set) var reason = "finished"
    private let lock = NSLock()

    public init(duration: Double?) {
        // A peer or client gone mid-write is an EPIPE for the one write, never
        // the end of the process (its mountpoint and socket file left behind).
        signal(SIGPIPE, SIG_IGN)
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [self] in fire(sig == SIGINT ? "interrupted" : "terminated") }
            source.resume()
            sources.append(source)
        }
        if let duration {
            DispatchQueue.global().asyncAfter(deadline: .now() + duration) { [self] in fire("duration elapsed") }
        }
    }

    public func fire(_ why: String) {
        lock.lock()
        defer { lock.unlock() }
        if reason == "finished" { reason = why }
        semaphore.signal()
    }

    public func wait() { semaphore.wait() }
}

/// A one-line status on a terminal, rewritten each second; silent otherwise.
public final class StatusLine: @unchecked Sendable {
    // Safe: `timer` is set by `start` and read by `stop`, both on the command's
    // thread; the timer's handler touches neither.
    private var timer: (any DispatchSourceTimer)?
    let enabled = isatty(STDERR_FILENO) == 1

    public init() {}

    public func start(_ render: @escaping @Sendable () -> String) {
        guard enabled else { return }
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { FileHandle.standardError.write(Data(("\r\u{1B}[K" + render()).utf8)) }
        timer.resume()
        self.timer = timer
    }

    public func stop() {
        timer?.cancel()
        if enabled { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}

public func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("share: \(message)\n".utf8))
    exit(1)
}

public func note(_ message: String) {
    FileHandle.standardError.write(Data("share: \(message)\n".utf8))
}

public func megabytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

/// Writes `value` as pretty JSON to `path`.
public func writeJSON(_ value: some Encodable, to path: String) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    do {
        try encoder.encode(value).write(to: URL(fileURLWithPath: path))
    } catch {
        note("cannot write \(path): \(error)")
    }
}

/// Whether `path` names a file this process can read (a usage check before anything starts).
func fileIsReadable(_ path: String) -> Bool {
    var directory: ObjCBool = false
    return FileManager.default.fileExists(atPath: path, isDirectory: &directory) && !directory.boolValue
        && FileManager.default.isReadableFile(atPath: path)
}

/// A text file's contents; nil when it cannot be read as UTF-8.
public func readTextFile(_ path: String) -> String? {
    guard fileIsReadable(path) else { return nil }
    return try? String(contentsOfFile: path, encoding: .utf8)
}
