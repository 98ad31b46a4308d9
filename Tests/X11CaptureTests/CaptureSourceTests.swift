import Foundation
import ShareColor
import ShareFrames
import ShareCapture
import ShareScene
import ShareX11
import ShareX11Capture
import TestSupport
import Testing

/// The next frame; a test failure when there is none.
private func grab(_ capturer: ScreenCapturer) throws -> FrameLease {
    guard let lease = try capturer.capture() else { throw TestEnvironmentError("no frame captured") }
    return lease
}

/// Whether a capture gave no frame.
private func nothing(_ capturer: ScreenCapturer) throws -> Bool {
    if let lease = try capturer.capture() {
        _ = lease.width
        return false
    }
    return true
}


@Suite("What to share: a region, a monitor, a window followed as it moves, the pointer", .serialized, .busy)
struct CaptureSourceTests {
    @Test func aRegionIsCapturedAtItsPlaceAndSize() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let client = try TestClient(display: xvfb.display)
        _ = client.window(x: 100, y: 50, width: 200, height: 100, rgb: 0xFF0000, name: "red")
        _ = client.window(x: 300, y: 50, width: 100, height: 100, rgb: 0x0000FF, name: "blue")
        let capturer = try ScreenCapturer(display: xvfb.display, source: .region(Rectangle(x: 100, y: 50, width: 300, height: 100)))
        #expect(capturer.width == 300 && capturer.height == 100)
        let lease = try grab(capturer)
        #expect(shows(lease, 0, 0, 0xFF0000) && shows(lease, 199, 99, 0xFF0000))
        #expect(shows(lease, 200, 0, 0x0000FF) && shows(lease, 299, 99, 0x0000FF))
        let outside = #expect(throws: X11Error.self) {
            _ = try ScreenCapturer(display: xvfb.display, source: .region(Rectangle(x: 500, y: 0, width: 200, height: 100)))
        }
        #expect(outside?.description.contains("not within the 640x480 screen") == true)
        #expect(Rectangle(geometry: "300x100+100+50") == Rectangle(x: 100, y: 50, width: 300, height: 100))
        #expect(Rectangle(geometry: "640x480") == Rectangle(x: 0, y: 0, width: 640, height: 480))
        for bad in ["300x", "x100", "0x10+1+1", "300x100+1", "300x100+a+b", "big"] { #expect(Rectangle(geometry: bad) == nil, "\(bad)") }
    }

    /// Xvfb has one RandR monitor, "screen", the whole screen. (Declaring
    /// more, as `xrandr --setmonitor` does, breaks the connection with
    /// Debian 12's libxcb and is ignored through Xlib: a two-monitor
    /// screen cannot be made here.)
    @Test func aMonitorIsCapturedByNameOrIndex() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let client = try TestClient(display: xvfb.display)
        _ = client.window(x: 0, y: 0, width: 640, height: 480, rgb: 0x00FF00, name: "green")
        let monitors = try ScreenCapturer.inventory(display: xvfb.display).monitors
        let monitor = try #require(monitors.first, "\(monitors)")
        #expect(monitor.bounds == Rectangle(x: 0, y: 0, width: 640, height: 480))
        let byName = try ScreenCapturer(display: xvfb.display, source: .monitor(monitor.name))
        #expect(byName.width == 640 && byName.height == 480 && byName.area.x == 0)
        let lease = try grab(byName)
        #expect(shows(lease, 0, 0, 0x00FF00) && shows(lease, 639, 479, 0x00FF00))
        #expect(try ScreenCapturer(display: xvfb.display, source: .monitor("0")).area == monitor.bounds)
        let missing = #expect(throws: X11Error.self) { _ = try ScreenCapturer(display: xvfb.display, source: .monitor("HDMI-9")) }
        #expect(missing?.description.contains("0: \(monitor.name) 640x480+0+0") == true, "the error lists the monitors there are")
        #expect(throws: X11Error.self) { _ = try ScreenCapturer(display: xvfb.display, source: .monitor("\(monitors.count)")) }
    }

    @Test func aWindowIsFollowedAsItMovesAndToldWhenHiddenOrClosed() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let client = try TestClient(display: xvfb.display)
        let window = client.window(x: 40, y: 30, width: 160, height: 120, rgb: 0xFFAA00, name: "share-test window")
        _ = client.window(x: 0, y: 420, width: 100, height: 60, rgb: 0x00FFFF, name: "another window")
        let windows = try ScreenCapturer.inventory(display: xvfb.display).windows
        #expect(windows.contains { $0.id == window && $0.name == "share-test window"
                                   && $0.bounds == Rectangle(x: 40, y: 30, width: 160, height: 120) }, "\(windows)")
        // By name (a unique part of it is enough), then by id.
        let capturer = try ScreenCapturer(display: xvfb.display, source: .window("share-test"))
        #expect(capturer.width == 160 && capturer.height == 120)
        #expect(try ScreenCapturer(display: xvfb.display, source: .window("0x\(String(window, radix: 16))")).area.x == 40)
        do {
            let lease = try grab(capturer)
            #expect(shows(lease, 0, 0, 0xFFAA00) && shows(lease, 159, 119, 0xFFAA00))
        }
        client.move(window, x: 300, y: 200)
        do {
            let lease = try grab(capturer)
            #expect(capturer.area == Rectangle(x: 300, y: 200, width: 160, height: 120) && capturer.resizes == 0)
            #expect(shows(lease, 0, 0, 0xFFAA00) && shows(lease, 159, 119, 0xFFAA00), "the picture follows the window")
        }
        client.resize(window, width: 200, height: 90)
        do {
            let lease = try grab(capturer)
            #expect(capturer.width == 200 && capturer.height == 90 && capturer.resizes == 1, "the picture follows its size")
            #expect(lease.width == 200 && lease.height == 90)
            #expect(shows(lease, 0, 0, 0xFFAA00) && shows(lease, 199, 89, 0xFFAA00))
        }
        // Partly off screen: the same size (no new encoder while it is
        // dragged), from the screen's edge, so what of it is visible is in it.
        client.move(window, x: 560, y: 420)
        do {
            let lease = try grab(capturer)
            #expect(capturer.area == Rectangle(x: 440, y: 390, width: 200, height: 90) && capturer.resizes == 1)
            #expect(shows(lease, 199, 89, 0xFFAA00) && shows(lease, 120, 30, 0xFFAA00))
        }
        client.unmap(window)
        #expect(try nothing(capturer))
        #expect(capturer.windowHidden)
        client.map(window)
        #expect(try !nothing(capturer) && !capturer.windowHidden)
        let ambiguous = #expect(throws: X11Error.self) { _ = try ScreenCapturer(display: xvfb.display, source: .window("window")) }
        #expect(ambiguous?.description.contains("2 windows match") == true, "\(String(describing: ambiguous))")
        #expect(throws: X11Error.self) { _ = try ScreenCapturer(display: xvfb.display, source: .window("no such thing")) }
        client.destroy(window)
        let closed = #expect(throws: X11Error.self) { _ = try capturer.capture() }
        #expect(closed?.description.contains("was closed") == true)
    }

    /// The screen changing size (RandR, as when a laptop is docked; Xephyr
    /// here, as Xvfb cannot): the whole screen is captured at its new size,
    /// a region within it, and nothing ends.
    @Test func aScreenThatChangesSizeIsFollowed() throws {
        let display = try VirtualDisplay(width: 1280, height: 720, resizable: true)
        let client = try TestClient(display: display.display)
        _ = client.window(x: 0, y: 0, width: 1600, height: 1200, rgb: 0x2080FF, name: "backdrop")
        _ = client.window(x: 900, y: 600, width: 100, height: 100, rgb: 0xFF8000, name: "corner")
        let screen = try ScreenCapturer(display: display.display)
        let region = try ScreenCapturer(display: display.display, source: .region(Rectangle(x: 700, y: 500, width: 400, height: 200)))
        let monitor = try ScreenCapturer(display: display.display, source: .monitor("0"))
        #expect(monitor.area == Rectangle(x: 0, y: 0, width: 1280, height: 720))
        #expect(screen.trackChanges())
        do {
            let lease = try grab(screen)
            #expect(lease.width == 1280 && lease.height == 720)
            #expect(shows(lease, 950, 650, 0xFF8000) && shows(lease, 100, 100, 0x2080FF))
            _ = try grab(region)
        }
        try display.resize(width: 1024, height: 768)
        usleep(200_000)
        do {
            let lease = try grab(screen)
            #expect(lease.width == 1024 && lease.height == 768 && screen.resizes == 1, "\(lease.width)x\(lease.height)")
            #expect(shows(lease, 950, 650, 0xFF8000) && shows(lease, 1000, 750, 0x2080FF), "the picture is the new screen")
            let part = try grab(region)
            #expect(region.area == Rectangle(x: 624, y: 500, width: 400, height: 200), "the region kept within it: \(region.area)")
            let corner = shows(part, 300, 120, 0xFF8000)
            #expect(corner)
            let whole = try grab(monitor)
            #expect(whole.width == 1024 && whole.height == 768, "the monitor where it is now: \(monitor.area)")
        }
        try display.resize(width: 800, height: 600)
        usleep(200_000)
        let smaller = try grab(screen)
        #expect(smaller.width == 800 && smaller.height == 600 && screen.resizes == 2)
        let backdrop = shows(smaller, 799, 599, 0x2080FF)
        #expect(backdrop)
    }

    /// The pointer is drawn where it is, and a pointer that moves over a
    /// still screen counts as a change (a new picture), one that moves
    /// elsewhere does not.
    @Test func thePointerIsDrawnWhereItIs() throws {
        let xvfb = try VirtualDisplay(width: 640, height: 480)
        let client = try TestClient(display: xvfb.display)
        _ = client.window(x: 0, y: 0, width: 640, height: 480, rgb: 0xFFFFFF, name: "white")
        let plain = try ScreenCapturer(display: xvfb.display)
        let withCursor = try ScreenCapturer(display: xvfb.display, drawsCursor: true)
        #expect(withCursor.drawsCursor)
        _ = withCursor.trackChanges()
        func marks(_ lease: borrowing FrameLease, around x: Int, _ y: Int) -> Int {
            var count = 0
            for dy in -16...16 {
                for dx in -16...16 where x + dx >= 0 && y + dy >= 0 && x + dx < 640 && y + dy < 480 {
                    if !shows(lease, x + dx, y + dy, 0xFFFFFF) { count += 1 }
                }
            }
            return count
        }
        for (x, y) in [(100, 100), (500, 380)] {
            client.movePointer(x: x, y: y)
            let without = try grab(plain)
            #expect(marks(without, around: x, y) == 0, "not drawn when not asked")
            let with = try grab(withCursor)
            #expect(marks(with, around: x, y) >= 10, "the pointer at \(x),\(y)")
            #expect(marks(with, around: x == 100 ? 500 : 100, x == 100 ? 380 : 100) == 0, "and nowhere else")
        }
        // Events from before a grab (the windows drawn, the warps) are taken first.
        _ = withCursor.screenChanged
        _ = try grab(withCursor)
        #expect(!withCursor.screenChanged, "nothing moved since the grab")
        client.movePointer(x: 200, y: 200)
        #expect(withCursor.screenChanged, "the pointer moved: a new picture is due")
        let region = try ScreenCapturer(display: xvfb.display, source: .region(Rectangle(x: 0, y: 0, width: 100, height: 100)),
                                        drawsCursor: true)
        _ = region.trackChanges()
        _ = region.screenChanged
        _ = try grab(region)
        client.movePointer(x: 400, y: 400)
        #expect(!region.screenChanged, "a pointer moving far from the region changes nothing in it")
    }
}
