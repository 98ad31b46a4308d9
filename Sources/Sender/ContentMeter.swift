internal import ShareBase
internal import ShareCongestion
internal import ShareVideo

/// What the encoder's pictures came to over about a second, for the
/// quality ladder: their bitrate, and whether the rate control kept their
/// quantizer fine (they took what the content needed, not what the target
/// allowed). Restarted when the rung changes: the pictures before it were
/// another rung's.
struct ContentMeter {
    static let window: Duration = .seconds(1)
    /// A mean quantizer up to this is fine: a few steps over the finest
    /// that changing content is coded at where the path holds the bitrate.
    static let fineQuantizer = Double(QuantizerControl.finest + 4)

    /// The last whole window's, if one ended since the last restart.
    private(set) var content: QualityLadder.Content?
    private var since: MonotonicTime?
    private var bits = 0.0
    private var quantizers = 0.0
    private var pictures = 0

    /// One picture of `bytes`, coded at `quantizer`.
    mutating func picture(bytes: Int, quantizer: Double, at now: MonotonicTime) {
        let start = since ?? now
        since = start
        bits += Double(bytes * 8)
        quantizers += quantizer
        pictures += 1
        let elapsed = now.since(start)
        guard elapsed >= Self.window else { return }
        content = QualityLadder.Content(bitrate: .bitsPerSecond(bits / elapsed.seconds),
                                        fine: quantizers / Double(pictures) <= Self.fineQuantizer)
        since = now
        (bits, quantizers, pictures) = (0, 0, 0)
    }

    mutating func restart() { self = ContentMeter() }
}
