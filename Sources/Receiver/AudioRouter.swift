internal import ShareBase
internal import ShareAudio
internal import ShareSync
internal import ShareWire

/// The receiver's sound: a track for each audio stream of the session, its
/// packets decoded (FEC and concealment included) and sent where they go:
/// the host (`onSound`), the player and the recording; and how long after
/// capture the played sound is heard, which pictures wait for (lip sync).
/// Used by the decode thread only.
final class AudioRouter {
    private let onSound: (@Sendable (ReceivedSound) -> Void)?
    private let recording: SessionRecording?
    private let events: @Sendable (ReceiverEvent) -> Void
    private var tracks: [UInt32: AudioTrack] = [:]
    /// The tracks' SSRCs in the order they came: the recording's track order.
    private var order: [UInt32] = []
    private var player: AudioPlayer?
    private var playerFailed: Bool
    /// Capture-to-heard delay of played sound (µs, smoothed), and when sound last played.
    private(set) var heardDelay: Int64?
    private var playedAt = MonotonicTime.zero
    /// The sound of the streams of earlier sessions.
    private var before = AudioStatistics()
    /// Packets of streams past the cap, this session.
    private var refused = 0

    /// The most audio streams one session may bring (each is an Opus
    /// decoder): a sender sends two at most (system sound and microphone),
    /// so this leaves room for other senders' layouts and no more.
    static let maximumStreams = 8

    init(configuration: ReceiverConfiguration, recording: SessionRecording?,
         events: @escaping @Sendable (ReceiverEvent) -> Void) {
        onSound = configuration.onSound
        playerFailed = !configuration.playAudio
        self.recording = recording
        self.events = events
    }

    /// This session's streams' channel counts, in track order (the recording's tracks).
    var channels: [Int] { order.compactMap { tracks[$0]?.channels } }

    /// Whether pictures wait for the sound, for lip sync: while it plays.
    var holdsPictures: Bool {
        heardDelay != nil && player != nil && SystemClock.now().since(playedAt) < .seconds(1)
    }

    /// The tracks the sender said it sends, in its order, before their first
    /// packets: the recording need not wait for sound to open.
    func announce(_ streams: [AudioStreamLayout]) {
        for stream in streams where (1...2).contains(stream.channels) && tracks[stream.ssrc] == nil
            && tracks.count < Self.maximumStreams && recording?.accepts(audioTrack: order.count) != false {
            guard let track = try? AudioTrack(ssrc: stream.ssrc, channels: Int(stream.channels), index: order.count)
            else { continue }
            add(track)
        }
        recording?.noteAudioLayout()
    }

    /// Decodes one packet and sends its sound on; `captured` is its capture
    /// instant on the sender's clock (Unix µs).
    func route(_ packet: RTPPacket, captured: Int64) {
        if tracks[packet.ssrc] == nil {
            guard tracks.count < Self.maximumStreams else {
                if refused == 0 { events(.warning("more than \(Self.maximumStreams) audio streams: the others are dropped")) }
                refused += 1
                return
            }
            // A new stream after the recording started cannot join its file.
            guard let track = try? AudioTrack(ssrc: packet.ssrc, firstPacket: packet.payload, index: order.count)
            else { return }
            add(track)
            recording?.noteMedia(audio: true)
        }
        guard let track = tracks[packet.ssrc] else { return }
        let pcm = track.decode(packet)
        if let onSound, !pcm.isEmpty {
            // Concealed frames come first, before the packet's own.
            for (i, frame) in pcm.enumerated() {
                onSound(ReceivedSound(stream: track.index, samples: frame,
                                      capturedUnixNanoseconds: (captured - Int64(pcm.count - 1 - i) * 20_000) * 1000))
            }
        }
        if !pcm.isEmpty { play(pcm, captured: captured) }
        if let recording, recording.accepts(audioTrack: track.index) {
            let samples = (try? OpusPacketInfo(packet: packet.payload).samples) ?? 960
            let time = track.timeline.time(rtp: packet.timestamp, captured: captured)
            recording.add(.audio(track.index, packet.payload, time, samples))
        }
    }

    /// The session ended: its streams' sound is kept in the totals, the
    /// streams and the heard delay are forgotten.
    func endSession() {
        before.add(sessionStatistics())
        tracks = [:]
        order = []
        heardDelay = nil
        refused = 0
    }

    /// The sound of every session so far.
    var statistics: AudioStatistics {
        var audio = sessionStatistics()
        audio.add(before)
        audio.packetsRecorded = recording?.audioPacketsWritten ?? 0
        audio.framesDroppedForPlayback = player?.framesDropped ?? 0
        return audio
    }

    func stop() { player?.stop() }

    private func add(_ track: AudioTrack) {
        tracks[track.ssrc] = track
        order.append(track.ssrc)
    }

    /// Plays the frames (opening the player at the first) and learns how
    /// long after capture they are heard; a player that fails is dropped
    /// with one warning.
    private func play(_ pcm: [ArraySlice<Int16>], captured: Int64) {
        guard !playerFailed else { return }
        if player == nil {
            do {
                player = try AudioPlayer()
            } catch {
                playerFailed = true
                events(.warning("no audio playback (\(error)); use --no-audio to silence this"))
            }
        }
        guard let player else { return }
        for frame in pcm { player.play(frame) }
        let heard = Int64(SystemClock.wall() / 1000) + player.delayMicroseconds
        let sample = heard - captured
        heardDelay = heardDelay.map { ($0 * 7 + sample) / 8 } ?? sample
        playedAt = SystemClock.now()
        if let failure = player.failure.withLock({ $0 }) {
            playerFailed = true
            self.player = nil
            events(.warning("audio playback stopped: \(failure); video goes on"))
        }
    }

    /// The sound of this session's streams so far.
    private func sessionStatistics() -> AudioStatistics {
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
        audio.packetsOfStreamsRefused = refused
        return audio
    }
}
