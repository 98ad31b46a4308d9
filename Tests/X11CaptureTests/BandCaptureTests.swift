import Foundation
import ShareFrames
import ShareCapture
import ShareScene
import ShareX11
import ShareX11Capture
import TestSupport
import Testing

/// Lumas of a whole picture, to compare two captures.
private func lumas(_ lease: borrowing FrameLease) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(lease.width * lease.height)
    for y in 0..<lease.height { for x in 0..<lease.width { out.append(lease.luma(x: x, y: y)) } }
    return out
}

private func take(_ capturer: ScreenCapturer, size: ScreenCapturer.Sizing? = nil) throws -> FrameLease {
    guard let lease = try capturer.capture(size: size) else { throw TestEnvironmentError("no frame captured") }
    return lease
}

/// A white screen with the pointer at `pointer`, captured with the pointer
/// drawn in, changes tracked and the first picture taken.
private struct StillScreenWithPointer {
    let display: VirtualDisplay
    let client: TestClient
    let capturer: ScreenCapturer

    init(width: Int, height: Int, pointer: (x: Int, y: Int), slots: Int) throws {
        display = try VirtualDisplay(width: width, height: height)
        client = try TestClient(display: display.display)
        _ = client.window(x: 0, y: 0, width: width, height: height, rgb: 0xFFFFFF, name: "white")
        client.movePointer(x: pointer.x, y: pointer.y)
        capturer = try ScreenCapturer(display: display.display, slots: slots, drawsCursor: true, bandBytes: 1 << 16)
        #expect(capturer.trackChanges())
        _ = try take(capturer)
    }
}

@Suite("Capture in bands: only what changed is grabbed again", .serialized, .busy)
struct BandCaptureTests {
    /// A small change is grabbed in the bands it touches, the rest comes
    /// from the picture before; the result is what a full grab shows.
    @Test(arguments: [false, true])
    func aSmallChangeIsGrabbedInItsBandsOnly(scaled: Bool) throws {
        let xvfb = try VirtualDisplay(width: 1280, height: 720)
        let scene = try DemoScene(display: xvfb.display)
        scene.draw(frame: 3)
        scene.sync()
        let size: ScreenCapturer.Sizing? = scaled ? { _, _ in (640, 360) } : nil
        // Bands of 64 KiB: 12 rows of a 1280-pixel screen.
        let capturer = try ScreenCapturer(display: xvfb.display, slots: 2, bandBytes: 1 << 16)
        #expect(capturer.trackChanges())
        let bandsInPicture: Int
        do {
            _ = try take(capturer, size: size)
            bandsInPicture = capturer.bandsGrabbed
            #expect(bandsInPicture >= 720 / 12 / (scaled ? 4 : 1), "the first picture is grabbed whole")
            #expect(capturer.bandsKept == 0)
        }
        for step in 0..<4 {
            // A 30x10 change, somewhere else each time.
            scene.fill(x: 100 + step * 200, y: 300 + step * 40, width: 30, height: 10, rgb: 0xFF00FF - UInt32(step) * 0x100)
            scene.sync()
            _ = capturer.screenChanged
            let before = capturer.bandsGrabbed
            let lease = try take(capturer, size: size)
            let grabbed = capturer.bandsGrabbed - before
            #expect(grabbed >= 1 && grabbed <= 3, "step \(step): \(grabbed) bands of \(bandsInPicture) grabbed")
            let fresh = try ScreenCapturer(display: xvfb.display, slots: 1)
            let full = try take(fresh, size: size)
            #expect(lumas(lease) == lumas(full), "step \(step): the picture is the screen as a full grab shows it")
        }
        // Nothing changed: nothing is grabbed.
        _ = capturer.screenChanged
        let before = capturer.bandsGrabbed
        _ = try take(capturer, size: size)
        #expect(capturer.bandsGrabbed == before)
    }

    /// Watching for the next change past a pending one: the watch ends when
    /// the next change is drawn (not before, not at an old one), and the
    /// grab after it takes both changes, the one set aside included.
    @Test func aChangeSetAsideWhileWatchingIsStillGrabbed() throws {
        let xvfb = try VirtualDisplay(width: 1280, height: 720)
        let scene = try DemoScene(display: xvfb.display)
        scene.draw(frame: 3)
        scene.sync()
        let capturer = try ScreenCapturer(display: xvfb.display, slots: 2, bandBytes: 1 << 16)
        #expect(capturer.trackChanges())
        _ = try take(capturer)
        scene.fill(x: 100, y: 100, width: 40, height: 10, rgb: 0xFF0000)
        scene.sync()
        #expect(capturer.waitForChange(timeout: .seconds(1)))
        let seen = capturer.changesSeen
        #expect(!capturer.watchForNextChange(timeout: .milliseconds(50)), "nothing drawn since: the watch times out")
        #expect(capturer.changesSeen == seen)
        #expect(capturer.screenChanged, "the change set aside is still to be grabbed")
        // Drawn 50 ms later from a thread of its own while this one watches
        // (on a loaded machine the drawing itself can come late: the watch
        // is timed from when it was drawn).
        nonisolated(unsafe) let drawing = scene
        let drawnAt = NSLock()
        nonisolated(unsafe) var drawn: UInt64 = 0
        let started = DispatchTime.now().uptimeNanoseconds
        Thread {
            usleep(50_000)
            drawnAt.withLock { drawn = DispatchTime.now().uptimeNanoseconds }
            drawing.fill(x: 900, y: 600, width: 40, height: 10, rgb: 0x00FF00)
            drawing.sync()
        }.start()
        #expect(capturer.watchForNextChange(timeout: .seconds(2)))
        let ended = DispatchTime.now().uptimeNanoseconds
        let drawnTime = drawnAt.withLock { drawn }
        let (waited, afterDrawing) = (Double(ended - started) / 1e6, (Double(ended) - Double(drawnTime)) / 1e6)
        #expect(drawnTime > 0 && waited >= 40 && afterDrawing >= 0 && afterDrawing < 500,
                "the watch ended with the drawing: \(waited) ms in, \(afterDrawing) ms after it was drawn")
        #expect(capturer.changesSeen == seen + 1)
        let before = capturer.bandsGrabbed
        let lease = try take(capturer)
        let grabbed = capturer.bandsGrabbed - before
        #expect(grabbed >= 2 && grabbed <= 4, "the bands of both changes: \(grabbed)")
        let fresh = try ScreenCapturer(display: xvfb.display, slots: 1)
        #expect(lumas(lease) == lumas(try take(fresh)), "the picture is the screen as a full grab shows it")
    }

    /// Typing under a still pointer: the change is grabbed in its bands
    /// only, the pointer's are kept from the picture before (it is there,
    /// as it was); once it moves, its old and new places are grabbed again.
    @Test func aChangeUnderAStillPointerGrabsOnlyItsOwnBands() throws {
        let screen = try StillScreenWithPointer(width: 1280, height: 720, pointer: (600, 500), slots: 2)
        let (client, capturer) = (screen.client, screen.capturer)
        let full = { () throws -> [UInt8] in
            let fresh = try ScreenCapturer(display: screen.display.display, slots: 1, drawsCursor: true)
            return lumas(try take(fresh))
        }
        for step in 0..<3 {
            // A 6x10 character, far above the pointer (bands of 12 rows).
            _ = client.window(x: 100 + step * 8, y: 120, width: 6, height: 10, rgb: 0x202020, name: "character \(step)")
            #expect(capturer.waitForChange(timeout: .seconds(1)))
            let before = capturer.bandsGrabbed
            let lease = try take(capturer)
            let grabbed = capturer.bandsGrabbed - before
            #expect(grabbed >= 1 && grabbed <= 2, "step \(step): \(grabbed) bands grabbed for a character")
            #expect(lumas(lease) == (try full()), "step \(step): the picture is the screen, pointer and all")
        }
        client.movePointer(x: 900, y: 300)
        #expect(capturer.screenChanged)
        let before = capturer.bandsGrabbed
        let lease = try take(capturer)
        #expect(capturer.bandsGrabbed - before >= 4, "the pointer's old and new places")
        #expect(lumas(lease) == (try full()))
    }

    /// A drawn pointer on a still screen: a wait is not cut short by a
    /// pointer that has not moved, and one that moved during the wait is
    /// seen when it ends (the capture thread asks where the pointer is
    /// after each wait, not before it as well).
    @Test func aWaitSeesThePointerThatMovedDuringIt() throws {
        let screen = try StillScreenWithPointer(width: 640, height: 480, pointer: (100, 100), slots: 2)
        let (client, capturer) = (screen.client, screen.capturer)
        #expect(!capturer.screenChanged)
        let began = ContinuousClock.now
        #expect(!capturer.waitForChange(timeout: .milliseconds(60)), "nothing moved")
        #expect(ContinuousClock.now - began >= .milliseconds(55), "the wait lasted its time")
        client.movePointer(x: 300, y: 200)
        #expect(capturer.waitForChange(timeout: .milliseconds(40)), "the move is seen when the wait ends")
        #expect(capturer.screenChanged, "and stays a change until the grab")
        _ = try take(capturer)
        #expect(!capturer.screenChanged, "grabbed: no change left")
    }

    /// The pointer moving over a still screen: the bands under where it was
    /// and where it is are grabbed, nothing else; it is drawn at its new
    /// place and gone from the old.
    @Test func thePointerMovingCostsOnlyItsBands() throws {
        let screen = try StillScreenWithPointer(width: 1280, height: 720, pointer: (200, 100), slots: 3)
        let (client, capturer) = (screen.client, screen.capturer)
        let whole = capturer.bandsGrabbed
        func dark(_ lease: borrowing FrameLease, around x: Int, _ y: Int) -> Int {
            var count = 0
            for dy in -12...12 { for dx in -12...12 where lease.luma(x: x + dx, y: y + dy) < 200 { count += 1 } }
            return count
        }
        var was = (x: 200, y: 100)
        for (x, y) in [(900, 500), (300, 650), (640, 40)] {
            client.movePointer(x: x, y: y)
            #expect(capturer.screenChanged, "a pointer that moved is a change")
            let before = capturer.bandsGrabbed
            let lease = try take(capturer)
            let grabbed = capturer.bandsGrabbed - before
            #expect(grabbed >= 2 && grabbed <= 8, "\(grabbed) of \(whole) bands for the pointer at \(x),\(y)")
            #expect(dark(lease, around: x, y) >= 10, "drawn at \(x),\(y)")
            #expect(dark(lease, around: was.x, was.y) == 0, "not left behind at \(was)")
            was = (x, y)
        }
    }
}
