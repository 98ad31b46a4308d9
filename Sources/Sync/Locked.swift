#if canImport(Glibc)
internal import Glibc
#endif

/// A value behind a POSIX mutex: what the threads of the sender and the
/// receiver share. The standard library's `Mutex` does the same job, but on
/// Linux it locks with raw futex calls, which ThreadSanitizer cannot see, so
/// `make tsan` reported every access it guards as a race; a pthread mutex is
/// seen, and costs the same uncontended (one atomic each way).
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // Safe: `value` is only touched inside `withLock`, under `mutex`.
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: consuming sending Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    public func withLock<Result: ~Copyable, Failure: Error>(_ body: (inout sending Value) throws(Failure) -> sending Result)
        throws(Failure) -> sending Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension Locked where Value == Void {
    /// A lock over no value, for side effects that must not interleave (a
    /// question on the terminal).
    public convenience init() { self.init(()) }

    /// Runs `body` holding the lock, without touching the empty value: Swift
    /// tracks every access to a value of no size at one shared address, not
    /// the lock's, so under ThreadSanitizer two threads' accesses to it read
    /// as a race however they are locked.
    public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
