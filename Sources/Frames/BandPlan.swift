public import ShareColor

/// How a picture is captured and converted band by band: horizontal bands
/// of the encoded picture (an even number of rows each, so no chroma row is
/// split), and for each the rows of the captured picture it is made from
/// (when scaling, with the neighbouring rows the filter reads). Memory for
/// capture grows with a band, not with the screen. Pure geometry.
public struct BandPlan: Sendable, Equatable {
    public struct Band: Sendable, Equatable {
        /// Rows of the encoded picture.
        public var rows: Range<Int>
        /// Rows of the captured picture they are made from.
        public var sourceRows: Range<Int>
    }

    public let sourceWidth: Int
    public let sourceHeight: Int
    public let width: Int
    public let height: Int
    public let bands: [Band]

    /// The captured picture is `sourceWidth` x `sourceHeight`, the encoded
    /// one `width` x `height`; a band of captured rows takes about
    /// `bandBytes` (4 bytes a pixel), at least two rows.
    public init(sourceWidth: Int, sourceHeight: Int, width: Int, height: Int, bandBytes: Int) {
        precondition(sourceWidth > 0 && sourceHeight > 0 && width > 0 && height > 0, "a band plan needs sizes")
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.width = width
        self.height = height
        let budgetRows = max(2, bandBytes / (sourceWidth * 4))
        var bands: [Band] = []
        if width == sourceWidth && height == sourceHeight {
            let step = max(2, budgetRows & ~1)
            for first in stride(from: 0, to: height, by: step) {
                let rows = first..<min(height, first + step)
                bands.append(Band(rows: rows, sourceRows: rows))
            }
        } else {
            // A row of the scaled picture reads the source rows it covers and
            // one more on each side (bilinear and box filters read no further).
            let step = max(2, (max(1, budgetRows - 3) * height / sourceHeight) & ~1)
            for first in stride(from: 0, to: height, by: step) {
                let rows = first..<min(height, first + step)
                bands.append(Band(rows: rows, sourceRows: Self.sourceRows(for: rows, sourceHeight: sourceHeight, height: height)))
            }
        }
        self.bands = bands
    }

    static func sourceRows(for rows: Range<Int>, sourceHeight: Int, height: Int) -> Range<Int> {
        let first = rows.lowerBound * sourceHeight / height - 1
        let last = (rows.upperBound * sourceHeight + height - 1) / height + 1
        return max(0, first)..<min(sourceHeight, last)
    }

    public var scales: Bool { width != sourceWidth || height != sourceHeight }

    /// Where a changed part of the captured picture shows in the encoded
    /// one: scaled, and when scaling, two pixels wider each way (the filter
    /// spreads a change to its neighbours).
    public func pictureArea(_ changed: Rectangle) -> Rectangle {
        guard scales else { return changed }
        let left = max(0, changed.x * width / sourceWidth - 2)
        let top = max(0, changed.y * height / sourceHeight - 2)
        let right = min(width, ((changed.x + changed.width) * width + sourceWidth - 1) / sourceWidth + 2)
        let bottom = min(height, ((changed.y + changed.height) * height + sourceHeight - 1) / sourceHeight + 2)
        return Rectangle(x: left, y: top, width: right - left, height: bottom - top)
    }

    /// The most captured rows a band needs (what a band buffer must hold).
    public var maxSourceRows: Int { bands.map(\.sourceRows.count).max() ?? 0 }

    /// The bands any of `sourceRows` (rows of the captured picture that
    /// changed) goes into.
    public func bands(touching changed: [Range<Int>]) -> [Int] {
        bands.indices.filter { index in changed.contains { $0.overlaps(bands[index].sourceRows) } }
    }
}
