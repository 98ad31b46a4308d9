import Dispatch
internal import ShareColor
internal import ShareDecode
public import ShareSRTP
public import ShareSession
internal import ShareTransport
internal import ShareWire
internal import ShareX11
import Synchronization
#if canImport(Glibc)
internal import Glibc
#endif

/// Everything a receiver needs to start.
public struct ReceiverConfiguration: Sendable {
    public var port: Int = 5004
    public var keying: SRTPKeyingMaterial
    /// Show the picture in a window on this display (nil: $DISPLAY); off when `showWindow` is false.
    public var display: String?
    public var showWindow = true
    /// Record to this file (.mkv or .mp4) without re-encoding.
    public var recordPath: String?
    /// The video payload type; 96 unless an SDP says otherwise.
    public var videoPayloadType: UInt8 = 96
    /// SPS/PPS from an SDP's sprop-parameter-sets.
    public var parameterSets: [[UInt8]] = []
    /// The abs-capture-time extension id, for latency measurement.
    public var captureTimeExtensionID: UInt8? = 1
    public var reorderDelay: Duration = .milliseconds(100)
    public var cname = "share-recv"

    public init(keying: SRTPKeyingMaterial) { self.keying = keying }
}

/// The receiver's lifecycle.
public enum ReceiverEvent: Sendable {
    case listening(port: Int)
    /// The first picture was decoded.
    case firstFrame(width: Int, height: Int)
    /// The sender said BYE.
    case senderLeft
    case finished(ReceiverError?)
}

public enum ReceiverError: Error, Sendable, CustomStringConvertible {
    case configuration(String)
    case transport(String)
    case decoder(String)
    case window(String)
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
    public var elapsedSeconds = 0.0
    public var datagrams = 0
    public var bytes = 0
    public var rtpPackets = 0
    public var framesAssembled = 0
    public var framesDecoded = 0
    public var framesShown = 0
    public var framesLost = 0
    /// Complete frames not decoded while waiting for a keyframe after a loss.
    public var framesSkippedForKeyframe = 0
    public var decodeErrors = 0
    public var authenticationFailures = 0
    public var replays = 0
    public var malformed = 0
    public var duplicates = 0
    public var nacksSent = 0
    public var keyframeRequests = 0
    public var framesRecorded = 0
    public var width = 0
    public var height = 0
    /// Capture instant (sender's clock) to the picture shown (or decoded, headless).
    public var captureToDisplay = LatencySummary()

    public init() {}

    public var fps: Double { elapsedSeconds > 0 ? Double(framesDecoded) / elapsedSeconds : 0 }
    public var bitrateKbps: Double { elapsedSeconds > 0 ? Double(bytes) * 8 / elapsedSeconds / 1000 : 0 }
}

/// The embeddable receiver: one thread reads SRTP from a UDP port,
/// reorders and rebuilds frames, decodes, shows and records them, and
/// answers with RTCP (reports, NACK, PLI).
public final class ScreenReceiver: @unchecked Sendable {
    public let configuration: ReceiverConfiguration
    private let socket: UDPSocket
    private let session: ReceiveSession
    private let decoder: H264Decoder
    private let running = Atomic<Bool>(false)
    private let stats = Mutex(ReceiverStatistics())
    private let failure = Mutex<ReceiverError?>(nil)
    private let group = DispatchGroup()

    public init(configuration: ReceiverConfiguration) throws(ReceiverError) {
        self.configuration = configuration
        if let path = configuration.recordPath, Recorder.Container(path: path) == nil {
            throw .configuration("cannot record to \"\(path)\": the file must end in .mkv or .mp4")
        }
        do {
            socket = try UDPSocket(bindingPort: configuration.port)
        } catch {
            throw .transport(error.description)
        }
        do {
            session = try ReceiveSession(
                configuration: .init(ssrc: UInt32.random(in: 1...UInt32.max), cname: configuration.cname,
                                     videoPayloadType: configuration.videoPayloadType),
                keying: configuration.keying)
        } catch {
            throw .configuration(error.description)
        }
        do {
            decoder = try H264Decoder(parameterSets: configuration.parameterSets)
        } catch {
            throw .decoder(error.description)
        }
    }

    /// The UDP port actually bound (useful with port 0).
    public var port: Int { socket.localPort }

    public func start(events: @escaping @Sendable (ReceiverEvent) -> Void = { _ in }) {
        guard running.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else { return }
        group.enter()
        DispatchQueue(label: "share.receiver", qos: .userInteractive).async { [self] in
            events(.listening(port: port))
            let error = loop(events: events)
            failure.withLock { $0 = error }
            running.store(false, ordering: .sequentiallyConsistent)
            events(.finished(error))
            group.leave()
        }
    }

    /// Stops receiving and finishes the recording.
    public func stop() {
        running.store(false, ordering: .sequentiallyConsistent)
        group.wait()
    }

    public func waitUntilFinished() { group.wait() }
    public var error: ReceiverError? { failure.withLock { $0 } }
    public var statistics: ReceiverStatistics { stats.withLock { $0 } }

    private func loop(events: @Sendable (ReceiverEvent) -> Void) -> ReceiverError? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var datagram = PacketBuffer(capacity: 65_536)
        var count = 0
        var peer: SocketAddress?
        var window: VideoWindow?
        var recorder: Recorder?
        var pixels: [UInt8] = []
        var latency = LatencyRecorder()
        var waitingForKeyframe = true
        var timestamps = TimestampUnwrapper()
        var local = ReceiverStatistics()
        let began = monotonicNow()
        defer { recorder?.finish() }

        func reply(_ bytes: ArraySlice<UInt8>) {
            if let peer { socket.send(bytes, to: peer) }
        }

        while running.load(ordering: .relaxed) {
            let source: SocketAddress?
            do {
                source = try socket.receive(into: &buffer, count: &count, timeoutMilliseconds: 10)
            } catch {
                return .transport(error.description)
            }
            var received: [ReceiveEvent] = []
            let now = MonotonicTime(nanoseconds: monotonicNow())
            if let source {
                datagram.removeAll()
                datagram.append(slice: buffer[0..<count])
                let authenticatedBefore = session.statistics.rtpPackets + session.statistics.rtcpPackets
                received = session.handle(datagram: &datagram, now: now, emit: reply)
                // Learn where to send RTCP from the first authenticated packet only.
                if peer == nil && session.statistics.rtpPackets + session.statistics.rtcpPackets > authenticatedBefore {
                    peer = source
                }
            }
            received += session.poll(now: now, emit: reply)
            for event in received {
                switch event {
                case .videoFrame(let unit):
                    local.framesAssembled += 1
                    if waitingForKeyframe && !unit.isKeyframe {
                        local.framesSkippedForKeyframe += 1
                        session.requestKeyframe(now: now, emit: reply)
                        continue
                    }
                    guard let picture = decoder.decode(unit.data) else {
                        local.decodeErrors += 1
                        waitingForKeyframe = true
                        session.requestKeyframe(now: now, emit: reply)
                        continue
                    }
                    waitingForKeyframe = false
                    if local.framesDecoded == 0 { events(.firstFrame(width: picture.width, height: picture.height)) }
                    local.framesDecoded += 1
                    local.width = picture.width
                    local.height = picture.height
                    if configuration.showWindow {
                        do {
                            if window == nil {
                                window = try VideoWindow(display: configuration.display, title: "share",
                                                         width: picture.width, height: picture.height)
                            }
                            show(on: window!, pixels: &pixels)
                            local.framesShown += 1
                            if window!.closed { running.store(false, ordering: .relaxed) }
                        } catch {
                            return .window(error.description)
                        }
                    }
                    if let id = configuration.captureTimeExtensionID,
                       let data = unit.headerExtension?.element(id: id), let capture = AbsoluteCaptureTime(data) {
                        let shownAt = wallNow()
                        let captured = capture.ntpTimestamp.unixNanoseconds
                        latency.record(milliseconds: (Double(shownAt) - Double(captured)) / 1e6)
                    }
                    if let path = configuration.recordPath {
                        do {
                            if recorder == nil && unit.isKeyframe {
                                recorder = try Recorder(path: path, width: picture.width, height: picture.height,
                                                        parameterSets: Self.parameterSets(of: unit.data))
                            }
                            if let recorder {
                                try recorder.write(accessUnit: unit.data, timestamp90kHz: timestamps.unwrap(unit.timestamp),
                                                   isKeyframe: unit.isKeyframe)
                                local.framesRecorded = recorder.framesWritten
                            }
                        } catch {
                            return .recording(error.description)
                        }
                    }
                case .videoLoss:
                    // Freeze rather than smear: decode again from the next keyframe.
                    waitingForKeyframe = true
                case .goodbye(let ssrc) where ssrc == session.senderSSRC:
                    events(.senderLeft)
                default:
                    continue
                }
            }
            let s = session.statistics
            local.elapsedSeconds = Double(monotonicNow() - began) / 1e9
            local.datagrams = s.datagrams
            local.bytes = s.bytes
            local.rtpPackets = s.rtpPackets
            local.framesLost = s.framesLost
            local.authenticationFailures = s.authenticationFailures
            local.replays = s.replays
            local.malformed = s.malformed
            local.duplicates = s.duplicates
            local.nacksSent = s.nacksSent
            local.keyframeRequests = s.plisSent
            if !received.isEmpty { local.captureToDisplay = latency.summary }
            stats.withLock { $0 = local }
        }
        recorder?.finish()
        local.framesRecorded = recorder?.framesWritten ?? local.framesRecorded
        local.captureToDisplay = latency.summary
        stats.withLock { $0 = local }
        return nil
    }

    private func show(on window: VideoWindow, pixels: inout [UInt8]) {
        decoder.withLastPicture { y, ys, u, us, v, vs, width, height in
            let stride = width * 4
            if pixels.count < stride * height { pixels = [UInt8](repeating: 0, count: stride * height) }
            pixels.withUnsafeMutableBytes { raw in
                ColorConversion.convertI420(y: y, yStride: ys, u: u, uStride: us, v: v, vStride: vs, width: width,
                                            height: height, to: raw.baseAddress!, stride: stride)
                window.show(width: width, height: height, stride: stride, pixels: UnsafeRawPointer(raw.baseAddress!))
            }
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

func monotonicNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func wallNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
