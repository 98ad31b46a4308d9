internal import CXCB
public import ShareX11
internal import ShareColor
#if canImport(Glibc)
internal import Glibc
#endif

/// Moving content drawn on a window that covers the whole screen, like a
/// real desktop: a scrolling page of text, moving shapes, a ticking clock
/// bar. Used by `make demo`, the benchmark harness and the tests.
public final class DemoScene {
    let connection: X11Connection
    let window: xcb_window_t
    private let gc: xcb_gcontext_t
    private var font: xcb_font_t?
    /// How the display stores a colour (a 30-bit display takes 10-bit channels).
    let layout: PixelLayout
    public let width: Int
    public let height: Int
    /// The video-like region's pictures, and a row buffer for them (made on first use).
    private var video: VideoPicture?
    private var videoPixels: [UInt32] = []

    public init(display: String? = nil) throws(X11Error) {
        let connection = try X11Connection(display: display)
        layout = try connection.pixelLayout()
        let c = connection.connection
        let window = xcb_generate_id(c)
        // Override-redirect: no window manager decorates or moves it.
        let mask = XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue
        var values: [UInt32] = [connection.screen.black_pixel, 1]
        try connection.check(
            xcb_create_window_checked(c, UInt8(XCB_COPY_FROM_PARENT), window, connection.root, 0, 0,
                                      UInt16(connection.width), UInt16(connection.height), 0,
                                      UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), connection.screen.root_visual,
                                      mask, &values),
            "create the scene window")
        let gc = xcb_generate_id(c)
        var gcValues: [UInt32] = [connection.screen.white_pixel, 0]
        xcb_create_gc(c, gc, window, XCB_GC_FOREGROUND.rawValue | XCB_GC_GRAPHICS_EXPOSURES.rawValue, &gcValues)
        let font = xcb_generate_id(c)
        let name = "fixed"
        let fontOpened = (try? connection.check(xcb_open_font_checked(c, font, UInt16(name.utf8.count), name),
                                                "open font")) != nil
        if fontOpened { xcb_change_gc(c, gc, XCB_GC_FONT.rawValue, [font]) }
        xcb_map_window(c, window)
        self.connection = connection
        self.window = window
        self.gc = gc
        self.font = fontOpened ? font : nil
        width = connection.width
        height = connection.height
        sync()
    }

    deinit {
        let c = connection.connection
        if let font { xcb_close_font(c, font) }
        xcb_free_gc(c, gc)
        xcb_destroy_window(c, window)
        connection.flush()
    }

    /// Fills a rectangle with a 0xRRGGBB colour (TrueColor visuals).
    public func fill(x: Int, y: Int, width: Int, height: Int, rgb: UInt32) {
        let c = connection.connection
        xcb_change_gc(c, gc, XCB_GC_FOREGROUND.rawValue, [layout.pixel(rgb: rgb)])
        var rect = xcb_rectangle_t(x: Int16(clamping: x), y: Int16(clamping: y), width: UInt16(clamping: max(width, 0)),
                                   height: UInt16(clamping: max(height, 0)))
        xcb_poly_fill_rectangle(c, window, gc, 1, &rect)
    }

    /// Draws `text` with its baseline at (x, y) in the given colour, over
    /// `background` (the scene's dark desktop unless told).
    public func text(_ text: String, x: Int, y: Int, rgb: UInt32, background: UInt32 = 0x10_1820) {
        guard font != nil else {
            // No core font on this server: draw the text as blocks of ink.
            fill(x: x, y: y - 9, width: text.count * 6, height: 9, rgb: rgb)
            return
        }
        let c = connection.connection
        xcb_change_gc(c, gc, XCB_GC_FOREGROUND.rawValue | XCB_GC_BACKGROUND.rawValue,
                      [layout.pixel(rgb: rgb), layout.pixel(rgb: background)])
        let bytes = Array(text.utf8.prefix(255))
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                _ = xcb_image_text_8(c, UInt8($0.count), window, gc, Int16(clamping: x), Int16(clamping: y), $0.baseAddress)
            }
        }
    }

    /// Draws frame `number` of the moving scene; `overlay` draws last, just
    /// before the round trip that waits for the server to finish (the frame
    /// stamp goes there, so its time is as late as possible). `atomically`
    /// grabs the server for the drawing, so no other client (a capture) sees
    /// the frame half drawn: what a test that must read every frame's stamp
    /// asks for. Without it, a grab that finds this process descheduled in
    /// the middle of its hundred-odd requests takes a torn frame, as any
    /// screen capture of a program drawing in steps would.
    public func draw(frame number: Int, atomically: Bool = false, overlay: ((DemoScene) -> Void)? = nil) {
        let (w, h) = (width, height)
        beginFrame(atomically: atomically)
        defer { endFrame(atomically: atomically) }
        fill(x: 0, y: 0, width: w, height: h, rgb: 0x10_1820)
        // A page of text scrolling up two pixels a frame.
        let lineHeight = 14
        let scroll = (number * 2) % lineHeight
        let firstLine = (number * 2) / lineHeight
        var y = 40 - scroll
        var line = firstLine
        while y < h - 20 {
            let text = "\(String(repeating: " ", count: line % 7))line \(line): the quick brown fox jumps over the lazy dog \(line * 7919 % 10007)"
            self.text(text, x: 20, y: y, rgb: 0xD0_D8E0)
            y += lineHeight
            line += 1
        }
        // Shapes bouncing across the screen.
        let colours: [UInt32] = [0xE0_4040, 0x40_C060, 0x40_80F0, 0xF0_C030, 0xC0_50D0]
        for (index, colour) in colours.enumerated() {
            let size = 40 + index * 15
            let px = bounce(number * (3 + index), span: max(1, w - size))
            let py = bounce(number * (2 + index) + index * 97, span: max(1, h - size))
            fill(x: px, y: py, width: size, height: size, rgb: colour)
        }
        // A progress bar that sweeps once a second at 30 fps.
        fill(x: 0, y: 0, width: w * (number % 30 + 1) / 30, height: 8, rgb: 0xFF_FFFF)
        overlay?(self)
    }

    /// Where `drawVideo` puts its video-like region: right of the text, 16:9.
    public var videoRegion: (x: Int, y: Int, width: Int, height: Int) {
        let x = width * 2 / 5 + 20
        let regionWidth = max(16, width - x - 20)
        let regionHeight = max(16, min(height - 60, regionWidth * 9 / 16))
        return (x, max(20, (height - regionHeight) / 2), regionWidth, regionHeight)
    }

    /// Draws frame `number` of the scene that is hard to send: a window
    /// playing a video (`VideoPicture`: every pixel new every frame) beside
    /// a page of text scrolling up two pixels a frame, as a person shares a
    /// film next to their notes. Like `draw`, a function of `number` alone.
    public func drawVideo(frame number: Int, atomically: Bool = false, overlay: ((DemoScene) -> Void)? = nil) {
        let region = videoRegion
        beginFrame(atomically: atomically)
        defer { endFrame(atomically: atomically) }
        // The desktop around the video, never over it (a capture would see it flash).
        let background: UInt32 = 0x10_1820
        fill(x: 0, y: 0, width: region.x, height: height, rgb: background)
        fill(x: region.x, y: 0, width: width - region.x, height: region.y, rgb: background)
        fill(x: region.x, y: region.y + region.height, width: width - region.x, height: height - region.y - region.height,
             rgb: background)
        fill(x: region.x + region.width, y: region.y, width: width - region.x - region.width, height: region.height,
             rgb: background)
        let lineHeight = 14
        var y = 40 - (number * 2) % lineHeight
        var line = (number * 2) / lineHeight
        while y < height - 20 {
            text("line \(line): notes beside the film, \(line * 7919 % 10007)", x: 20, y: y, rgb: 0xD0_D8E0)
            y += lineHeight
            line += 1
        }
        putVideo(frame: number, at: region)
        overlay?(self)
    }

    /// The video-like region's picture, converted to the display's pixels
    /// and put with PutImage in strips that fit a request.
    private func putVideo(frame number: Int, at region: (x: Int, y: Int, width: Int, height: Int)) {
        let picture = video ?? VideoPicture()
        video = picture
        let count = region.width * region.height
        if videoPixels.count != count { videoPixels = [UInt32](repeating: 0, count: count) }
        videoPixels.withUnsafeMutableBufferPointer { pixels in
            picture.render(frame: number, width: region.width, height: region.height, into: pixels)
            for i in 0..<count { pixels[i] = layout.pixel(rgb: pixels[i]) }
        }
        let c = connection.connection
        let stride = region.width * 4
        let rows = max(1, (Int(xcb_get_maximum_request_length(c)) * 4 - 64) / stride)
        videoPixels.withUnsafeBytes { bytes in
            var row = 0
            while row < region.height {
                let strip = min(rows, region.height - row)
                xcb_put_image(c, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), window, gc, UInt16(region.width), UInt16(strip),
                              Int16(region.x), Int16(region.y + row), 0, connection.screen.root_depth, UInt32(strip * stride),
                              bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + row * stride)
                row += strip
            }
        }
    }

    private func bounce(_ value: Int, span: Int) -> Int {
        let period = 2 * span
        let position = value % period
        return position < span ? position : period - position
    }

    /// The whole screen in one colour (the A/V sync probe's flash and rest).
    public func fillScreen(rgb: UInt32) {
        fill(x: 0, y: 0, width: width, height: height, rgb: rgb)
        sync()
    }

    /// Moves the mouse pointer to (x, y) on the screen as the mouse does
    /// (XTest: XInput 2 clients see the device move), or as a program does
    /// (XWarpPointer) on a server without XTest.
    public func movePointer(x: Int, y: Int) {
        let c = connection.connection
        if let ext = share_xcb_test_extension(c), ext.pointee.present != 0 {
            xcb_test_fake_input(c, UInt8(XCB_MOTION_NOTIFY), 0, UInt32(XCB_CURRENT_TIME), connection.root, Int16(x), Int16(y), 0)
        } else {
            xcb_warp_pointer(c, UInt32(XCB_NONE), connection.root, 0, 0, 0, 0, Int16(x), Int16(y))
        }
        connection.flush()
    }

    /// Starts drawing a frame: with `atomically`, the server held, so no
    /// other client sees the frame half drawn.
    func beginFrame(atomically: Bool) {
        if atomically { xcb_grab_server(connection.connection) }
    }

    /// Ends a frame `beginFrame` started: the server let go, and every
    /// request drawn before this returns.
    func endFrame(atomically: Bool) {
        if atomically { xcb_ungrab_server(connection.connection) }
        sync()
    }

    /// Waits until the server has executed every drawing request.
    public func sync() {
        let c = connection.connection
        free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nil))
    }
}
