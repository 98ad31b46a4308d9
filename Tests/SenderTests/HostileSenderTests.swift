import Foundation
import ShareColor
@testable import ShareReceiver
import ShareSRTP
import ShareSession
import ShareSync
import ShareTransport
import ShareVideo
import ShareWire
import TestSupport
import Testing
import ShareBase

/// What a sender holding the key (an authenticated one, or anyone with a
/// static key) can put in fields a receiver trusts to be in range: a capture
/// time of NTP 0 (1900) on every picture, and the pointer shown far outside
/// the picture in every direction. The receiver, its window under Xvfb and
/// its host's `onPicture` take them all. Before, the first trapped in
/// `captured * 1000` on the host's path and the second in the window's
/// pointer rows.
@Suite("Hostile values from a sender holding the key", .busy)
struct HostileSenderTests {
    @Test func aCaptureTimeFrom1900AndAPointerFarOffThePictureAreHarmless() throws {
        let (width, height) = (320, 240)
        let display = try VirtualDisplay(width: width, height: height)
        let key = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        let captured = Locked<[Int64]>([])
        var configuration = ReceiverConfiguration(keying: key)
        configuration.port = 0
        configuration.display = display.display
        configuration.playAudio = false
        configuration.onPicture = { picture in captured.withLock { $0.append(picture.capturedUnixNanoseconds) } }
        let receiver = try ScreenReceiver(configuration: configuration)
        let finished = Locked<ReceiverError??>(nil)
        receiver.start { event in if case .finished(let error) = event { finished.withLock { $0 = .some(error) } } }
        defer { receiver.stop() }

        let socket = try UDPSocket(connectedTo: SocketAddress(host: "127.0.0.1", port: receiver.port))
        let stream = try SendStream(configuration: .init(ssrc: 0x5151, cname: "hostile"), keys: .symmetric(key))
        let encoder = try H264Encoder(.init(width: width, height: height, fps: 30, bitrateKbps: 1000, threads: 1))
        let shape = CursorShape(serial: 1, width: 16, height: 16, hotX: 0, hotY: 0,
                                pixels: [UInt32](repeating: 0xFF20_C040, count: 256))
        let places: [(Int16, Int16)] = [(10, 10), (.max, .max), (.min, .min), (100, 32_000), (-32_000, 100), (160, 239),
                                        (160, 240), (319, -15)]
        var now = MonotonicTime(nanoseconds: 1_000_000_000)
        for frame in 0..<40 {
            let bgra = (0..<width * height * 4).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ frame &* 13) }
            let picture = ColorConversion.i420(fromBGRA: bgra, width: width, height: height)
            var units: [UInt8] = []
            _ = try picture.withPlanes { y, _, _ in
                try encoder.encode(I420Planes(packedAt: UnsafeMutablePointer(mutating: y), width: width, height: height)) { part, _ in
                    units += part
                }
            }
            try stream.send(accessUnit: units, rtpTimestamp: UInt32(frame * 3000), captureTime: NTPTimestamp(rawValue: 0),
                            now: now) { socket.send($0) }
            let (x, y) = places[frame % places.count]
            stream.updateCursor(CursorPosition(x: x, y: y, areaWidth: frame % 3 == 0 ? 1 : UInt16(width),
                                               areaHeight: frame % 3 == 0 ? 1 : UInt16(height), shape: 1, visible: true),
                                shape: shape, now: now) { socket.send($0) }
            now = now + .milliseconds(33)
            usleep(33_000)
        }
        usleep(500_000)
        let times = captured.withLock { $0 }
        #expect(finished.withLock { $0 } == nil, "the receiver is still running")
        #expect(times.count >= 30, "\(times.count) pictures reached the host")
        #expect(times.allSatisfy { $0 == -2_208_988_800 * 1_000_000_000 }, "1900, as a Unix time: \(times.prefix(3))")
        #expect(receiver.statistics.framesShown >= 30)
    }
}
