import ArgumentParser
import Foundation
import ShareCommands
import ShareX11

struct Scene: ParsableCommand {
    static let configuration = CommandText.scene
    @OptionGroup var options: SceneOptions

    func run() throws {
        let (display, fps, duration) = (options.display, options.fps, options.duration)
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
