#if canImport(Glibc)
internal import Glibc
#endif
package import ShareBase

/// The system's clocks in nanoseconds, the one place the code reads them:
/// the monotonic one (CLOCK_MONOTONIC) for intervals and deadlines on this
/// machine, the wall clock (CLOCK_REALTIME) for instants told to another
/// machine. Protocol code never calls it: it is told the time.
package enum SystemClock {
    package static func monotonic() -> UInt64 { read(CLOCK_MONOTONIC) }
    /// The monotonic clock as the instant type the state machines are told.
    package static func now() -> MonotonicTime { MonotonicTime(nanoseconds: monotonic()) }
    package static func wall() -> UInt64 { read(CLOCK_REALTIME) }

    /// Sleeps until the monotonic clock reads `deadline` nanoseconds.
    package static func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    private static func read(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
