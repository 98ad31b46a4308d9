import Foundation
import ShareFrames
import ShareScene
import ShareX11
import ShareX11Capture
import TestSupport
import Testing

@Suite("X11 capture under Xvfb", .serialized, .busy)
struct CaptureTests {
    @Test func captureReturnsThePixelsThatWereDrawn() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let scene = try DemoScene(display: xvfb.display)
        let capturer = try ScreenCapturer(display: xvfb.display)
        #expect(capturer.width == 640 && capturer.height == 480)
        #expect(capturer.usesSharedMemory)
        let colours: [(x: Int, y: Int, rgb: UInt32)] = [(0, 0, 0xFF0000), (320, 0, 0x00FF00), (0, 240, 0x0000FF),
                                                        (320, 240, 0x123456)]
        for c in colours { scene.fill(x: c.x, y: c.y, width: 320, height: 240, rgb: c.rgb) }
        scene.sync()
        guard let lease = try capturer.capture() else { Issue.record("no frame"); return }
        for c in colours {
            let shown = shows(lease, c.x + 100, c.y + 100, c.rgb)
            #expect(shown, "\(c)")
        }
        // The scene moves: two frames differ.
        scene.draw(frame: 1)
        guard let first = try capturer.capture() else { Issue.record("no frame"); return }
        scene.draw(frame: 40)
        guard let second = try capturer.capture() else { Issue.record("no frame"); return }
        var differing = 0
        for y in stride(from: 0, to: 480, by: 8) {
            for x in stride(from: 0, to: 640, by: 8) where first.pixel(x: x, y: y) != second.pixel(x: x, y: y) {
                differing += 1
            }
        }
        #expect(differing > 100)
    }

    /// A consumer that holds every lease (a deliberately stuck encoder): the
    /// pool never grows, captures beyond it are dropped and counted, and
    /// capturing resumes the moment a lease ends.
    @Test func poolNeverGrowsAndDropsWhenExhausted() throws {
        let xvfb = try VirtualDisplay(width: 320, height: 240)
        let capturer = try ScreenCapturer(display: xvfb.display, slots: 3)
        // Leases cannot go in an array (they are ~Copyable), so three bindings hold them.
        guard let a = try capturer.capture(), let b = try capturer.capture() else { Issue.record("no frame"); return }
        var c = try capturer.capture()
        let gotThird = c != nil
        #expect(gotThird)
        #expect(capturer.freeSlots == 0)
        for _ in 0..<10 {
            let refused = try capturer.capture() == nil
            #expect(refused)
        }
        #expect(capturer.droppedForPool == 10)
        c = nil  // the consumer finishes one frame
        #expect(capturer.freeSlots == 1)
        guard let again = try capturer.capture() else { Issue.record("capture did not resume"); return }
        #expect(again.sequence == 14)
        #expect(capturer.slotCount == 3)
        _ = (a.sequence, b.sequence)
    }

    @Test func missingDisplayIsAClearError() {
        #expect(throws: X11Error.self) { try ScreenCapturer(display: ":4999") }
    }
}
