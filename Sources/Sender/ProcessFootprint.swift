internal import CMalloc
#if canImport(Glibc)
internal import Glibc
#endif

/// The process's memory as iOS counts a footprint: dirty memory, i.e.
/// `RssAnon + RssShmem` of /proc/self/status, with total RSS beside it.
struct ProcessFootprint: Sendable, Equatable, Codable {
    var footprintBytes: Int
    var residentBytes: Int

    static func current() -> ProcessFootprint {
        guard let file = fopen("/proc/self/status", "r") else { return ProcessFootprint(footprintBytes: 0, residentBytes: 0) }
        defer { fclose(file) }
        var anon = 0
        var shmem = 0
        var rss = 0
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            func kilobytes() -> Int { Int(text.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0 }
            if text.hasPrefix("RssAnon:") { anon = kilobytes() }
            else if text.hasPrefix("RssShmem:") { shmem = kilobytes() }
            else if text.hasPrefix("VmRSS:") { rss = kilobytes() }
        }
        return ProcessFootprint(footprintBytes: (anon + shmem) * 1024, residentBytes: rss * 1024)
    }

    /// CPU time (user + system) the process has used so far.
    static func cpuTime() -> Duration {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let micros = (Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec)) * 1_000_000
            + Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec)
        return .microseconds(micros)
    }
}

/// The monotonic clock and the wall clock, read together.
enum Clock {
    static func monotonic() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func wall() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Sleeps until the monotonic clock reads `deadline` nanoseconds.
    static func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

/// Caps glibc's malloc arenas at two (M_ARENA_MAX): with one arena per busy
/// thread, a loaded sender grows dirty memory it never returns. It is a
/// process-wide setting, so the library never makes it on its own: `share
/// send` does at start, and an embedder may (`ScreenSender.limitMallocArenas()`).
func limitMallocArenas() {
    _ = share_limit_malloc_arenas(2)
}
