import Foundation
import ShareWindow
import TestSupport
import Testing

/// Whether a screen pixel (0x..RRGGBB at depth 24) is within 6 a channel of `rgb`.
private func near(_ pixel: UInt32, _ rgb: UInt32) -> Bool {
    [0, 8, 16].allSatisfy { shift in abs(Int(pixel >> shift & 0xFF) - Int(rgb >> shift & 0xFF)) <= 6 }
}

@Suite("The receiver's X11 window under Xvfb", .serialized, .busy)
struct WindowTests {
    /// Window managers know the window by its class, and show its title as
    /// written, accents and symbols included (read back with xprop).
    @Test func theWindowHasAClassAndAUTF8Title() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let window = try VideoWindow(display: xvfb.display, title: "share window test", width: 200, height: 100)
        let found = try run("/usr/bin/xwininfo", ["-display", xvfb.display, "-name", "share window test"])
        let id = try #require(found.stdout.split(separator: " ").first { $0.hasPrefix("0x") }, "\(found.stdout) \(found.stderr)")
        let title = "share \u{2014} caf\u{E9} \u{2713} paused"
        window.setTitle(title)
        let properties = try run("/usr/bin/xprop", ["-display", xvfb.display, "-id", String(id), "WM_CLASS", "_NET_WM_NAME", "WM_NAME"],
                                 environment: ["LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"])
        let text = properties.stdout
        #expect(text.contains("WM_CLASS(STRING) = \"share-recv\", \"Share\""), "\(text)")
        #expect(text.contains("_NET_WM_NAME(UTF8_STRING) = \"\(title)\""), "\(text)")
        // Older window managers read WM_NAME, Latin-1: what it cannot hold becomes "?".
        #expect(text.contains("WM_NAME(STRING) = \"share ? caf\u{E9} ? paused\""), "\(text)")
    }

    @Test func windowShowsThePicture() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let window = try VideoWindow(display: xvfb.display, title: "share test", width: 200, height: 100)
        var pixels = [UInt8](repeating: 0, count: 200 * 100 * 4)
        for i in stride(from: 0, to: pixels.count, by: 4) { pixels[i] = 0x33; pixels[i + 1] = 0x99; pixels[i + 2] = 0xEE }
        pixels.withUnsafeBytes { window.show(width: 200, height: 100, stride: 800, pixels: $0.baseAddress!) }
        usleep(100_000)
        let shown = try TestClient(display: xvfb.display).pixel(x: 100, y: 50)
        #expect(shown.map { near($0, 0xEE9933) } == true, "\(String(shown ?? 0, radix: 16))")
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
        let screen = try TestClient(display: xvfb.display)
        func looks(_ wanted: [(y: Int, rgb: UInt32)]) throws -> Bool {
            usleep(100_000)
            return wanted.allSatisfy { want in screen.pixel(x: 100, y: want.y).map { near($0, want.rgb) } == true }
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
}
