import Benchmark
import ShareColor
import ShareDecode
import ShareSRTP
import ShareVideo
import ShareWire
import ShareX11

/// Per-stage, per-frame cost of the pipeline at 720p and 1080p, on real
/// pictures of the moving demo scene (see `Fixture`): capture (MIT-SHM
/// GetImage), BGRA -> I420, x264 encode, packetize + protect, unprotect +
/// depacketize, decode. Wall time and mallocs per frame. Names carry no
/// spaces: package-benchmark writes threshold files with spaces replaced but
/// looks them up by the raw name. p90s are committed
/// under `Thresholds/` and `make bench` fails on a regression past the
/// tolerances below.
let benchmarks: @Sendable () -> Void = {
    /// Allocation counts are exact: +10% (at least 2) for stages that
    /// allocate, none at all for packetize + protect. Wall time on a shared
    /// 2-core machine is noisy: +60% at p90 catches a real regression
    /// without failing on a busy neighbour.
    func configuration(allocates: Bool, seconds: Int = 2) -> Benchmark.Configuration {
        .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds, warmupIterations: 5,
              maxDuration: .seconds(seconds), maxIterations: 2000,
              thresholds: [
                  .mallocCountTotal: allocates ? .init(relative: [.p90: 10], absolute: [.p90: 2]) : .init(absolute: [.p90: 0]),
                  .wallClock: .init(relative: [.p90: 60]),
              ])
    }

    for (label, width, height) in [("720p", 1280, 720), ("1080p", 1920, 1080)] {
        Benchmark("\(label)-capture-mitshm-getimage", configuration: configuration(allocates: true)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            let capturer = try ScreenCapturer(display: fixture.display, slots: 1)
            _ = try capturer.capture()  // map the slot before measuring
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                // The lease ends at once: the one slot is free for the next grab.
                _ = try capturer.capture()
            }
            benchmark.stopMeasurement()
        }

        Benchmark("\(label)-bgra-to-i420-libyuv", configuration: configuration(allocates: true)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            var picture = I420Image(width: width, height: height)
            var scratch: I420Image?
            let source = fixture.bgra[0]
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                source.withUnsafeBytes { raw in
                    ColorConversion.convertBGRA(raw.baseAddress!, stride: width * 4, width: width, height: height,
                                                into: &picture, scratch: &scratch)
                }
            }
            benchmark.stopMeasurement()
            blackHole(picture.luma(x: 0, y: 0))
        }

        let encoding = Cycle()
        Benchmark("\(label)-encode-x264", configuration: configuration(allocates: true, seconds: 4)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            if encoding.encoder == nil { encoding.encoder = Fixture.encoder(width: width, height: height) }
            let picture = fixture.pictures[encoding.next(fixture.pictures.count)]
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                _ = try encoding.encoder!.encode(picture, into: &encoding.unit)
            }
            benchmark.stopMeasurement()
        }

        let sending = Cycle()
        Benchmark("\(label)-packetize-protect", configuration: configuration(allocates: false)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            if sending.sender == nil { sending.sender = try Sending() }
            let unit = fixture.accessUnits[sending.next(fixture.accessUnits.count)]
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                sending.sender!.send(unit) { blackHole($0.count) }
            }
            benchmark.stopMeasurement()
        }

        let receiving = Cycle()
        Benchmark("\(label)-unprotect-depacketize", configuration: configuration(allocates: true)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            if receiving.sender == nil {
                receiving.sender = try Sending()
                receiving.receiver = try SRTPContext(keying: receiving.sender!.keying, direction: .inbound)
            }
            // Protect this frame outside the measurement.
            var packets: [[UInt8]] = []
            receiving.sender!.send(fixture.accessUnits[receiving.next(fixture.accessUnits.count)]) {
                packets.append(Array($0))
            }
            var buffer = PacketBuffer(capacity: 1500)
            var delivered = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                for bytes in packets {
                    buffer.removeAll()
                    buffer.append(slice: bytes[...])
                    try receiving.receiver!.unprotect(&buffer)
                    let packet = try RTPPacket(parsing: buffer.bytes)
                    for case .frame(let unit) in receiving.assembler.insert(packet, now: .zero) {
                        delivered &+= unit.data.count
                    }
                }
            }
            benchmark.stopMeasurement()
            precondition(delivered > 0, "the assembler delivered no frame")
        }

        let decoding = Cycle()
        Benchmark("\(label)-decode-libavcodec", configuration: configuration(allocates: true)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            if decoding.decoder == nil { decoding.decoder = try H264Decoder() }
            let unit = fixture.accessUnits[decoding.next(fixture.accessUnits.count)]
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                precondition(decoding.decoder!.decode(unit) != nil, "decode failed")
            }
            benchmark.stopMeasurement()
        }
    }
}

/// State carried from one sample to the next: frames are processed in
/// order (the decoder and assembler need the stream, not one frame again).
final class Cycle: @unchecked Sendable {
    private var index = -1
    var encoder: H264Encoder?
    var unit: [UInt8] = []
    var sender: Sending?
    var receiver: SRTPContext?
    var assembler = H264FrameAssembler()
    var decoder: H264Decoder?

    func next(_ count: Int) -> Int {
        index = (index + 1) % count
        return index
    }
}

/// The sender's per-frame network path without the socket: plan the
/// payloads, write each RTP packet into one reused buffer, protect it in place.
final class Sending {
    let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
    private let srtp: SRTPContext
    private var payloader = H264Payloader(maxPayloadSize: 1200 - 12 - 10)
    private var packetizer = RTPPacketizer(ssrc: 1, payloadType: 96, clockRate: 90_000, initialSequenceNumber: 0)
    private var buffer = PacketBuffer(capacity: 1500)
    private var timestamp: UInt32 = 0

    init() throws {
        srtp = try SRTPContext(keying: keying, direction: .outbound)
    }

    func send(_ unit: [UInt8], _ sink: (ArraySlice<UInt8>) -> Void) {
        timestamp &+= 3000
        let count = payloader.prepare(accessUnit: unit[...])
        for index in 0..<count {
            packetizer.beginPacket(in: &buffer, timestamp: timestamp, marker: index == count - 1)
            payloader.writePayload(index, of: unit[...], into: &buffer)
            do { try srtp.protect(&buffer) } catch { fatalError("\(error)") }
            sink(buffer.bytes)
        }
    }
}
