#if canImport(Glibc)
internal import Glibc
#endif

/// The system's clocks in nanoseconds: the monotonic one (CLOCK_MONOTONIC)
/// for intervals and deadlines on this machine, the wall clock
/// (CLOCK_REALTIME) for instants told to another machine.
package enum SystemClock {
    package static func monotonic() -> UInt64 { read(CLOCK_MONOTONIC) }
    package static func wall() -> UInt64 { read(CLOCK_REALTIME) }

    private static func read(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
