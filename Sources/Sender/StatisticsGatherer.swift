internal import ShareCongestion
internal import ShareBase
internal import ShareSession
internal import ShareTransport
import Synchronization
internal import ShareSync

/// Gathers the sender's statistics from every part (the capture loop, the
/// network driver and its streams, the audio channels, the governor, the
/// latency logs, the process) into the context's counters: on the reader's
/// thread, when a host asks, and once at the end.
final class StatisticsGatherer: Sendable {
    private let context: SenderContext
    private let network: NetworkDriver
    private let capture: CaptureLoop?
    private let pushed: PushedVideo?
    private let audio: [AudioChannel]
    private let governor: GovernorControl?
    /// When the run started, and the process's CPU time then.
    private let startTime = Locked<(at: MonotonicTime?, cpu: Duration)>((nil, .zero))

    init(context: SenderContext, network: NetworkDriver, capture: CaptureLoop?, pushed: PushedVideo?, audio: [AudioChannel],
         governor: GovernorControl?) {
        self.context = context
        self.network = network
        self.capture = capture
        self.pushed = pushed
        self.audio = audio
        self.governor = governor
    }

    /// The run starts now: elapsed time and CPU are counted from here.
    func started() {
        startTime.withLock { $0 = (SystemClock.now(), ProcessFootprint.cpuTime()) }
    }

    /// Updates the context's counters (footprint sampled now).
    func gather() {
        let memory = ProcessFootprint.current()
        let (began, cpuAtStart) = startTime.withLock { $0 }
        let cpu = ProcessFootprint.cpuTime() - cpuAtStart
        let streamStats = network.video.withLock { $0.statistics }
        let capturer = capture?.capturer
        let (captured, droppedPool, delivered) = (capturer?.captured, capturer?.droppedForPool, capturer?.picturesDelivered)
        let (bandsGrabbed, bandsKept) = (capturer?.bandsGrabbed ?? 0, capturer?.bandsKept ?? 0)
        let captureBytes = capturer?.heldBytes ?? pushed?.heldBytes ?? 0
        let drops = network.socket.sendDrops
        let audioPackets = network.audio.reduce(0) { sum, stream in sum + stream.withLock { $0.statistics.packets } }
        let audioCount = audio.count
        let audioDropped = audio.reduce(0) { $0 + ($1.pushed?.droppedFrames.load(ordering: .relaxed) ?? 0) }
        let driver = network.snapshot()
        let rates = network.rates.samples
        let accounted = governor?.accounted.load(ordering: .relaxed) ?? 0
        // Sorted here, on the reader's thread, never on the encode thread's.
        let latencies = (context.captureToSend.summary, context.encodeTime.summary, context.firstPacketLead.summary)
        context.stats.withLock { s in
            s.captureToSend = latencies.0
            s.encodeMilliseconds = latencies.1
            s.firstPacketLead = latencies.2
            s.memoryAccountedBytes = accounted
            s.audioPacketsSent = audioPackets
            s.audioStreams = audioCount
            s.audioFramesDropped = audioDropped
            s.elapsedSeconds = began.map { SystemClock.now().since($0).seconds } ?? 0
            s.cpuSeconds = cpu.seconds
            // Pushed pictures are counted as they are pushed.
            if let captured, let droppedPool {
                s.framesCaptured = captured
                s.framesDroppedPoolExhausted = droppedPool
                s.framesDelivered = delivered
            }
            s.bandsGrabbed = bandsGrabbed
            s.bandsKept = bandsKept
            s.captureBytes = captureBytes
            s.packetsSent = streamStats.packets
            s.bytesSent = streamStats.bytes
            s.packetsRetransmitted = streamStats.retransmitted
            s.retransmissionsSuppressed = streamStats.retransmissionsSuppressed
            s.retransmissionsSuperseded = streamStats.retransmissionsSuperseded + driver.pacer.repairsSuperseded
            s.mediaSuperseded = driver.pacer.mediaSuperseded
            s.fecPackets = streamStats.fecPackets
            s.protectionGroup = network.protectionGroup.load(ordering: .relaxed)
            s.protectionCrossing = network.protectionCrossing.load(ordering: .relaxed)
            s.keyframeRequests = streamStats.keyframeRequests
            s.receiversJoined = streamStats.receiversJoined
            s.plainKeyframeRequests = streamStats.plainKeyframeRequests
            s.plainRequestsLimited = streamStats.plainRequestsLimited
            s.plainRTCPIgnored = streamStats.plainIgnored
            s.controlPortRefused = streamStats.controlPortRefused
            s.rtcpRejected = streamStats.rtcpRejected
            if !network.routes.copies.isEmpty {
                s.destinations = network.routes.destinations.map {
                    DestinationStatistics(keyframeRequests: $0.keyframeRequests.load(ordering: .relaxed), dropped: !$0.isActive)
                }
            }
            s.roundTripMilliseconds = (driver.estimate.roundTrip ?? streamStats.roundTrip).map { $0.seconds * 1000 }
            s.receiverLossFraction = streamStats.fractionLost
            s.sendDrops = drops
            s.targetKbps = driver.estimate.target.kilobitsPerSecond
            s.acknowledgedKbps = driver.estimate.acknowledged?.kilobitsPerSecond
            s.feedbackLossFraction = driver.estimate.lossFraction
            s.delaySignal = "\(driver.estimate.usage)"
            s.feedbackReports = driver.feedbackReports
            (s.probeClusters, s.probesCarried) = driver.probes
            s.pacerDrops = driver.pacer.dropped
            s.pacerQueueMilliseconds = driver.queueDelay.seconds * 1000
            s.rateTimeline = rates
            s.timelineOriginUnix = network.rates.beganUnix
            s.footprintBytes = memory.footprintBytes
            s.residentBytes = memory.residentBytes
            s.peakFootprintBytes = max(s.peakFootprintBytes, memory.footprintBytes, context.peakFootprint.load(ordering: .relaxed))
            s.peakResidentBytes = max(s.peakResidentBytes, memory.residentBytes)
        }
    
    }
}
