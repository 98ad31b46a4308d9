internal import CMalloc
internal import ShareSync
#if canImport(Glibc)
internal import Glibc
#endif

/// The process's memory as iOS counts a footprint: dirty memory, i.e.
/// `RssAnon + RssShmem` of /proc/self/status, with total RSS beside it.
struct ProcessFootprint: Sendable, Equatable, Codable {
    var footprintBytes: Int
    var residentBytes: Int

    static func current() -> ProcessFootprint {
        FootprintReader().sample()
    }

    /// The footprint in the text of /proc/self/status: its `RssAnon`,
    /// `RssShmem` and `VmRSS` lines, read byte by byte (no strings).
    static func parse(_ text: UnsafeRawBufferPointer) -> ProcessFootprint {
        var anon = 0, shmem = 0, rss = 0
        var line = text.startIndex
        while line < text.endIndex {
            var end = line
            while end < text.endIndex && text[end] != 0x0A { end += 1 }
            func field(_ name: StaticString) -> Int? {
                let count = name.utf8CodeUnitCount
                guard end - line > count, memcmp(text.baseAddress! + line, name.utf8Start, count) == 0 else { return nil }
                var value = 0
                for i in (line + count)..<end where (0x30...0x39).contains(text[i]) { value = value * 10 + Int(text[i] - 0x30) }
                return value
            }
            if let value = field("RssAnon:") { anon = value }
            else if let value = field("RssShmem:") { shmem = value }
            else if let value = field("VmRSS:") { rss = value }
            line = end + 1
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

/// Reads the footprint again and again through one open /proc/self/status
/// (read from its start each time: procfs writes it afresh) into a buffer
/// of its own: each of the governor's samples costs one read call, not an
/// open, a read and a close, and allocates nothing. One thread.
final class FootprintReader {
    private let descriptor: Int32
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)

    init() {
        descriptor = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        buffer.deallocate()
    }

    func sample() -> ProcessFootprint {
        guard descriptor >= 0 else { return ProcessFootprint(footprintBytes: 0, residentBytes: 0) }
        let count = pread(descriptor, buffer.baseAddress, buffer.count, 0)
        guard count > 0 else { return ProcessFootprint(footprintBytes: 0, residentBytes: 0) }
        return ProcessFootprint.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }
}

/// Caps glibc's malloc arenas at two (M_ARENA_MAX): with one arena per busy
/// thread, a loaded sender grows dirty memory it never returns. It is a
/// process-wide setting, so the library never makes it on its own: `share
/// send` does at start, and an embedder may (`ScreenSender.limitMallocArenas()`).
func limitMallocArenas() {
    _ = share_limit_malloc_arenas(2)
}
