import Dispatch
internal import ShareAudio
internal import ShareFrames
internal import ShareSRTP
internal import ShareSession
internal import ShareWire
internal import ShareBase
internal import ShareSync

/// One audio stream: its reader, its Opus encoder and its RTP stream; its
/// thread reads, encodes and hands packets to the network driver, 20 ms at
/// a time. It never touches the video path: a stalled or vanished audio
/// server stops only this stream, with one warning.
final class AudioChannel: Sendable {
    let input: AudioInput
    /// Channels the stream carries (the reader's).
    let channels: Int
    /// The reader and the encoder: this channel's thread's own.
    private let coding: ThreadBound<(reader: AudioReader, encoder: OpusEncoder)>
    let timestampBase = UInt32.random(in: 0...UInt32.max)
    let ssrc: UInt32
    /// The host's pushed stream, when this channel sends one (fixed at
    /// init: the host's pushes reach it without touching the reader).
    let pushed: PushedAudioBuffer?

    /// `ssrc`: the host's choice, or nil for a random one.
    init(input: AudioInput, ssrc: UInt32? = nil) throws(SenderError) {
        self.input = input
        let reader = try AudioReader(input)
        pushed = reader.pushed
        channels = reader.channels
        do {
            let encoder = try OpusEncoder(channels: reader.channels, content: input.isVoice ? .voice : .music,
                                          bitrate: input.bitrate)
            coding = ThreadBound((reader, encoder))
        } catch {
            throw .audio("\(input.label): \(error)")
        }
        self.ssrc = ssrc ?? UInt32.random(in: 1...UInt32.max)
    }

    func makeStream(keys: SRTPSessionKeys, payloadType: UInt8, cname: String) throws(SenderError) -> SendStream {
        var configuration = SendStream.Configuration(ssrc: ssrc, cname: cname)
        configuration.payloadType = payloadType
        configuration.clockRate = 48_000
        configuration.historyPackets = 64
        do {
            return try SendStream(configuration: configuration, keys: keys)
        } catch {
            throw .encryption(error.description)
        }
    }

    func run(_ context: SenderContext, index: Int, network: NetworkDriver) {
        coding.withValue { run(context, index: index, network: network, reader: $0.reader, encoder: $0.encoder) }
    }

    private func run(_ context: SenderContext, index: Int, network: NetworkDriver, reader: AudioReader,
                     encoder: OpusEncoder) {
        var samples: UInt32 = 0
        /// Where the next frame of a continuous pushed stream would begin.
        var expected: MonotonicTime?
        let sleeper = context.pauseSleeper()
        while context.isActive {
            // Paused, it sleeps until the state changes; a host's pushed
            // stream is still taken (and dropped) as the host pushes it.
            if !context.isRunning && pushed == nil {
                reader.suspend()
                _ = sleeper.wait(timeout: .now() + .seconds(1))
                continue
            }
            let read: (pcm: [Int16], captured: CaptureTime)?
            do {
                read = try reader.read()
            } catch {
                context.emit(.warning("\(input.label) stopped: \(error); video goes on"))
                return
            }
            guard let frame = read, context.isRunning else { continue }
            // A host that stopped pushing for a while: its RTP clock moves on
            // by the silence, so the receiver keeps sound and picture in step.
            let at = frame.captured.monotonic
            if pushed != nil, let expected, at > expected + .milliseconds(60) {
                let gap = at.since(expected).nanoseconds
                samples &+= UInt32(truncatingIfNeeded: gap / 1_000_000_000 * UInt64(OpusFormat.sampleRate)
                                   + gap % 1_000_000_000 * UInt64(OpusFormat.sampleRate) / 1_000_000_000)
            }
            expected = at + .milliseconds(20)
            let timestamp = timestampBase &+ samples
            samples &+= UInt32(OpusFormat.frameSamples)
            do {
                let packet = try encoder.encode(frame.pcm)
                try network.sendAudio(index, payload: packet, rtpTimestamp: timestamp,
                                      captureTime: NTPTimestamp(unixNanoseconds: frame.captured.unixNanoseconds),
                                      now: frame.captured.monotonic)
            } catch {
                context.emit(.warning("\(input.label) stopped: \(error); video goes on"))
                return
            }
        }
    }
}
