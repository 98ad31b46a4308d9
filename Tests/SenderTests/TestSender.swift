import ShareReceiver
import ShareSender
import ShareSRTP
import TestSupport

/// The library tests' sender: to 127.0.0.1 on a free port, capturing
/// `display`, with a static key. The memory governor runs as in any host
/// process: on the sender's own account (the test runner's footprint, far
/// over 50 MiB, is not the sender's).
func testSenderConfiguration(display: VirtualDisplay,
                             keying: SRTPKeyingMaterial = .random(profile: .aes128CmHmacSha1_80)) -> SenderConfiguration {
    var configuration = SenderConfiguration(host: "127.0.0.1", keying: keying)
    configuration.port = freeUDPPort()
    configuration.display = display.display
    return configuration
}

/// A receiver on a free port with no window and no playback, keyed by a
/// handshake on `secret`.
func headlessReceiving(_ secret: [UInt8]) -> ReceiverConfiguration {
    var receiving = ReceiverConfiguration(keying: .handshake(.preSharedKey(secret), store: nil))
    receiving.port = 0
    receiving.showWindow = false
    receiving.playAudio = false
    return receiving
}

/// A sender of `display` to the receiver on `port`, keyed by a handshake on `secret`.
func screenSending(_ secret: [UInt8], to port: Int, display: VirtualDisplay) -> SenderConfiguration {
    var sending = SenderConfiguration(host: "127.0.0.1", keying: .handshake(.preSharedKey(secret), store: nil))
    sending.port = port
    sending.display = display.display
    return sending
}
