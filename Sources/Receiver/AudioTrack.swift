import Dispatch
internal import ShareAudio
internal import ShareWire
import Synchronization
internal import ShareSync

/// Counters of the audio a receiver got.
public struct AudioStatistics: Sendable, Codable, Equatable {
    /// Audio streams received.
    public var streams = 0
    /// Opus packets received.
    public var packetsReceived = 0
    /// Packets that never arrived (sequence gaps).
    public var packetsLost = 0
    /// 20 ms frames rebuilt from the next packet's in-band FEC.
    public var framesRecoveredByFEC = 0
    /// 20 ms frames filled by Opus packet loss concealment.
    public var framesConcealed = 0
    /// Packets that arrived after their successors and were dropped.
    public var packetsLate = 0
    /// Opus packets written to the recording.
    public var packetsRecorded = 0
    /// Frames dropped because playback fell more than 200 ms behind.
    public var framesDroppedForPlayback = 0
    /// Packets of audio streams beyond `maximumStreams` in one session:
    /// dropped, so a sender cannot make the receiver open decoders without end.
    public var packetsOfStreamsRefused = 0

    /// All counters at zero.
    public init() {}

    /// Adds the counts of the streams of another session.
    mutating func add(_ other: AudioStatistics) {
        streams += other.streams
        packetsReceived += other.packetsReceived
        packetsLost += other.packetsLost
        framesRecoveredByFEC += other.framesRecoveredByFEC
        framesConcealed += other.framesConcealed
        packetsLate += other.packetsLate
        packetsOfStreamsRefused += other.packetsOfStreamsRefused
    }
}

/// One received Opus stream: orders packets, conceals losses (FEC for a
/// single missing packet, PLC beyond), decodes, and hands PCM to playback.
final class AudioTrack {
    let ssrc: UInt32
    let channels: Int
    let index: Int
    private let decoder: OpusDecoder
    private var expected: UInt16?
    var statistics = AudioStatistics()
    var timeline = SampleClock(rate: 48_000)

    convenience init(ssrc: UInt32, firstPacket: ArraySlice<UInt8>, index: Int) throws {
        let info = try OpusPacketInfo(packet: firstPacket)
        try self.init(ssrc: ssrc, channels: info.isStereo ? 2 : 1, index: index)
    }

    /// A stream the sender described before sending it (1 or 2 channels).
    init(ssrc: UInt32, channels: Int, index: Int) throws {
        self.ssrc = ssrc
        self.index = index
        self.channels = channels
        // Decode everything as stereo so playback mixes one format.
        decoder = try OpusDecoder(channels: 2)
    }

    /// Decodes `packet` after concealing any gap before it; returns PCM
    /// (stereo, 48 kHz) in play order. Late packets return nothing.
    func decode(_ packet: RTPPacket) -> [ArraySlice<Int16>] {
        statistics.packetsReceived += 1
        var frames: [ArraySlice<Int16>] = []
        if let expected {
            let gap = RTPSequence.distance(from: expected, to: packet.sequenceNumber)
            if gap < 0 {
                statistics.packetsLate += 1
                return []
            }
            if gap > 0 {
                statistics.packetsLost += gap
                // At most 100 ms of concealment; beyond that, just resume.
                // The frame just before this packet comes from its FEC when
                // it carries one (libopus conceals silently when it does not).
                let concealed = min(gap, 5)
                let hasFEC = (try? OpusPacketInfo(packet: packet.payload))?.carriesFEC == true
                for missing in 0..<concealed {
                    if missing == concealed - 1, gap == concealed, hasFEC, let fec = try? decoder.decode(packet.payload, fec: true) {
                        statistics.framesRecoveredByFEC += 1
                        frames.append(fec)
                    } else if let plc = try? decoder.decode(nil) {
                        statistics.framesConcealed += 1
                        frames.append(plc)
                    }
                }
            }
        }
        expected = packet.sequenceNumber &+ 1
        if let pcm = try? decoder.decode(packet.payload) { frames.append(pcm) }
        return frames
    }
}

/// Plays PCM through PulseAudio on its own thread so the receive loop never
/// blocks on the sound server. The queue holds at most 200 ms; older audio
/// is dropped (counted) to keep latency bounded.
final class AudioPlayer: @unchecked Sendable {
    // Safe: `playback` is driven by its own thread through the locked queue;
    // the decode thread only appends to the queue and reads atomics.
    private let playback: PulsePlayback
    private let queue = Locked<[ArraySlice<Int16>]>([])
    private let ready = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)
    private let dropped = Atomic<Int>(0)
    /// PulseAudio's latency after the last write, in microseconds.
    private let latency = Atomic<Int>(0)
    let failure = Locked<String?>(nil)

    init() throws {
        playback = try PulsePlayback(channels: 2, targetLatencyMilliseconds: 40)
        DispatchQueue(label: "share.receiver.audio", qos: .userInteractive).async { [self] in
            ThreadName.running(as: "share-playback") { playLoop() }
        }
    }

    /// The playback thread: writes queued frames to PulseAudio until stopped.
    private func playLoop() {
        while running.load(ordering: .relaxed) {
            _ = ready.wait(timeout: .now() + .milliseconds(100))
            while let frame = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                do {
                    try playback.write(frame)
                    latency.store(Int(playback.latencyMicroseconds), ordering: .relaxed)
                } catch {
                    failure.withLock { $0 = "\(error)" }
                    running.store(false, ordering: .relaxed)
                    break
                }
            }
        }
        done.signal()
    }

    func play(_ frame: ArraySlice<Int16>) {
        guard running.load(ordering: .relaxed) else { return }
        let overflow = queue.withLock { q -> Bool in
            q.append(frame)
            if q.count > 10 {
                q.removeFirst()
                return true
            }
            return false
        }
        if overflow { dropped.add(1, ordering: .relaxed) }
        ready.signal()
    }

    var framesDropped: Int { dropped.load(ordering: .relaxed) }

    /// How long until a frame queued now is heard, in microseconds.
    var delayMicroseconds: Int64 {
        Int64(queue.withLock { $0.count }) * 20_000 + Int64(latency.load(ordering: .relaxed))
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        ready.signal()
        done.wait()
    }
}
