#if canImport(Glibc)
internal import Glibc
#endif
package import ShareBase

/// The system's clocks, the one place the code reads them: the monotonic
/// one (CLOCK_MONOTONIC) as `MonotonicTime`, for intervals and deadlines on
/// this machine, and the wall clock (CLOCK_REALTIME) in nanoseconds since
/// 1970, for instants told to another machine (RTCP's and abs-capture-time's
/// NTP timestamps). Protocol code never calls it: it is told the time.
package enum SystemClock {
    /// The monotonic clock: the instant the threads read and the state
    /// machines are told.
    package static func now() -> MonotonicTime { MonotonicTime(nanoseconds: read(CLOCK_MONOTONIC)) }
    package static func wall() -> UInt64 { read(CLOCK_REALTIME) }

    /// Sleeps until the monotonic clock reads `deadline`.
    package static func sleep(until deadline: MonotonicTime) {
        let ns = deadline.nanoseconds
        var ts = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// Sleeps for `duration` from now.
    package static func sleep(for duration: Duration) { sleep(until: now() + duration) }

    private static func read(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
