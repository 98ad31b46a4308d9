import Dispatch
internal import ShareColor
internal import ShareCongestion
internal import ShareFrames
internal import ShareSRTP
internal import ShareSession
internal import ShareVideo
internal import ShareWire

import Synchronization
internal import ShareGovernor
internal import ShareLatency
internal import ShareSync
internal import ShareBase

/// The encode thread: takes the newest captured frame (converted already,
/// at the size the capture loop was asked for), encodes it (x264 copies it
/// in: the lease ends there) at the bitrate the network and the memory
/// budget allow, and hands it to the network driver. The encoder follows
/// the pictures' size; `adapt` chooses the size, rate and bitrate.
final class EncodePipeline: Sendable {
    /// A picture is skipped while the pacer's oldest media packet has waited longer.
    static let longestQueue: Duration = .milliseconds(200)
    /// All it keeps is the encode thread's own.
    private let work: ThreadBound<EncodeWork>

    init(configuration: SenderConfiguration, feed: VideoFeed, network: NetworkDriver, governor: GovernorControl?,
         encoder: H264Encoder, baseSize: VideoSize, baseBitrate: Bitrate, audioBitrate: Bitrate,
         idle: (@Sendable (SenderContext) -> Void)? = nil) {
        work = ThreadBound(EncodeWork(configuration: configuration, feed: feed, network: network, governor: governor,
                                      encoder: encoder, baseSize: baseSize, baseBitrate: baseBitrate,
                                      audioBitrate: audioBitrate, idle: idle))
    }

    /// The encode thread's loop, until the sender stops or fails.
    func run(_ context: SenderContext) { work.withValue { $0.run(context) } }

    /// The most the encoder is given at a memory rung: the configured
    /// bitrate, else the default for the picture size the rung encodes (a 4K
    /// screen encoded at 1080p gets 1080p's bitrate), scaled by the rung.
    static func ceilingKbps(_ configuration: SenderConfiguration, base: VideoSize, rung: MemoryRung?) -> Int {
        let size = Self.size(base, height: rung?.height ?? base.height)
        let kbps = configuration.bitrateKbps
            ?? H264Encoder.Configuration.defaultBitrateKbps(width: size.width, height: size.height, fps: configuration.fps)
        return Int(Double(kbps) * (rung?.bitrateScale ?? 1))
    }

    /// `base` scaled to `height` lines (even), or `base` when not smaller.
    static func size(_ base: VideoSize, height: Int) -> VideoSize {
        guard height < base.height else { return base }
        return VideoSize(width: base.width * height / base.height, height: height).even
    }

    /// Packets' worth of payload a slice may take. Each slice leaves as
    /// soon as x264 has written it, and a lost packet costs its slice, not
    /// the frame; but every slice boundary costs x264: slices of one packet
    /// made a 720p frame 6% dearer to encode (2.21 against 2.08 ms,
    /// `720p-encode-x264` against `-one-slice` in the stage benchmarks),
    /// slices of four cost nothing measurable (2.09 against 2.09 ms).
    static let packetsPerSlice = 4

    /// The largest slice for a stream whose packets carry `payload` bytes of H.264.
    static func sliceMaxSize(payload: Int) -> Int { payload * packetsPerSlice }

    /// The fewest slices a picture is cut into when its slices are sent as
    /// they are written. A moving 1080p scene at its usual rate takes one
    /// or two slices of four packets a frame, so the receiver could start on
    /// little before the last packet; in quarters, it decodes three of them
    /// while x264 encodes the last: last packet to display 1.4 ms against
    /// 2.0 ms (1080p, `share send` to `share recv` on one machine, three
    /// runs each; 720p 1.1 ms either way), at no measurable cost to the
    /// encoder (sender CPU per frame within the runs' noise).
    static let slicesPerPicture = 4

    /// An encoder at the configured frame rate, whatever the capture rate
    /// (a lower capture rate is a higher bitrate per frame, see `adapt`), in
    /// slices of at most `sliceMaxSize` bytes, each sent as x264 writes it.
    static func makeEncoder(_ configuration: SenderConfiguration, size: VideoSize,
                            bitrate: Int, sliceMaxSize: Int?) throws(EncoderError) -> H264Encoder {
        try H264Encoder(.init(width: size.width, height: size.height, fps: configuration.fps, bitrateKbps: bitrate,
                              keyframeInterval: configuration.refreshInterval,
                              threads: configuration.encoderThreads
                                  ?? SenderConfiguration.defaultEncoderThreads(size: size, fps: configuration.fps),
                              intraRefresh: configuration.intraRefresh, sliceMaxSize: sliceMaxSize,
                              minimumSlices: sliceMaxSize == nil ? 1 : slicesPerPicture))
    }
}

/// The encode thread's state and steps (see `EncodePipeline`).
final class EncodeWork {
    private let configuration: SenderConfiguration
    private let feed: VideoFeed
    private let network: NetworkDriver
    private let governor: GovernorControl?
    private var encoder: H264Encoder
    private var ladder: QualityLadder
    /// Probes the path carried, as last seen: a new one lets the ladder go up at once.
    private var probesSeen = 0
    /// What the pictures took lately, for the ladder.
    private var meter = ContentMeter()
    /// The size pictures are encoded at before any step down: the
    /// configured size, else the captured picture's (which follows a
    /// resized window).
    private var baseSize: VideoSize
    private var sourceSize: VideoSize?
    private let baseBitrate: Bitrate
    /// What the audio streams take from the target.
    private let audioBitrate: Bitrate
    private let rtpTimestampBase = UInt32.random(in: 0...UInt32.max)
    private var lastRateChange = MonotonicTime.zero
    /// The number of the last picture the encoder took (0: none, as for a
    /// new encoder, which has no picture before to compare with).
    private var lastPicture: UInt64 = 0
    /// What `adapt` last chose, for the statistics: the bitrate for the
    /// frames actually captured (kbit/s) and the capture rate.
    private var chosenKbps = 0
    private var chosenFPS = 0
    /// Asked when no picture came for a while (a pushed source repeats its newest).
    private let idle: (@Sendable (SenderContext) -> Void)?

    init(configuration: SenderConfiguration, feed: VideoFeed, network: NetworkDriver, governor: GovernorControl?,
         encoder: H264Encoder, baseSize: VideoSize, baseBitrate: Bitrate, audioBitrate: Bitrate,
         idle: (@Sendable (SenderContext) -> Void)?) {
        self.idle = idle
        self.configuration = configuration
        self.feed = feed
        self.network = network
        self.governor = governor
        self.encoder = encoder
        self.baseSize = baseSize
        self.baseBitrate = baseBitrate
        self.audioBitrate = audioBitrate
        ladder = QualityLadder(fps: configuration.fps, height: baseSize.height, bitrate: baseBitrate)
    }

    func run(_ context: SenderContext) {
        var slice: [UInt8] = []
        slice.reserveCapacity(64 * 1024)
        while context.isActive {
            guard let lease = nextPicture(context) else { continue }
            let began = SystemClock.now()
            followSource(VideoSize(width: lease.sourceWidth, height: lease.sourceHeight))
            if outgrown(lease.height, now: began, context) { continue }
            guard followPictureSize(VideoSize(width: lease.width, height: lease.height), at: began, context) else { return }
            guard let frame = encode(lease, began: began, slice: &slice, context) else { return }
            if configuration.simulatedEncodeDelay > .zero {
                SystemClock.sleep(for: configuration.simulatedEncodeDelay)
            }
            guard let info = frame.info else { continue }
            account(frame, info: info, context)
            // Counted first: a frame sent is a frame counted, even the last.
            guard adapt(context) else { return }
        }
    }

    /// Waits for the next picture. Screen capture hands each picture on
    /// with a signal (and the end signals too): a still screen does not
    /// wake this thread. A host's pushed pictures are repeated when it goes
    /// quiet. Before the session is up there is no one to send to: the
    /// picture goes back to the pool unencoded.
    private func nextPicture(_ context: SenderContext) -> FrameLease? {
        if let idle {
            if feed.frameReady.wait(timeout: .now() + .milliseconds(30)) == .timedOut { idle(context) }
        } else {
            feed.frameReady.wait()
        }
        guard let lease = feed.take() else { return nil }
        guard network.link.ready.load(ordering: .acquiring) else {
            context.stats.withLock { $0.framesBeforeSession += 1 }
            return nil
        }
        // A frame encoded now would wait behind what the pacer holds: on a
        // path that just became slower, or behind a keyframe larger than
        // the path takes at once. Skipping it lets the queue drain (and
        // the next picture, compared with nothing, is coded whole where it
        // changed), as libwebrtc drops frames while its pacer queue is long.
        if configuration.congestionControl, network.paced.queueDelay(now: SystemClock.now()) > EncodePipeline.longestQueue {
            context.stats.withLock { $0.framesSkippedForQueue += 1 }
            return nil
        }
        return lease
    }

    /// The first picture, or a resized window: a new base size for the
    /// ladders (the capture loop scales to it already).
    private func followSource(_ captureSize: VideoSize) {
        guard captureSize != sourceSize else { return }
        let first = sourceSize == nil
        sourceSize = captureSize
        guard configuration.size == nil && !first else { return }
        baseSize = VideoSize(width: max(16, captureSize.width), height: max(16, captureSize.height)).even
        ladder = QualityLadder(fps: configuration.fps, height: baseSize.height, bitrate: baseBitrate)
        if let governor {
            governor.sourceChanged(width: baseSize.width, height: baseSize.height)
            network.video.withLock { $0.setHistoryCapacity(governor.current.historyPackets) }
        }
    }

    /// A picture of a new size (a step, a resized window): a new encoder, a
    /// new SPS, which receivers take in band. False when it cannot be made.
    private func followPictureSize(_ size: VideoSize, at now: MonotonicTime, _ context: SenderContext) -> Bool {
        guard size.width != encoder.configuration.width || size.height != encoder.configuration.height else { return true }
        do {
            encoder = try EncodePipeline.makeEncoder(configuration, size: size, bitrate: encoder.bitrateKbps,
                                           sliceMaxSize: encoder.configuration.sliceMaxSize)
        } catch {
            context.fail(.encoder(error.description))
            return false
        }
        lastRateChange = now
        lastPicture = 0
        return true
    }

    /// One frame through x264 and out: when it began and was encoded, when
    /// its first packet left, whether it reached a session, what x264 said.
    private struct EncodedFrame {
        var captured: CaptureTime
        var began: MonotonicTime
        var encoded: MonotonicTime
        var firstSent: MonotonicTime?
        var delivered: Bool
        var info: EncodedFrameInfo?
    }

    /// Encodes the picture, each slice sent as x264 writes it while it
    /// encodes the rest; the lease ends once x264 has copied the picture
    /// in. Nil when encoding or protecting failed (the sender is told).
    private func encode(_ lease: consuming FrameLease, began: MonotonicTime, slice: inout [UInt8],
                        _ context: SenderContext) -> EncodedFrame? {
        let captured = lease.time
        let forceKeyframe = context.keyframeRequested.exchange(false, ordering: .relaxed)
        let rtpTimestamp = rtpTimestampBase &+ UInt32(truncatingIfNeeded: captured.monotonic.nanoseconds / 100_000 * 9)
        let captureTime = NTPTimestamp(unixNanoseconds: captured.unixNanoseconds)
        var frame = EncodedFrame(captured: captured, began: began, encoded: began, firstSent: nil, delivered: true, info: nil)
        var sendFailure: SRTPError?
        do {
            // What changed is only known against the picture just before.
            let changes = lastPicture != 0 && lease.number == lastPicture + 1 ? lease.changes : nil
            frame.info = try encoder.encode(lease.planes, forceKeyframe: forceKeyframe, changes: changes,
                                            time: captured.monotonic.nanoseconds) { (part, endsFrame) -> Void in
                guard sendFailure == nil else { return }
                let now = SystemClock.now()
                if frame.firstSent == nil { frame.firstSent = now }
                // The encoder lends the bytes for the call: copied once, into reused storage.
                slice.removeAll(keepingCapacity: true)
                slice.append(contentsOf: part)
                do throws(SRTPError) {
                    frame.delivered = try network.sendVideo(part: slice[...], endsFrame: endsFrame, rtpTimestamp: rtpTimestamp,
                                                            captureTime: captureTime, now: now)
                        && frame.delivered
                } catch {
                    sendFailure = error
                }
            }
            lastPicture = lease.number
        } catch {
            context.fail(.encoder(error.description))
            return nil
        }
        // x264 has copied the picture in: its slot goes back to the pool.
        _ = consume lease
        frame.encoded = SystemClock.now()
        if let sendFailure {
            context.fail(.encryption(sendFailure.description))
            return nil
        }
        return frame
    }

    /// What a frame tells the others: the quantizer, whether the picture
    /// sharpens (the capture thread's next refresh comes sooner), the
    /// latencies and the counters.
    private func account(_ frame: EncodedFrame, info: EncodedFrameInfo, _ context: SenderContext) {
        network.encoderQuantizer.store(Int(info.quantizer), ordering: .relaxed)
        meter.picture(bytes: info.size, quantizer: info.quantizer, at: frame.encoded)
        let sharpening = encoder.rate.sharpening
        if feed.sharpening.exchange(sharpening, ordering: .relaxed) != sharpening, sharpening {
            context.captureWakeup.signal()
        }
        if !frame.delivered { context.stats.withLock { $0.framesBeforeSession += 1 } }
        let queued = SystemClock.now()
        context.captureToSend.record(milliseconds: queued.since(frame.captured.monotonic).milliseconds)
        context.encodeTime.record(milliseconds: frame.encoded.since(frame.began).milliseconds)
        context.firstPacketLead.record(milliseconds: frame.encoded.since(frame.firstSent ?? frame.encoded).milliseconds)
        let (kbps, fps, width, height) = (chosenKbps, chosenFPS, encoder.configuration.width, encoder.configuration.height)
        context.stats.withLock { s in
            s.framesEncoded += 1
            if info.isKeyframe { s.keyframes += 1 }
            s.encoderKbps = kbps
            s.encodedFPS = fps
            s.encodedWidth = width
            s.encodedHeight = height
            s.quantizer = Int(info.quantizer)
        }
    }

    /// What is left of the controller's target for video: audio and
    /// retransmissions come first, RTP/SRTP headers take about 4%, FEC its share.
    private func videoBudget() -> Bitrate {
        let target = Bitrate.bitsPerSecond(Double(network.targetBitrate.load(ordering: .relaxed)))
        let group = network.protectionGroup.load(ordering: .relaxed)
        let fecShare = ProtectionPolicy.overhead(group: group > 0 ? group : nil,
                                                 crossing: network.protectionCrossing.load(ordering: .relaxed))
        let repairs = Bitrate.bitsPerSecond(Double(network.paced.repairBitrate.load(ordering: .relaxed)))
        let available = (target - audioBitrate - repairs) * (0.96 * (1 - fecShare))
        return max(available, target * 0.3)
    }

    /// Follows a fall of the target before a picture is encoded: when the
    /// ladder steps down, the capture side is told at once, and a picture
    /// larger than the new rung is not encoded. The path has just become
    /// too slow for it, and the keyframe the new size needs (or the
    /// receiver asks for) is then the small picture's.
    private func outgrown(_ height: Int, now: MonotonicTime, _ context: SenderContext) -> Bool {
        // A step up is told to the capture side after this picture (`adapt`).
        guard configuration.congestionControl, let before = stepLadder(videoBudget(), now: now, context),
              ladder.index > before else { return false }
        let memory = governor?.current
        let maxHeight = min(memory?.height ?? baseSize.height, ladder.current.height)
        feed.fps.store(min(memory?.fps ?? configuration.fps, ladder.current.fps), ordering: .relaxed)
        feed.maxHeight.store(maxHeight, ordering: .relaxed)
        return height > maxHeight
    }

    /// Steps the quality ladder with the video's share of the target; a
    /// probe the path carried since the last step lets it climb at once.
    /// Returns the rung it was on when it changed.
    private func stepLadder(_ video: Bitrate, now: MonotonicTime, _ context: SenderContext) -> Int? {
        let carried = network.probesCarried.load(ordering: .relaxed)
        defer { probesSeen = carried }
        let before = ladder.index
        guard ladder.update(target: video, now: now, proven: carried != probesSeen, content: meter.content) else { return nil }
        meter.restart()
        context.stats.withLock { $0.qualitySteps += 1 }
        return before
    }

    /// After each frame: what the memory budget and the network allow now.
    /// A new size goes to the capture loop (the encoder follows the
    /// pictures); a new bitrate is a reconfiguration. Returns false when the
    /// sender has to stop.
    private func adapt(_ context: SenderContext) -> Bool {
        var memory = governor?.current
        if let governor {
            switch governor.observe(context) {
            case .stay: break
            case .fail(let message):
                context.fail(.memory(message))
                return false
            case .step(let rung):
                memory = rung
                network.video.withLock { $0.setHistoryCapacity(rung.historyPackets) }
            }
        }
        let now = SystemClock.now()
        var video = baseBitrate
        if configuration.congestionControl {
            video = videoBudget()
            _ = stepLadder(video, now: now, context)
        }
        let fps = min(memory?.fps ?? configuration.fps, ladder.current.fps)
        let height = min(memory?.height ?? baseSize.height, ladder.current.height)
        let ceiling = Bitrate.kilobitsPerSecond(EncodePipeline.ceilingKbps(configuration, base: baseSize, rung: memory))
        let kbps = max(Int(min(video, ceiling).kilobitsPerSecond), 50)
        // The whole configured bitrate left for the video: nothing on the
        // path holds it back, and finer pictures may spend it.
        encoder.openPath = video >= ceiling * 0.95
        // A new frame rate needs no new encoder (and no IDR): its rate
        // control spends the bitrate in the pictures' own time, so fewer
        // pictures are each given more. A new size does.
        feed.fps.store(fps, ordering: .relaxed)
        feed.maxHeight.store(height, ordering: .relaxed)
        // Down at once; up at most every 300 ms.
        let current = encoder.bitrateKbps
        let change = Double(kbps - current) / Double(max(current, 1))
        if change < -0.05 || (change > 0.05 && now.since(lastRateChange) > .milliseconds(300)) {
            encoder.setBitrate(kbps: kbps)
            lastRateChange = now
        }
        chosenKbps = encoder.bitrateKbps
        chosenFPS = fps
        network.encoderKbps.store(chosenKbps, ordering: .relaxed)
        return true
    }
}
