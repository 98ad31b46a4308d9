internal import ShareColor

/// Where the pointer was drawn into the last picture, when the capturer
/// draws it in: what to grab again when it moves or changes its image, and
/// whether a move shows at all. Sans-IO: screen coordinates in, parts of
/// the captured area out.
struct DrawnPointer {
    /// Where its image was drawn and which image it was (XFixes' serial).
    private var bounds: Rectangle?
    private var serial: UInt32?
    /// Where its hot spot was.
    private(set) var position = (x: Int.min, y: Int.min)

    /// A cursor's image lies at most this far from its hot spot either way.
    static let reach = 64

    /// Takes the pointer drawn into the next picture (its image's place and
    /// serial, nil without one; its hot spot, nil when unknown) and returns
    /// the parts of `area` to grab again: where it was and where it is, when
    /// it moved or changed its image; nothing when it did not (typing under
    /// a still pointer grabs only the text).
    mutating func draw(bounds: Rectangle?, serial: UInt32?, position: (x: Int, y: Int)?, in area: Rectangle) -> [Rectangle] {
        var grab: [Rectangle] = []
        if bounds != self.bounds || serial != self.serial {
            for place in [self.bounds, bounds].compactMap({ $0 }) { grab.append(place.part(within: area)) }
        }
        self.bounds = bounds
        self.serial = serial
        if let position { self.position = position }
        return grab
    }

    /// Whether the pointer, now at `now`, moved since it was drawn in a way
    /// that shows in `area` (it was or is near enough to be over it).
    func shows(movedTo now: (x: Int, y: Int), in area: Rectangle) -> Bool {
        guard now != position else { return false }
        let near = { (p: (x: Int, y: Int)) in
            p.x > area.x - Self.reach && p.x < area.x + area.width + Self.reach
                && p.y > area.y - Self.reach && p.y < area.y + area.height + Self.reach
        }
        return near(now) || near(position)
    }
}
