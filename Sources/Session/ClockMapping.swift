public import ShareWire

/// Maps each stream's RTP timestamps to the sender's NTP clock through its
/// latest RTCP sender report (RFC 3550 §6.4.1), which is what lines audio
/// and video up when the packets carry no capture time of their own.
public struct ClockMapping: Sendable {
    private var reports: [UInt32: (rtp: UInt32, ntp: NTPTimestamp)] = [:]

    public init() {}

    public mutating func update(ssrc: UInt32, report: SenderReport) {
        reports[ssrc] = (report.rtpTimestamp, report.ntpTimestamp)
    }

    /// The sender's wall-clock time of `timestamp` in Unix nanoseconds, if a
    /// report for `ssrc` has arrived.
    public func unixNanoseconds(ssrc: UInt32, timestamp: UInt32, clockRate: Int) -> Int64? {
        guard let report = reports[ssrc], clockRate > 0 else { return nil }
        let ticks = Int64(Int32(bitPattern: timestamp &- report.rtp))
        // NTP time before 1970 (RFC 3550 allows 0) is a negative Unix time, not a trap.
        return Int64(bitPattern: report.ntp.unixNanoseconds) &+ ticks * 1_000_000_000 / Int64(clockRate)
    }
}
