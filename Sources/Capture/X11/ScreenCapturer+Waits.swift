internal import CXCB
internal import ShareBase
internal import ShareSync
internal import ShareX11

/// Waiting for the screen: for the next change, for the one after what is
/// pending, and idly while the sender is paused. Each wait sleeps on the X
/// connection's socket and the wake-up descriptor, never on a timer alone.
extension ScreenCapturer {
    /// Waits until the screen changes (a damage event) or `timeout`
    /// passes, on the X connection's socket; true when it changed. Anything
    /// else that arrives (the pointer's device moving, the wake-up
    /// descriptor) ends the wait too. Without change tracking (or on a
    /// broken connection, so the next grab reports the error) it returns
    /// true at once. A drawn pointer is asked for after the wait, not
    /// before (the caller has just looked at `screenChanged`), and at rest
    /// only when its device moved or a warp check is due.
    public func waitForChange(timeout: Duration) -> Bool {
        guard damage != nil, xcb_connection_has_error(connection.connection) == 0 else { return true }
        readEvents()
        if changedSinceGrab { return true }
        waitForEvents(timeout: timeout)
        return screenChanged || xcb_connection_has_error(connection.connection) != 0
    }

    /// Sets what changed so far aside for the next grab and waits until the
    /// next change is drawn (a damage event: XDamage reports again once its
    /// region is emptied) or `timeout` passes; true when a change
    /// came. This is how a change that is pending but old can be traded for
    /// the fresh one about to be drawn. Without change tracking it returns
    /// true at once.
    public func watchForNextChange(timeout: Duration) -> Bool {
        guard let damage else { return true }
        let c = connection.connection
        readEvents()
        damage.setAside()
        let seen = changesSeen
        let deadline = SystemClock.now() + timeout
        while changesSeen == seen, xcb_connection_has_error(c) == 0 {
            let now = SystemClock.now()
            guard now < deadline else { return false }
            waitForEvents(timeout: deadline.since(now))
            readEvents()
        }
        return true
    }

    /// Waits on the X connection's socket until something arrives,
    /// `wakeDescriptor` is signalled or `timeout` passes (a minute at most);
    /// true when it was signalled.
    @discardableResult
    func waitForEvents(timeout: Duration) -> Bool {
        share_xcb_wait_readable(connection.connection, wakeDescriptor, min(timeout, .seconds(60)).nanoseconds) != 0
    }

    /// Waits while nothing is wanted from the screen (a paused sender) until
    /// `wakeDescriptor` is signalled or `timeout` passes. Neither
    /// the mouse nor drawing wakes it: the pointer's raw events are turned
    /// off (a paused sender's mouse may move for an hour), and whatever
    /// else arrives is read at once, so the server holds no backlog of
    /// events for a thread that is not looking (damage reports once until
    /// the next grab). The next look asks where the pointer is. Returns
    /// false at once on a broken connection (the next grab reports why).
    public func idle(timeout: Duration) -> Bool {
        let c = connection.connection
        pointer.stopListening()
        let deadline = SystemClock.now() + timeout
        while xcb_connection_has_error(c) == 0 {
            readEvents()
            let now = SystemClock.now()
            guard now < deadline, !waitForEvents(timeout: deadline.since(now)) else {
                readEvents()
                return true
            }
        }
        return false
    }
}
