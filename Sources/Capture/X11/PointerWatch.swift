internal import ShareBase
internal import CXCB
internal import ShareX11
#if canImport(Glibc)
internal import Glibc
internal import ShareSync
#endif

/// Where the pointer is and when it last moved, for the capturer.
///
/// X tells an ordinary client nothing when the pointer moves: it has to ask
/// (a round trip). Asked at every look, a still pointer costs a wake-up and
/// a round trip each time, and its first move after a rest waits for the
/// next look. With XInput 2 a resting pointer is not asked for: the server's
/// raw motion events (the device moved) arrive on the connection, so they
/// wake a thread waiting on it at once, and the pointer is asked for then.
/// While it moves the events are turned off again (a mouse reports up to a
/// thousand times a second) and it is asked at every look, as without them.
/// A program moving the pointer itself (XWarpPointer) makes no raw event: a
/// resting pointer is asked for every `warpCheck` all the same.
final class PointerWatch {
    /// Still this long, the pointer rests.
    static let rest = Duration.seconds(1)
    /// How often a resting pointer is asked for without a raw event.
    static let warpCheck = Duration.milliseconds(250)

    private let connection: X11Connection
    /// XInput's major opcode, when the server speaks XInput 2 (nil: the
    /// pointer is asked for at every look).
    private let inputOpcode: UInt8?
    /// The raw events asked for: motion, and touches (XInput 2.2).
    private let motionMask: UInt32
    /// Whether raw events are asked for now, and whether one came since the
    /// pointer was last asked for.
    private var listening = false
    private var nudged = false
    private var askedAt = MonotonicTime.zero
    /// Where the pointer was when last asked (screen coordinates), and when
    /// that was first seen.
    private(set) var position = (x: Int.min, y: Int.min)
    private(set) var movedAt = MonotonicTime.zero
    /// Questions asked (round trips), for tests.
    private(set) var questions = 0

    init(connection: X11Connection) {
        self.connection = connection
        let c = connection.connection
        var opcode: UInt8?
        var mask = UInt32(XCB_INPUT_XI_EVENT_MASK_RAW_MOTION.rawValue)
        if let ext = share_xcb_input_extension(c), ext.pointee.present != 0,
           let reply = xcb_input_xi_query_version_reply(c, xcb_input_xi_query_version(c, 2, 2), nil) {
            let (major, minor) = (reply.pointee.major_version, reply.pointee.minor_version)
            free(reply)
            if major >= 2 { opcode = ext.pointee.major_opcode }
            if major > 2 || minor >= 2 {
                mask |= UInt32(XCB_INPUT_XI_EVENT_MASK_RAW_TOUCH_BEGIN.rawValue | XCB_INPUT_XI_EVENT_MASK_RAW_TOUCH_UPDATE.rawValue)
            }
        }
        inputOpcode = opcode
        motionMask = mask
    }

    /// Whether the server tells when the device moves.
    var tellsMotion: Bool { inputOpcode != nil }

    /// Whether the pointer has been still for `rest`.
    func resting(now: MonotonicTime) -> Bool { now.since(movedAt) >= Self.rest }

    /// Takes a raw event; false for any other event.
    func take(_ event: UnsafeMutablePointer<xcb_generic_event_t>) -> Bool {
        guard let inputOpcode else { return false }
        switch share_xcb_input_event_type(event, inputOpcode) {
        case XCB_INPUT_RAW_MOTION, XCB_INPUT_RAW_TOUCH_BEGIN, XCB_INPUT_RAW_TOUCH_UPDATE:
            nudged = true
            return true
        default:
            return false
        }
    }

    /// Whether the pointer may have moved since it was last asked for: it
    /// moves (or the server tells no motion), a raw event came, or the warp
    /// check is due. A pointer coming to rest starts the raw events, and is
    /// asked for once more after that (a move in between made none).
    func mayHaveMoved(now: MonotonicTime) -> Bool {
        guard inputOpcode != nil, resting(now: now) else { return true }
        guard listening else {
            listen(true)
            return true
        }
        return nudged || now.since(askedAt) >= Self.warpCheck
    }

    /// Where the pointer is now, in screen coordinates (one round trip);
    /// when that is elsewhere than last asked, it moved now (and a resting
    /// pointer's raw events stop).
    func ask() -> (x: Int, y: Int)? {
        let c = connection.connection
        nudged = false
        questions += 1
        guard let reply = xcb_query_pointer_reply(c, xcb_query_pointer(c, connection.root), nil) else { return nil }
        let now = SystemClock.now()
        askedAt = now
        let asked = (x: Int(reply.pointee.root_x), y: Int(reply.pointee.root_y))
        free(reply)
        if asked != position {
            position = asked
            movedAt = now
            if listening { listen(false) }
        }
        return asked
    }

    /// Turns the raw events off while nobody looks (a paused capture); the
    /// next look at a resting pointer turns them on and asks once more.
    func stopListening() {
        if listening { listen(false) }
    }

    private func listen(_ on: Bool) {
        listening = on
        share_xcb_select_input_events(connection.connection, connection.root, on ? motionMask : 0)
        connection.flush()
    }
}
