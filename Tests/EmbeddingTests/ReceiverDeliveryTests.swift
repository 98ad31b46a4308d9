import Foundation
import ShareReceiver
import ShareSender
import Synchronization
import TestSupport
import Testing

@Suite("A receiver hands decoded pictures and sound to its host", .serialized, .alone)
struct ReceiverDeliveryTests {
    /// No window, no playback, no recording: the host gets every picture
    /// (red left, blue right, as pushed) and the sound (a 440 Hz tone) itself.
    @Test func picturesAndSoundReachTheHost() throws {
        struct Seen {
            var pictures = 0
            var keyframes = 0
            var left: (UInt8, UInt8, UInt8) = (0, 0, 0)
            var right: (UInt8, UInt8, UInt8) = (0, 0, 0)
            var size = (0, 0)
            var captureAge = 0.0
            var copyMatches = false
            var colorSpace: ColorSpace?
            var sound: [Int16] = []
            var streams: Set<Int> = []
        }
        let seen = Mutex(Seen())
        let secret = "host draws"
        var receiving = headlessReceiver(secret)
        receiving.onPicture = { picture in
            let pixels = picture.bgra()
            let width = picture.width
            let at = { (x: Int, y: Int) in
                let i = (y * width + x) * 4
                return (pixels[i + 2], pixels[i + 1], pixels[i])
            }
            let copy = picture.i420Copy()
            let age = Double(Int64(Date().timeIntervalSince1970 * 1e9) - picture.capturedUnixNanoseconds) / 1e9
            let matches = copy.luma(x: 70, y: 33) == picture.luma(x: 70, y: 33)
                && copy.chroma(x: 250, y: 201) == picture.chroma(x: 250, y: 201)
            seen.withLock { s in
                s.pictures += 1
                if picture.isKeyframe { s.keyframes += 1 }
                s.left = at(60, 120)
                s.right = at(260, 120)
                s.size = (picture.width, picture.height)
                s.captureAge = max(s.captureAge, age)
                s.copyMatches = matches
                s.colorSpace = picture.colorSpace
            }
        }
        receiving.onSound = { sound in
            seen.withLock { s in
                s.streams.insert(sound.stream)
                s.sound += stride(from: sound.samples.startIndex, to: sound.samples.endIndex, by: 2).map { sound.samples[$0] }
            }
        }
        let receiver = try ScreenReceiver(configuration: receiving)
        receiver.start()
        defer { receiver.stop() }

        let sending = pushingSender(secret, port: receiver.port, width: 320, height: 240, audio: [AudioInput(source: .pushed(.app))])
        let sender = try ScreenSender(configuration: sending)
        sender.start()
        defer { sender.stop() }
        #expect(waitForSession(sender), "the handshake")

        let picture = frame(width: 320, height: 240, bar: 160)
        var pushed = 0
        var pictures = 0
        let started = Date()
        var nextPicture = 0.0
        // 60 pictures at 30 a second and 2 s of sound; a loaded machine that
        // stalls this loop makes it late, not short of pictures.
        while pictures < 60 || pushed < 2 * 48_000 {
            let elapsed = Date().timeIntervalSince(started)
            while Double(pushed) < elapsed * 48_000 {
                let tone = (0..<480).flatMap { i -> [Int16] in
                    let v = Int16(10_000 * sin(2 * Double.pi * 440 * Double(pushed + i) / 48_000))
                    return [v, v]
                }
                _ = tone.withUnsafeBufferPointer { sender.push(audio: .int16($0), rate: 48_000, channels: 2, to: .app) }
                pushed += 480
            }
            if elapsed >= nextPicture && pictures < 60 {
                _ = picture.withUnsafeBytes { sender.push(.bgra($0.baseAddress!, stride: 320 * 4), width: 320, height: 240) }
                pictures += 1
                nextPicture += 1.0 / 30
            }
            Thread.sleep(forTimeInterval: 0.004)
        }
        Thread.sleep(forTimeInterval: 0.3)
        sender.stop()
        receiver.stop()
        let s = seen.withLock { $0 }
        #expect(s.pictures >= 50, "\(s.pictures) of the \(pictures) pictures pushed")
        #expect(s.pictures == receiver.statistics.framesDecoded)
        #expect(s.keyframes >= 1)
        #expect(s.size == (320, 240))
        #expect(s.left.0 > 200 && s.left.1 < 50 && s.left.2 < 50, "left \(s.left)")
        #expect(s.right.0 < 50 && s.right.1 < 50 && s.right.2 > 200, "right \(s.right)")
        #expect(s.copyMatches)
        // A share sender says its pictures are BT.601, video range.
        #expect(s.colorSpace == .bt601)
        #expect(s.captureAge < 0.5, "a picture \(s.captureAge) s after capture")
        #expect(s.streams == [0])
        #expect(s.sound.count >= 48_000 * 3 / 2, "\(s.sound.count) samples")
        let hertz = try #require(toneFrequency(Array(s.sound.dropFirst(4800))))
        #expect(abs(hertz - 440) < 2, "\(hertz) Hz")
    }
}
