internal import ShareWire
public import ShareBase

/// Which congestion estimates are worth telling the host, sans-IO: the first
/// one, then one whenever the target moved by `relativeChange` (10%) from
/// the last told, or the loss crossed `lossStep` (2%) into another band, or
/// the delay detector changed its verdict — never more often than
/// `minimumInterval` (half a second), so a host's handler sees the path's
/// changes, not the controller's every step.
public struct EstimateChanges: Sendable {
    public var relativeChange = 0.10
    public var lossStep = 0.02
    public var minimumInterval: Duration = .milliseconds(500)
    private var told: CongestionController.Estimate?
    private var toldAt: MonotonicTime?

    public init() {}

    /// `estimate` if it should be told now.
    public mutating func check(_ estimate: CongestionController.Estimate, now: MonotonicTime) -> CongestionController.Estimate? {
        if let toldAt, now.since(toldAt) < minimumInterval { return nil }
        if let told {
            let moved = abs((estimate.target - told.target).bitsPerSecond) >= (told.target * relativeChange).bitsPerSecond
            let step = lossStep
            let band = { (loss: Double) in Int(loss / step) }
            guard moved || band(estimate.lossFraction) != band(told.lossFraction) || estimate.usage != told.usage
            else { return nil }
        }
        told = estimate
        toldAt = now
        return estimate
    }
}
