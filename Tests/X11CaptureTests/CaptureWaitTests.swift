import Foundation
import ShareFrames
import ShareSync
import ShareCapture
import ShareScene
import ShareX11
import ShareX11Capture
import TestSupport
import Testing

/// A white screen with the pointer moved (as the mouse does) to 100,100,
/// and a capturer drawing it in or reading it apart, its first picture taken.
private struct WhiteScreen {
    let display: VirtualDisplay
    let client: TestClient
    let capturer: ScreenCapturer
    let apart: Bool

    init(apart: Bool) throws {
        display = try VirtualDisplay(width: 640, height: 480)
        client = try TestClient(display: display.display)
        _ = client.window(x: 0, y: 0, width: 640, height: 480, rgb: 0xFFFFFF, name: "white")
        client.movePointer(x: 100, y: 100)
        capturer = try ScreenCapturer(display: display.display, slots: 2, drawsCursor: !apart, tracksPointer: apart)
        self.apart = apart
        #expect(capturer.trackChanges())
        #expect(capturer.pointerWakes, "Xvfb speaks XInput 2")
        guard let lease = try capturer.capture() else { throw TestEnvironmentError("no frame captured") }
        _ = lease.width
    }

    /// One look as the capture thread takes it at rest: a wait of 50 ms
    /// (its resting wait), then the pointer read when it goes apart.
    @discardableResult
    func look(waitingAtMost timeout: Duration = .milliseconds(50)) -> Bool {
        let changed = capturer.waitForChange(timeout: timeout)
        if apart { _ = capturer.readPointer() }
        return changed
    }

    /// Looks until the pointer rests (still for a second since it was
    /// first seen).
    func rest() {
        let deadline = ContinuousClock.now + .seconds(5)
        repeat { look() } while !capturer.pointerResting && ContinuousClock.now < deadline
        #expect(capturer.pointerResting)
    }

    /// Moves the pointer as the mouse does, from another client, after `delay`.
    func moveLater(to x: Int, _ y: Int, after delay: Duration) {
        let display = display.display
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18 + Double(delay.components.seconds))
            (try? TestClient(display: display))?.movePointer(x: x, y: y)
        }
    }
}

@Suite("Capture's waits: the pointer at rest is asked for when its device moves; news ends a wait", .serialized, .alone)
struct CaptureWaitTests {
    /// A resting pointer costs no question at each look, only one per warp
    /// check; the mouse moving ends a long wait at once (XInput 2's raw
    /// motion on the capturer's connection), and the move is a change.
    @Test(arguments: [false, true])
    func aRestingPointerIsAskedForWhenTheMouseMoves(apart: Bool) throws {
        let screen = try WhiteScreen(apart: apart)
        let capturer = screen.capturer
        screen.rest()
        let asked = capturer.pointerQuestions
        for _ in 0..<20 { #expect(!screen.look(), "nothing moved") }
        let questions = capturer.pointerQuestions - asked
        #expect(questions <= 6, "\(questions) questions in 20 looks a second apart at a resting pointer")

        screen.moveLater(to: 300, 200, after: .milliseconds(200))
        let began = ContinuousClock.now
        let changed = capturer.waitForChange(timeout: .seconds(3))
        let waited = ContinuousClock.now - began
        #expect(waited >= .milliseconds(150) && waited < .milliseconds(1500), "a 3 s wait ended by the move after \(waited)")
        if apart {
            #expect(!changed, "a pointer apart is no change to the picture")
            let pointer = capturer.readPointer()
            #expect(pointer?.x == 300 && pointer?.y == 200, "read where it moved: \(String(describing: pointer))")
        } else {
            #expect(changed, "a drawn pointer that moved is a change")
        }
        #expect(!capturer.pointerResting, "moving, it is asked for at every look again")
    }

    /// A program moving the pointer (XWarpPointer) moves no device: a
    /// resting pointer so moved is seen at the next warp check, within a
    /// quarter of a second.
    @Test func aWarpedRestingPointerIsSeenAtTheNextCheck() throws {
        let screen = try WhiteScreen(apart: false)
        screen.rest()
        screen.client.warpPointer(x: 400, y: 300)
        let began = ContinuousClock.now
        var seen = false
        while !seen && ContinuousClock.now - began < .seconds(3) { seen = screen.look() }
        let waited = ContinuousClock.now - began
        #expect(seen, "the warp is a change")
        #expect(waited < .milliseconds(800), "seen after \(waited)")
    }

    /// A paused capture thread's wait: the mouse moving all the while
    /// wakes it not (its raw events are off), news does; the next look
    /// finds where the pointer went.
    @Test func aPausedWaitHearsNoMouseButNews() throws {
        let screen = try WhiteScreen(apart: false)
        let capturer = screen.capturer
        screen.rest()
        screen.look()
        let wakeup = Wakeup()
        capturer.wakeDescriptor = wakeup.descriptor
        for step in 1...5 { screen.moveLater(to: 100 + 40 * step, 100, after: .milliseconds(150 * step)) }
        let switches = voluntarySwitches() ?? 0
        #expect(switches > 0, "the thread's sleeps are read from /proc/thread-self/status")
        var began = ContinuousClock.now
        #expect(capturer.idle(timeout: .milliseconds(1500)))
        var waited = ContinuousClock.now - began
        let woken = (voluntarySwitches() ?? 0) - switches
        #expect(waited >= .milliseconds(1400), "a paused 1.5 s wait ended after \(waited) while the mouse moved")
        #expect(woken <= 2, "the thread slept \(woken) times in one paused wait: the mouse woke it")
        #expect(screen.look(), "the next look sees the drawn pointer moved")
        #expect(!capturer.pointerResting)

        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.2)
            wakeup.signal()
        }
        began = ContinuousClock.now
        #expect(capturer.idle(timeout: .seconds(3)))
        waited = ContinuousClock.now - began
        #expect(waited >= .milliseconds(150) && waited < .milliseconds(1500), "a paused 3 s wait ended by news after \(waited)")
    }

    /// Another thread's news (a keyframe asked for, a pause, the end)
    /// ends the capture thread's wait at once, however long it was to be;
    /// a signal given before the wait is not lost.
    @Test func aWakeUpEndsTheWait() throws {
        let screen = try WhiteScreen(apart: false)
        let capturer = screen.capturer
        screen.rest()
        let wakeup = Wakeup()
        capturer.wakeDescriptor = wakeup.descriptor
        #expect(wakeup.descriptor >= 0)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.2)
            wakeup.signal()
        }
        var began = ContinuousClock.now
        #expect(!capturer.waitForChange(timeout: .seconds(3)), "nothing changed on screen")
        var waited = ContinuousClock.now - began
        #expect(waited >= .milliseconds(150) && waited < .milliseconds(1500), "a 3 s wait ended by the news after \(waited)")
        wakeup.signal()
        wakeup.signal()
        began = ContinuousClock.now
        _ = capturer.waitForChange(timeout: .seconds(3))
        waited = ContinuousClock.now - began
        #expect(waited < .milliseconds(500), "news given before the wait ends it at once (\(waited))")
        began = ContinuousClock.now
        _ = capturer.waitForChange(timeout: .milliseconds(300))
        waited = ContinuousClock.now - began
        #expect(waited >= .milliseconds(250), "and is taken: the next wait lasts its time (\(waited))")
    }
}
