import Foundation
import ShareReceiver
import ShareSender
import Synchronization
import TestSupport
import Testing

@Suite("A host pushes its own pictures", .serialized, .alone)
struct PushTests {
    /// A producer pushing 120 pictures a second into a 30 fps sender, from a
    /// thread that never waits: about one in four is taken, the rest are
    /// dropped as too soon and counted, the encoder keeps its rate, and the
    /// receiver's recording shows the pushed picture. Then I420 and NV12
    /// pictures of another size, scaled to the encoded size.
    @Test func pushedPicturesAreSentAndTheRestCounted() throws {
        let dir = try TemporaryDirectory()
        let secret = "pushed pictures"
        let receiving = headlessReceiver(secret, recordPath: dir.path("pushed.mkv"))
        let receiver = try ScreenReceiver(configuration: receiving)
        receiver.start()
        defer { receiver.stop() }

        let sending = pushingSender(secret, port: receiver.port, width: 640, height: 360)
        let sender = try ScreenSender(configuration: sending)
        let early = frame(width: 640, height: 360, bar: 0)
        let notYet = early.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 640 * 4), width: 640, height: 360) }
        #expect(notYet == .notRunning)
        sender.start()
        defer { sender.stop() }
        #expect(waitForSession(sender), "the handshake")

        var outcomes: [PushOutcome] = []
        let pictures = (0..<8).map { frame(width: 640, height: 360, bar: 100 + $0 * 60) }
        let started = Date()
        var n = 0
        while Date().timeIntervalSince(started) < 2 {
            let picture = pictures[n % pictures.count]
            outcomes.append(picture.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 640 * 4), width: 640, height: 360) })
            n += 1
            Thread.sleep(forTimeInterval: 1.0 / 120)
        }
        let accepted = outcomes.filter { $0 == .accepted }.count
        let tooSoon = outcomes.filter { $0 == .tooSoon }.count
        #expect(outcomes.allSatisfy { $0 == .accepted || $0 == .tooSoon || $0 == .busy }, "\(Set(outcomes.map { "\($0)" }))")
        #expect(accepted >= 45 && accepted <= 66, "about 30 a second taken: \(accepted) of \(outcomes.count)")
        #expect(tooSoon >= outcomes.count / 2, "\(tooSoon) too soon")
        let stats = sender.statistics
        #expect(stats.framesDroppedTooSoon == tooSoon && stats.framesCaptured == accepted, "\(stats)")
        #expect(stats.framesEncoded >= accepted - 3, "encoded \(stats.framesEncoded) of \(accepted)")

        // A picture that does not fit is refused, with why.
        let short = early.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 100), width: 640, height: 360) }
        #expect(short == .refused("a stride too small for 640 pixels"))

        // I420 and NV12 at 1280x720: scaled to 640x360. Solid green, then solid magenta.
        let (w, h) = (1280, 720)
        var y = [UInt8](repeating: 145, count: w * h), u = [UInt8](repeating: 54, count: w * h / 4), v = [UInt8](repeating: 34, count: w * h / 4)
        for _ in 0..<15 {
            _ = y.withUnsafeBufferPointer { yp in u.withUnsafeBufferPointer { up in v.withUnsafeBufferPointer { vp in
                sender.push(.i420(y: yp.baseAddress!, yStride: w, u: up.baseAddress!, uStride: w / 2, v: vp.baseAddress!, vStride: w / 2),
                            width: w, height: h)
            } } }
            Thread.sleep(forTimeInterval: 1.0 / 30)
        }
        y = [UInt8](repeating: 106, count: w * h)
        let uv = (0..<(w * h / 2)).map { $0 % 2 == 0 ? UInt8(202) : UInt8(222) }
        for _ in 0..<15 {
            _ = y.withUnsafeBufferPointer { yp in uv.withUnsafeBufferPointer { uvp in
                sender.push(.nv12(y: yp.baseAddress!, yStride: w, uv: uvp.baseAddress!, uvStride: w), width: w, height: h)
            } }
            Thread.sleep(forTimeInterval: 1.0 / 30)
        }
        Thread.sleep(forTimeInterval: 0.3)
        sender.stop()
        Thread.sleep(forTimeInterval: 0.3)
        receiver.stop()
        let last = try lastPictureRGB(dir.path("pushed.mkv"), width: 640, height: 360)
        let centre = (180 * 640 + 320) * 3
        #expect(last[centre] > 200 && last[centre + 1] < 60 && last[centre + 2] > 200, "magenta: \(last[centre..<centre + 3])")
        // Green came before it: the recording holds it too.
        #expect(receiver.statistics.framesDecoded >= accepted + 20, "\(receiver.statistics.framesDecoded)")
    }

    /// App audio (44.1 kHz stereo floats) and the microphone (16 kHz mono
    /// integers) pushed in 10 ms pieces beside the pictures: each arrives as
    /// its own stream, resampled, at its own pitch; what does not fit is
    /// refused with why; a burst of a second is cut to the newest 200 ms.
    @Test func pushedSoundArrivesAsTwoStreams() throws {
        let dir = try TemporaryDirectory()
        let secret = "pushed sound"
        let receiving = headlessReceiver(secret, recordPath: dir.path("sound.mkv"))
        let receiver = try ScreenReceiver(configuration: receiving)
        receiver.start()
        defer { receiver.stop() }

        let sending = pushingSender(secret, port: receiver.port, width: 320, height: 180, audio: [AudioInput(source: .pushed(.app)), AudioInput(source: .pushed(.microphone))])
        let sender = try ScreenSender(configuration: sending)
        #expect(sender.audioWarnings.isEmpty, "\(sender.audioWarnings)")
        sender.start()
        defer { sender.stop() }
        #expect(waitForSession(sender), "the handshake")

        let picture = frame(width: 320, height: 180, bar: 160)
        var outcomes: [PushOutcome] = []
        var (appFrames, micFrames) = (0, 0)
        let started = Date()
        var lastPicture = -1.0
        while Date().timeIntervalSince(started) < 3 {
            let elapsed = Date().timeIntervalSince(started)
            while Double(appFrames) < elapsed * 44_100 {
                let app = (0..<441).flatMap { i -> [Float] in
                    let v = Float(0.4 * sin(2 * Double.pi * 440 * Double(appFrames + i) / 44_100))
                    return [v, v]
                }
                outcomes.append(app.withUnsafeBufferPointer { sender.push(audio: .float32($0), rate: 44_100, channels: 2, to: .app) })
                appFrames += 441
            }
            while Double(micFrames) < elapsed * 16_000 {
                let mic = (0..<160).map { Int16(12_000 * sin(2 * Double.pi * 1000 * Double(micFrames + $0) / 16_000)) }
                outcomes.append(mic.withUnsafeBufferPointer { sender.push(audio: .int16($0), rate: 16_000, channels: 1, to: .microphone) })
                micFrames += 160
            }
            if elapsed - lastPicture >= 1.0 / 30 {
                _ = picture.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 320 * 4), width: 320, height: 180) }
                lastPicture = elapsed
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        #expect(outcomes.allSatisfy { $0 == .accepted }, "\(Set(outcomes.map { "\($0)" }))")
        #expect(sender.statistics.audioFramesDropped == 0)

        let odd = [Float](repeating: 0, count: 300)
        let refusedRate = odd.withUnsafeBufferPointer { sender.push(audio: .float32($0), rate: 44_101, channels: 1, to: .app) }
        #expect(refusedRate == .refused("a rate of 44101 Hz (8000 to 192000, a common rate)"))
        let refusedChannels = odd.withUnsafeBufferPointer { sender.push(audio: .float32($0), rate: 48_000, channels: 3, to: .app) }
        #expect(refusedChannels == .refused("3 channels (1 or 2)"))

        // A second at once: the newest 200 ms stay, the rest is counted.
        let burst = [Int16](repeating: 100, count: 48_000)
        let burstOutcome = burst.withUnsafeBufferPointer { sender.push(audio: .int16($0), rate: 48_000, channels: 1, to: .microphone) }
        #expect(burstOutcome == .accepted)
        let dropped = sender.statistics.audioFramesDropped
        #expect(dropped >= 48_000 - 9_600 - 960 && dropped <= 48_000 - 9_600 + 960, "\(dropped) dropped")

        Thread.sleep(forTimeInterval: 0.3)
        sender.stop()
        Thread.sleep(forTimeInterval: 0.3)
        receiver.stop()
        let app = try decodeAudio(dir.path("sound.mkv"), track: 0)
        let mic = try decodeAudio(dir.path("sound.mkv"), track: 1)
        let appHertz = try #require(toneFrequency(Array(app.prefix(48_000 * 3))))
        let micHertz = try #require(toneFrequency(Array(mic.prefix(48_000 * 3))))
        #expect(abs(appHertz - 440) < 2, "app \(appHertz) Hz")
        #expect(abs(micHertz - 1000) < 2, "microphone \(micHertz) Hz")
        #expect(receiver.statistics.audio.streams == 2)
    }

    /// A host that stops pushing: its newest picture is sent again every
    /// `stillRefresh`, and at once (not at the next refresh) when a
    /// receiver that restarted needs a keyframe.
    @Test func aHostThatStopsPushingStillHasItsPictureSent() throws {
        let secret = "a quiet host"
        var receiving = headlessReceiver(secret)
        let first = try ScreenReceiver(configuration: receiving)
        first.start()
        var sending = pushingSender(secret, port: first.port, width: 320, height: 180)
        sending.stillRefresh = .seconds(1)
        let sender = try ScreenSender(configuration: sending)
        sender.start()
        defer { sender.stop() }
        #expect(waitForSession(sender), "the handshake")
        let picture = frame(width: 320, height: 180, bar: 40)
        for _ in 0..<5 {
            _ = picture.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 320 * 4), width: 320, height: 180) }
            Thread.sleep(forTimeInterval: 1.0 / 30)
        }
        Thread.sleep(forTimeInterval: 2.6)
        let repeated = sender.statistics.framesRepeated
        #expect(repeated >= 2 && repeated <= 3, "\(repeated) repeated in 2.6 s")
        #expect(first.statistics.framesDecoded >= 5 + repeated - 1, "\(first.statistics.framesDecoded) decoded")
        first.stop()  // its port is free again at once

        // A receiver restarted on the same port: a new session, a keyframe
        // request, and the picture comes with it, long before a refresh would.
        receiving.port = sending.port
        receiving.recordPath = nil
        let times = Mutex<(session: Date?, picture: Date?)>((nil, nil))
        let second = try ScreenReceiver(configuration: receiving)
        second.start { event in
            switch event {
            case .sessionStarted: times.withLock { if $0.session == nil { $0.session = Date() } }
            case .firstFrame: times.withLock { if $0.picture == nil { $0.picture = Date() } }
            default: break
            }
        }
        defer { second.stop() }
        let deadline = Date().addingTimeInterval(6)
        while Date() < deadline, times.withLock({ $0.picture }) == nil { Thread.sleep(forTimeInterval: 0.01) }
        let (session, shown) = times.withLock { $0 }
        let began = try #require(session, "no new session")
        let pictured = try #require(shown, "no picture at the restarted receiver")
        #expect(pictured.timeIntervalSince(began) < 0.4, "picture \(pictured.timeIntervalSince(began)) s after the session")
    }

    @Test func aSenderWithoutThatStreamRefusesSound() throws {
        var sending = SenderConfiguration(host: "127.0.0.1", keying: .staticKey(.random(profile: .aes128CmHmacSha1_80)))
        sending.video = .pushed(VideoSize(width: 320, height: 180))
        sending.audio = [AudioInput(source: .pushed(.app))]
        let sender = try ScreenSender(configuration: sending)
        let samples = [Int16](repeating: 0, count: 960)
        let outcome = samples.withUnsafeBufferPointer { sender.push(audio: .int16($0), rate: 48_000, channels: 1, to: .microphone) }
        #expect(outcome == .refused("no audio input is pushed as microphone (configuration.audio)"))
        let early = samples.withUnsafeBufferPointer { sender.push(audio: .int16($0), rate: 48_000, channels: 1, to: .app) }
        #expect(early == .notRunning)
        sending.audio.append(AudioInput(source: .pushed(.app)))
        #expect(throws: SenderError.self) { try ScreenSender(configuration: sending) }
    }

    @Test func aScreenSenderRefusesPushes() throws {
        let display = try VirtualDisplay(width: 320, height: 240)
        var configuration = SenderConfiguration(host: "127.0.0.1", keying: .random(profile: .aes128CmHmacSha1_80))
        configuration.port = freeUDPPort()
        configuration.display = display.display
        let sender = try ScreenSender(configuration: configuration)
        let pixels = [UInt8](repeating: 0, count: 64 * 64 * 4)
        let outcome = pixels.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 256), width: 64, height: 64) }
        guard case .refused(let why) = outcome else { Issue.record("\(outcome)"); return }
        #expect(why.contains("captures the screen"))
    }
}
