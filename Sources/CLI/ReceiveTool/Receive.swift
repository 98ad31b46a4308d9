import ArgumentParser
import Foundation
import ShareCommands
import ShareHandshake
import ShareReceiver
import ShareSRTP
import ShareSession
import ShareWire
import ShareLatency
import ShareScene

/// `share-recv`: the receiving half of `share`.
@main
struct ShareReceive: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "share-recv", subcommands: [Receive.self])
}

struct Receive: ParsableCommand {
    static let configuration = CommandText.receive
    @OptionGroup var options: ReceiveOptions

    func run() throws {
        let o = options
        setVerbosity(o.output.verbosity)
        let stamps = o.measure.readStamps || o.measure.saveFrames != nil ? StampReader() : nil
        let sampler = o.measure.saveFrames.map { directory in
            let schedule = PictureSampleSchedule(every: o.measure.saveEvery, after: o.measure.saveAfterSeconds.map { .seconds($0) })
            do { return try PictureSampler(directory: directory, schedule: schedule) } catch { fail("\(error)") }
        }
        var configuration = o.receiverConfiguration()
        if let stamps {
            configuration.onShown = { picture in
                let stamp = stamps.read(width: picture.width, height: picture.height) { x, y in picture.luma(x: x, y: y) }
                sampler?.offer(frame: stamp?.frame, keyframe: picture.isKeyframe, colors: picture.colorSpace) {
                    picture.i420Copy()
                }
            }
        }
        if !o.show.noWindow && !configuration.showWindow { warn("no display: receiving without a window") }
        let receiver: ScreenReceiver
        do { receiver = try ScreenReceiver(configuration: configuration) } catch {
            if case .window = error { fail("\(error); --no-window receives without one") }
            fail("\(error)")
        }
        let stop = StopSignal(duration: o.running.duration)
        serveControl(receiver, stop: stop)
        receiver.start(events: Self.report(to: stop))
        let status = StatusLine()
        let recent = RecentRates()
        status.start {
            let s = receiver.statistics
            let rates = recent.perSecond([Double(s.framesDecoded), Double(s.bytes) * 8 / 1000], at: s.elapsedSeconds)
            return String(format: "%.1f fps  %.0f kbit/s  lost %d  latency p50 %@", rates[0], rates[1], s.framesLost,
                          s.captureToDisplay.p50.map { String(format: "%.1f ms", $0) } ?? "-")
        }
        let refresh = StatisticsRefresh(path: o.running.statsJson, interval: o.running.statsInterval) { receiver.statistics }
        stop.wait()
        refresh?.stop()
        ServiceManager.stopping()
        status.stop()
        receiver.stop()
        let s = receiver.statistics
        if let sampler {
            let (saved, failures) = sampler.finish()
            note("saved \(saved.count) picture\(saved.count == 1 ? "" : "s") into \(o.measure.saveFrames ?? "")")
            for failure in failures { warn("--save-frames: \(failure)") }
        }
        print(Self.summary(s, stamps: stamps?.counts))
        if let statsJson = o.running.statsJson { writeJSON(ReceiveReport(statistics: s, stamps: stamps?.counts), to: statsJson) }
        if let error = receiver.error { fail("\(error)") }
        if let failure = s.recordingFailure {
            fail("the recording failed \(s.recordingFaults == 1 ? "once" : "\(s.recordingFaults) times"): \(failure)")
        }
    }

    /// `share ctl` reaches the running receiver through a local socket: its
    /// status, and stop. A path the user named must work; the default one
    /// is a convenience.
    private func serveControl(_ receiver: ScreenReceiver, stop: StopSignal) {
        do {
            try ControlChannel.serve(path: try options.running.control ?? ControlChannel.defaultPath(.recv)) { request in
                switch request {
                case .stop:
                    stop.fire("stopped by share ctl")
                    return #"{"ok":true,"state":"stopping"}"#
                case .status:
                    return ControlChannel.statusReply(state: "receiving", statistics: receiver.statistics)
                default:
                    return #"{"ok":false,"error":"a receiver takes status and stop"}"#
                }
            }
        } catch {
            if options.running.control != nil { fail("\(error)") }
            warn("no control channel: \(error)")
        }
    }

    /// What the person watching hears of the receiver's events.
    private static func report(to stop: StopSignal) -> @Sendable (ReceiverEvent) -> Void {
        { event in
                switch event {
                case .listening(let port):
                    note("listening on UDP port \(port)")
                    ServiceManager.ready(status: "listening on UDP port \(port)")
                case .firstFrame(let width, let height): note("receiving \(width)x\(height)")
                case .senderTitled(let title): note("the sender calls its stream \"\(title)\"")
                case .senderPaused: note("the sender paused")
                case .senderResumed: note("the sender resumed")
                case .senderLeft(let reason):
                    note("the sender ended the stream" + (reason.map { ": \($0)" } ?? "") + "; waiting for the next")
                case .sessionStarted(let sender, let code, let firstMeeting, let renewed):
                    let line = "session with sender \"\(sender)\"" + (code.map { ", code \($0)" } ?? "")
                        + (renewed ? " (keys renewed)" : "") + (firstMeeting ? " (remembered from now on)" : "")
                    if renewed { detail(line) } else { note(line) }
                case .confirming(let sender, let code, let fingerprint):
                    note("accepting new sender \"\(sender)\" (\(fingerprint)), code \(code) (--accept)")
                case .sessionRefused(let sender, let reason):
                    warn("refused a session" + (sender.map { " from \"\($0)\"" } ?? "") + ": \(reason)")
                case .warning(let message): warn(message)
                case .finished:
                    stop.fire("finished")  // an error is reported once, on the way out
                }
        }
    }

    /// The closing summary; with `stamps`, what they said.
    private static func summary(_ s: ReceiverStatistics, stamps: StampReader.Counts?) -> String {
        let notRecorded = s.recordingFaults > 0 ? ", \(s.framesNotRecorded) NOT recorded after the recording failed" : ""
        return """
            received \(s.framesDecoded) frames (\(s.framesShown) shown, \(s.framesRecorded) recorded\(notRecorded), \(s.framesDecodedEarly) \
            begun before their last packet, \(s.framesConvertedEarly) of them converted for the window meanwhile) in \
            \(String(format: "%.1f", s.elapsedSeconds)) s: \(String(format: "%.1f", s.fps)) fps, \
            \(String(format: "%.0f", s.bitrateKbps)) kbit/s
            lost \(s.framesLost) frames, \(s.decodeErrors) decode errors, \(s.nacksSent) NACKs, \(s.keyframeRequests) keyframe requests; \
            \(s.repairsReceived) retransmissions and \(s.fecRecovered) FEC repairs arrived; \(s.interruptions) interruptions \
            (\(String(format: "%.2f", s.interruptionSeconds)) s: pictures lost or late; \(s.freezes - s.interruptions) more pauses the sender left)
            sessions: \(s.sessions) (\(s.sessionRenewals) key renewals), \(s.handshakesRefused) handshakes refused, \
            \(s.handshakesRateLimited) not answered (rate limit), \(s.handshakesAbandoned) abandoned at the code\(s.streamsReplaced > 0 ? "; \(s.streamsReplaced) senders followed after starting again" : "")
            refused: \(s.authenticationFailures) failed authentication, \(s.replays) replays, \(s.malformed) malformed, \
            \(s.packetsWithoutSession) without a session, \(s.packetsFromStrangers) from other addresses\(s.streamsResumed > 0 ? """
                ; \(s.streamsResumed) streams joined after their sequence numbers wrapped
                """ : "")
            capture to display: \(s.captureToDisplay.text); last packet to display: \(s.lastPacketToDisplay.text)\(stamps.map { c in
                "\nglass to glass: \(c.glassToGlass.text), \(c.stampsNew) stamps (\(c.stampsRepeated) repeated, \(c.stampsUnreadable) unreadable)"
            } ?? "")
            audio: \(s.audio.streams) streams, \(s.audio.packetsReceived) packets, \(s.audio.packetsLost) lost, \
            \(s.audio.framesRecoveredByFEC) recovered by FEC, \(s.audio.framesConcealed) concealed, \(s.audio.packetsRecorded) recorded
            """
    }
}

/// What `--stats-json` writes: the receiver's statistics, and beside them
/// (the same object) what the frame stamps said, with `--read-stamps`.
struct ReceiveReport: Encodable {
    var statistics: ReceiverStatistics
    var stamps: StampReader.Counts?

    func encode(to encoder: any Encoder) throws {
        try statistics.encode(to: encoder)
        try stamps?.encode(to: encoder)
    }
}
