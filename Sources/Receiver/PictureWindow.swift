internal import ShareColor
internal import ShareDecode
internal import ShareSession
internal import ShareWire
internal import ShareWindow
internal import ShareX11

/// The receiver's window: the newest decoded picture converted for X11,
/// with the sender's pointer drawn over it when the sender sends the pointer
/// as metadata (`--cursor metadata`). A picture is converted straight into
/// what the X server reads, its top rows while its last slices are still
/// on their way (`writeAhead`), and the pointer drawn over it there; a
/// pointer that moves over a still picture puts back what it covered and
/// is drawn again, its rows alone put. A window that cannot take the
/// picture as converted (scaled, a 30-bit display, no MIT-SHM) gets it
/// through `pixels`, a clean copy kept for the pointer's moves.
/// Decode thread only.
final class PictureWindow {
    private let window: VideoWindow
    /// The picture as converted (BGRX), without the pointer, when a pointer
    /// is drawn over it and the window cannot take it in place; and whether
    /// it holds the newest picture.
    private var pixels: [UInt8] = []
    private var pixelsCurrent = false
    private var size = (width: 0, height: 0)
    private var cursor: CursorOverlay?
    /// Whether the window shows a picture drawn in place, and then the rows
    /// its pointer covers as they were before it was drawn (nil: none drawn).
    private var drawnInPlace = false
    private var under: (rows: Range<Int>, bytes: [UInt8])?
    /// The picture whose top rows were converted ahead (`writeAhead`), and
    /// how many of them are in `pixels` (when it is used; otherwise the
    /// window holds them).
    private var begun: UnsafeRawPointer?
    private var pixelsAhead = 0

    init(display: String?, width: Int, height: Int) throws(X11Error) {
        window = try VideoWindow(display: display, title: "share", width: width, height: height)
    }

    /// Why no window could open on `display`, if none could: checked
    /// before anything is accepted, so that a receiver that cannot show
    /// refuses at once instead of at the first picture.
    static func displayProblem(_ display: String?) -> String? {
        do { _ = try X11Connection(display: display) } catch { return error.message }
        return nil
    }

    var closed: Bool { window.closed }
    /// Takes the window's events: closed, resized or exposed (the last
    /// picture is drawn again at once, a still sender's next may be a
    /// second away).
    func service() { window.pollEvents() }
    func setTitle(_ title: String) { window.setTitle(title) }

    /// Whether a picture of this size goes straight into what the server
    /// reads: always without a pointer (the window converts what it cannot
    /// take so), with one when the window takes it as converted.
    private func inPlace(width: Int, height: Int) -> Bool {
        cursor?.shape == nil || window.drawsInPlace(width: width, height: height)
    }

    /// Shows the decoder's newest picture, the pointer over it; of a
    /// picture begun ahead (`writeAhead`) only the rows not yet converted
    /// are converted now (true then).
    @discardableResult
    func show(_ decoder: H264Decoder) -> Bool {
        let begun = self.begun
        let rowsInPixels = pixelsAhead
        self.begun = nil
        pixelsAhead = 0
        var finished = false
        var shown = false
        decoder.withLastPicture { picture in
            let (width, height) = (picture.width, picture.height)
            guard inPlace(width: width, height: height) else { return }
            let stride = width * 4
            // Its top rows converted while the rest was decoded (the same
            // picture: the decoder completed it in place), only the rest now.
            finished = begun == picture.firstPlane && window.showAhead(width: width, height: height) { base, rows in
                if !rows.isEmpty { picture.rows(rows).convertToBGRA(into: base + rows.lowerBound * stride, stride: stride) }
                under = drawPointer(on: base, width: width, height: height)
            }
            if !finished {
                window.show(width: width, height: height, stride: stride) { destination in
                    picture.convertToBGRA(into: destination, stride: stride)
                    under = drawPointer(on: destination, width: width, height: height)
                }
            }
            size = (width, height)
            pixelsCurrent = false
            drawnInPlace = true
            shown = true
        }
        guard !shown else { return finished }
        window.dropAhead()
        decoder.withLastPicture { picture in
            guard rowsInPixels > 0, begun == picture.firstPlane, size == (picture.width, picture.height) else { return }
            let stride = picture.width * 4
            pixels.withUnsafeMutableBytes {
                picture.rows(rowsInPixels..<picture.height).convertToBGRA(into: $0.baseAddress! + rowsInPixels * stride,
                                                                          stride: stride)
            }
            pixelsCurrent = true
            finished = true
        }
        if !finished { keep(decoder) }
        present()
        return finished
    }

    /// Converts the rows of the picture being decoded in parts that are
    /// final, while its last slices are on their way: into what the X
    /// server will read, or into `pixels` when the window cannot take it
    /// as converted; once the picture is whole, `show` converts only the
    /// rows below them. Whether any were converted.
    @discardableResult
    func writeAhead(_ decoder: H264Decoder) -> Bool {
        decoder.withRowsBegun { picture, final in
            if begun != picture.firstPlane { dropAhead() }
            let stride = picture.width * 4
            guard !inPlace(width: picture.width, height: picture.height) else {
                let from = window.rowsAhead
                guard final > from else { return from > 0 }
                let written = window.writeAhead(width: picture.width, height: picture.height, rows: from..<final) { base in
                    picture.rows(from..<final).convertToBGRA(into: base + from * stride, stride: stride)
                }
                if written { begun = picture.firstPlane } else { dropAhead() }
                return written
            }
            let from = pixelsAhead
            guard final > from else { return from > 0 }
            // `pixels` stops being the picture shown: a pointer move before
            // this one is whole converts that one again.
            if pixels.count < stride * picture.height { pixels = [UInt8](repeating: 0, count: stride * picture.height) }
            pixels.withUnsafeMutableBytes {
                picture.rows(from..<final).convertToBGRA(into: $0.baseAddress! + from * stride, stride: stride)
            }
            pixelsCurrent = false
            size = (picture.width, picture.height)
            pixelsAhead = final
            begun = picture.firstPlane
            return true
        } ?? false
    }

    /// Rows converted ahead are forgotten: that picture will not be shown
    /// (its rest was lost), or another begins.
    func dropAhead() {
        begun = nil
        pixelsAhead = 0
        window.dropAhead()
    }

    /// The pointer moved or changed shape: shown over the picture now.
    /// Drawn in place, what it covered is put back and it is drawn at its
    /// new place; otherwise the picture is shown again through `pixels`
    /// (converted again first if they do not hold it).
    func showCursor(_ overlay: CursorOverlay, decoder: H264Decoder) {
        cursor = overlay
        guard size.width > 0 else { return }
        if pixelsAhead > 0 { dropAhead() }
        if drawnInPlace && movePointerInPlace() { return }
        if !pixelsCurrent { keep(decoder) }
        present()
    }

    /// Moves the pointer drawn into what the window shows: its old rows
    /// back as they were, then drawn where it is now, and only the rows
    /// either covers put again. False when the window no longer shows that
    /// picture as drawn (it was resized or exposed since).
    private func movePointerInPlace() -> Bool {
        let (width, height) = size
        guard window.drawsInPlace(width: width, height: height) else { return false }
        let old = under
        let new = pointerRows(width: width, height: height)
        let rows: Range<Int>
        switch (old?.rows, new) {
        case (nil, nil): return true
        case (let a?, nil): rows = a
        case (nil, let b?): rows = b
        case (let a?, let b?): rows = min(a.lowerBound, b.lowerBound)..<max(a.upperBound, b.upperBound)
        }
        let stride = width * 4
        return window.touchUp(rows: rows) { base in
            if let old {
                old.bytes.withUnsafeBytes { (base + old.rows.lowerBound * stride).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            under = drawPointer(on: base, width: width, height: height)
        }
    }

    /// Converts the decoder's newest picture into `pixels`.
    private func keep(_ decoder: H264Decoder) {
        decoder.withLastPicture { picture in
            let (width, height, stride) = (picture.width, picture.height, picture.width * 4)
            if pixels.count < stride * height { pixels = [UInt8](repeating: 0, count: stride * height) }
            pixels.withUnsafeMutableBytes { picture.convertToBGRA(into: $0.baseAddress!, stride: stride) }
            size = (width, height)
        }
        pixelsCurrent = true
    }

    /// The rows of a `width` x `height` picture the pointer covers, when it shows.
    private func pointerRows(width: Int, height: Int) -> Range<Int>? {
        cursor?.rows(width: width, height: height)
    }

    /// Draws the pointer over the picture at `base` (BGRX, rows `width * 4`
    /// bytes apart); returns the rows it covers as they were before.
    private func drawPointer(on base: UnsafeMutableRawPointer, width: Int, height: Int) -> (rows: Range<Int>, bytes: [UInt8])? {
        guard let rows = pointerRows(width: width, height: height), let overlay = cursor, let shape = overlay.shape else { return nil }
        let stride = width * 4
        let saved = (rows, Array(UnsafeRawBufferPointer(start: base + rows.lowerBound * stride, count: rows.count * stride)))
        let origin = overlay.origin(width: width, height: height)
        shape.pixels.withUnsafeBufferPointer { image in
            ColorConversion.blendPremultiplied(image.baseAddress!, imageWidth: shape.width, imageHeight: shape.height,
                                               onto: base, stride: stride, width: width, rows: height,
                                               left: origin.x, top: origin.y)
        }
        return saved
    }

    /// Puts `pixels` on the window, the pointer blended in a copy of the
    /// rows it covers (the picture itself stays clean for the next move).
    private func present() {
        let (width, height) = size
        let stride = width * 4
        drawnInPlace = false
        under = nil
        pixels.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!
            let saved = drawPointer(on: base, width: width, height: height)
            window.show(width: width, height: height, stride: stride, pixels: UnsafeRawPointer(base))
            if let saved {
                saved.bytes.withUnsafeBytes { (base + saved.rows.lowerBound * stride).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
        }
    }
}
