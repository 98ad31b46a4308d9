#if canImport(Glibc)
internal import Glibc
#endif

/// Wakes a thread that waits in poll on descriptors of its own (the X
/// connection's socket) from any other thread: a pipe whose reading end it
/// polls beside them and reads when it wakes. Signals before the wait are
/// not lost (they stay in the pipe until read); several count as one.
package final class Wakeup: @unchecked Sendable {
    // Safe: the descriptors are written and read with atomic system calls only.
    /// The end to poll for reading (-1 when the system refused a pipe: then
    /// nothing wakes the waiter early, and it keeps to its own timeouts).
    package let descriptor: Int32
    private let writer: Int32

    package init() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            (descriptor, writer) = (-1, -1)
            return
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        (descriptor, writer) = (ends[0], ends[1])
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        if writer >= 0 { close(writer) }
    }

    /// Wakes the waiter (or its next wait, at once). A full pipe is already
    /// a wake-up waiting.
    package func signal() {
        guard writer >= 0 else { return }
        var one: UInt8 = 1
        _ = write(writer, &one, 1)
    }
}
