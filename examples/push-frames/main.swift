// An application that renders its own pictures and sound and pushes them
// into a sender, as a game engine or a compositor would, to
// `share recv --key-file KEY-FILE` (or the embedded-viewer example), for
// SECONDS or until Ctrl-C:
//     push-frames HOST[:PORT] KEY-FILE [SECONDS]
//
// The picture (640x360, 30 fps): a red square and a blue square that stay
// put, a green ball that crosses the screen, and a clock (HH:MM:SS). The
// sound: a 440 Hz tone, made at 44.1 kHz (the sender resamples it).
import Foundation
import ShareSender

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    print("usage: push-frames HOST[:PORT] KEY-FILE [SECONDS]")
    exit(2)
}
let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 10 : .greatestFiniteMagnitude
let (width, height, fps, rate) = (640, 360, 30, 44_100)

let sender: ScreenSender
do {
    let address = arguments[1].split(separator: ":")
    var configuration = SenderConfiguration(host: String(address[0]), keying: try .keyFile(arguments[2]))
    configuration.port = address.count > 1 ? Int(address[1]) ?? 5004 : 5004
    configuration.video = .pushed(VideoSize(width: width, height: height))
    configuration.fps = fps
    configuration.audio = [AudioInput(source: .pushed(.app))]
    configuration.title = "push-frames"
    sender = try ScreenSender(configuration: configuration)
} catch {
    print("push-frames: \(error)")
    exit(1)
}
sender.start { event in print(event) }
// Ctrl-C's default (ending the process) off first, then a source to
// see it: the other way round, the source can miss it.
signal(SIGINT, SIG_IGN)
let interrupted = DispatchSemaphore(value: 0)
let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
interrupt.setEventHandler { interrupted.signal() }
interrupt.resume()

var canvas = Canvas(width: width, height: height)
var tone = [Float](repeating: 0, count: rate / 100 * 2)  // 10 ms, stereo
var samplesMade = 0
var picturesMade = 0
var outcomes: [PushOutcome: Int] = [:]
let start = Date()
while Date().timeIntervalSince(start) < seconds {
    let elapsed = Date().timeIntervalSince(start)
    // Sound: keep up with the clock, 10 ms at a time.
    while Double(samplesMade) < elapsed * Double(rate) {
        for i in 0..<tone.count / 2 {
            let value = Float(0.3 * sin(2 * Double.pi * 440 * Double(samplesMade + i) / Double(rate)))
            tone[2 * i] = value
            tone[2 * i + 1] = value
        }
        let outcome = tone.withUnsafeBufferPointer { sender.push(audio: .float32($0), rate: rate, channels: 2, to: .app) }
        outcomes[outcome, default: 0] += 1
        samplesMade += tone.count / 2
    }
    // Pictures: one per frame interval.
    if Double(picturesMade) <= elapsed * Double(fps) {
        canvas.draw(at: elapsed)
        let outcome = canvas.pixels.withUnsafeBytes {
            sender.push(.bgra($0.baseAddress!, stride: width * 4), width: width, height: height)
        }
        outcomes[outcome, default: 0] += 1
        picturesMade += 1
    }
    if interrupted.wait(timeout: .now() + .milliseconds(2)) == .success { break }
}
sender.stop()
let statistics = sender.statistics
print("pushed \(picturesMade) pictures and \(samplesMade) samples: \(outcomes.map { "\($0.key) \($0.value)" }.sorted())")
print("sent \(statistics.framesEncoded) frames and \(statistics.audioPacketsSent) Opus packets")
