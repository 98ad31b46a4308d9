import Dispatch
internal import ShareAudio
internal import ShareColor
internal import ShareDecode
public import ShareSRTP
public import ShareSession
internal import ShareStamp
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
    /// Play received audio through PulseAudio.
    public var playAudio = true
    /// Payload types carrying Opus.
    public var audioPayloadTypes: Set<UInt8> = [111]
    /// Read the frame stamp (`share scene --stamp`) from every decoded
    /// picture and measure glass-to-glass latency (both ends on one machine).
    public var readStamps = false

    public init(keying: SRTPKeyingMaterial) { self.keying = keying }
}

/// The receiver's lifecycle.
public enum ReceiverEvent: Sendable {
    case listening(port: Int)
    /// The first picture was decoded.
    case firstFrame(width: Int, height: Int)
    /// The sender said BYE, with its reason if it gave one.
    case senderLeft(reason: String?)
    /// Something degraded without stopping (no sound server for playback).
    case warning(String)
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
    /// With `readStamps`: from the scene drawing a frame stamp to the picture
    /// holding it shown (or decoded, headless), first appearance of each stamp.
    public var glassToGlass = LatencySummary()
    /// Pictures whose stamp was new, the same as the previous picture's, or unreadable.
    public var stampsNew = 0
    public var stampsRepeated = 0
    public var stampsUnreadable = 0
    public var audio = AudioStatistics()

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
        var glassToGlass = LatencyRecorder()
        var lastStamp: FrameStamp?
        var summarizedAt: UInt64 = 0
        var waitingForKeyframe = true
        var local = ReceiverStatistics()
        let began = monotonicNow()
        var tracks: [UInt32: AudioTrack] = [:]
        var trackOrder: [UInt32] = []
        var player: AudioPlayer?
        var playerFailed = !configuration.playAudio
        var clocks = ClockMapping()
        var timeline = Timeline()
        var firstPacketAt: UInt64?
        var firstAudioAt: UInt64?
        var preroll = Preroll()
        /// Capture-to-heard delay of played audio (µs, smoothed), and when
        /// audio last played: video is held to match it for lip sync.
        var audioDelay: Int64?
        var audioPlayedAt: UInt64 = 0
        var pending: [(unit: AccessUnit, due: UInt64)] = []
        defer {
            recorder?.finish()
            player?.stop()
        }

        /// The sender-clock capture time (Unix microseconds) of a packet:
        /// its abs-capture-time, else its stream's sender report, else arrival.
        func captureMicroseconds(extension header: RTPHeaderExtension?, ssrc: UInt32, timestamp: UInt32,
                                 clockRate: Int) -> Int64 {
            if let id = configuration.captureTimeExtensionID, let data = header?.element(id: id),
               let capture = AbsoluteCaptureTime(data) {
                return Int64(capture.ntpTimestamp.unixNanoseconds / 1000)
            }
            if let mapped = clocks.unixNanoseconds(ssrc: ssrc, timestamp: timestamp, clockRate: clockRate) {
                return mapped / 1000
            }
            return timeline.estimate(ssrc: ssrc, timestamp: timestamp, clockRate: clockRate, arrival: Int64(wallNow() / 1000))
        }

        /// Decodes one access unit, shows it, measures its latency and records it.
        func present(_ unit: AccessUnit, now: MonotonicTime) throws(ReceiverError) {
            local.framesAssembled += 1
            if waitingForKeyframe && !unit.isKeyframe {
                local.framesSkippedForKeyframe += 1
                session.requestKeyframe(now: now, emit: reply)
                return
            }
            guard let picture = decoder.decode(unit.data) else {
                local.decodeErrors += 1
                waitingForKeyframe = true
                session.requestKeyframe(now: now, emit: reply)
                return
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
                    throw .window(error.description)
                }
            }
            if configuration.readStamps {
                let stamp = decoder.withLastPicture { y, yStride, _, _, _, _, width, height in
                    FrameStamp.read(width: width, height: height) { x, row in y[row * yStride + x] }
                } ?? nil
                if let stamp, stamp != lastStamp {
                    lastStamp = stamp
                    local.stampsNew += 1
                    if let elapsed = stamp.microseconds(until: monotonicNow() / 1000) {
                        glassToGlass.record(milliseconds: Double(elapsed) / 1000)
                    }
                } else if stamp != nil {
                    local.stampsRepeated += 1
                } else {
                    local.stampsUnreadable += 1
                }
            }
            if let id = configuration.captureTimeExtensionID,
               let data = unit.headerExtension?.element(id: id), let capture = AbsoluteCaptureTime(data) {
                let shownAt = wallNow()
                let captured = capture.ntpTimestamp.unixNanoseconds
                latency.record(milliseconds: (Double(shownAt) - Double(captured)) / 1e6)
            }
            if configuration.recordPath != nil {
                let time = captureMicroseconds(extension: unit.headerExtension, ssrc: session.senderSSRC ?? 0,
                                               timestamp: unit.timestamp, clockRate: 90_000)
                let item = Preroll.Item.video(unit.data, time, unit.isKeyframe, picture.width, picture.height)
                if recorder != nil {
                    try? write(item)
                } else {
                    preroll.add(item)
                }
                local.framesRecorded = recorder?.framesWritten ?? 0
            }
        }

        func startRecording(path: String) throws(ReceiverError) {
            guard let keyframe = preroll.firstKeyframe else { return }
            do {
                recorder = try Recorder(path: path, width: keyframe.width, height: keyframe.height,
                                        parameterSets: Self.parameterSets(of: keyframe.data),
                                        audioChannels: trackOrder.compactMap { tracks[$0]?.channels })
            } catch {
                throw .recording(error.description)
            }
            for item in preroll.drain() { try write(item) }
        }

        func write(_ item: Preroll.Item) throws(ReceiverError) {
            guard let recorder else { return }
            do {
                switch item {
                case .video(let data, let time, let key, _, _):
                    try recorder.writeVideo(accessUnit: data, time: time, isKeyframe: key)
                case .audio(let track, let payload, let time, let samples):
                    try recorder.writeAudio(track: track, packet: payload, time: time, samples: samples)
                }
            } catch {
                throw .recording(error.description)
            }
        }

        func reply(_ bytes: ArraySlice<UInt8>) {
            if let peer { socket.send(bytes, to: peer) }
        }

        while running.load(ordering: .relaxed) {
            let source: SocketAddress?
            do {
                // Wake for the next held frame, or at least every 10 ms for timers.
                let untilDue = pending.first.map { Int32(clamping: ($0.due &- min($0.due, monotonicNow())) / 1_000_000) } ?? 10
                source = try socket.receive(into: &buffer, count: &count, timeoutMilliseconds: min(10, untilDue))
            } catch {
                return .transport(error.description)
            }
            var received: [ReceiveEvent] = []
            let now = MonotonicTime(nanoseconds: monotonicNow())
            if let source {
                if firstPacketAt == nil { firstPacketAt = monotonicNow() }
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
                    // Lip sync: while audio plays, a frame waits until its
                    // capture time plus the audio's capture-to-heard delay
                    // (at most 200 ms); otherwise it is shown at once.
                    var due = monotonicNow()
                    if let delay = audioDelay, monotonicNow() - audioPlayedAt < 1_000_000_000, player != nil {
                        let captured = captureMicroseconds(extension: unit.headerExtension, ssrc: session.senderSSRC ?? 0,
                                                           timestamp: unit.timestamp, clockRate: 90_000)
                        let wait = min(max(captured + delay - Int64(wallNow() / 1000), 0), 200_000)
                        due += UInt64(wait) * 1000
                    }
                    pending.append((unit, due))
                case .videoLoss:
                    // Freeze rather than smear: decode again from the next keyframe.
                    waitingForKeyframe = true
                case .goodbye(let ssrc, let reason) where session.senderSSRC == nil || ssrc == session.senderSSRC:
                    // Authenticated (SRTCP) even when it comes before any media:
                    // a sender that fails at start still says why.
                    events(.senderLeft(reason: reason))
                case .senderReport(let ssrc, let report):
                    clocks.update(ssrc: ssrc, report: report)
                case .otherPacket(let packet) where configuration.audioPayloadTypes.contains(packet.payloadType):
                    if tracks[packet.ssrc] == nil {
                        // A new stream after the recording started cannot join its file.
                        guard let track = try? AudioTrack(ssrc: packet.ssrc, firstPacket: packet.payload,
                                                          index: trackOrder.count) else { continue }
                        tracks[packet.ssrc] = track
                        trackOrder.append(packet.ssrc)
                        if firstAudioAt == nil { firstAudioAt = monotonicNow() }
                    }
                    guard let track = tracks[packet.ssrc] else { continue }
                    let pcm = track.decode(packet)
                    if !playerFailed && !pcm.isEmpty {
                        if player == nil {
                            do {
                                player = try AudioPlayer()
                            } catch {
                                playerFailed = true
                                events(.warning("no audio playback (\(error)); use --no-audio to silence this"))
                            }
                        }
                        for frame in pcm { player?.play(frame) }
                        if let player {
                            let captured = captureMicroseconds(extension: packet.headerExtension, ssrc: packet.ssrc,
                                                               timestamp: packet.timestamp, clockRate: 48_000)
                            let heard = Int64(wallNow() / 1000) + player.delayMicroseconds
                            let sample = heard - captured
                            audioDelay = audioDelay.map { ($0 * 7 + sample) / 8 } ?? sample
                            audioPlayedAt = monotonicNow()
                        }
                        if let failure = player?.failure.withLock({ $0 }) {
                            playerFailed = true
                            player = nil
                            events(.warning("audio playback stopped: \(failure); video goes on"))
                        }
                    }
                    if configuration.recordPath != nil, recorder == nil || track.index < (recorder?.audioTrackCount ?? 0) {
                        let samples = (try? OpusPacketInfo(packet: packet.payload).samples) ?? 960
                        let captured = captureMicroseconds(extension: packet.headerExtension, ssrc: packet.ssrc,
                                                           timestamp: packet.timestamp, clockRate: 48_000)
                        let time = track.timeline.time(rtp: packet.timestamp, captured: captured)
                        let item = Preroll.Item.audio(track.index, packet.payload, time, samples)
                        if recorder != nil { try? write(item) } else { preroll.add(item) }
                    }
                default:
                    continue
                }
            }
            while let first = pending.first, first.due <= monotonicNow() {
                pending.removeFirst()
                do { try present(first.unit, now: now) } catch { return error }
            }
            // A file cannot gain tracks later, so the recording opens once the
            // audio streams have shown up (200 ms after the first, as `both`
            // sends two) or after 2 s without audio; until then frames wait
            // in the pre-roll from the first keyframe on, so none is lost.
            if let path = configuration.recordPath, recorder == nil, let first = firstPacketAt,
               preroll.firstKeyframe != nil {
                let now = monotonicNow()
                let audioSettled = firstAudioAt.map { now - $0 > 200_000_000 } ?? false
                if audioSettled || now - first > 2_000_000_000 {
                    do { try startRecording(path: path) } catch { return error }
                }
            }
            var audio = AudioStatistics()
            for track in tracks.values {
                let t = track.statistics
                audio.packetsReceived += t.packetsReceived
                audio.packetsLost += t.packetsLost
                audio.framesRecoveredByFEC += t.framesRecoveredByFEC
                audio.framesConcealed += t.framesConcealed
                audio.packetsLate += t.packetsLate
            }
            audio.streams = tracks.count
            audio.packetsRecorded = recorder?.audioPacketsWritten ?? 0
            audio.framesDroppedForPlayback = player?.framesDropped ?? 0
            local.audio = audio
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
            // Percentiles sort every sample: once a second, not per packet.
            if monotonicNow() - summarizedAt >= 1_000_000_000 {
                summarizedAt = monotonicNow()
                local.captureToDisplay = latency.summary
                local.glassToGlass = glassToGlass.summary
            }
            stats.withLock { $0 = local }
        }
        recorder?.finish()
        local.framesRecorded = recorder?.framesWritten ?? local.framesRecorded
        local.audio.packetsRecorded = recorder?.audioPacketsWritten ?? 0
        local.captureToDisplay = latency.summary
        local.glassToGlass = glassToGlass.summary
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

/// Video and audio that arrive before the recording starts: kept from the
/// first keyframe on, written in order once the file is opened.
struct Preroll {
    enum Item {
        case video([UInt8], Int64, Bool, Int, Int)
        case audio(Int, ArraySlice<UInt8>, Int64, Int)
    }

    private var items: [Item] = []

    var firstKeyframe: (data: [UInt8], width: Int, height: Int)? {
        for case .video(let data, _, true, let width, let height) in items { return (data, width, height) }
        return nil
    }

    mutating func add(_ item: Item) {
        if case .video(_, _, let key, _, _) = item, !key, firstKeyframe == nil { return }
        items.append(item)
        // Never more than a few seconds: a sender that never sends a keyframe
        // must not grow the receiver.
        if items.count > 2000 { items.removeFirst(items.count - 2000) }
    }

    mutating func drain() -> [Item] {
        defer { items.removeAll() }
        func time(_ item: Item) -> Int64 {
            switch item {
            case .video(_, let t, _, _, _): t
            case .audio(_, _, let t, _): t
            }
        }
        return items.sorted { time($0) < time($1) }
    }
}

/// Sender-clock estimates for streams with neither capture times nor sender
/// reports yet: the first packet's arrival anchors the stream's RTP clock.
struct Timeline {
    private var anchors: [UInt32: (timestamp: UInt32, arrival: Int64)] = [:]

    mutating func estimate(ssrc: UInt32, timestamp: UInt32, clockRate: Int, arrival: Int64) -> Int64 {
        guard let anchor = anchors[ssrc] else {
            anchors[ssrc] = (timestamp, arrival)
            return arrival
        }
        let ticks = Int64(Int32(bitPattern: timestamp &- anchor.timestamp))
        return anchor.arrival + ticks * 1_000_000 / Int64(max(clockRate, 1))
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
