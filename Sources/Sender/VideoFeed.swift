import Dispatch
internal import ShareFrames
import Synchronization
internal import ShareSync

/// The hand-off between the video source (the capture thread, or a host
/// pushing its own pictures) and the encode thread: a one-slot mailbox that
/// holds the newest picture (a newer one replaces it, counted by the
/// source), and what the encode thread asks of the source: a frame rate and
/// the tallest picture to make (the governor and the quality ladder lower
/// them), and whether a still screen's pictures are still sharpening.
final class VideoFeed: Sendable {
    private let mailbox = Locked<FrameLease?>(nil)
    /// Signalled for each picture put in.
    let frameReady = DispatchSemaphore(value: 0)
    let fps: Atomic<Int>
    let maxHeight: Atomic<Int>
    /// The encoder's picture is sharpening (`QuantizerControl.sharpening`):
    /// each picture of a still screen codes it finer, so the capture loop
    /// grabs one every 100 ms instead of once a second until it is sharp.
    let sharpening = Atomic<Bool>(false)

    init(fps: Int, maxHeight: Int) {
        self.fps = Atomic(fps)
        self.maxHeight = Atomic(maxHeight)
    }

    /// Puts a picture in; true when it replaced one the encoder had not taken.
    func put(_ lease: consuming FrameLease) -> Bool {
        var incoming: FrameLease? = lease
        let replaced = mailbox.withLock { slot -> Bool in
            let old = slot.take()
            slot = incoming.take()
            return old != nil
        }
        frameReady.signal()
        return replaced
    }

    /// The newest picture, if one is waiting; the caller ends its lease.
    func take() -> FrameLease? {
        mailbox.withLock { $0.take() }
    }
}
