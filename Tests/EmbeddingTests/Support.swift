import Foundation
import ShareReceiver
import ShareSender

/// A BGRA picture: red on the left, blue on the right, a white bar at `bar`.
func frame(width: Int, height: Int, bar: Int) -> [UInt8] {
    var pixels = [UInt8](repeating: 0, count: width * height * 4)
    for y in 0..<height {
        for x in 0..<width {
            let i = (y * width + x) * 4
            let white = abs(x - bar) < 8
            pixels[i] = white || x >= width / 2 ? 0xFF : 0
            pixels[i + 1] = white ? 0xFF : 0
            pixels[i + 2] = white || x < width / 2 ? 0xFF : 0
            pixels[i + 3] = 0xFF
        }
    }
    return pixels
}

/// A receiver on a free port with no window, no playback and no recording,
/// keyed by a handshake on `secret`.
func headlessReceiver(_ secret: String, recordPath: String? = nil) -> ReceiverConfiguration {
    var configuration = ReceiverConfiguration(keying: .handshake(.preSharedKey(Array(secret.utf8)), store: nil))
    configuration.port = 0
    configuration.showWindow = false
    configuration.playAudio = false
    configuration.recordPath = recordPath
    return configuration
}

/// Waits (10 s at most) until `sender` has a session with its receiver:
/// pictures pushed before it are not sent. True when it came up.
@discardableResult
func waitForSession(_ sender: ScreenSender) -> Bool {
    let began = Date()
    while sender.statistics.sessions == 0 && Date().timeIntervalSince(began) < 10 { Thread.sleep(forTimeInterval: 0.01) }
    return sender.statistics.sessions > 0
}

/// A sender of pushed pictures of `width` x `height` (and no sound unless
/// given) to a receiver on `port`, keyed by a handshake on `secret`.
func pushingSender(_ secret: String, port: Int, width: Int, height: Int, audio: [AudioInput] = []) -> SenderConfiguration {
    var configuration = SenderConfiguration(host: "127.0.0.1", keying: .handshake(.preSharedKey(Array(secret.utf8)), store: nil))
    configuration.port = port
    configuration.video = .pushed(VideoSize(width: width, height: height))
    configuration.audio = audio
    return configuration
}
