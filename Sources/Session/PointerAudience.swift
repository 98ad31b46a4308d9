internal import ShareWire
public import ShareBase

/// Who draws the pointer, for `--cursor auto`, sans-IO: each receiver that
/// reports says with its report whether it draws the pointer itself
/// (`PointerDrawing`; a report without it says no: ffmpeg, GStreamer, a
/// recording `share recv`). The pointer goes apart from the pictures while
/// at least one receiver reported within `memory` and every one of those
/// draws it; otherwise it is drawn into them. A receiver that stops
/// reporting counts no more after `memory`. Holds the newest `capacity`
/// reporters (only authenticated reports reach it).
public struct PointerAudience: Sendable {
    private var reporters: [(ssrc: UInt32, draws: Bool, at: MonotonicTime)] = []
    private let capacity: Int
    /// Reports come every second: five of them lost in a row before a
    /// receiver that went quiet stops counting.
    public var memory: Duration = .seconds(5)

    public init(capacity: Int = 32) {
        self.capacity = capacity
        reporters.reserveCapacity(capacity)
    }

    /// A report from `ssrc`, saying whether it draws the pointer.
    public mutating func heard(_ ssrc: UInt32, drawsPointer: Bool, now: MonotonicTime) {
        if let index = reporters.firstIndex(where: { $0.ssrc == ssrc }) {
            reporters[index] = (ssrc, drawsPointer, now)
            return
        }
        if reporters.count == capacity { reporters.removeFirst() }
        reporters.append((ssrc, drawsPointer, now))
    }

    /// Whether the pointer goes apart from the pictures now.
    public func drawnApart(now: MonotonicTime) -> Bool {
        var anyone = false
        for reporter in reporters where now.since(reporter.at) < memory {
            guard reporter.draws else { return false }
            anyone = true
        }
        return anyone
    }

    /// Forgets every receiver (a new session: its receiver has said nothing yet).
    public mutating func forget() {
        reporters.removeAll(keepingCapacity: true)
    }
}
