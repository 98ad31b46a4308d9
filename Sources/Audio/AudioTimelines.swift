/// The capture instants of a continuous stream of audio frames, smoothed.
///
/// A sound server hands over frames unevenly (two at once after a late
/// wake-up, a long first read), and a monitor source's instants are moved by
/// the sink's latency, which swings as players come and go (a buffered
/// player makes it swing by a second). Stamping each frame with its own
/// observation would make the stream's timeline jump back and forth while its
/// samples are continuous; a receiver then has to drop or pad sound to follow
/// it. So the timeline advances by exactly one frame per frame and only
/// slews towards the observations, at most `slewPerFrame` per frame (1 ms per
/// 20 ms frame follows a 200 ms change in 4 s); an observation more than
/// `resetDistance` away is a real break (the source stopped delivering, a
/// clock step) and restarts the timeline there. Sans-IO: instants in
/// nanoseconds on any clock.
public struct CaptureTimeline: Sendable {
    public let frameNanoseconds: Int64
    public var slewPerFrame: Int64 = 1_000_000
    public var resetDistance: Int64 = 500_000_000
    /// Where the next frame belongs if the stream stays continuous.
    private var next: Int64?

    public init(frameNanoseconds: Int64) {
        self.frameNanoseconds = frameNanoseconds
    }

    /// The instant of a frame observed at `observed`.
    public mutating func stamp(observed: Int64) -> Int64 {
        var stamp = observed
        if let predicted = next {
            let error = observed &- predicted
            if error.magnitude <= resetDistance.magnitude {
                stamp = predicted &+ min(max(error, -slewPerFrame), slewPerFrame)
            }
        }
        next = stamp &+ frameNanoseconds
        return stamp
    }
}

/// An audio stream's time in microseconds that follows its RTP sample clock
/// (so packets sit back to back, as a file's sample table needs), anchored
/// to the sender's capture clock. Within 20 ms of the capture clock it keeps
/// to the sample clock; up to 100 ms away (the sender's latency estimate
/// moved) it slews towards it by 1 ms per packet, either way, so the sound
/// is never cut or padded for it; beyond that (a pause, a gap, a new
/// source) it jumps, and the recorder fills the hole or drops the packets
/// that would overlap, trading a moment of sound for sync.
public struct SampleClock: Sendable {
    public let rate: Int
    private var anchor: (rtp: UInt32, time: Int64)?

    public init(rate: Int) { self.rate = rate }

    /// The time of the packet with RTP timestamp `rtp` that the sender
    /// says was captured at `captured` microseconds.
    public mutating func time(rtp: UInt32, captured: Int64) -> Int64 {
        guard let current = anchor else {
            anchor = (rtp, captured)
            return captured
        }
        let ticks = Int64(Int32(bitPattern: rtp &- current.rtp))
        var predicted = current.time + ticks * 1_000_000 / Int64(rate)
        let error = captured &- predicted
        if error.magnitude > 100_000 {
            predicted = captured
        } else if error > 20_000 {
            predicted += min(error - 20_000, 1_000)
        } else if error < -20_000 {
            predicted -= min(-error - 20_000, 1_000)
        }
        anchor = (rtp, predicted)
        return predicted
    }
}
