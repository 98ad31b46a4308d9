import Foundation
@_spi(Testing) import ShareSender
import ShareReceiver
import ShareSRTP
import ShareGovernor
import ShareWire
import ShareX11Capture
import ShareScene
import ShareVideo
import Synchronization
import TestSupport
import Testing

/// The embeddable sender, driven through its library API on a real X server.
@Suite("Sender library", .serialized, .alone)
struct SenderTests {
    /// A deliberately slow encoder (200 ms a frame): capture keeps its 30 fps
    /// cadence, frames the encoder cannot take are dropped and counted, the
    /// fixed pool does not grow, and neither does the process. Run in a
    /// process of its own (an exit test): the footprint is then this
    /// sender's, not the test runner's with every suite beside it.
    @Test func slowEncoderNeverHoldsUpCapture() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let failures = try SenderTests.slowEncoderFailures()
            if !failures.isEmpty {
                FileHandle.standardError.write(Data(failures.joined(separator: "\n").utf8))
                exit(1)
            }
        }
        if let result, case .exitCode(let code) = result.exitStatus, code != 0 {
            Issue.record("\(String(decoding: result.standardErrorContent, as: UTF8.self))")
        }
    }

    /// A host that already uses more than the budget (64 MiB of its own
    /// here, in a test runner that holds more): measuring what the sender
    /// itself holds, the governor lets it run at the top rung; measuring the
    /// whole process, as `share send` does, it sees that not even the bottom
    /// rung can fit and ends the sender with a memory error.
    @Test func anEmbeddedSenderIsGovernedByWhatItHoldsNotByItsHost() throws {
        let ballast = UnsafeMutableRawPointer.allocate(byteCount: 64 << 20, alignment: 4096)
        defer { ballast.deallocate() }
        memset(ballast, 1, 64 << 20)
        let display = try VirtualDisplay(width: 640, height: 480)
        let scene = try DemoScene(display: display.display)
        var configuration = testSenderConfiguration(display: display)
        #expect(configuration.memoryBudget == .default && configuration.memoryAccounting == .sender)
        configuration.stillRefresh = nil
        let sender = try ScreenSender(configuration: configuration)
        sender.start()
        for frame in 0..<60 {
            scene.draw(frame: frame)
            Thread.sleep(forTimeInterval: 1.0 / 30)
        }
        let s = sender.statistics
        Thread.sleep(forTimeInterval: 1)
        let later = sender.statistics
        sender.stop()
        #expect(sender.error == nil, "\(String(describing: sender.error))")
        // Two capture bands (2.4 MiB), rings and statistics (1 MiB), two 640x480 pictures and the encoder's state: about 8 MiB, steady.
        #expect(abs(later.memoryAccountedBytes - s.memoryAccountedBytes) < 1 << 20,
                "the account holds still: \(s.memoryAccountedBytes) then \(later.memoryAccountedBytes)")
        #expect(s.footprintBytes > 64 << 20, "the host's own memory alone is over the budget: \(s.footprintBytes)")
        #expect(s.memoryRung == "full" && s.memorySteps == 0, "\(s.memoryRung), \(s.memorySteps) steps")
        #expect(s.memoryAccountedBytes > 7 << 20 && s.memoryAccountedBytes < 12 << 20, "its own account: \(s.memoryAccountedBytes)")
        #expect(s.framesEncoded >= 30)

        configuration.memoryAccounting = .process
        configuration.port = freeUDPPort()
        let whole = try ScreenSender(configuration: configuration)
        let finished = DispatchSemaphore(value: 0)
        whole.start { event in if case .finished = event { finished.signal() } }
        let ended = finished.wait(timeout: .now() + 20) == .success
        whole.stop()
        #expect(ended, "measuring the whole process over its budget, the sender ends")
        if case .memory(let message) = whole.error {
            #expect(message.contains("cannot run within"), "\(message)")
        } else {
            Issue.record("expected a memory error, got \(String(describing: whole.error))")
        }
    }

    /// Runs the slow-encoder scenario; returns what went wrong, if anything.
    static func slowEncoderFailures() throws -> [String] {
        let display = try VirtualDisplay(width: 640, height: 480)
        var configuration = testSenderConfiguration(display: display)
        configuration.simulatedEncodeDelay = .milliseconds(200)
        configuration.stillRefresh = nil  // the screen here is still: grab every frame anyway
        ScreenSender.limitMallocArenas()  // as `share send` does: the footprint is measured
        let sender = try ScreenSender(configuration: configuration)
        sender.start()
        Thread.sleep(forTimeInterval: 1)
        let early = sender.statistics
        Thread.sleep(forTimeInterval: 3)
        let late = sender.statistics
        sender.stop()
        let captured = late.framesCaptured - early.framesCaptured
        let encoded = late.framesEncoded - early.framesEncoded
        var failures: [String] = []
        if captured < 80 { failures.append("about 90 captures in 3 s at 30 fps, got \(captured)") }
        if encoded > 16 { failures.append("about 15 encodes in 3 s at 200 ms each, got \(encoded)") }
        if late.framesDroppedEncoderBusy - early.framesDroppedEncoderBusy < captured - encoded - 3 {
            failures.append("frames the encoder could not take are not all counted as dropped")
        }
        if late.framesDroppedPoolExhausted != 0 { failures.append("the pool was exhausted: the encoder held more than one lease") }
        if late.footprintBytes - early.footprintBytes >= 4 << 20 {
            failures.append("the process grew: \(early.footprintBytes) -> \(late.footprintBytes)")
        }
        return failures
    }

    /// A still screen costs a picture a second (XDamage says nothing
    /// changed) once it is sharp, and a change is grabbed as soon as it is
    /// drawn. Still time is counted in frame ticks, so a loaded machine
    /// (slower ticks) passes.
    @Test func stillScreenIsNotGrabbedUntilItChanges() throws {
        let display = try VirtualDisplay(width: 640, height: 480)
        let sender = try ScreenSender(configuration: testSenderConfiguration(display: display))
        sender.start()
        defer { sender.stop() }
        // Sharpening first: a picture every 100 ms while each codes the
        // screen finer (with no receiver here, the bitrate falls and that
        // takes a second or two).
        let began = Date()
        Thread.sleep(forTimeInterval: 0.5)
        while sender.statistics.quantizer != QuantizerControl.finestStill && Date().timeIntervalSince(began) < 8 { usleep(20_000) }
        Thread.sleep(forTimeInterval: 0.2)
        let early = sender.statistics
        Thread.sleep(forTimeInterval: 3)
        let still = sender.statistics
        let grabbed = still.framesCaptured - early.framesCaptured
        let skipped = still.framesUnchanged - early.framesUnchanged
        #expect(grabbed >= 2 && grabbed <= 5, "one refresh a second while still, got \(grabbed) in 3 s")
        #expect(skipped >= 8 * grabbed, "still ticks skipped: \(skipped), grabbed: \(grabbed)")

        // Ten changes, each drawn 50 ms after the previous one was grabbed
        // (so the frame rate does not hold it back): each is grabbed when it
        // is drawn (XDamage wakes the capture thread), not at the next tick
        // of a 30 fps timer (17 ms later on average) nor at the one-second
        // refresh.
        let scene = try DemoScene(display: display.display)
        var delays: [Double] = []
        for frame in 0..<10 {
            usleep(50_000)
            let before = sender.statistics.framesCaptured
            let drawn = Date()
            scene.draw(frame: frame)
            while sender.statistics.framesCaptured == before && Date().timeIntervalSince(drawn) < 2 { usleep(500) }
            delays.append(Date().timeIntervalSince(drawn) * 1000)
        }
        let median = delays.sorted()[delays.count / 2]
        #expect(median < 8, "a change is grabbed \(median) ms after it is drawn (median; all: \(delays.map { Int($0) }))")
        #expect(delays.max()! < 500, "every change grabbed long before the refresh: \(delays.map { Int($0) })")
    }

    /// A still screen's first picture is coded coarse (the rate control
    /// starts cautious, and each picture after codes the whole screen
    /// finer, as the bitrate pays): its pictures come every 100 ms until it
    /// is sharp (the still screen's finest quantizer), within a second or
    /// two, not once a second (which took over eight seconds to get from 51
    /// to 32), and then once a second again.
    @Test func aStillScreenSharpensWithinSecondsThenRestsAtOnePictureASecond() throws {
        let display = try VirtualDisplay(width: 1280, height: 720)
        try DemoScene(display: display.display).draw(frame: 0)
        let secret = Array("sharpening".utf8)
        let receiver = try ScreenReceiver(configuration: headlessReceiving(secret))
        receiver.start()
        defer { receiver.stop() }
        let sender = try ScreenSender(configuration: screenSending(secret, to: receiver.port, display: display))
        sender.start()
        defer { sender.stop() }
        let start = Date()
        while sender.statistics.framesEncoded == 0 && Date().timeIntervalSince(start) < 10 { usleep(10_000) }
        let first = Date()
        var quantizers: [Int] = []
        let sharp = QuantizerControl.finestStill
        while sender.statistics.quantizer != sharp && Date().timeIntervalSince(first) < 3 {
            if quantizers.last != sender.statistics.quantizer { quantizers.append(sender.statistics.quantizer) }
            usleep(10_000)
        }
        let took = Date().timeIntervalSince(first)
        #expect(sender.statistics.quantizer == sharp, "sharp (quantizer \(sharp)) within 3 s of the first picture: \(quantizers)")
        Thread.sleep(forTimeInterval: 0.5)
        let resting = sender.statistics.framesEncoded
        Thread.sleep(forTimeInterval: 3)
        let rested = sender.statistics.framesEncoded - resting
        #expect(rested >= 2 && rested <= 5, "sharp after \(took) s, then one picture a second: \(rested) in 3 s")
        // The pauses a still screen leaves are gaps, not interruptions.
        #expect(receiver.statistics.freezes >= 1 && receiver.statistics.interruptions == 0,
                "\(receiver.statistics.freezes) gaps, \(receiver.statistics.interruptions) interruptions on a still screen")
    }

    /// Content redrawn 59 times a second (a video, faster than the 30 fps
    /// capture) is grabbed just after a redraw, not at whatever age the frame
    /// grid happens to find it (8 ms on average, up to 17): the stamp drawn
    /// with each redraw is read from every picture the receiver decodes and
    /// set against the picture's capture time.
    @Test func aVideoFasterThanTheFrameRateIsGrabbedJustAfterItIsDrawn() throws {
        let display = try VirtualDisplay(width: 640, height: 360)
        let secret = Array("fresh pictures".utf8)
        var receiving = headlessReceiving(secret)
        let wallMinusMonotonic = Int64(Date().timeIntervalSince1970 * 1e9) - Int64(DispatchTime.now().uptimeNanoseconds)
        let ages = Mutex<[Double]>([])
        receiving.onPicture = { picture in
            let stamp = FrameStamp.read(width: picture.width, height: picture.height) { picture.luma(x: $0, y: $1) }
            let captured = UInt64(max(0, picture.capturedUnixNanoseconds - wallMinusMonotonic)) / 1000
            guard let age = stamp?.microseconds(until: captured) else { return }
            ages.withLock { $0.append(Double(age) / 1000) }
        }
        let receiver = try ScreenReceiver(configuration: receiving)
        receiver.start()
        defer { receiver.stop() }
        let sender = try ScreenSender(configuration: screenSending(secret, to: receiver.port, display: display))
        sender.start()
        defer { sender.stop() }

        nonisolated(unsafe) let scene = try DemoScene(display: display.display)
        let drawing = DispatchSource.makeTimerSource(flags: .strict, queue: DispatchQueue(label: "video"))
        nonisolated(unsafe) var frame = 0
        drawing.schedule(deadline: .now(), repeating: 1.0 / 59, leeway: .nanoseconds(0))
        drawing.setEventHandler {
            scene.draw(frame: frame) { scene in
                FrameStamp(microseconds: DispatchTime.now().uptimeNanoseconds / 1000).paint(width: scene.width) {
                    scene.fill(x: $0, y: $1, width: $2, height: $3, rgb: $4 ? 0xFFFFFF : 0)
                }
            }
            frame += 1
        }
        drawing.resume()
        Thread.sleep(forTimeInterval: 5)
        drawing.cancel()
        // After the first two seconds: the handshake, and the rhythm learned.
        let settled = ages.withLock { Array($0.dropFirst(60)) }
        #expect(settled.count >= 50, "\(settled.count) stamped pictures decoded")
        let median = settled.sorted()[settled.count / 2]
        #expect(median < 5, "a redraw is \(median) ms old when grabbed (median of \(settled.count))")
    }

    /// A moving 720p screen: each frame leaves as several packets in a few
    /// slices, and a frame's first packet is sent while x264 still encodes
    /// the rest of it, not once the whole frame is done: on one encoder
    /// thread and on two (sliced threads, the top band's slices first).
    @Test(arguments: [1, 2])
    func slicesLeaveWhileTheFrameIsEncoded(threads: Int) throws {
        let display = try VirtualDisplay(width: 1280, height: 720)
        var configuration = testSenderConfiguration(display: display)
        configuration.stillRefresh = nil  // a grab every tick
        configuration.encoderThreads = threads
        let sender = try ScreenSender(configuration: configuration)
        let scene = try DemoScene(display: display.display)
        sender.start()
        defer { sender.stop() }
        for frame in 0..<60 {
            scene.draw(frame: frame)
            usleep(33_000)
        }
        let s = sender.statistics
        #expect(s.framesEncoded >= 20, "frames encoded: \(s.framesEncoded)")
        #expect(s.packetsSent >= 3 * s.framesEncoded, "\(s.packetsSent) packets for \(s.framesEncoded) frames")
        let lead = try #require(s.firstPacketLead.p50)
        let encode = try #require(s.encodeMilliseconds.p50)
        // A frame of the scene is at least four slices: the first leaves two
        // thirds to three quarters of the encode ahead of its end, on one
        // thread or two. A frame sent once encoded leads only by the time
        // its packets take to send: a quarter of the encode on two threads.
        #expect(lead > 0.4 * encode,
                "\(threads) thread(s): the first packet left \(lead) ms before the end of a \(encode) ms encode (medians)")
    }

    /// The receiver's side of the same: a 720p frame's first slices are
    /// decoded while the sender still encodes the rest, so the last packet
    /// leaves only the last slices to decode; every picture decoded so is
    /// whole (its stamp reads, as a corrupt or misplaced slice would not let it).
    /// With `decodesSlicesEarly` off, each frame is decoded once whole; with
    /// two encoder threads (the picture's two bands written at once, their
    /// slices put in order by the sender) the same holds. The scene draws
    /// each frame atomically: a capture that tears a frame drawn in steps is
    /// not what this test is about.
    @Test(arguments: [(true, 1), (false, 1), (true, 2)])
    func theReceiverDecodesAFrameWhileItsLastSlicesAreEncoded(early: Bool, encoderThreads: Int) throws {
        let display = try VirtualDisplay(width: 1280, height: 720)
        let secret = Array("early slices".utf8)
        var receiving = headlessReceiving(secret)
        receiving.decodesSlicesEarly = early
        let stamps = Mutex<(read: Int, unreadable: Int)>((0, 0))
        receiving.onPicture = { picture in
            let stamp = FrameStamp.read(width: picture.width, height: picture.height) { picture.luma(x: $0, y: $1) }
            stamps.withLock { stamp == nil ? ($0.unreadable += 1) : ($0.read += 1) }
        }
        let receiver = try ScreenReceiver(configuration: receiving)
        receiver.start()
        defer { receiver.stop() }
        var sending = screenSending(secret, to: receiver.port, display: display)
        sending.stillRefresh = nil
        sending.encoderThreads = encoderThreads
        let sender = try ScreenSender(configuration: sending)
        sender.start()
        defer { sender.stop() }
        let scene = try DemoScene(display: display.display)
        for frame in 0..<90 {
            scene.draw(frame: frame, atomically: true) { scene in
                FrameStamp(microseconds: DispatchTime.now().uptimeNanoseconds / 1000).paint(width: scene.width) {
                    scene.fill(x: $0, y: $1, width: $2, height: $3, rgb: $4 ? 0xFFFFFF : 0)
                }
            }
            usleep(33_000)
        }
        let r = receiver.statistics
        let (read, unreadable) = stamps.withLock { $0 }
        #expect(r.framesDecoded >= 45, "\(r.framesDecoded) frames decoded")
        if early {
            #expect(r.framesDecodedEarly >= r.framesDecoded * 8 / 10,
                    "\(r.framesDecodedEarly) of \(r.framesDecoded) frames begun before their last packet")
        } else {
            #expect(r.framesDecodedEarly == 0)
        }
        #expect(r.lastPacketToDisplay.p50 != nil, "the receiver's own latency is measured")
        #expect(r.decodeErrors == 0)
        #expect(read >= r.framesDecoded - 1 && unreadable <= 1, "stamps read on \(read) pictures, unreadable on \(unreadable)")
    }

    @Test func lifecycleEventsArriveInOrder() throws {
        let display = try VirtualDisplay(width: 320, height: 240)
        let sender = try ScreenSender(configuration: testSenderConfiguration(display: display))
        let log = EventLog()
        sender.start { event in log.append(event) }
        Thread.sleep(forTimeInterval: 0.5)
        sender.pause()
        Thread.sleep(forTimeInterval: 0.3)
        sender.resume()
        Thread.sleep(forTimeInterval: 0.3)
        sender.stop()
        Thread.sleep(forTimeInterval: 0.2)
        #expect(log.names == ["started", "paused", "resumed", "finished"], "\(log.names)")
        #expect(sender.setup.sessionDescription?.video?.codec == "H264")
    }

    /// The README prints every event: no key may show, however it is printed.
    @Test func noEventOrSetupShowsTheKey() throws {
        let display = try VirtualDisplay(width: 320, height: 240)
        let keying = SRTPKeyingMaterial.random(profile: .aes128CmHmacSha1_80)
        let configuration = testSenderConfiguration(display: display, keying: keying)
        let sender = try ScreenSender(configuration: configuration)
        let key = keying.inlineKeySalt()
        #expect(sender.setup.sessionDescription?.serialized().contains(key) == true, "the SDP for other tools holds it")
        let event = SenderEvent.started(sender.setup)
        var dumped = ""
        dump(event, to: &dumped)
        var dumpedConfiguration = ""
        dump(configuration, to: &dumpedConfiguration)
        for text in ["\(event)", String(reflecting: event), dumped, "\(sender.setup)", "\(configuration)",
                     dumpedConfiguration, "\(configuration.keying)"] {
            #expect(!text.contains(key), "a key in: \(text)")
        }
    }
}

final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []

    func append(_ event: SenderEvent) {
        let name: String? = switch event {
        case .started: "started"
        case .paused: "paused"
        case .resumed: "resumed"
        case .finished: "finished"
        default: nil
        }
        lock.lock()
        if let name { events.append(name) }
        lock.unlock()
    }

    var names: [String] {
        lock.lock()
        defer { lock.unlock() }
        return events
    }
}
