import Foundation
import ShareColor
import ShareDecode
import ShareFrames
@testable import ShareReceiver
@testable import ShareSession
import ShareVideo
import ShareWire
import ShareX11Capture
import TestSupport
import Testing

/// The receiver's window under Xvfb, fed by the decoder as the receiver's
/// decode thread feeds it.
@Suite("The receiver's window", .busy)
struct PictureWindowTests {
    /// A picture begun in parts has its top rows converted for the window
    /// while the rest is decoded (`writeAhead` after each part), only the
    /// rest once whole; what the window then shows is, pixel for pixel, the
    /// decoded picture converted whole, with the sender's pointer drawn over
    /// it when there is one and without. The pointer then moving over the
    /// still picture (a little, far, half off the bottom edge, out of sight,
    /// back) leaves what it covered as it was.
    @Test(arguments: [false, true])
    func aPictureBegunAheadShowsAsThePictureDecoded(withPointer: Bool) throws {
        let (width, height) = (640, 360)
        let display = try VirtualDisplay(width: width, height: height)
        let encoder = try H264Encoder(.init(width: width, height: height, fps: 30, bitrateKbps: 4000, threads: 1,
                                            sliceMaxSize: 1100, minimumSlices: 4))
        let decoder = try H264Decoder()
        let capturer = try ScreenCapturer(display: display.display)
        let shape = CursorShape(serial: 1, width: 16, height: 16, hotX: 2, hotY: 3,
                                pixels: (0..<256).map { $0 % 16 < 8 ? 0xFF20_C040 : 0x8000_0000 })
        func pointer(_ x: Int, _ y: Int, visible: Bool = true) -> CursorOverlay {
            CursorOverlay(position: CursorPosition(x: Int16(x), y: Int16(y), areaWidth: UInt16(width), areaHeight: UInt16(height),
                                                   shape: 1, visible: visible), shape: shape)
        }
        /// Whether the window shows the decoder's last picture converted
        /// whole, `overlay` drawn over it: the screen is captured as I420
        /// (libyuv), so it is compared with that picture converted the same
        /// way, luma for luma.
        func check(_ window: PictureWindow, _ overlay: CursorOverlay?, _ what: String) throws {
            var expected = [UInt8](repeating: 0, count: width * height * 4)
            expected.withUnsafeMutableBytes { out in
                _ = decoder.withLastPicture { $0.convertToBGRA(into: out.baseAddress!, stride: width * 4) }
                if let overlay, overlay.position.visible {
                    let origin = overlay.origin(width: width, height: height)
                    shape.pixels.withUnsafeBufferPointer {
                        ColorConversion.blendPremultiplied($0.baseAddress!, imageWidth: shape.width, imageHeight: shape.height,
                                                           onto: out.baseAddress!, stride: width * 4, width: width, rows: height,
                                                           left: origin.x, top: origin.y)
                    }
                }
            }
            // The receiver's loop takes the window's events (its first
            // exposure draws the picture again).
            usleep(50_000)
            window.service()
            usleep(50_000)
            guard let lease = try capturer.capture() else {
                Issue.record("\(what): nothing captured")
                return
            }
            let wanted = ColorConversion.i420(fromBGRA: expected, width: width, height: height)
            var wrong: (x: Int, y: Int)?
            wanted.withPlanes { y, _, _ in
                search: for row in 0..<height {
                    for x in 0..<width where lease.luma(x: x, y: row) != y[row * width + x] {
                        wrong = (x, row)
                        break search
                    }
                }
            }
            #expect(wrong == nil, "\(what): the window differs from the picture at \(String(describing: wrong))")
        }

        let overlay = withPointer ? pointer(100, 60) : nil
        var window: PictureWindow?
        var begunAhead = 0
        for frame in 0..<6 {
            // A moving picture, each frame's slices handed over as x264 writes them.
            let bgra = (0..<width * height * 4).map { i -> UInt8 in
                let (x, y) = (i / 4 % width, i / 4 / width)
                return UInt8(truncatingIfNeeded: (i % 4 == 3) ? 255 : (x * (i % 4 + 1) + y * 3 + frame * 29) ^ (x / 8 * y / 8))
            }
            let image = ColorConversion.i420(fromBGRA: bgra, width: width, height: height)
            var parts: [[UInt8]] = []
            _ = try image.withPlanes { y, _, _ in
                try encoder.encode(I420Planes(packedAt: UnsafeMutablePointer(mutating: y), width: width, height: height)) { part, _ in
                    parts.append(Array(part))
                }
            }
            if let window {
                for part in parts.dropLast() {
                    #expect(decoder.decodeStart(part[...]))
                    window.writeAhead(decoder)
                }
                #expect(decoder.decode(parts.last!) != nil)
                if window.show(decoder) { begunAhead += 1 }
            } else {
                #expect(decoder.decode(parts.flatMap { $0 }) != nil)
                let opened = try PictureWindow(display: display.display, width: width, height: height)
                opened.show(decoder)
                if let overlay { opened.showCursor(overlay, decoder: decoder) }
                window = opened
            }
            try check(window!, overlay, "frame \(frame)")
        }
        #expect(begunAhead == 5, "\(begunAhead) of 5 pictures begun ahead")
        guard let window, withPointer else { return }
        for moved in [pointer(104, 63), pointer(500, 300), pointer(320, 355), pointer(320, 355, visible: false), pointer(100, 60)] {
            window.showCursor(moved, decoder: decoder)
            try check(window, moved, "the pointer at \(moved.position.x),\(moved.position.y)\(moved.position.visible ? "" : ", hidden")")
        }
    }
}
