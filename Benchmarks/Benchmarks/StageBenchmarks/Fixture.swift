import Foundation
import ShareColor
import ShareSession
import ShareSRTP
import ShareVideo
import ShareX11Capture

/// What the per-stage benchmarks work on, for one picture size: a private
/// Xvfb showing the moving demo scene, and a run of real pictures from it
/// (captured, converted, encoded by x264 with the sender's settings), so
/// every stage sees the content the real sender does.
final class Fixture: @unchecked Sendable {
    let width: Int
    let height: Int
    let display: String
    /// `share scene --frames-from-stdin` on the display: draws the frames
    /// asked for (the scene is tooling, not a library this package can link).
    private let scene: SceneDrawer
    /// One captured picture (BGRX) per drawn scene frame.
    let bgra: [[UInt8]]
    /// The same pictures in I420.
    let pictures: [I420Image]
    /// x264 output for `pictures` in order, as the sender encodes them
    /// (slices of at most four packets): the first is a keyframe.
    let accessUnits: [[UInt8]]
    /// The same, one slice per picture (as before the sender sliced).
    let wholeAccessUnits: [[UInt8]]
    private let xvfb: Process

    static let frameCount = 60
    nonisolated(unsafe) private static var made: [String: Fixture] = [:]
    private static let lock = NSLock()

    /// The fixture for `width` x `height`, made on first use.
    static func of(width: Int, height: Int) -> Fixture {
        lock.lock()
        defer { lock.unlock() }
        if let fixture = made["\(width)x\(height)"] { return fixture }
        let fixture = Fixture(width: width, height: height)
        made["\(width)x\(height)"] = fixture
        return fixture
    }

    private init(width: Int, height: Int) {
        self.width = width
        self.height = height
        var number = 150
        while FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)")
            || FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") { number += 1 }
        display = ":\(number)"
        // Through bash (dash cannot close descriptors above 9), which closes
        // every inherited descriptor (the benchmark runner's result pipe among
        // them: a server holding it open would keep the runner waiting) and
        // kills the server when this process is gone, however it ends. SIGKILL: the server inherits this
        // process's blocked signal mask (Dispatch blocks SIGTERM), which
        // Foundation's Process does not reset.
        xvfb = Process()
        xvfb.executableURL = URL(fileURLWithPath: "/bin/bash")
        let script = """
            i=3; while [ $i -lt 256 ]; do eval "exec $i>&-"; i=$((i+1)); done
            setpriv --pdeathsig KILL Xvfb \(display) -screen 0 \(width)x\(height)x24 -nolisten tcp -noreset >/dev/null 2>&1 & server=$!
            while kill -0 \(getpid()) 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.5; done
            kill -KILL $server 2>/dev/null
            rm -f /tmp/.X\(number)-lock /tmp/.X11-unix/X\(number)
            """
        xvfb.arguments = ["-c", script]
        xvfb.standardInput = FileHandle.nullDevice
        xvfb.standardOutput = FileHandle.nullDevice
        xvfb.standardError = FileHandle.nullDevice
        do { try xvfb.run() } catch { fatalError("cannot start Xvfb (apt-get install xvfb): \(error)") }
        var capturer: ScreenCapturer?
        for _ in 0..<200 where capturer == nil {
            capturer = try? ScreenCapturer(display: display, slots: 1)
            if capturer == nil { usleep(50_000) }
        }
        guard let capturer else { fatalError("Xvfb \(display) did not come up") }
        let scene = SceneDrawer(display: display)
        self.scene = scene
        var bgra: [[UInt8]] = []
        var pictures: [I420Image] = []
        var scratch: I420Image?
        for frame in 0..<Self.frameCount {
            scene.draw(frame: frame)
            guard let pixels = try? capturer.snapshot() else { fatalError("capture failed") }
            let (w, h) = (capturer.width, capturer.height)
            var picture = I420Image(width: w, height: h)
            pixels.withUnsafeBytes { raw in
                ColorConversion.convertBGRA(raw.baseAddress!, stride: w * 4, width: w, height: h, into: &picture,
                                            scratch: &scratch)
            }
            bgra.append(pixels)
            pictures.append(picture)
        }
        self.bgra = bgra
        self.pictures = pictures
        func encoded(sliced: Bool) -> [[UInt8]] {
            let encoder = Fixture.encoder(width: width, height: height, sliced: sliced)
            var units: [[UInt8]] = []
            var unit: [UInt8] = []
            for picture in pictures {
                if (try? encoder.encode(picture, into: &unit)) != nil { units.append(unit) }
            }
            return units
        }
        accessUnits = encoded(sliced: true)
        wholeAccessUnits = encoded(sliced: false)
    }

    /// The largest H.264 payload of the sender's video packets at the
    /// default MTU: the sender's slices take at most four of them
    /// (`EncodePipeline.packetsPerSlice`).
    static let slicePayload: Int = {
        do {
            return try SendStream(configuration: .init(ssrc: 1, cname: "bench"),
                                  keying: .random(profile: .aes128CmHmacSha1_80)).maxPayloadSize
        } catch { fatalError("\(error)") }
    }()

    /// An encoder with the sender's slices (four packets unless `sliced` is
    /// false) on one x264 thread: a stage's CPU, not the sender's latency
    /// (above 720p30 it takes two, SenderConfiguration.defaultEncoderThreads).
    static func encoder(width: Int, height: Int, sliced: Bool = true) -> H264Encoder {
        do {
            return try H264Encoder(.init(width: width, height: height, fps: 30, threads: 1,
                                         sliceMaxSize: sliced ? 4 * slicePayload : nil))
        } catch { fatalError("\(error)") }
    }
}

/// The demo scene in a `share scene --frames-from-stdin` process, stepped
/// frame by frame: each `draw` returns once the frame is on the screen.
final class SceneDrawer {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var pending = Data()

    /// `SHARE_BIN` (set by `make bench`), else the debug build beside this package.
    static var binary: String {
        ProcessInfo.processInfo.environment["SHARE_BIN"] ?? "../.build/debug/share"
    }

    init(display: String) {
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["scene", "--display", display, "--frames-from-stdin"]
        process.standardInput = input
        process.standardOutput = output
        do { try process.run() } catch { fatalError("cannot start \(Self.binary) (make bench builds it): \(error)") }
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    func draw(frame: Int) {
        input.fileHandleForWriting.write(Data("\(frame)\n".utf8))
        while !pending.contains(UInt8(ascii: "\n")) {
            let more = output.fileHandleForReading.availableData
            guard !more.isEmpty else { fatalError("share scene ended before drawing frame \(frame)") }
            pending.append(more)
        }
        let line = pending.prefix { $0 != UInt8(ascii: "\n") }
        pending.removeFirst(line.count + 1)
        guard Int(String(decoding: line, as: UTF8.self)) == frame else { fatalError("share scene answered \"\(line)\" for frame \(frame)") }
    }
}
