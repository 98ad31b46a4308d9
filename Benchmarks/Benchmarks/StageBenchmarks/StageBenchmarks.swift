import Benchmark
import ShareColor
import ShareDecode
import ShareSRTP
import ShareSession
import ShareVideo
import ShareWire
import ShareX11Capture
import ShareBase

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
        // The whole screen grabbed through MIT-SHM in 1 MiB bands and
        // converted to I420 band by band (every band: no change tracking).
        Benchmark("\(label)-capture-bands-to-i420", configuration: configuration(allocates: true)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            let capturer = try ScreenCapturer(display: fixture.display, slots: 1)
            _ = try capturer.capture()  // map the pool and bands before measuring
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                // The lease ends at once: the one slot is free for the next grab.
                _ = try capturer.capture()
            }
            benchmark.stopMeasurement()
        }

        // What a host's push costs its thread (`ScreenSender.push`): its
        // picture converted into the encoder's, in each layout, at the same
        // size and (BGRA, from the next size up) scaled.
        for layout in ["bgra", "i420", "nv12", "bgra-scaled"] {
            // Scaling allocates inside libyuv (a row buffer per call); the rest nothing.
            Benchmark("\(label)-push-\(layout)", configuration: configuration(allocates: layout == "bgra-scaled")) { benchmark in
                let fixture = Fixture.of(width: width, height: height)
                let (w, h) = layout == "bgra-scaled" ? (width * 3 / 2, height * 3 / 2) : (width, height)
                let bgra = layout == "bgra-scaled" ? [UInt8](repeating: 0x80, count: w * h * 4) : fixture.bgra[0]
                let source = fixture.pictures[0]
                let uv = [UInt8](repeating: 0x80, count: width * height / 2)
                var picture = I420Image(width: width, height: height)
                let converter = PixelConverter()
                func push() {
                    switch layout {
                    case "i420":
                        source.storage.withUnsafeBufferPointer { planes in
                            let y = planes.baseAddress!, u = y + width * height, v = u + width * height / 4
                            _ = converter.convert(.i420(y: y, yStride: width, u: u, uStride: width / 2, v: v, vStride: width / 2),
                                                  width: w, height: h, into: &picture)
                        }
                    case "nv12":
                        source.storage.withUnsafeBufferPointer { planes in
                            uv.withUnsafeBufferPointer { uvp in
                                _ = converter.convert(.nv12(y: planes.baseAddress!, yStride: width, uv: uvp.baseAddress!, uvStride: width),
                                                      width: w, height: h, into: &picture)
                            }
                        }
                    default:
                        bgra.withUnsafeBytes { raw in
                            _ = converter.convert(.bgra(raw.baseAddress!, stride: w * 4), width: w, height: h, into: &picture)
                        }
                    }
                }
                push()  // the converter's scaling memory, before measuring
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations { push() }
                benchmark.stopMeasurement()
                blackHole(picture.luma(x: 0, y: 0))
            }
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

        // As the sender encodes (slices of at most four packets, handed over
        // as x264 writes them), and one slice per picture for comparison.
        for (name, sliced) in [("encode-x264", true), ("encode-x264-one-slice", false)] {
            let encoding = Cycle()
            Benchmark("\(label)-\(name)", configuration: configuration(allocates: true, seconds: 4)) { benchmark in
                let fixture = Fixture.of(width: width, height: height)
                if encoding.encoder == nil { encoding.encoder = Fixture.encoder(width: width, height: height, sliced: sliced) }
                let picture = fixture.pictures[encoding.next(fixture.pictures.count)]
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    _ = try encoding.encoder!.encode(picture, into: &encoding.unit)
                }
                benchmark.stopMeasurement()
            }
        }

        // The network stages run the sender's and receiver's own sans-IO
        // sessions (SendStream, ReceiveSession), as the real loops call them.
        let sending = Cycle()
        Benchmark("\(label)-packetize-protect", configuration: configuration(allocates: false)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            if sending.sender == nil { sending.sender = try Streams(warmingWith: fixture.accessUnits) }
            let unit = fixture.accessUnits[sending.next(fixture.accessUnits.count)]
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                try sending.sender!.send(unit) { blackHole($0.count) }
            }
            benchmark.stopMeasurement()
        }

        let receiving = Cycle()
        Benchmark("\(label)-unprotect-depacketize", configuration: configuration(allocates: true)) { benchmark in
            let fixture = Fixture.of(width: width, height: height)
            if receiving.sender == nil { receiving.sender = try Streams(warmingWith: fixture.accessUnits) }
            // Protect this frame outside the measurement.
            var packets: [[UInt8]] = []
            try receiving.sender!.send(fixture.accessUnits[receiving.next(fixture.accessUnits.count)]) {
                packets.append(Array($0))
            }
            var buffer = PacketBuffer(capacity: 1500)
            var delivered = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                for bytes in packets {
                    buffer.removeAll()
                    buffer.append(slice: bytes[...])
                    for case .videoFrame(let unit) in receiving.sender!.receive(&buffer) { delivered &+= unit.data.count }
                }
            }
            benchmark.stopMeasurement()
            precondition(delivered > 0, "the receive session delivered no frame")
        }

        for (name, sliced) in [("decode-libavcodec", true), ("decode-libavcodec-one-slice", false)] {
            let decoding = Cycle()
            Benchmark("\(label)-\(name)", configuration: configuration(allocates: true)) { benchmark in
                let fixture = Fixture.of(width: width, height: height)
                let units = sliced ? fixture.accessUnits : fixture.wholeAccessUnits
                if decoding.decoder == nil { decoding.decoder = try H264Decoder() }
                let unit = units[decoding.next(units.count)]
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    precondition(decoding.decoder!.decode(unit) != nil, "decode failed")
                }
                benchmark.stopMeasurement()
            }
        }
    }
}

/// State carried from one sample to the next: frames are processed in
/// order (the decoder and the receive session need the stream, not one
/// frame again).
final class Cycle: @unchecked Sendable {
    private var index = -1
    var encoder: H264Encoder?
    var unit: [UInt8] = []
    var sender: Streams?
    var decoder: H264Decoder?

    func next(_ count: Int) -> Int {
        index = (index + 1) % count
        return index
    }
}

/// A sender's SendStream and a receiver's ReceiveSession on one key, with
/// the sender's defaults (abs-capture-time on every packet, MTU 1200,
/// retransmission history).
final class Streams {
    private let stream: SendStream
    private let session: ReceiveSession
    private var timestamp: UInt32 = 0
    private var now = MonotonicTime(nanoseconds: 1_000_000_000)

    /// Sends `units` until every retransmission-history slot has been used
    /// once: the steady state of a running sender.
    init(warmingWith units: [[UInt8]]) throws {
        let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        stream = try SendStream(configuration: .init(ssrc: 1, cname: "bench"), keying: keying)
        session = try ReceiveSession(configuration: .init(ssrc: 2, cname: "bench", videoPayloadType: 96), keying: keying)
        while stream.statistics.packets < stream.configuration.historyPackets {
            for unit in units { try send(unit) { _ in } }
        }
    }

    func send(_ unit: [UInt8], _ emit: (ArraySlice<UInt8>) -> Void) throws {
        timestamp &+= 3000
        now = MonotonicTime(nanoseconds: now.nanoseconds + 33_333_333)
        try stream.send(accessUnit: unit, rtpTimestamp: timestamp, captureTime: NTPTimestamp(unixNanoseconds: now.nanoseconds),
                        now: now, emit: emit)
    }

    func receive(_ datagram: inout PacketBuffer) -> [ReceiveEvent] {
        session.handle(datagram: &datagram, now: now) { _ in }
    }
}
