/// The sender's lifecycle, as the host sees it.
public enum SenderEvent: Sendable {
    /// `start` was called: the setup it runs with.
    case started(SenderSetup)
    /// The handshake waits for the receiver to confirm: both screens show
    /// `code`, and the people compare them (identities, a receiver this
    /// sender has not met before; a known one is not announced).
    case verifying(receiver: String, code: String)
    /// A session is up (again, after a receiver restart): media flows.
    /// `firstMeeting`: the receiver was not known before and is remembered now.
    case connected(receiver: String, code: String, firstMeeting: Bool)
    /// `pause()` took effect: nothing is captured, the stream stays open.
    case paused
    /// `resume()` took effect.
    case resumed
    /// The sender stopped: nil after `stop()`, or the error that ended it.
    case finished(SenderError?)
    /// Something degraded without stopping the stream (an audio source went
    /// away), or the receiver has not answered the first handshake in 3 s.
    case warning(String)
    /// The memory governor moved to another rung: the footprint measured
    /// (or, for the starting rung, predicted for the full rung) in bytes.
    case memoryStep(from: String, to: String, footprint: Int, budget: Int)
    /// A second after a step: the footprint it settled at.
    case memorySettled(rung: String, footprint: Int, budget: Int)
    /// A receiver's feedback began: someone is listening.
    case receiverJoined
    /// The receiver said goodbye, or went silent for 3 s (the stream goes
    /// on, for it to come back or another to join).
    case receiverLeft(reason: String)
    /// The congestion controller's view of the path changed (the first
    /// estimate, then a move of 10% or more, another loss band or delay
    /// verdict; at most twice a second).
    case networkEstimate(NetworkEstimate)
    /// The counters, every `SenderConfiguration.statisticsInterval`.
    case statistics(SenderStatistics)
}

/// What the sender believes the path to its receiver carries.
public struct NetworkEstimate: Sendable, Equatable {
    /// The rate it sends at now, for everything (video, repairs, audio).
    public var targetKbps: Double
    /// What the receiver reported getting, once known.
    public var acknowledgedKbps: Double?
    /// The round trip to the receiver, once measured.
    public var roundTripMilliseconds: Double?
    /// The fraction of packets lost (0-1).
    public var lossFraction: Double
    /// Whether queues on the path are growing (the delay detector).
    public var congested: Bool

    /// An estimate with these figures.
    public init(targetKbps: Double, acknowledgedKbps: Double?, roundTripMilliseconds: Double?, lossFraction: Double,
                congested: Bool) {
        self.targetKbps = targetKbps
        self.acknowledgedKbps = acknowledgedKbps
        self.roundTripMilliseconds = roundTripMilliseconds
        self.lossFraction = lossFraction
        self.congested = congested
    }
}

/// Why the sender could not start or had to stop.
public enum SenderError: Error, Sendable, CustomStringConvertible {
    /// A configuration field out of its range, or fields that do not fit together.
    case configuration(String)
    /// The X display, the window or the monitor could not be captured.
    case capture(String)
    /// x264 refused the settings or failed.
    case encoder(String)
    /// The network: the host cannot be resolved, a socket failed.
    case transport(String)
    /// libsrtp2 refused a key or failed to protect a packet.
    case encryption(String)
    /// An audio input could not start (the video goes on without it).
    case audio(String)
    /// The memory budget cannot be met even on the cheapest rung.
    case memory(String)
    /// The handshake failed: refused, a changed identity, a different key file.
    case session(String)
    /// The host ended the stream with this error (`ScreenSender.finish(error:)`).
    case host(String)

    public var description: String {
        switch self {
        case .configuration(let m): "configuration: \(m)"
        case .capture(let m): "screen capture: \(m)"
        case .encoder(let m): "encoder: \(m)"
        case .transport(let m): "network: \(m)"
        case .encryption(let m): "encryption: \(m)"
        case .audio(let m): "audio: \(m)"
        case .memory(let m): "memory: \(m)"
        case .session(let m): "session: \(m)"
        case .host(let m): m
        }
    }
}
