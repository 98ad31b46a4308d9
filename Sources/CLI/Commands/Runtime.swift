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

/// Standard error as a person at a terminal sees it: the status line at
/// the bottom, notes above it (the status line cleared first, then drawn
/// again), and nothing drawn over a question while it waits for its answer.
final class StandardError: @unchecked Sendable {
    // Safe: every field is read and written under `lock`.
    static let shared = StandardError()
    private let lock = NSLock()
    private var status: String?
    private var asking = false
    let isTerminal = isatty(STDERR_FILENO) == 1

    private func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }

    /// A line above the status line.
    func note(_ line: String) {
        lock.withLock {
            if status != nil && !asking { write("\r\u{1B}[K") }
            write(line + "\n")
            if let status, !asking { write(status) }
        }
    }

    /// Draws (or, nil, clears) the status line; held back while a question waits.
    func setStatus(_ text: String?) {
        lock.withLock {
            status = text
            guard !asking else { return }
            write("\r\u{1B}[K" + (text ?? ""))
        }
    }

    /// Asks `question` with the status line out of the way, and reads the answer.
    func ask(_ question: String) -> String? {
        lock.withLock {
            if status != nil { write("\r\u{1B}[K") }
            asking = true
            write(question)
        }
        let answer = readLine()
        lock.withLock {
            asking = false
            if let status { write(status) }
        }
        return answer
    }
}

/// A one-line status on a terminal, rewritten each second; silent otherwise.
public final class StatusLine: @unchecked Sendable {
    // Safe: `timer` is set by `start` and read by `stop`, both on the command's
    // thread; the timer's handler touches neither.
    private var timer: (any DispatchSourceTimer)?
    var enabled: Bool { StandardError.shared.isTerminal }

    public init() {}

    public func start(_ render: @escaping @Sendable () -> String) {
        guard enabled else { return }
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { StandardError.shared.setStatus(render()) }
        timer.resume()
        self.timer = timer
    }

    public func stop() {
        timer?.cancel()
        if enabled { StandardError.shared.setStatus(nil) }
    }
}

public func fail(_ message: String) -> Never {
    StandardError.shared.note("share: \(message)")
    exit(1)
}

public func note(_ message: String) {
    StandardError.shared.note("share: \(message)")
}

public func megabytes(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

/// Writes `value` as pretty JSON to `path`, whole: a reader sees the file
/// before or after, never half of it (it may be rewritten while running).
public func writeJSON(_ value: some Encodable, to path: String) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    do {
        try encoder.encode(value).write(to: URL(fileURLWithPath: path), options: .atomic)
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

/// Rates over the last status tick, from running totals (frames, bytes)
/// and the elapsed time they were counted over: what a status line shows,
/// rather than an average since the start, which lags behind a change and
/// keeps falling after the stream stops.
public final class RecentRates: @unchecked Sendable {
    // Safe: `last` is read and written under `lock`.
    private let lock = NSLock()
    private var last: (seconds: Double, totals: [Double])?

    public init() {}

    /// Each total's increase per second since the previous call (the first
    /// call: since the start).
    public func perSecond(_ totals: [Double], at seconds: Double) -> [Double] {
        lock.withLock {
            let (before, counted) = last ?? (0, totals.map { _ in 0 })
            last = (seconds, totals)
            let span = seconds - before
            guard span > 0 else { return totals.map { _ in 0 } }
            return zip(totals, counted).map { ($0 - $1) / span }
        }
    }
}
