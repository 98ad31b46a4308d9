public import ShareFrames

/// The picture size a source is to deliver for what it captures (`width`
/// x `height`): smaller is scaled down as it is converted.
public typealias PictureSizing = (_ width: Int, _ height: Int) -> (width: Int, height: Int)

/// What the capture loop needs of a screen: the next picture into a lease
/// from the frame pool, whether anything changed since the last one (and a
/// wait for the next change), the pointer apart from the pictures, size
/// changes, a pause the desktop imposes and the end. X11 (XCB, MIT-SHM,
/// XDamage) implements it today; a PipeWire stream (a Wayland desktop) is
/// the next.
///
/// One capturing thread calls everything but the counters, which any
/// thread may read. A source never keeps what it captured from: a picture
/// is converted into the lease and the source's own buffer given back
/// before `capture` returns.
public protocol ScreenSource: AnyObject, Sendable {
    // MARK: pictures

    /// Captures into a free picture of the pool, at the size `size` gives
    /// for what is captured now (a source that changed size follows it
    /// here: each lease carries its own size). Nil, counting a drop, when
    /// every picture is still leased, or when there is nothing to capture
    /// right now (see `pause`). Throws when capture has ended for good
    /// (the window closed, the screen cast stopped), with a message for
    /// the person sharing.
    func capture(size: PictureSizing?) throws -> FrameLease?
    /// The size of what is captured now (a followed window or a screen
    /// that changes size changes it; each lease carries its own).
    var width: Int { get }
    var height: Int { get }

    /// Why nothing is captured now, when the desktop holds it back (a
    /// followed window hidden, a stream the compositor paused); nil while
    /// pictures come.
    var pause: CapturePause? { get }

    // MARK: changes

    /// Starts telling changes apart from a still screen; false when the
    /// source cannot, and then every capture counts as a change (the loop
    /// captures on a timer instead).
    func trackChanges() -> Bool
    /// Whether anything may have changed since the last capture.
    var screenChanged: Bool { get }
    /// Changes seen so far: each the first one after a capture or a
    /// `watchForNextChange`.
    var changesSeen: Int { get }
    /// Waits until something changes or `timeout` passes; true when it
    /// changed. Other news (the pointer's device, `wakeDescriptor`) ends
    /// the wait too.
    func waitForChange(timeout: Duration) -> Bool
    /// Sets the changes so far aside for the next capture and waits for
    /// the next one to be drawn; true when one came in time.
    func watchForNextChange(timeout: Duration) -> Bool
    /// Waits while nothing is wanted (a paused sender) until
    /// `wakeDescriptor` is signalled or `timeout` passes, letting
    /// nothing on the desktop wake it; false at once when the source is
    /// broken (the next capture says why).
    func idle(timeout: Duration) -> Bool
    /// A descriptor whose signal ends the waits early (another thread's
    /// news for the capturing one); -1: none.
    var wakeDescriptor: Int32 { get set }

    // MARK: the pointer

    /// From the next capture on, leaves the pointer out of the pictures
    /// for `readPointer` (`apart`), or draws it in.
    func placePointer(apart: Bool)
    /// Where the pointer is now, and its shape when that changed since the
    /// last call; nil when it is not read apart.
    func readPointer() -> PointerState?
    /// Whether the pointer has been still for a while (the loop may look
    /// less often).
    var pointerResting: Bool { get }
    /// How often a resting pointer is looked at when its moving wakes the
    /// waits (a program may still move it unseen); nil when its moving
    /// wakes nothing, and the loop looks on its own schedule.
    var restingPointerCheck: Duration? { get }

    // MARK: counters, read from any thread

    /// Captures made, and captures refused because the pool was all leased.
    var captured: Int { get }
    var droppedForPool: Int { get }
    /// Bands captured again, and bands kept from the picture before
    /// because nothing in them changed.
    var bandsGrabbed: Int { get }
    var bandsKept: Int { get }
    /// Bytes held for capture now: the pictures and the source's buffers.
    var heldBytes: Int { get }
    /// Pictures the desktop delivered, taken or not (a compositor's screen
    /// cast sends them at its own pace); nil where capture grabs each one.
    var picturesDelivered: Int? { get }
}

/// Why a source captures nothing for now, in words for the person sharing.
public struct CapturePause: Sendable, Equatable {
    /// Said when it starts ("the shared window is hidden").
    public var reason: String
    /// Said when pictures come again ("the shared window is shown again").
    public var resumed: String

    public init(reason: String, resumed: String) {
        self.reason = reason
        self.resumed = resumed
    }
}
