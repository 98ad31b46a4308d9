public import ShareHandshake
public import ShareSRTP

/// Everything a receiver needs to start.
public struct ReceiverConfiguration: Sendable {
    /// The UDP port to listen on (0: any free port; `ScreenReceiver.port` says which).
    public var port: Int = 5004
    /// How the SRTP keys are agreed: a handshake with each sender (a
    /// pre-shared key or identities), or a static SDES key (other tools).
    public var keying: SessionKeying
    /// What to do when a sender never met before wants a session (identities).
    public var confirmation: ConfirmationPolicy = .refuseNew
    /// Show the picture in a window on this display (nil: $DISPLAY); off when `showWindow` is false.
    public var display: String?
    /// Whether to show the picture in a window (on `display`). A receiver
    /// that shows it, records nothing and lends no pictures (`onPicture`)
    /// tells the sender with its reports that it draws the pointer itself:
    /// a sender's `--cursor auto` then sends the pointer apart, and a
    /// pointer moving over a still screen costs it no picture. The display
    /// is checked when the receiver is made: `ScreenReceiver(configuration:)`
    /// throws `ReceiverError.window` when no window could open there.
    public var showWindow = true
    /// Record to this file (.mkv or .mp4) without re-encoding.
    public var recordPath: String?
    /// The video payload type; 96 unless an SDP says otherwise.
    public var videoPayloadType: UInt8 = 96
    /// SPS/PPS from an SDP's sprop-parameter-sets.
    public var parameterSets: [[UInt8]] = []
    /// The abs-capture-time extension id, for latency measurement.
    public var captureTimeExtensionID: UInt8? = 1
    /// The longest the jitter buffer waits for a missing packet (below it,
    /// the wait follows the measured round trip and reordering).
    public var maximumDelay: Duration = .milliseconds(1000)
    /// The payload type of the video's retransmissions (RFC 4588 RTX).
    public var retransmissionPayloadType: UInt8? = 97
    /// The payload type of the video's FlexFEC repairs (RFC 8627).
    public var fecPayloadType: UInt8? = 98
    /// The RTCP canonical name (CNAME) of the receiver's reports.
    public var cname = "share-recv"
    /// The name the sender is told in a handshake (1 to 48 printable
    /// bytes); nil: the identity's, or user@host.
    public var handshakeName: String?
    /// Play received audio through PulseAudio.
    public var playAudio = true
    /// Payload types carrying Opus.
    public var audioPayloadTypes: Set<UInt8> = [111]
    /// Decode a frame's first slices as they arrive, while the sender still
    /// encodes the rest, so its last packet leaves only the last slices to
    /// decode; false decodes each frame once it is whole.
    public var decodesSlicesEarly = true
    /// Each decoded picture, lent to the host on the decode thread as soon
    /// as it is decoded (whether or not a window shows it): for an
    /// application that draws the picture itself. See `ReceivedPicture`.
    public var onPicture: (@Sendable (borrowing ReceivedPicture) -> Void)?
    /// Each picture once it is shown (or decoded, with no window), lent on
    /// the decode thread as `onPicture` lends it: for an observer of what
    /// the person sees (a test pattern read back, a measure of quality).
    /// Unlike `onPicture` it leaves the window drawing the pointer.
    public var onShown: (@Sendable (borrowing ReceivedPicture) -> Void)?
    /// Each 20 ms of decoded sound, per stream, on the decode thread
    /// (whether or not it is played: `playAudio`). See `ReceivedSound`.
    public var onSound: (@Sendable (ReceivedSound) -> Void)?

    /// A receiver on port 5004, keyed as `keying` (a handshake with each
    /// sender, or one static SDES key).
    public init(keying: SessionKeying) { self.keying = keying }

    /// A receiver with one static SDES key (the interop mode).
    public init(keying: SRTPKeyingMaterial) { self.init(keying: .staticKey(keying)) }
}

/// The receiver's lifecycle.
public enum ReceiverEvent: Sendable {
    /// The socket is bound: the port listened on.
    case listening(port: Int)
    /// A sender's session began (after a handshake; `renewed`: the same
    /// sender renewed its keys). `code` is the short authentication string
    /// with identities; `firstMeeting`: the sender was remembered just now.
    case sessionStarted(sender: String, code: String?, firstMeeting: Bool, renewed: Bool)
    /// A new sender was accepted without asking (`acceptNew`): its code, for the log.
    case confirming(sender: String, code: String, fingerprint: String)
    /// A handshake was refused (and why): a changed identity, a wrong key file, a person's no.
    case sessionRefused(sender: String?, reason: String)
    /// The first picture of a session was decoded.
    case firstFrame(width: Int, height: Int)
    /// What the sender calls its stream (`SenderConfiguration.title`), told
    /// at the start of its session and whenever it changes.
    case senderTitled(String)
    /// The sender paused (its picture stays on screen), or is live again.
    case senderPaused
    /// The sender is live again after a pause.
    case senderResumed
    /// The sender said BYE, with its reason if it gave one.
    case senderLeft(reason: String?)
    /// Something degraded without stopping (no sound server for playback).
    case warning(String)
    /// The receiver stopped: nil after `stop()`, or the error that ended it.
    case finished(ReceiverError?)
}

/// Why the receiver could not start or had to stop.
public enum ReceiverError: Error, Sendable, CustomStringConvertible {
    /// A configuration that cannot work (a recording path without .mkv or .mp4).
    case configuration(String)
    /// The socket: the port is taken, or the network failed.
    case transport(String)
    /// libavcodec could not be opened.
    case decoder(String)
    /// The window could not be shown (no X display).
    case window(String)
    /// The recording could not be written.
    case recording(String)

    public var description: String {
        switch self {
        case .configuration(let m): "configuration: \(m)"
        case .transport(let m): "network: \(m)"
        case .decoder(let m): "decoder: \(m)"
        case .window(let m): "window: \(m)"
        case .recording(let m): "recording: \(m)"
        }
    }
}
