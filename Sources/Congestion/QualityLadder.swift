internal import ShareWire
public import ShareBase

/// Below a floor, a lower bitrate alone makes screen text unreadable: the
/// ladder trades frame rate first, then picture size, for the bitrate the
/// path allows, with hysteresis (down after `downDelay` below a rung's
/// floor, up after `upDelay` comfortably above the next rung's), sans-IO.
/// The floors are for content that needs the whole bitrate; what the
/// pictures take is told too (`Content`), as libwebrtc's quality scaler
/// reads the quantizer: content that keeps to a fine quantizer with room
/// to spare under the target (a terminal, a document) stays, or goes back
/// up, whatever the floor says. A simple screen on a 1.5 Mbit/s link went
/// to half its frame rate at a sixth of the link and never came back
/// (`Benchmarks/harness.py --network deepq`).
/// A target a bandwidth probe has just shown the path to carry needs no
/// wait: the ladder goes up at once to the rung it fits. A target under
/// half the rung's floor (the path's rate fell to a fraction) needs none
/// either: the ladder goes down at once, so the keyframe the receiver
/// will ask for is the smaller picture's, not the large one's sent into a
/// path that cannot take it, followed a second later by another.
public struct QualityLadder: Sendable {
    public struct Rung: Sendable, Equatable {
        public var fps: Int
        /// Lines of the encoded picture (the source's height on rung 0).
        public var height: Int
        /// Below this target the rung is left.
        public var floor: Bitrate
    }

    public let rungs: [Rung]
    public private(set) var index = 0
    public var downDelay: Duration = .seconds(1)
    public var upDelay: Duration = .seconds(3)
    /// A larger picture means a new encoder and an IDR: it waits longer.
    public var sizeUpDelay: Duration = .seconds(8)
    /// The next rung up must have this much headroom over its floor.
    public var upMargin = 1.4
    private var belowSince: MonotonicTime?
    private var aboveSince: MonotonicTime?

    /// Rungs for a stream whose full quality needs `bitrate` at `fps` and
    /// `height` lines: full, half rate, then 3/4 and 1/2 size.
    public init(fps: Int, height: Int, bitrate: Bitrate) {
        let floor = bitrate * 0.45
        var rungs = [Rung(fps: fps, height: height, floor: floor)]
        let slow = max(fps / 2, 1)
        if slow < fps { rungs.append(Rung(fps: slow, height: height, floor: floor * Double(slow) / Double(fps))) }
        let halfRate = rungs.last!.floor
        for (scale, numerator) in [(0.5625, 3), (0.25, 2)] {
            let lines = height * numerator / 4 / 2 * 2
            if lines >= 180 { rungs.append(Rung(fps: slow, height: lines, floor: halfRate * scale)) }
        }
        self.rungs = rungs
    }

    public var current: Rung { rungs[index] }

    /// What the pictures took at the current rung lately.
    public struct Content: Sendable, Equatable {
        /// The bitrate they came to.
        public var bitrate: Bitrate
        /// Whether the rate control kept them at a fine quantizer: they
        /// took what they needed, not what the target allowed.
        public var fine: Bool

        public init(bitrate: Bitrate, fine: Bool) {
            self.bitrate = bitrate
            self.fine = fine
        }
    }

    /// At most this share of the target is content that fits at a rung.
    public var contentShare = 0.8

    /// Whether `content`, taken at the current rung, would fit under
    /// `target` at rung `rung` (its frame rate and area scale the bits).
    private func fits(_ content: Content?, at rung: Int, under target: Bitrate) -> Bool {
        guard let content, content.fine else { return false }
        let (from, to) = (rungs[index], rungs[rung])
        let lines = Double(to.height) / Double(max(from.height, 1))
        let scale = Double(to.fps) / Double(max(from.fps, 1)) * lines * lines
        return content.bitrate * scale <= target * contentShare
    }

    /// Follows the target; returns true when the rung changed. `proven`
    /// says a probe has just shown the path carries the target; `content`
    /// what the pictures took at this rung lately.
    public mutating func update(target: Bitrate, now: MonotonicTime, proven: Bool = false, content: Content? = nil) -> Bool {
        let stays = fits(content, at: index, under: target) && target >= rungs[index].floor * 0.5
        if index + 1 < rungs.count, target < rungs[index].floor, !stays {
            aboveSince = nil
            let since = belowSince ?? now
            belowSince = since
            if now.since(since) >= downDelay || target < rungs[index].floor * 0.5 {
                // Straight to the rung that fits, not one step a second.
                while index + 1 < rungs.count, target < rungs[index].floor { index += 1 }
                belowSince = nil
                return true
            }
            return false
        }
        belowSince = nil
        if proven, index > 0, target > rungs[index - 1].floor * upMargin {
            while index > 0, target > rungs[index - 1].floor * upMargin { index -= 1 }
            aboveSince = nil
            return true
        }
        if index > 0, target > rungs[index - 1].floor * upMargin || fits(content, at: index - 1, under: target) {
            let since = aboveSince ?? now
            aboveSince = since
            let wait = rungs[index - 1].height != rungs[index].height ? sizeUpDelay : upDelay
            if now.since(since) >= wait {
                index -= 1
                aboveSince = nil
                return true
            }
            return false
        }
        aboveSince = nil
        return false
    }
}
