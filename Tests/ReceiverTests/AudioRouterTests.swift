import Foundation
internal import ShareAudio
@testable import ShareReceiver
import ShareSync
@testable import ShareWire
import Testing

/// The receiver's sound router, fed real Opus packets: the host hears every
/// 20 ms in order (lost ones concealed) with its capture instant, the counts
/// say what happened, and a session's end keeps them in the totals.
@Suite("The receiver's sound router")
struct AudioRouterTests {
    /// `count` 20 ms Opus packets of a 440 Hz tone, as the sender codes `content`.
    private func packets(_ count: Int, content: OpusEncoder.Content, ssrc: UInt32 = 7) throws -> [RTPPacket] {
        let channels = content == .music ? 2 : 1
        let encoder = try OpusEncoder(channels: channels, content: content, bitrate: content == .music ? 96_000 : 32_000)
        return try (0..<count).map { n in
            let pcm = (0..<OpusFormat.frameSamples * channels).map { i in
                let t = Double(n * OpusFormat.frameSamples + i / channels) / Double(OpusFormat.sampleRate)
                return Int16(8000 * sin(2 * Double.pi * 440 * t))
            }
            return RTPPacket(payloadType: 111, sequenceNumber: UInt16(n), timestamp: UInt32(n * OpusFormat.frameSamples),
                             ssrc: ssrc, payload: ArraySlice(try encoder.encode(pcm)))
        }
    }

    private func router(heard: Locked<[ReceivedSound]>) -> AudioRouter {
        var configuration = ReceiverConfiguration(keying: .handshake(.preSharedKey(Array("router".utf8)), store: nil))
        configuration.playAudio = false
        configuration.onSound = { sound in heard.withLock { $0.append(sound) } }
        return AudioRouter(configuration: configuration, recording: nil, events: { _ in })
    }

    @Test(arguments: [OpusEncoder.Content.music, .voice])
    func theHostHearsEveryFrameInOrderWithItsCaptureInstant(content: OpusEncoder.Content) throws {
        let heard = Locked<[ReceivedSound]>([])
        let sound = router(heard: heard)
        let sent = try packets(6, content: content)
        for packet in sent where packet.sequenceNumber != 3 {
            sound.route(packet, captured: 1_000_000 + Int64(packet.sequenceNumber) * 20_000)
        }
        let frames = heard.withLock { $0 }
        #expect(frames.count == 6, "five packets and one concealed between them")
        #expect(frames.map(\.capturedUnixNanoseconds) == (0..<6).map { 1_000_000_000 + Int64($0) * 20_000_000 })
        #expect(frames.allSatisfy { $0.stream == 0 && $0.samples.count == 2 * OpusFormat.frameSamples })
        let counts = sound.statistics
        #expect(counts.streams == 1 && counts.packetsReceived == 5 && counts.packetsLost == 1)
        // Music is coded in CELT alone, which carries no in-band FEC: its
        // lost frame was concealed; voice's came back from the next packet.
        let recovered = content == .voice ? 1 : 0
        #expect(counts.framesRecoveredByFEC == recovered && counts.framesConcealed == 1 - recovered, "\(counts)")
        #expect(!sound.holdsPictures, "no sound plays, so no picture waits for it")
    }

    /// A sender cannot make the receiver open Opus decoders without end:
    /// streams past the cap are dropped and counted, with one warning, and
    /// a new session may bring its own again. A capture time from 1900 (an
    /// NTP time of 0) reaches the host as a negative Unix time, not a trap.
    @Test func streamsPastTheCapAreDroppedAndCounted() throws {
        let heard = Locked<[ReceivedSound]>([])
        let warnings = Locked<[String]>([])
        var configuration = ReceiverConfiguration(keying: .handshake(.preSharedKey(Array("router".utf8)), store: nil))
        configuration.playAudio = false
        configuration.onSound = { sound in heard.withLock { $0.append(sound) } }
        let sound = AudioRouter(configuration: configuration, recording: nil, events: { event in
            if case .warning(let text) = event { warnings.withLock { $0.append(text) } }
        })
        let earliest = NTPTimestamp(rawValue: 0).unixMicroseconds
        for ssrc in 1...20 as ClosedRange<UInt32> {
            for packet in try packets(2, content: .voice, ssrc: ssrc) { sound.route(packet, captured: earliest) }
        }
        #expect(sound.statistics.streams == AudioRouter.maximumStreams)
        #expect(sound.statistics.packetsOfStreamsRefused == 2 * (20 - AudioRouter.maximumStreams))
        #expect(warnings.withLock { $0.count } == 1)
        #expect(heard.withLock { $0.first?.capturedUnixNanoseconds } == earliest * 1000)
        sound.endSession()
        for packet in try packets(2, content: .voice, ssrc: 99) { sound.route(packet, captured: 0) }
        #expect(sound.statistics.streams == AudioRouter.maximumStreams + 1, "the totals keep the first session's")
    }

    @Test func announcedStreamsKeepTheSendersOrderAndASessionsEndKeepsTheCounts() throws {
        let heard = Locked<[ReceivedSound]>([])
        let sound = router(heard: heard)
        sound.announce([AudioStreamLayout(ssrc: 9, channels: 1), AudioStreamLayout(ssrc: 7, channels: 2),
                        AudioStreamLayout(ssrc: 5, channels: 6)])
        #expect(sound.channels == [1, 2], "a six-channel stream is not taken")
        for packet in try packets(3, content: .music, ssrc: 7) { sound.route(packet, captured: 0) }
        for packet in try packets(2, content: .voice, ssrc: 4) { sound.route(packet, captured: 0) }
        #expect(sound.channels == [1, 2, 1], "a stream not announced comes after those announced")
        #expect(heard.withLock { $0.map(\.stream) } == [1, 1, 1, 2, 2])
        sound.endSession()
        #expect(sound.channels.isEmpty)
        let counts = sound.statistics
        #expect(counts.streams == 3 && counts.packetsReceived == 5 && counts.packetsLost == 0, "\(counts)")
        for packet in try packets(1, content: .music, ssrc: 7) { sound.route(packet, captured: 0) }
        #expect(sound.channels == [2], "the next session's first stream is its track 0")
        #expect(heard.withLock { $0.last?.stream } == 0)
        #expect(sound.statistics.streams == 4 && sound.statistics.packetsReceived == 6)
    }
}
