import ArgumentParser
import Foundation
import ShareSRTP
import ShareX11

struct KeyGen: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "keygen", abstract: "Write a new SRTP key file (mode 0600).")

    @Argument(help: "Where to write the key; an existing file is never overwritten.") var path: String
    @Option(help: "SRTP profile: AES_CM_128_HMAC_SHA1_80, AES_CM_128_HMAC_SHA1_32 or AEAD_AES_128_GCM.")
    var profile = "AES_CM_128_HMAC_SHA1_80"

    func run() throws {
        guard let suite = SRTPProfile(name: profile) else { fail("unknown profile \(profile)") }
        do { try KeyFile.create(path, profile: suite) } catch { fail("\(error)") }
        note("wrote \(path); copy it to the other machine over a channel you trust")
    }
}

struct Scene: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw moving content (scrolling text, moving shapes) on a display, for demos and benchmarks.")

    @Option(help: "The X display to draw on (default: $DISPLAY).") var display: String?
    @Option(help: "Frames per second.") var fps = 30
    @Option(help: "Stop after this many seconds.") var duration: Double?

    func run() throws {
        let scene: DemoScene
        do { scene = try DemoScene(display: display) } catch { fail("\(error)") }
        let stop = StopSignal(duration: duration)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var frame = 0
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "scene"))
        timer.schedule(deadline: .now(), repeating: 1.0 / Double(max(1, fps)))
        timer.setEventHandler {
            scene.draw(frame: frame)
            frame += 1
        }
        timer.resume()
        DispatchQueue.global().async {
            stop.wait()
            done.signal()
        }
        done.wait()
        timer.cancel()
    }
}
