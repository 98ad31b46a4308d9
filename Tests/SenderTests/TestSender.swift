import ShareSender
import ShareSRTP
import TestSupport

/// The library tests' sender: to 127.0.0.1 on a free port, capturing
/// `display`, with a static key. The memory governor is off: in a test it
/// would measure the whole test runner (over budget, it ends the sender).
func testSenderConfiguration(display: VirtualDisplay,
                             keying: SRTPKeyingMaterial = .random(profile: .aes128CmHmacSha1_80)) -> SenderConfiguration {
    var configuration = SenderConfiguration(host: "127.0.0.1", keying: keying)
    configuration.port = freeUDPPort()
    configuration.display = display.display
    configuration.memoryBudget = nil
    return configuration
}
