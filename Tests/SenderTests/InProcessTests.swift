import Foundation
import ShareAudio
import ShareHandshake
import ShareReceiver
import ShareSender
import TestSupport
import Testing

/// The sender and the receiver libraries in one process, every thread of
/// both running (capture, encode, pacer, feedback with the handshake and the
/// congestion controller, audio, receive network, decode): the run `make
/// tsan` relies on to see the threads meet.
@Suite("Sender and receiver in one process", .serialized, .alone)
struct InProcessTests {
    @Test func aSessionWithSoundRunsEndToEnd() throws {
        let display = try VirtualDisplay(width: 320, height: 240)
        let secret = Array("a secret both ends were given".utf8)
        let receiver = try ScreenReceiver(configuration: headlessReceiving(secret))
        receiver.start()
        defer { receiver.stop() }

        var sending = screenSending(secret, to: receiver.port, display: display)
        sending.memoryBudget = nil
        sending.audio = [AudioInput(source: .tone(hertz: 440))]
        let sender = try ScreenSender(configuration: sending)
        sender.start()
        Thread.sleep(forTimeInterval: 3)
        sender.stop()
        Thread.sleep(forTimeInterval: 0.5)
        let sent = sender.statistics
        let received = receiver.statistics
        #expect(sent.sessions == 1)
        #expect(sent.framesEncoded > 0 && received.framesDecoded >= sent.framesEncoded - 2,
                "sent \(sent.framesEncoded), decoded \(received.framesDecoded)")
        #expect(sent.audioPacketsSent >= 100 && received.audio.packetsReceived >= sent.audioPacketsSent - 5,
                "audio sent \(sent.audioPacketsSent), received \(received.audio.packetsReceived)")
        #expect(received.authenticationFailures == 0 && received.replays == 0)
    }
}
