import Synchronization
import ArgumentParser
import Foundation
import ShareAudio
import ShareCommands

import ShareScene
import ShareBase
import ShareSync
#if canImport(Glibc)
import Glibc
#endif

struct Scene: ParsableCommand {
    static let configuration = CommandText.scene
    @OptionGroup var options: SceneOptions

    func run() throws {
        let (display, fps, duration) = (options.display, options.fps, options.duration)
        if options.avSync {
            try AVSyncProbe.run(display: display, duration: duration)
            return
        }
        let scene: DemoScene
        do { scene = try DemoScene(display: display) } catch { fail("\(error)") }
        // The moving scene, the one that is hard to send, or the page of text;
        // the overlay (the stamp) is told the frame's number.
        let (video, text, grab) = (options.video, options.text, options.grabServer)
        let draw: (Int, Bool, ((DemoScene, Int) -> Void)?) -> Void = { frame, atomically, overlay in
            let atomically = atomically || grab
            let numbered: ((DemoScene) -> Void)? = overlay.map { overlay in { overlay($0, frame) } }
            if video {
                scene.drawVideo(frame: frame, atomically: atomically, overlay: numbered)
            } else if text {
                scene.drawText(frame: frame, atomically: atomically, overlay: numbered)
            } else {
                scene.draw(frame: frame, atomically: atomically, overlay: numbered)
            }
        }
        if options.render != nil {
            Self.render(options.renderFrames, to: options.out ?? "", scene: scene, draw: draw)
            return
        }
        if options.framesFromStdin {
            Self.step(draw)
            return
        }
        let stop = StopSignal(duration: duration)
        let done = DispatchSemaphore(value: 0)
        let numbered = options.numberFrames
        let overlay: ((DemoScene, Int) -> Void)? = options.stamp ? { Self.drawStamp(on: $0, frame: numbered ? $1 : nil) } : nil
        let timer: (any DispatchSourceTimer)?
        let pointer = options.pointer ? Self.movePointer(on: scene, fps: fps) : nil
        if options.stillScreen {
            draw(0, false, overlay)
            timer = options.typing ? Self.type(on: scene, fps: fps) : nil
        } else {
            // Content advances with the clock at `fps`; with a stamp, the
            // timer ticks at the stamp rate and redraws only the stamp between.
            let rate = max(1, options.stamp ? max(fps, options.stampRate) : fps)
            let start = SystemClock.now()
            nonisolated(unsafe) var drawn = -1
            let ticking = DispatchSource.makeTimerSource(flags: .strict, queue: DispatchQueue(label: "scene"))
            ticking.schedule(deadline: .now(), repeating: 1.0 / Double(rate), leeway: .nanoseconds(0))
            ticking.setEventHandler {
                let frame = Int(SystemClock.now().since(start).seconds * Double(max(1, fps)))
                if frame != drawn {
                    draw(frame, false, overlay)
                    drawn = frame
                } else if let overlay {
                    overlay(scene, frame)
                    scene.sync()
                }
            }
            ticking.resume()
            timer = ticking
        }
        DispatchQueue.global().async {
            stop.wait()
            done.signal()
        }
        done.wait()
        timer?.cancel()
        pointer?.cancel()
    }

    /// Draws each of `frames` exactly, reads it back from the screen and
    /// writes it as PNG to `out` (its %d the frame number).
    private static func render(_ frames: [Int], to out: String, scene: DemoScene,
                               draw: (Int, Bool, ((DemoScene, Int) -> Void)?) -> Void) {
        for frame in frames {
            draw(frame, true, nil)
            let pixels: [UInt32]
            do { pixels = try scene.picture() } catch { fail("\(error)") }
            let path = out.replacingOccurrences(of: "%d", with: String(frame))
            let png = Data(PNGImage.encode(rgb: pixels, width: scene.width, height: scene.height))
            do { try png.write(to: URL(fileURLWithPath: path)) } catch {
                fail("cannot write \(path): \((error as NSError).localizedDescription)")
            }
        }
    }

    /// Draws each frame whose number comes on standard input and answers
    /// with the number once the server has drawn it; ends with the input.
    private static func step(_ draw: (Int, Bool, ((DemoScene, Int) -> Void)?) -> Void) {
        while let line = readLine() {
            guard let frame = Int(line.trimmingCharacters(in: .whitespaces)), frame >= 0 else {
                fail("--frames-from-stdin: \"\(line)\" is not a frame number")
            }
            draw(frame, true, nil)
            FileHandle.standardOutput.write(Data("\(frame)\n".utf8))
        }
    }

    /// Moves the pointer round a circle in the middle of the screen, one
    /// step `fps` times a second (a turn every two seconds).
    private static func movePointer(on scene: DemoScene, fps: Int) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(flags: .strict, queue: DispatchQueue(label: "scene.pointer"))
        let rate = Double(max(1, fps))
        nonisolated(unsafe) var step = 0.0
        timer.schedule(deadline: .now(), repeating: 1.0 / rate, leeway: .nanoseconds(0))
        timer.setEventHandler {
            let angle = step / (2 * rate) * 2 * Double.pi
            let radius = Double(min(scene.width, scene.height)) / 4
            scene.movePointer(x: scene.width / 2 + Int(radius * cos(angle)), y: scene.height / 2 + Int(radius * sin(angle)))
            step += 1
        }
        timer.resume()
        return timer
    }

    /// Types into a text area below the scene's header: a character `fps`
    /// times a second, lines wrapping at the screen's width, and a caret
    /// after the last one shown and hidden every half second, as an editor
    /// draws them: each a change of a few macroblocks.
    private static func type(on scene: DemoScene, fps: Int) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(flags: .strict, queue: DispatchQueue(label: "scene.typing"))
        let text = Array("The quick brown fox jumps over the lazy dog; a screen share should cost what changed. ")
        let (left, top, advance, lineHeight) = (40, 120, 6, 16)
        let perLine = max(1, (scene.width - 2 * left) / advance)
        let lines = max(1, (scene.height - top - lineHeight) / lineHeight)
        let rate = max(1, fps)
        let started = SystemClock.now()
        nonisolated(unsafe) var typed = 0
        nonisolated(unsafe) var caretShown = false
        // Ticks at the typing rate, twice a second at least (the blink).
        timer.schedule(deadline: .now(), repeating: 1.0 / Double(max(rate, 2)), leeway: .nanoseconds(0))
        timer.setEventHandler {
            let elapsed = SystemClock.now().since(started).seconds
            let place = { (n: Int) in (x: left + n % perLine * advance, y: top + (n / perLine) % lines * lineHeight) }
            let showCaret = Int(elapsed * 2) % 2 == 0
            var drew = false
            while typed < Int(elapsed * Double(rate)) {
                let at = place(typed)
                // A new line starts on a cleared row.
                if typed % perLine == 0 { scene.fill(x: 0, y: at.y - lineHeight + 4, width: scene.width, height: lineHeight, rgb: 0x101820) }
                scene.text(String(text[typed % text.count]), x: at.x, y: at.y, rgb: 0xE0E0E0)
                typed += 1
                drew = true
            }
            if drew || showCaret != caretShown {
                let at = place(typed)
                scene.fill(x: at.x, y: at.y - 10, width: 2, height: 12, rgb: showCaret ? 0xE0E0E0 : 0x101820)
                caretShown = showCaret
                scene.sync()
            }
        }
        timer.resume()
        return timer
    }

    /// The stamp of this instant (and frame number `frame`) over a black band (see `FrameStamp`).
    static func drawStamp(on scene: DemoScene, frame: Int?) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let stamp = FrameStamp(microseconds: UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000,
                               frame: frame.map { UInt32(truncatingIfNeeded: $0) })
        stamp.paint(width: scene.width) { x, y, width, height, white in
            scene.fill(x: x, y: y, width: width, height: height, rgb: white ? 0xFFFFFF : 0x000000)
        }
    }
}

/// Flashes the screen and beeps at the same instant every two seconds. Audio
/// goes to PulseAudio in a continuous stream of 20 ms chunks (so its latency
/// stays steady); when the chunk holding a beep's first sample is queued,
/// the flash is scheduled for the moment PulseAudio says that sample plays.
enum AVSyncProbe {
    static func run(display: String?, duration: Double?) throws {
        // Only the `drawing` queue touches the scene after this point.
        nonisolated(unsafe) let scene: DemoScene
        do { scene = try DemoScene(display: display) } catch { fail("\(error)") }
        let playback: PulsePlayback
        do { playback = try PulsePlayback(channels: 2, targetLatencyMilliseconds: 60, name: "share-av-sync") } catch {
            fail("\(error)")
        }
        let drawing = DispatchQueue(label: "scene.draw")
        drawing.sync { scene.fillScreen(rgb: 0x000000) }
        let stop = StopSignal(duration: duration)
        let running = RunningFlag()
        DispatchQueue.global().async {
            stop.wait()
            running.clear()
        }
        let silence = ArraySlice([Int16](repeating: 0, count: 960 * 2))
        var beep = [Int16](repeating: 0, count: 960 * 2)
        var chunk = 0
        var beepChunksLeft = 0
        var phase = 0.0
        while running.isSet {
            let startsBeep = chunk % 100 == 50  // every 2 s, the first after 1 s
            if startsBeep { beepChunksLeft = 5 }  // 100 ms of beep
            if beepChunksLeft > 0 {
                for i in 0..<960 {
                    let v = Int16(sin(phase) * 0.5 * 32767)
                    beep[2 * i] = v
                    beep[2 * i + 1] = v
                    phase += 2 * Double.pi * 1000 / 48_000
                }
                do { try playback.write(beep[...]) } catch { fail("\(error)") }
                beepChunksLeft -= 1
            } else {
                do { try playback.write(silence) } catch { fail("\(error)") }
            }
            if startsBeep {
                // The latency covers every sample queued; the beep's first
                // sample is one chunk (20 ms) ahead of the last.
                let latency = Double(playback.latencyMicroseconds) / 1e6 - 0.020
                drawing.asyncAfter(deadline: .now() + max(latency, 0)) {
                    scene.fillScreen(rgb: 0xFFFFFF)
                    drawing.asyncAfter(deadline: .now() + 0.1) { scene.fillScreen(rgb: 0x000000) }
                }
            }
            chunk += 1
        }
    }
}

/// Set until the stop signal clears it from another thread.
final class RunningFlag: Sendable {
    private let value = Atomic<Bool>(true)
    func clear() { value.store(false, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
