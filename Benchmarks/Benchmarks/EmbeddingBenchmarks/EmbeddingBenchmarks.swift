import Benchmark
import Glibc
import ShareSender

/// What a host's thread pays to push its pictures into a sender that is
/// running: 1080p BGRA pushed 120 times a second (a game's frame rate) into
/// a 30 fps sender that encodes and sends them (SRTP to a local socket that
/// drops them), so x264 and the network threads compete with the pusher for
/// the two cores. Each sample is one `push`, timed on the pushing thread;
/// the pacing between pushes is not measured. Most pushes return `.tooSoon`
/// (a counter and a clock read); one in four is converted into the frame
/// pool; none may wait on the encoder.
let benchmarks: @Sendable () -> Void = {
    let run = PushRun()
    Benchmark("1080p-push-bgra-120hz-into-running-sender",
              configuration: .init(metrics: [.wallClock], timeUnits: .microseconds, warmupIterations: 24,
                                   maxDuration: .seconds(6), maxIterations: 600,
                                   thresholds: [.wallClock: .init(relative: [.p90: 60])]),
              closure: { benchmark in run.push(benchmark) },
              setup: { try run.start() },
              teardown: { run.finish() })
}

final class PushRun: @unchecked Sendable {
    // Safe: package-benchmark runs setup, the samples and teardown on one thread.
    static let (width, height) = (1920, 1080)
    private var sender: ScreenSender?
    private var sink: Int32 = -1
    private var pictures: [[UInt8]] = []
    private var next: UInt64 = 0
    private var count = 0
    private var outcomes: [PushOutcome: Int] = [:]

    func start() throws {
        // A socket that takes the stream and never reads it (the kernel drops).
        sink = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(sink, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(sink, $0, &length) }
        }
        var configuration = SenderConfiguration(host: "127.0.0.1", keying: .random(profile: .aes128CmHmacSha1_80))
        configuration.port = Int(UInt16(bigEndian: address.sin_port))
        configuration.video = .pushed(VideoSize(width: Self.width, height: Self.height))
        configuration.congestionControl = false
        // Eight pictures of a bar moving over a gradient: the encoder has work every frame.
        pictures = (0..<8).map { n in
            var pixels = [UInt8](repeating: 0, count: Self.width * Self.height * 4)
            for y in 0..<Self.height {
                for x in 0..<Self.width {
                    let i = (y * Self.width + x) * 4
                    let bar = abs(x - 200 - n * 180) < 40
                    pixels[i] = bar ? 255 : UInt8(x & 0xFF)
                    pixels[i + 1] = bar ? 255 : UInt8(y & 0xFF)
                    pixels[i + 2] = bar ? 255 : UInt8((x + y) & 0xFF)
                    pixels[i + 3] = 255
                }
            }
            return pixels
        }
        let sender = try ScreenSender(configuration: configuration)
        sender.start()
        self.sender = sender
        next = Self.now()
    }

    func push(_ benchmark: Benchmark) {
        guard let sender else { return }
        // 120 Hz: wait for the next slot, outside the measurement.
        next += 1_000_000_000 / 120
        while Self.now() < next { usleep(UInt32(max(1, (next - Self.now()) / 1000))) }
        let picture = pictures[count % pictures.count]
        count += 1
        benchmark.startMeasurement()
        let outcome = picture.withUnsafeBytes {
            sender.push(.bgra($0.baseAddress!, stride: Self.width * 4), width: Self.width, height: Self.height)
        }
        benchmark.stopMeasurement()
        outcomes[outcome, default: 0] += 1
    }

    func finish() {
        guard let sender else { return }
        let statistics = sender.statistics
        sender.stop()
        close(sink)
        let told = outcomes.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", ")
        print("pushes: \(told); encoded \(statistics.framesEncoded) in \(Int(statistics.elapsedSeconds)) s, "
              + "peak footprint \(statistics.peakFootprintBytes >> 20) MiB")
        self.sender = nil
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
