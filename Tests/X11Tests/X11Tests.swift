import Foundation
import ShareFrames
import ShareX11
import TestSupport
import Testing

@Suite("X11 capture, scene and window under Xvfb", .serialized, .busy)
struct X11Tests {
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

    @Test func windowShowsThePicture() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let window = try VideoWindow(display: xvfb.display, title: "share test", width: 200, height: 100)
        var pixels = [UInt8](repeating: 0, count: 200 * 100 * 4)
        for i in stride(from: 0, to: pixels.count, by: 4) { pixels[i] = 0x33; pixels[i + 1] = 0x99; pixels[i + 2] = 0xEE }
        pixels.withUnsafeBytes { window.show(width: 200, height: 100, stride: 800, pixels: $0.baseAddress!) }
        usleep(100_000)
        let capturer = try ScreenCapturer(display: xvfb.display)
        guard let lease = try capturer.capture() else { Issue.record("no frame"); return }
        let shown = shows(lease, 100, 50, 0xEE9933)
        #expect(shown)
        #expect(window.framesShown == 1)
    }

    /// A picture begun ahead (its top rows written while the rest is still
    /// being decoded, in two goes, then the rest) shows in the window as
    /// one drawn whole; one begun and given up shows nothing of itself and
    /// leaves the last picture in place; a picture of another size than
    /// the window's cannot be begun ahead.
    @Test func aPictureBegunAheadShowsWhole() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let window = try VideoWindow(display: xvfb.display, title: "share test", width: 200, height: 100)
        let stride = 200 * 4
        /// Paints rows `rows` of a picture at `base` in one colour (0xRRGGBB).
        func paint(_ base: UnsafeMutableRawPointer, _ rows: Range<Int>, _ rgb: UInt32) {
            let p = base.assumingMemoryBound(to: UInt8.self)
            for row in rows {
                for x in 0..<200 {
                    let i = row * stride + x * 4
                    (p[i], p[i + 1], p[i + 2], p[i + 3]) = (UInt8(rgb & 0xFF), UInt8(rgb >> 8 & 0xFF), UInt8(rgb >> 16), 255)
                }
            }
        }
        let capturer = try ScreenCapturer(display: xvfb.display)
        func looks(_ wanted: [(y: Int, rgb: UInt32)]) throws -> Bool {
            usleep(100_000)
            guard let lease = try capturer.capture() else { return false }
            return wanted.allSatisfy { shows(lease, 100, $0.y, $0.rgb) }
        }
        window.show(width: 200, height: 100, stride: stride) { paint($0, 0..<100, 0x808080) }
        #expect(try looks([(20, 0x808080), (80, 0x808080)]))

        #expect(window.writeAhead(width: 200, height: 100, rows: 0..<28) { paint($0, 0..<28, 0xEE9933) })
        #expect(window.writeAhead(width: 200, height: 100, rows: 28..<60) { paint($0, 28..<60, 0xEE9933) })
        #expect(window.rowsAhead == 60)
        #expect(try looks([(20, 0x808080), (80, 0x808080)]), "rows written ahead are not shown before the rest")
        var rest: Range<Int>?
        #expect(window.showAhead(width: 200, height: 100) { base, rows in
            rest = rows
            paint(base, rows, 0x3366CC)
        })
        #expect(rest == 60..<100)
        #expect(try looks([(20, 0xEE9933), (50, 0xEE9933), (70, 0x3366CC), (95, 0x3366CC)]))

        #expect(window.writeAhead(width: 200, height: 100, rows: 0..<50) { paint($0, 0..<50, 0x22AA22) })
        window.dropAhead()
        #expect(!window.showAhead(width: 200, height: 100) { base, rows in paint(base, rows, 0x22AA22) })
        #expect(!window.writeAhead(width: 200, height: 100, rows: 10..<20) { paint($0, 10..<20, 0x22AA22) },
                "rows ahead start at the top")
        #expect(!window.writeAhead(width: 100, height: 50, rows: 0..<10) { paint($0, 0..<10, 0x22AA22) },
                "another size is drawn whole")
        #expect(try looks([(20, 0xEE9933), (70, 0x3366CC)]), "the picture given up shows nothing of itself")
        #expect(window.framesShown == 2)
    }

    @Test func missingDisplayIsAClearError() {
        #expect(throws: X11Error.self) { try ScreenCapturer(display: ":4999") }
    }
}
