@testable import ShareSender
import ShareBase
import ShareCongestion
import ShareGovernor
import ShareSession
import ShareSRTP
import ShareVideo
import ShareWire
import Testing

/// The sender's plan, worked out with no display and no socket.
@Suite("Sender plan: sizes, ceilings, the governor's account, congestion bounds and SDP")
struct SenderPlanTests {
    let key = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
    let ssrcs = SenderPlan.StreamSSRCs(video: 0x1111, retransmission: 0x2222, forwardErrorCorrection: nil)

    func configuration(_ change: (inout SenderConfiguration) -> Void = { _ in }) -> SenderConfiguration {
        var configuration = SenderConfiguration(host: "127.0.0.1", keying: key)
        change(&configuration)
        return configuration
    }

    @Test func withoutABudgetThePlanIsTheConfiguredOne() {
        let plan = SenderPlan(configuration: configuration { $0.fps = 30; $0.memoryBudget = nil }, source: VideoSize(width: 1279, height: 721),
                              captureBuffers: .zero, ssrcs: ssrcs)
        #expect(plan.baseSize == VideoSize(width: 1278, height: 720), "even, as the encoder takes it")
        #expect(plan.encodedSize == plan.baseSize && plan.fps == 30 && plan.governor == nil && plan.startupFailure == nil)
        #expect(plan.baseBitrate == .kilobitsPerSecond(H264Encoder.Configuration.defaultBitrateKbps(width: 1278, height: 720, fps: 30)))
        #expect(.kilobitsPerSecond(plan.encoderBitrateKbps) == plan.baseBitrate)
        let stream = plan.videoStream
        #expect(stream.ssrc == 0x1111 && stream.retransmission?.ssrc == 0x2222 && stream.forwardErrorCorrection == nil)
        #expect(stream.historyPackets == SenderPlan.historyPackets)
    }

    @Test func aTinyRegionIsScaledUpAndAConfiguredBitrateWins() {
        let plan = SenderPlan(configuration: configuration { $0.bitrateKbps = 700 }, source: VideoSize(width: 8, height: 8),
                              captureBuffers: .zero, ssrcs: ssrcs)
        #expect(plan.baseSize == VideoSize(width: 16, height: 16))
        #expect(plan.baseBitrate == .kilobitsPerSecond(700))
    }

    /// The governor counts the process's runtime and the band buffers
    /// (process accounting), or the sender's own rings and each audio
    /// stream (sender accounting), beside the pictures.
    @Test func theGovernorsAccountNamesWhatItCounts() {
        let source = VideoSize(width: 1920, height: 1080)
        let buffers = ByteCount.mebibytes(3)
        let process = SenderPlan.account(configuration { $0.memoryAccounting = .process }, base: source, captureBuffers: buffers)
        #expect(process.fixed == SenderPlan.FixedMemory.processBase + buffers)
        let sender = SenderPlan.account(configuration { $0.audio = [AudioInput(source: .tone(hertz: 440)), AudioInput(source: .tone(hertz: 880))] },
                                        base: source, captureBuffers: buffers)
        #expect(sender.fixed == buffers + SenderPlan.FixedMemory.senderRings + SenderPlan.FixedMemory.perAudioStream * 2)
        #expect(sender.sourceWidth == 1920 && sender.sourceHeight == 1080)
    }

    /// A tight budget starts on a cheaper rung (smaller, fewer frames, a
    /// lower ceiling); one no rung fits is a startup failure, said in words.
    @Test func aBudgetChoosesTheStartingRungOrSaysItCannot() {
        let source = VideoSize(width: 1920, height: 1080)
        let roomy = SenderPlan(configuration: configuration { $0.memoryBudget = MemoryBudget(bytes: 400 << 20) }, source: source,
                               captureBuffers: .mebibytes(2), ssrcs: ssrcs)
        #expect(roomy.encodedSize == roomy.baseSize && roomy.startupFailure == nil)
        let tight = SenderPlan(configuration: configuration { $0.memoryBudget = MemoryBudget(bytes: 12 << 20) }, source: source,
                               captureBuffers: .mebibytes(2), ssrcs: ssrcs)
        #expect(tight.startupFailure == nil, "\(tight.startupFailure ?? "")")
        #expect(tight.encodedSize.height < 1080 && Bitrate.kilobitsPerSecond(tight.encoderBitrateKbps) < tight.baseBitrate, "\(tight.encodedSize)")
        #expect(tight.videoStream.historyPackets == tight.governor?.current.historyPackets)
        let impossible = SenderPlan(configuration: configuration { $0.memoryBudget = MemoryBudget(bytes: 1 << 20) }, source: source,
                                    captureBuffers: .mebibytes(2), ssrcs: ssrcs)
        #expect(impossible.startupFailure?.isEmpty == false)
    }

    /// The controller's ceiling is the video with headers and room for
    /// repairs, plus the audio; its floor a small share of the video (at
    /// least 100 kbit/s), plus the audio. It starts at `startShare` of the
    /// video's ceiling, plus the audio, where a retransmission stream can
    /// carry the probes that seek the ceiling, and at the ceiling where
    /// none can.
    @Test func congestionBoundsCoverEverythingSent() {
        let plan = SenderPlan(configuration: configuration { $0.bitrateKbps = 4000 }, source: VideoSize(width: 1280, height: 720),
                              captureBuffers: .zero, ssrcs: ssrcs)
        let audio = SenderPlan.audioBitrate([96_000])
        #expect(audio == .kilobitsPerSecond(96 + 16))
        let bounds = plan.congestion(audio: audio)
        #expect(bounds.maximum == .kilobitsPerSecond(4000) * SenderPlan.overheadFactor + audio)
        #expect(bounds.start == .kilobitsPerSecond(4000) * SenderPlan.overheadFactor * SenderPlan.startShare + audio,
                "the video's share, the sound whole")
        let unprobed = SenderPlan(configuration: configuration { $0.bitrateKbps = 4000 }, source: VideoSize(width: 1280, height: 720),
                                  captureBuffers: .zero, ssrcs: .init(video: 0x1111, retransmission: nil, forwardErrorCorrection: nil))
        #expect(unprobed.congestion(audio: audio).start == bounds.maximum)
        #expect(bounds.minimum == .kilobitsPerSecond(200) + audio)
        let low = SenderPlan(configuration: configuration { $0.bitrateKbps = 500 }, source: VideoSize(width: 640, height: 360),
                             captureBuffers: .zero, ssrcs: ssrcs)
        #expect(low.congestion(audio: .zero).minimum == .kilobitsPerSecond(100))
    }

    /// The SDP names the plan's SSRCs, the encoder's parameter sets (and the
    /// profile they say), the repairs, and each audio stream on its port.
    @Test func theSessionDescriptionFollowsThePlan() throws {
        let plan = SenderPlan(configuration: configuration { $0.audioPorts = [5006] }, source: VideoSize(width: 1280, height: 720),
                              captureBuffers: .zero, ssrcs: ssrcs)
        let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC]
        let pps: [UInt8] = [0x68, 0xEE, 0x3C, 0x80]
        let description = plan.sessionDescription(keying: key, host: "127.0.0.1", parameterSets: [sps, pps],
                                                  audio: [.init(ssrc: 0x3333, channels: 2)])
        let text = description.serialized()
        #expect(text.contains("profile-level-id=64001f"), "\(text)")
        #expect(text.contains("sprop-parameter-sets=\(Base64.encode(sps)),\(Base64.encode(pps))"))
        #expect(text.contains("a=ssrc:4369 cname:") && text.contains("a=ssrc:8738 cname:") && text.contains("a=ssrc:13107 cname:"))
        #expect(description.media.count == 2 && description.media[1].port == 5006)
        #expect(text.contains("stereo=1"))
    }

    @Test func onlyReceiversThatMayJoinWithoutAskingGetPeriodicSweeps() {
        let handshake = SessionKeying.handshake(.preSharedKey(Array("secret".utf8)), store: nil)
        #expect(configuration { $0.keying = handshake }.refreshInterval == H264Encoder.Configuration.never,
                "share recv asks for an IDR when it joins or loses a picture")
        #expect(configuration().refreshInterval == nil, "a static key's receiver may join without asking: the encoder's 3 s")
        #expect(configuration { $0.keying = handshake; $0.keyframeInterval = 45 }.refreshInterval == 45, "asked for")
        #expect(configuration { $0.keying = handshake; $0.intraRefresh = false }.refreshInterval == nil,
                "periodic keyframes stay periodic")
    }
}
