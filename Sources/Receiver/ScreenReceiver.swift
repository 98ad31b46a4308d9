import Dispatch
internal import ShareAudio
internal import ShareColor
internal import ShareDecode
public import ShareHandshake
public import ShareSRTP
internal import ShareSession
internal import ShareStamp
internal import ShareTransport
internal import ShareWire
internal import ShareX11
import Synchronization
#if canImport(Glibc)
internal import Glibc
public import ShareLatency
internal import ShareSync
#endif

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
    /// Whether to show the picture in a window (on `display`).
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
    /// Play received audio through PulseAudio.
    public var playAudio = true
    /// Payload types carrying Opus.
    public var audioPayloadTypes: Set<UInt8> = [111]
    /// Read the frame stamp (`share scene --stamp`) from every decoded
    /// picture and measure glass-to-glass latency (both ends on one machine).
    public var readStamps = false
    /// Each decoded picture, lent to the host on the decode thread as soon
    /// as it is decoded (whether or not a window shows it): for an
    /// application that draws the picture itself. See `ReceivedPicture`.
    public var onPicture: (@Sendable (borrowing ReceivedPicture) -> Void)?
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

/// Counters and measurements of a receiver.
public struct ReceiverStatistics: Sendable, Codable, Equatable {
    /// Seconds since `start`.
    public var elapsedSeconds = 0.0
    /// UDP datagrams received.
    public var datagrams = 0
    /// Bytes received.
    public var bytes = 0
    /// RTP packets that passed SRTP authentication.
    public var rtpPackets = 0
    /// Video frames rebuilt whole from their packets.
    public var framesAssembled = 0
    /// Pictures decoded.
    public var framesDecoded = 0
    /// Pictures shown in the window.
    public var framesShown = 0
    /// Frames given up on (packets missing past the jitter buffer's wait).
    public var framesLost = 0
    /// Complete frames not decoded while waiting for a keyframe after a loss.
    public var framesSkippedForKeyframe = 0
    /// Frames the decoder refused.
    public var decodeErrors = 0
    /// Packets that failed SRTP or SRTCP authentication (dropped).
    public var authenticationFailures = 0
    /// Packets refused as replays of ones already received.
    public var replays = 0
    /// Sessions begun (one per sender instance) and key renewals.
    public var sessions = 0
    /// Key renewals within a sender's session (see `sessions`).
    public var sessionRenewals = 0
    /// Media dropped: before any session, or from an address not the session's.
    public var packetsWithoutSession = 0
    /// Packets from an address that is not the session's (see `packetsWithoutSession`).
    public var packetsFromStrangers = 0
    /// Handshakes refused: a wrong key, a changed identity, a person's no.
    public var handshakesRefused = 0
    /// Handshakes not answered because too many came at once.
    public var handshakesRateLimited = 0
    /// Datagrams that were not well-formed RTP, RTCP or handshake messages.
    public var malformed = 0
    /// Packets that arrived twice (the second dropped).
    public var duplicates = 0
    /// NACK messages sent to ask for missing packets.
    public var nacksSent = 0
    /// Packets asked for in them.
    public var nackedPackets = 0
    /// NACKs whose original arrived after all (the path reordered it).
    public var needlessNACKs = 0
    /// Retransmissions (RTX) that arrived.
    public var repairsReceived = 0
    /// FlexFEC repair packets that arrived, and packets they rebuilt.
    public var fecPacketsReceived = 0
    /// Packets rebuilt from FlexFEC repairs (see `fecPacketsReceived`).
    public var fecRecovered = 0
    /// RFC 8888 congestion control feedback messages sent.
    public var feedbackReports = 0
    /// Keyframes asked for (PLI).
    public var keyframeRequests = 0
    /// Round trip to the sender (RFC 3611 RRTR/DLRR), and how long the
    /// jitter buffer waits for a missing packet now.
    public var roundTripMilliseconds: Double?
    /// How long the jitter buffer waits for a missing packet now (ms).
    public var jitterBufferMilliseconds = 0.0
    /// Frames (and other items) dropped because decoding fell behind.
    public var framesDroppedDecoderBusy = 0
    /// Pictures shown more than the sender's frame spacing + 100 ms after
    /// the previous one, and the time those gaps add up to.
    public var freezes = 0
    /// The time those freezes add up to, in seconds (see `freezes`).
    public var freezeSeconds = 0.0
    /// The socket receive buffer the kernel granted (bytes).
    public var receiveBufferBytes = 0
    /// Four times a second: pictures decoded and freeze time so far.
    public var timeline: [ReceiverSample] = []
    /// When the timeline's second 0 was (Unix seconds), to line it up with a sender's.
    public var timelineOriginUnix = 0.0
    /// Video frames written to the recording.
    public var framesRecorded = 0
    /// When the first picture was decoded (Unix seconds): with the time a
    /// sender was started, the time to first picture.
    public var firstPictureUnix: Double?
    /// The last decoded picture's width.
    public var width = 0
    /// The last decoded picture's height.
    public var height = 0
    /// Capture instant (sender's clock) to the picture shown (or decoded, headless).
    public var captureToDisplay = LatencySummary()
    /// With `readStamps`: from the scene drawing a frame stamp to the picture
    /// holding it shown (or decoded, headless), first appearance of each stamp.
    public var glassToGlass = LatencySummary()
    /// Pictures whose stamp was new, the same as the previous picture's, or unreadable.
    public var stampsNew = 0
    /// Pictures whose stamp was the previous picture's (see `stampsNew`).
    public var stampsRepeated = 0
    /// Pictures with no readable stamp (see `stampsNew`).
    public var stampsUnreadable = 0
    /// The sound received, over every audio stream.
    public var audio = AudioStatistics()

    /// All counters at zero.
    public init() {}

    /// Pictures decoded per second over the run.
    public var fps: Double { elapsedSeconds > 0 ? Double(framesDecoded) / elapsedSeconds : 0 }
    /// What arrived per second over the run, in kbit/s.
    public var bitrateKbps: Double { elapsedSeconds > 0 ? Double(bytes) * 8 / elapsedSeconds / 1000 : 0 }
}

/// The receiver's counts at one moment of the run (seconds since it started).
public struct ReceiverSample: Sendable, Codable, Equatable {
    /// Seconds since the receiver started.
    public var seconds: Double
    /// Pictures decoded so far.
    public var framesDecoded: Int
    /// Freeze time so far, in seconds.
    public var freezeSeconds: Double
    /// Frames lost so far.
    public var framesLost: Int

    /// A sample at `seconds`.
    public init(seconds: Double, framesDecoded: Int, freezeSeconds: Double, framesLost: Int) {
        self.seconds = seconds
        self.framesDecoded = framesDecoded
        self.freezeSeconds = freezeSeconds
        self.framesLost = framesLost
    }
}

/// The embeddable receiver: a network thread receives SRTP, rebuilds frames
/// through the jitter buffer and answers with RTCP (reports, NACK, PLI,
/// congestion feedback); a decode thread, fed through a bounded queue,
/// decodes, shows, plays and records.
public final class ScreenReceiver: Sendable {
    /// The configuration it was made with.
    public let configuration: ReceiverConfiguration
    private let socket: UDPSocket
    /// The session (with its gate) and the decoder, until `start` hands them
    /// to the network and decode threads, each used by one thread from then on.
    private let parts: Locked<Parts?>
    private struct Parts {
        let session: ReceiveSession
        let gate: SessionGate
        let decoder: H264Decoder
    }
    private let shared = ReceiverShared()
    private let failure = Locked<ReceiverError?>(nil)
    private let group = DispatchGroup()
    private let began = Atomic<UInt64>(0)
    /// Threads still running.
    private let remaining = Atomic<Int>(2)
    /// Bytes asked for the socket's receive buffer.
    static let receiveBuffer = 4 << 20

    /// Makes a receiver: binds the port (IPv6 and IPv4 on one socket where
    /// the kernel allows) and opens the decoder. Nothing is received before
    /// `start`.
    public init(configuration: ReceiverConfiguration) throws(ReceiverError) {
        self.configuration = configuration
        if let path = configuration.recordPath, Recorder.Container(path: path) == nil {
            throw .configuration("cannot record to \"\(path)\": the file must end in .mkv or .mp4")
        }
        // Dual stack: IPv6 and IPv4 (as mapped addresses) on one socket;
        // IPv4 alone where the kernel has no IPv6.
        if let dual = try? UDPSocket(bindingPort: configuration.port, ipv6: true, receiveBuffer: Self.receiveBuffer) {
            socket = dual
        } else {
            do {
                socket = try UDPSocket(bindingPort: configuration.port, receiveBuffer: Self.receiveBuffer)
            } catch {
                throw .transport(error.description)
            }
        }
        socket.enableArrivalTimestamps()
        port = socket.localPort
        let session: ReceiveSession
        let decoder: H264Decoder
        do {
            var sessionConfiguration = ReceiveSession.Configuration(
                ssrc: UInt32.random(in: 1...UInt32.max), cname: configuration.cname,
                videoPayloadType: configuration.videoPayloadType)
            sessionConfiguration.maximumDelay = configuration.maximumDelay
            sessionConfiguration.retransmissionPayloadType = configuration.retransmissionPayloadType
            sessionConfiguration.fecPayloadType = configuration.fecPayloadType
            // With a handshake the session waits, with throwaway keys, for
            // the first sender's.
            let keys: SRTPSessionKeys = switch configuration.keying {
            case .staticKey(let keying): .symmetric(keying)
            case .handshake: .symmetric(.random(profile: .aes128CmHmacSha1_80))
            }
            session = try ReceiveSession(configuration: sessionConfiguration, keys: keys)
        } catch {
            throw .configuration(error.description)
        }
        do {
            decoder = try H264Decoder(parameterSets: configuration.parameterSets)
        } catch {
            throw .decoder(error.description)
        }
        parts = Locked(Parts(session: session, gate: SessionGate(session: session, keying: configuration.keying),
                             decoder: decoder))
    }

    /// The UDP port actually bound (useful with port 0).
    public let port: Int

    /// Starts receiving; `handler` hears the lifecycle (as does every `events` stream).
    /// A receiver starts once: after `stop`, make another.
    public func start(events handler: @escaping @Sendable (ReceiverEvent) -> Void = { _ in }) {
        guard let parts = parts.withLock({ $0.take() }),
              shared.running.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else { return }
        let broadcast = self.broadcast
        let events: @Sendable (ReceiverEvent) -> Void = { event in
            handler(event)
            broadcast.yield(event)
            if case .finished = event { broadcast.finish() }
        }
        began.store(monotonicNow(), ordering: .relaxed)
        let granted = socket.receiveBufferSize
        shared.stats.withLock { $0.receiveBufferBytes = granted }
        let queue = WorkQueue()
        let network = ReceiverNetworkLoop(socket: socket, session: parts.session, gate: parts.gate, queue: queue,
                                          confirmation: configuration.confirmation, events: events)
        let presenter = Presenter(configuration: configuration, decoder: parts.decoder, queue: queue, network: network,
                                  events: events)
        let shared = self.shared
        events(.listening(port: port))
        // Linux reports twice what it reserves; under half of what we asked
        // means net.core.rmem_max capped it.
        if granted < Self.receiveBuffer {
            events(.warning("the kernel granted a \(granted >> 10) KiB socket buffer of the \(Self.receiveBuffer >> 10) KiB asked "
                            + "(raise net.core.rmem_max): bursts may overflow it"))
        }
        let networkQueue = DispatchQueue(label: "share.receiver.network", qos: .userInteractive)
        let decodeQueue = DispatchQueue(label: "share.receiver.decode", qos: .userInteractive)
        for queue in [networkQueue, decodeQueue] { queue.setSpecific(key: Self.threadKey, value: ObjectIdentifier(self)) }
        group.enter()
        networkQueue.async { [self] in
            let error = network.run(shared)
            end(error, events: events, queue: queue)
        }
        group.enter()
        decodeQueue.async { [self] in
            let error = presenter.run(shared)
            end(error, events: events, queue: queue)
        }
    }

    /// One thread ended: the first to end stops the other; the last one
    /// reports `finished` with the first error.
    private func end(_ error: ReceiverError?, events: @Sendable (ReceiverEvent) -> Void, queue: WorkQueue) {
        failure.withLock { failure in
            if failure == nil, let error { failure = error }
        }
        shared.running.store(false, ordering: .sequentiallyConsistent)
        queue.wake()
        if remaining.subtract(1, ordering: .sequentiallyConsistent).newValue == 0 {
            // Both threads are done with the socket: the port is free for
            // another receiver at once, not when this object goes.
            socket.close()
            events(.finished(failure.withLock { $0 }))
        }
        group.leave()
    }

    /// Stops receiving and finishes the recording.
    public func stop() {
        shared.running.store(false, ordering: .sequentiallyConsistent)
        waitUntilFinished()
    }

    /// Blocks until both threads ended. From an event handler (which runs on
    /// one of them, `.finished` included) it returns at once instead of
    /// waiting for itself.
    public func waitUntilFinished() {
        if DispatchQueue.getSpecific(key: Self.threadKey) == ObjectIdentifier(self) { return }
        group.wait()
    }

    private static let threadKey = DispatchSpecificKey<ObjectIdentifier>()
    private let broadcast = EventBroadcast<ReceiverEvent>()

    /// The events from now on, as an `AsyncSequence` (each call makes a new
    /// stream; any number may be read at once, beside `start`'s handler).
    /// A stream ends after `.finished`; one asked for later ends at once.
    public var events: AsyncStream<ReceiverEvent> { broadcast.stream() }
    /// The error that ended the receiver, if one did.
    public var error: ReceiverError? { failure.withLock { $0 } }

    /// A snapshot of the counters.
    public var statistics: ReceiverStatistics {
        let start = began.load(ordering: .relaxed)
        return shared.stats.withLock { s in
            if start != 0 { s.elapsedSeconds = Double(monotonicNow() - start) / 1e9 }
            return s
        }
    }

    /// SPS and PPS of an access unit (for the recording's extradata).
    static func parameterSets(of accessUnit: [UInt8]) -> [[UInt8]] {
        AnnexB.nalUnits(in: accessUnit).map { Array(accessUnit[$0]) }.filter {
            let type = $0[0] & 0x1F
            return type == H264NALType.sps || type == H264NALType.pps
        }
    }
}
