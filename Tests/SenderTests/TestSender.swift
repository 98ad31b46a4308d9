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
