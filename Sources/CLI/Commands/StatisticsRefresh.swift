import Foundation
import Synchronization

/// `--stats-json` kept fresh while the program runs (`--stats-interval`):
/// the counters written every interval, each time whole, until `stop`. The
/// final counters are written at the end as before.
public final class StatisticsRefresh: Sendable {
    private let stopped = Atomic<Bool>(false)

    /// Starts refreshing `path` from `read` every `interval` seconds; nil
    /// when either is missing.
    public init?(path: String?, interval: Double?, read: @escaping @Sendable () -> any Encodable) {
        guard let path, let interval else { return nil }
        let thread = Thread { [self] in
            var next = Date().addingTimeInterval(interval)
            while !stopped.load(ordering: .relaxed) {
                // Short sleeps, so that stopping waits for no whole interval.
                Thread.sleep(forTimeInterval: min(0.1, max(0, next.timeIntervalSinceNow)))
                guard Date() >= next, !stopped.load(ordering: .relaxed) else { continue }
                writeJSON(read(), to: path)
                next = next.addingTimeInterval(interval)
            }
        }
        thread.name = "share-stats"
        thread.start()
    }

    public func stop() { stopped.store(true, ordering: .relaxed) }
}
