internal import ShareBase
internal import CXCB
internal import ShareColor
public import ShareCapture
internal import ShareSync
internal import ShareX11
#if canImport(Glibc)
internal import Glibc
#endif

/// The pointer: read apart from the pictures for a receiver that draws it,
/// or drawn in; where it is, and whether it rests.
extension ScreenCapturer {
    var cursorEvent: UInt8 {
        guard let ext = share_xcb_xfixes_extension(connection.connection) else { return 0 }
        return ext.pointee.first_event + UInt8(XCB_XFIXES_CURSOR_NOTIFY)
    }

    /// Where the pointer is now, in the captured area's pixels (the hot
    /// spot; it may be outside the area), and its shape when that changed
    /// since the last call (XFixes tells when). Nil when the server has no
    /// XFixes or `tracksPointer` is off.
    public func readPointer() -> PointerState? {
        guard tracksPointer else { return nil }
        readEvents()
        var shape: PointerShape?
        if pointerShapeChanged {
            pointerShapeChanged = false
            let image = CursorImage(connection: connection)
            if let s = image.shape {
                shape = PointerShape(serial: s.serial, width: s.width, height: s.height, hotX: s.hotX, hotY: s.hotY, pixels: s.pixels)
                pointerSerial = s.serial
            }
        }
        // A resting pointer that did not move is where it was: no round trip.
        let position: (x: Int, y: Int)
        if shape == nil && !pointer.mayHaveMoved(now: SystemClock.now()) {
            position = pointer.position
        } else {
            guard let asked = pointer.ask() else { return nil }
            position = asked
        }
        let (x, y) = (position.x - area.x, position.y - area.y)
        return PointerState(x: x, y: y, areaWidth: width, areaHeight: height, serial: pointerSerial,
                            visible: x >= 0 && y >= 0 && x < width && y < height, shape: shape)
    }

    /// From the next grab on, leaves the pointer out of the pictures for
    /// `readPointer` (`apart`) or draws it in; either way its place is
    /// grabbed again then, so the picture takes it in or lets it go. Nothing
    /// changes when the pointer was neither drawn nor tracked at the start
    /// (or the server has no XFixes).
    public func placePointer(apart: Bool) {
        guard followsCursor, apart != tracksPointer else { return }
        tracksPointer = apart
        drawsCursor = !apart
        // `readPointer` gives the shape with the first position.
        pointerShapeChanged = true
        changedSinceGrab = true
    }

    /// Whether the pointer has been still for a second: the capture
    /// thread may then look less often (with XInput 2 its first move wakes
    /// a wait on the connection).
    public var pointerResting: Bool { pointer.resting(now: SystemClock.now()) }

    /// Whether a resting pointer's move wakes `waitForChange` (the server
    /// speaks XInput 2).
    public var pointerWakes: Bool { pointer.tellsMotion }

    /// How often a resting pointer that woke nothing is asked for all the
    /// same (a program may have warped it): the longest a capture thread
    /// woken by every other news need wait at rest.
    public static var warpCheck: Duration { PointerWatch.warpCheck }
    public var restingPointerCheck: Duration? { pointerWakes ? Self.warpCheck : nil }

    /// Round trips asking where the pointer is, so far (for tests).
    public var pointerQuestions: Int { pointer.questions }

    /// Whether the pointer moved, since it was last drawn, in a way that
    /// shows in the picture (it was or is over the captured area).
    func pointerMoved() -> Bool {
        guard pointer.mayHaveMoved(now: SystemClock.now()), let position = pointer.ask() else { return false }
        return drawn.shows(movedTo: position, in: area)
    }
}
