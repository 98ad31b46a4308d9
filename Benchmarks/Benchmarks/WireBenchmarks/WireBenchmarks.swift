import Benchmark
import ShareSRTP
import ShareWire

/// A synthetic 1080p H.264 access unit: SPS, PPS and one IDR slice of
/// `sliceBytes` (x264 ultrafast keyframes at 1080p run 100-250 KB; P frames 10-40 KB).
func syntheticAccessUnit(sliceBytes: Int, keyframe: Bool) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var au: [UInt8] = []
    if keyframe {
        au += [0, 0, 0, 1, 0x67, 0x64, 0x00, 0x28, 0xAC, 0xD9, 0x40, 0x78, 0x02, 0x27, 0xE5, 0x84]
        au += [0, 0, 0, 1, 0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0]
    }
    au += [0, 0, 0, 1, keyframe ? 0x65 : 0x41]
    // No zero bytes: nothing in the slice can look like a start code.
    au += (0..<sliceBytes).map { _ in UInt8.random(in: 1...255, using: &generator) }
    return au
}

/// The sender's per-frame path: plan payloads, write each RTP packet into one
/// reused buffer, protect it in place. Returns packets sent.
func packetizeAndProtect(_ au: [UInt8], timestamp: UInt32, payloader: inout H264Payloader,
                         packetizer: inout RTPPacketizer, buffer: inout PacketBuffer, srtp: SRTPContext,
                         sink: (ArraySlice<UInt8>) -> Void) throws -> Int {
    let count = payloader.prepare(accessUnit: au[...])
    for index in 0..<count {
        packetizer.beginPacket(in: &buffer, timestamp: timestamp, marker: index == count - 1)
        payloader.writePayload(index, of: au[...], into: &buffer)
        try srtp.protect(&buffer)
        sink(buffer.bytes)
    }
    return count
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .throughput],
        maxDuration: .seconds(3), maxIterations: 100_000)

    /// p90s are committed under `Thresholds/`; `make bench` fails past
    /// these tolerances. Packetize + protect must not allocate at all (share's
    /// own AES-ICM and HMAC-SHA1 replace the NSS-backed ones in libsrtp2's
    /// kernel); the receive path allocates one packet record per packet.
    func configuration(_ name: String) -> Benchmark.Configuration {
        let protects = name == "packetize-protect"
        return .init(metrics: [.wallClock, .mallocCountTotal, .throughput], maxDuration: .seconds(3), maxIterations: 100_000,
                     thresholds: [
                         .mallocCountTotal: protects ? .init(absolute: [.p90: 0]) : .init(relative: [.p90: 10], absolute: [.p90: 2]),
                         .wallClock: .init(relative: [.p90: 60]),
                         .throughput: .init(relative: [.p90: 60]),
                     ])
    }

    for (name, size, keyframe) in [("keyframe-150KB", 150_000, true), ("pframe-25KB", 25_000, false)] {
        let au = syntheticAccessUnit(sliceBytes: size, keyframe: keyframe)
        let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)

        Benchmark("synthetic-1080p-\(name)-packetize-protect", configuration: configuration("packetize-protect")) { benchmark in
            let srtp = try SRTPContext(keying: keying, direction: .outbound)
            var payloader = H264Payloader(maxPayloadSize: 1200 - 12 - 10)
            var packetizer = RTPPacketizer(ssrc: 1, payloadType: 96, clockRate: 90_000, initialSequenceNumber: 0)
            var buffer = PacketBuffer(capacity: 1500)
            var bytes = 0
            // Warm the reusable scratch space once, as a running sender has.
            _ = try packetizeAndProtect(au, timestamp: 0, payloader: &payloader, packetizer: &packetizer,
                                        buffer: &buffer, srtp: srtp) { bytes &+= $0.count }
            benchmark.startMeasurement()
            for iteration in benchmark.scaledIterations {
                _ = try packetizeAndProtect(au, timestamp: UInt32(truncatingIfNeeded: iteration * 3000),
                                            payloader: &payloader, packetizer: &packetizer, buffer: &buffer,
                                            srtp: srtp) { bytes &+= $0.count }
            }
            blackHole(bytes)
        }

        Benchmark("synthetic-1080p-\(name)-unprotect-depacketize", configuration: configuration("unprotect-depacketize")) { benchmark in
            // Protect a stream of frames once, outside the measurement.
            let sender = try SRTPContext(keying: keying, direction: .outbound)
            var payloader = H264Payloader(maxPayloadSize: 1200 - 12 - 10)
            var packetizer = RTPPacketizer(ssrc: 1, payloadType: 96, clockRate: 90_000, initialSequenceNumber: 0)
            var buffer = PacketBuffer(capacity: 1500)
            var frames: [[[UInt8]]] = []
            for frame in 0..<benchmark.scaledIterations.count {
                var packets: [[UInt8]] = []
                _ = try packetizeAndProtect(au, timestamp: UInt32(frame * 3000), payloader: &payloader,
                                            packetizer: &packetizer, buffer: &buffer, srtp: sender) {
                    packets.append(Array($0))
                }
                frames.append(packets)
            }
            let receiver = try SRTPContext(keying: keying, direction: .inbound)
            var assembler = H264FrameAssembler()
            var receive = PacketBuffer(capacity: 1500)
            var delivered = 0
            benchmark.startMeasurement()
            for packets in frames {
                for bytes in packets {
                    receive.removeAll()
                    receive.append(slice: bytes[...])
                    try receiver.unprotect(&receive)
                    let packet = try RTPPacket(parsing: receive.bytes)
                    for case .frame(let unit) in assembler.insert(packet, now: .zero) { delivered &+= unit.data.count }
                }
            }
            benchmark.stopMeasurement()
            precondition(delivered > 0)
            blackHole(delivered)
        }
    }
}
