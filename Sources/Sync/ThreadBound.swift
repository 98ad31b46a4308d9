#if canImport(Glibc)
internal import Glibc
#endif
import Synchronization

/// A value that belongs to one thread, in the style of swift-nio's
/// `NIOLoopBound`: it may be made on one thread and handed to the thread
/// that runs it, and from then on only that thread touches it. The first
/// thread to reach the value owns it; in debug builds (every test run)
/// each access checks that it is that thread, so a second thread reaching
/// in traps at once instead of racing silently. Release builds check
/// nothing and cost nothing beyond the call.
///
/// It is what a worker's own state goes in (the capture thread's source,
/// the encode thread's encoder), so the object that holds it can be
/// `Sendable` without `@unchecked`: what threads share stays in atomics and
/// `Locked`, what one thread owns says so in its type.
public final class ThreadBound<Value>: @unchecked Sendable {
    // Safe: `value` is reached only through `withValue`, by the owning
    // thread (checked in debug builds).
    private var value: Value
    #if DEBUG
    /// The owner's `pthread_self()`, 0 until the first access.
    private let owner = Atomic<UInt>(0)
    #endif

    /// Holds `value` for the thread that first reaches it.
    public init(_ value: Value) {
        self.value = value
    }

    /// Lends the value to `body`, on the owning thread only.
    @inline(__always)
    public func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        #if DEBUG
        checkOwner()
        #endif
        return try body(&value)
    }

    #if DEBUG
    private func checkOwner() {
        let me = UInt(pthread_self())
        let (claimed, original) = owner.compareExchange(expected: 0, desired: me, ordering: .relaxed)
        precondition(claimed || original == me, "a thread-bound value was reached from a thread that does not own it")
    }
    #endif
}
