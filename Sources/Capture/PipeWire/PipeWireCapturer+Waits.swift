internal import ShareBase
internal import ShareCapture
internal import ShareSync
#if canImport(Glibc)
internal import Glibc
#endif

extension PipeWireCapturer {
    /// PipeWire only sends a picture when something was drawn, so each
    /// arrival is a change (its damage says where).
    public func trackChanges() -> Bool { true }

    public var screenChanged: Bool { stream.locked { $0.hasFrame } }

    /// Pictures that came since capture started.
    public var changesSeen: Int { Int(stream.locked { $0.counts.arrived }) }

    /// True as well once the desktop closed the cast: the next capture
    /// says why at once, instead of at the still screen's next refresh.
    public func waitForChange(timeout: Duration) -> Bool {
        if screenChanged { return true }
        wait(timeout) { self.screenChanged }
        return screenChanged || session.closed()
    }

    public func watchForNextChange(timeout: Duration) -> Bool {
        let before = stream.locked { $0.counts.arrived }
        wait(timeout) { self.stream.locked { $0.counts.arrived } != before }
        return stream.locked { $0.counts.arrived } != before
    }

    /// Waits on the other threads' descriptor alone: neither pictures nor
    /// the pointer wake a paused sender.
    public func idle(timeout: Duration) -> Bool {
        guard (try? checkEnded()) != nil else { return false }
        guard wakeDescriptor >= 0 else { return false }
        if Poll.wait(on: [wakeDescriptor], timeout: timeout)[0] { Poll.drain(wakeDescriptor) }
        return true
    }

    /// Waits until `done`, the other threads' news, the pointer's news (when
    /// it goes apart), the cast's end or `timeout`.
    private func wait(_ timeout: Duration, until done: () -> Bool) {
        let deadline = SystemClock.now() + timeout
        let (pointerBefore, stateBefore) = stream.locked { ($0.pointerChanges, $0.state) }
        let bus = session.busDescriptor
        while SystemClock.now() < deadline {
            let ready = Poll.wait(on: [stream.wakeupDescriptor, wakeDescriptor, bus],
                                  timeout: deadline.since(SystemClock.now()))
            stream.clearWakeup()
            if done() { return }
            // Another thread's news: the loop looks.
            if ready[1] {
                Poll.drain(wakeDescriptor)
                return
            }
            // The bus spoke: the cast may have ended (the next capture says so).
            if ready[2], session.closed() { return }
            if pointerApart && stream.locked({ $0.pointerChanges }) != pointerBefore { return }
            if stream.locked({ $0.state }) != stateBefore { return }
        }
    }
}

/// poll(2) over a few descriptors.
enum Poll {
    /// Which of `descriptors` became readable within `timeout` (rounded up
    /// to poll's milliseconds; a negative descriptor is left out, and never
    /// ready).
    @discardableResult
    static func wait(on descriptors: [Int32], timeout: Duration) -> [Bool] {
        var fds = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let milliseconds = Int32(clamping: (timeout.nanoseconds + 999_999) / 1_000_000)
        guard poll(&fds, nfds_t(fds.count), milliseconds) > 0 else { return descriptors.map { _ in false } }
        return fds.map { $0.revents != 0 }
    }
}

extension Poll {
    /// Reads what a wake-up pipe holds (several signals count as one).
    static func drain(_ descriptor: Int32) {
        guard descriptor >= 0 else { return }
        var bytes = [UInt8](repeating: 0, count: 64)
        _ = read(descriptor, &bytes, bytes.count)
    }
}
