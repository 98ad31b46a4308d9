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
    // Safe: every field is read and written under `lock`, but `verbosity`,
    // set once at the start before any thread that writes.
    static let shared = StandardError()
    private let lock = NSLock()
    private var status: String?
    private var asking = false
    let isTerminal = isatty(STDERR_FILENO) == 1
    var verbosity = Verbosity.normal
    /// Lines start with the time when no person reads them as they come (a
    /// file, a pipe), unless they go to systemd's journal, which stamps
    /// them itself (`$JOURNAL_STREAM` names standard error's device and inode).
    let stamped: Bool = {
        guard isatty(STDERR_FILENO) != 1 else { return false }
        guard let journal = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return true }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return true }
        return journal != "\(info.st_dev):\(info.st_ino)"
    }()

    private func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }

    private static let clock: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
        return formatter
    }()

    /// A line above the status line.
    func note(_ line: String) {
        lock.withLock {
            if status != nil && !asking { write("\r\u{1B}[K") }
            write((stamped ? Self.clock.string(from: Date()) + " " : "") + line + "\n")
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
    var enabled: Bool { StandardError.shared.isTerminal && StandardError.shared.verbosity != .quiet }

    public init() {}

    public func start(_ render: @escaping @Sendable () -> String) {
        // With no terminal to draw on, --verbose logs it every ten seconds.
        let logged = !enabled && StandardError.shared.verbosity == .verbose
        guard enabled || logged else { return }
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + (logged ? 10 : 1), repeating: logged ? 10 : 1)
        timer.setEventHandler { logged ? detail(render()) : StandardError.shared.setStatus(render()) }
        timer.resume()
        self.timer = timer
    }

    public func stop() {
        timer?.cancel()
        if enabled { StandardError.shared.setStatus(nil) }
    }
}

/// How much `share send` and `share recv` say on standard error.
public enum Verbosity: Sendable {
    /// Warnings, questions and errors only (`--quiet`).
    case quiet
    case normal
    /// Also the details: every network estimate, pauses, key renewals, and
    /// the status line every ten seconds where there is no terminal to draw
    /// it on (`--verbose`).
    case verbose

    /// What `--quiet` and `--verbose` ask for.
    public static func from(quiet: Bool, verbose: Bool) -> Verbosity { quiet ? .quiet : verbose ? .verbose : .normal }
}

/// Sets how much is said from now on: once, at the start.
public func setVerbosity(_ verbosity: Verbosity) { StandardError.shared.verbosity = verbosity }

public func fail(_ message: String) -> Never {
    StandardError.shared.note("share: \(message)")
    exit(1)
}

/// What happens, for the person running it (not with --quiet).
public func note(_ message: String) {
    guard StandardError.shared.verbosity != .quiet else { return }
    StandardError.shared.note("share: \(message)")
}

/// Something wrong that does not stop the program: said even with --quiet.
public func warn(_ message: String) {
    StandardError.shared.note("share: \(message)")
}

/// A detail, with --verbose only.
public func detail(_ message: String) {
    guard StandardError.shared.verbosity == .verbose else { return }
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
        warn("cannot write \(path): \(error)")
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
