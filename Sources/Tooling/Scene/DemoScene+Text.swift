internal import CXCB
public import ShareX11
internal import ShareColor
internal import ShareBase
#if canImport(Glibc)
internal import Glibc
#endif

extension DemoScene {
    /// The page's paper and ink: dark text on a light page, as a document
    /// or code is shared, with some lines in colour (headings, strings).
    static let paper: UInt32 = 0xF6_F5F0
    static let inks: [UInt32] = [0x20_2428, 0x20_2428, 0x20_2428, 0x1A_4FA0, 0x9A_3412, 0x20_2428, 0x4D_5560]

    /// Draws frame `number` of a page of small text (the server's 6x13
    /// font) filling the screen, scrolling up two pixels a frame: the
    /// hardest content for H.264 at a low rate, and what people share most.
    /// Frame 0 alone, held, is the still page. Like `draw`, a function of
    /// `number` alone.
    public func drawText(frame number: Int, atomically: Bool = false, overlay: ((DemoScene) -> Void)? = nil) {
        beginFrame(atomically: atomically)
        defer { endFrame(atomically: atomically) }
        fill(x: 0, y: 0, width: width, height: height, rgb: Self.paper)
        let lineHeight = 14
        let columns = max(1, (width - 40) / 6)
        var y = 40 - (number * 2) % lineHeight
        var line = (number * 2) / lineHeight
        while y < height - 8 {
            let text = TextPage.line(line, columns: columns)
            if !text.isEmpty {
                self.text(text, x: 20, y: y, rgb: Self.inks[line % Self.inks.count], background: Self.paper)
            }
            y += lineHeight
            line += 1
        }
        overlay?(self)
    }

    /// What the screen shows now, as 0xRRGGBB pixels row by row (the
    /// reference pictures of `share scene --render`).
    public func picture() throws(X11Error) -> [UInt32] {
        let c = connection.connection
        sync()
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        let cookie = xcb_get_image(c, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), window, 0, 0, UInt16(width),
                                   UInt16(height), ~0)
        guard let reply = xcb_get_image_reply(c, cookie, &error), let data = xcb_get_image_data(reply) else {
            let code = error?.pointee.error_code
            free(error)
            throw X11Error("cannot read the scene back", code: code)
        }
        defer { free(reply) }
        let count = width * height
        guard Int(xcb_get_image_data_length(reply)) >= count * 4 else {
            throw X11Error("the server sent less of the scene than it shows")
        }
        var pixels = [UInt32](repeating: 0, count: count)
        pixels.withUnsafeMutableBytes { bytes in
            bytes.baseAddress!.copyMemory(from: data, byteCount: count * 4)
            ColorConversion.toBGRX(bytes.baseAddress!, stride: width * 4, width: width, rows: height, from: layout)
        }
        return pixels.map { $0 & 0xFF_FFFF }
    }
}

/// The lines of the text page: prose and code-like lines made of common
/// words, indented and of varied length, some blank, chosen by the line's
/// number alone.
enum TextPage {
    private static let words = [
        "the", "screen", "share", "frame", "packet", "return", "let", "var", "if", "else", "for", "in", "func", "self",
        "width", "height", "rate", "queue", "sender", "receiver", "keyframe", "encode", "decode", "latency", "picture",
        "window", "text", "of", "a", "to", "is", "and", "with", "when", "not", "only", "every", "each", "time", "bytes",
        "count", "0x3F", "42", "1080", "720", "(x, y)", "[i]", "{", "}", "=", "+=", "->", "//", "\"hello\"", "nil",
    ]

    /// Line `number`, at most `columns` characters.
    static func line(_ number: Int, columns: Int) -> String {
        // Not a multiple of SplitMix64's own step, or each line would be the one before it, shifted.
        var random = SplitMix64(seed: (UInt64(truncatingIfNeeded: number) &+ 0x7E47) &* 0xD1B5_4A32_D192_ED03)
        // About one line in nine is blank, as between paragraphs or functions.
        if random.next() % 9 == 0 { return "" }
        let indent = Int(random.next() % 4) * 4
        let length = min(columns, indent + 20 + Int(random.next() % UInt64(max(1, columns - indent - 20))))
        var text = String(repeating: " ", count: indent)
        while text.count < length {
            text += words[Int(random.next() % UInt64(words.count))] + " "
        }
        return String(text.prefix(length))
    }
}
