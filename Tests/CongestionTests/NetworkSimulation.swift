import ShareCongestion
import ShareImpairment
import ShareSession
import ShareWire
import ShareBase

/// A whole sender and receiver loop with no sockets and no clock: a video
/// source at the controller's target, the pacer, an impaired link, the
/// receiver's RFC 8888 reporter and the way back, stepped 1 ms at a time.
struct NetworkSimulation {
    var controller: CongestionController
    var pacer: PacketPacer
    var forward: ImpairedLink
    var reporter = FeedbackReporter()
    var now = MonotonicTime(nanoseconds: 1_000_000_000)
    var sequence: UInt16 = 100
    var inFlight: [(at: MonotonicTime, ssrc: UInt32, sequence: UInt16)] = []
    var feedbackInFlight: [(at: MonotonicTime, report: CongestionControlFeedback)] = []
    var returnDelay: Duration
    var nextFrame = MonotonicTime(nanoseconds: 1_000_000_000)
    /// (seconds, target bits/s) every 100 ms.
    var targets: [(seconds: Double, rate: Bitrate)] = []
    /// (seconds, pacing rate) every 100 ms.
    var pacings: [(seconds: Double, rate: Bitrate)] = []
    var delivered = 0
    /// When the controller said the path's rate fell to a fraction at
    /// once (the sender then sends a keyframe), in seconds into the run.
    var collapses: [Double] = []
    var maxQueue = 0.0
    /// Each frame's size as a share of the target's (frame number in):
    /// 1 is a source that fills its target, others vary as content does.
    var content: @Sendable (Int) -> Double = { _ in 1 }
    /// The most the content takes, whatever the target (a simple screen
    /// sends less than it may); nil: it fills the target.
    var contentRate: Bitrate?
    /// The largest packet a frame is cut into (a screen's slices are often smaller).
    var packetBytes = 1200
    private var frames = 0
    let ssrc: UInt32 = 0x1234
    /// The stream that carries probes' padding (the sender's RTX stream).
    let probeSSRC: UInt32 = 0x5678
    private var probeSequence: UInt16 = 7
    /// Whether the controller's probes are sent.
    var probing = true
    /// Probe clusters sent.
    var clusters: [ProbeCluster] = []
    private var frameBuffer = [UInt8](repeating: 0, count: 1200)

    init(link: ImpairmentProfile, start: Bitrate = .kilobitsPerSecond(3000), minimum: Bitrate = .kilobitsPerSecond(150),
         maximum: Bitrate = .kilobitsPerSecond(3000),
         returnDelay: Duration = .milliseconds(1), seed: UInt64 = 7) {
        controller = CongestionController(configuration: .init(start: start, minimum: minimum, maximum: maximum))
        pacer = PacketPacer(targetBitrate: start)
        forward = ImpairedLink(profile: link, seed: seed)
        self.returnDelay = returnDelay
    }

    var seconds: Double { Double(now.nanoseconds - 1_000_000_000) / 1e9 }

    mutating func run(for duration: Duration) {
        let end = now + duration
        while now < end { step() }
    }

    private mutating func step() {
        if now >= nextFrame {
            // A frame of the target's size (30 fps) times the content's share, in packets of `packetBytes`.
            let rate = contentRate.map { min($0, controller.target) } ?? controller.target
            var bytes = Int(rate.bitsPerSecond / 8 / 30 * content(frames))
            frames += 1
            while bytes > 0 {
                let size = min(bytes, packetBytes)
                let packet = Self.packet(size: size, firstByte: 0x80, payloadType: 96, sequence: sequence, ssrc: ssrc)
                sequence &+= 1
                pacer.enqueue(packet[...], kind: .media, now: now)
                bytes -= size
            }
            nextFrame = nextFrame + .nanoseconds(33_333_333)
        }
        if probing, let cluster = controller.nextProbe(now: now) {
            clusters.append(cluster)
            for index in 0..<cluster.packets {
                // Padding only (the P bit) on the retransmission stream.
                let packet = Self.packet(size: cluster.packetSize, firstByte: 0xA0, payloadType: 97,
                                         sequence: probeSequence, ssrc: probeSSRC)
                probeSequence &+= 1
                pacer.enqueue(packet[...], kind: .probe, now: now + cluster.spacing * index)
            }
        }
        var leaving: [(ArraySlice<UInt8>, PacketPacer.Kind)] = []
        pacer.release(now: now) { bytes, kind in leaving.append((bytes, kind)) }
        for (bytes, kind) in leaving {
            let seq = UInt16(bytes[bytes.startIndex + 2]) << 8 | UInt16(bytes[bytes.startIndex + 3])
            let stream = kind == .probe ? probeSSRC : ssrc
            controller.sent(SentPacket(ssrc: stream, sequence: seq, size: bytes.count, sendTime: now, isProbe: kind == .probe))
            for at in forward.submit(size: bytes.count, now: now) { inFlight.append((at, stream, seq)) }
        }
        inFlight.sort { $0.at < $1.at }
        while let first = inFlight.first, first.at <= now {
            inFlight.removeFirst()
            reporter.received(ssrc: first.ssrc, sequence: first.sequence, now: now)
            delivered += 1
        }
        if let report = reporter.poll(now: now, senderSSRC: 9) { feedbackInFlight.append((now + returnDelay, report)) }
        while let first = feedbackInFlight.first, first.at <= now {
            feedbackInFlight.removeFirst()
            controller.handle(first.report, now: now)
            pacer.setTarget(controller.target, pacingRate: controller.pacingRate, burst: controller.draining ? .zero : nil)
            if controller.takeCollapse() { collapses.append(seconds) }
        }
        controller.poll(now: now)
        maxQueue = max(maxQueue, forward.counters.maxQueueMilliseconds)
        if now.nanoseconds % 100_000_000 == 0 {
            targets.append((seconds, controller.target))
            pacings.append((seconds, controller.pacingRate))
        }
        now = now + .milliseconds(1)
    }

    /// An RTP header (all the simulation reads) in a packet of `size` bytes.
    static func packet(size: Int, firstByte: UInt8, payloadType: UInt8, sequence: UInt16, ssrc: UInt32) -> [UInt8] {
        var packet = [UInt8](repeating: 0, count: max(size, 12))
        packet[0] = firstByte
        packet[1] = payloadType
        packet[2] = UInt8(sequence >> 8)
        packet[3] = UInt8(sequence & 0xFF)
        for index in 0..<4 { packet[8 + index] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * index)) }
        return packet
    }

    /// The target at `seconds` into the run.
    func target(at seconds: Double) -> Bitrate {
        targets.last { $0.seconds <= seconds }?.rate ?? controller.target
    }

    /// The mean target from `start` to `end` seconds.
    func meanTarget(from start: Double, to end: Double) -> Bitrate {
        let values = targets.filter { $0.seconds >= start && $0.seconds <= end }.map(\.rate)
        return values.isEmpty ? .zero : values.reduce(.zero, +) / Double(values.count)
    }

    /// The highest target from `start` to `end` seconds.
    func maxTarget(from start: Double, to end: Double) -> Bitrate {
        targets.filter { $0.seconds >= start && $0.seconds <= end }.map(\.rate).max() ?? .zero
    }
}
