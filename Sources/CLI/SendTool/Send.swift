import ArgumentParser
import Foundation
import ShareColor
import ShareCommands
import ShareHandshake
import ShareSender
import ShareSession
import ShareSRTP
import ShareX11Capture
import SharePipeWireCapture
import ShareGovernor
import ShareLatency

/// `share-send`: the sending half of `share` (send, scene).
@main
struct ShareSend: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "share-send", subcommands: [Send.self, Scene.self])
}

struct Send: ParsableCommand {
    static let configuration = CommandText.send
    @OptionGroup var options: SendOptions

    func run() throws {
        let o = options
        setVerbosity(o.output.verbosity)
        if o.source.list { return listSources(o) }
        ScreenSender.limitMallocArenas()
        var configuration = o.senderConfiguration()
        let janus = o.fanout.isOn ? JanusFleet.mount(options: o, configuration: &configuration) : nil
        let sender: ScreenSender
        do { sender = try ScreenSender(configuration: configuration) } catch {
            janus?.remove()
            fail("\(error)")
        }
        if configuration.cursor == .metadata && (o.trust.sdp != nil || janus != nil) {
            note("the pointer is sent apart (--cursor metadata): only share recv draws it, \(o.trust.sdp != nil ? "players of the SDP" : "browsers") show none")
        }
        janus?.announce()
        if let sdp = o.trust.sdp, let description = sender.setup.sessionDescription {
            do { try KeyFile.writeSecret(description.serialized(), to: sdp) } catch { fail("\(error)") }
        }
        let stop = StopSignal(duration: o.running.duration)
        serveControl(sender, stop: stop, janus: janus)
        sender.start(events: Self.report(to: stop))
        janus?.watch(sender, stop: stop)
        for input in configuration.audio where !sender.audioWarnings.contains(where: { $0.contains(input.label) }) {
            note("sending \(input.label) as Opus, \(input.channels == 2 ? "stereo" : "mono"), \(input.bitrate / 1000) kbit/s")
        }
        let setup = sender.setup
        if let capture = setup.capture { note("capturing \(capture)") }
        note("sending \(setup.sourceSize) as \(setup.encodedSize) at \(setup.fps) fps, \(setup.bitrateKbps) kbit/s to \(setup.destination)")
        let status = StatusLine()
        let recent = RecentRates()
        status.start {
            let s = sender.statistics
            let rates = recent.perSecond([Double(s.framesEncoded), Double(s.bytesSent) * 8 / 1000], at: s.elapsedSeconds)
            // The governor's rung in words: "full" is the configured size and rate.
            let memory = s.memoryBudgetBytes == 0 ? "no memory budget"
                : "memory \(megabytes(s.footprintBytes)) of \(megabytes(s.memoryBudgetBytes)), "
                  + (s.memoryRung == "full" ? "full quality" : "stepped down to \(s.memoryRung)")
            return String(format: "%.1f fps  %.0f kbit/s  dropped %d  rss %@  %@", rates[0], rates[1],
                          s.framesDroppedPoolExhausted + s.framesDroppedEncoderBusy, megabytes(s.residentBytes), memory)
        }
        let refresh = StatisticsRefresh(path: o.running.statsJson, interval: o.running.statsInterval) { sender.statistics }
        stop.wait()
        refresh?.stop()
        status.stop()
        sender.stop()
        janus?.remove()
        let s = sender.statistics
        print(Self.summary(s))
        janus?.summary(s).forEach { print($0) }
        if let statsJson = o.running.statsJson { writeJSON(s, to: statsJson) }
        if let error = sender.error { fail("\(error)") }
        if let lost = janus?.lost { fail("janus: \(lost)") }
        if s.sessions == 0, let why = s.lastHandshakeSetback { fail("no session was established: \(why)") }
    }

    /// `share ctl` talks to the running sender through a local socket. A
    /// path the user named must work; the default one is a convenience.
    private func serveControl(_ sender: ScreenSender, stop: StopSignal, janus: JanusFleet?) {
        do {
            try ControlChannel.serve(path: try options.running.control ?? ControlChannel.defaultPath(.send)) { request in
                Self.answer(request, sender: sender, stop: stop)
            }
        } catch {
            guard options.running.control == nil else {
                janus?.remove()
                fail("\(error)")
            }
            warn("no control channel: \(error)")
        }
    }

    /// The answer to one `share ctl` request, as JSON.
    private static func answer(_ request: ControlRequest, sender: ScreenSender, stop: StopSignal) -> String {
        switch request {
        case .pause: sender.pause(); return #"{"ok":true,"state":"paused"}"#
        case .resume: sender.resume(); return #"{"ok":true,"state":"running"}"#
        case .stop: stop.fire("stopped by share ctl"); return #"{"ok":true,"state":"stopping"}"#
        case .budget(let text):
            guard let budget = MemoryBudget(text) else { return #"{"ok":false,"error":"\#(text) is not a size like 32M"}"# }
            guard sender.setMemoryBudget(budget) else {
                return #"{"ok":false,"error":"the memory governor is off (--memory-budget 0)"}"#
            }
            return #"{"ok":true,"budget":\#(budget.bytes)}"#
        case .status:
            return ControlChannel.statusReply(state: sender.isPaused ? "paused" : "running", statistics: sender.statistics)
        case .unknown, .malformed: return #"{"ok":false,"error":"unknown command"}"#
        }
    }

    /// What the person sharing hears of the sender's events.
    private static func report(to stop: StopSignal) -> @Sendable (SenderEvent) -> Void {
        { event in
            switch event {
            case .finished(.some):
                stop.fire("error")  // reported once, on the way out
            case .warning(let message):
                warn(message)
            case .verifying(let receiver, let code):
                warn("receiver \"\(receiver)\": this screen's code is  \(code)  (if the receiver asks, its code must be the same)")
            case .connected(let receiver, _, let firstMeeting):
                note("session with \"\(receiver)\" is up" + (firstMeeting ? " (remembered from now on)" : ""))
            case .memoryStep(let from, let to, let footprint, let budget):
                note("memory: \(megabytes(footprint)) of a \(megabytes(budget)) budget: \(from) -> \(to)")
            case .memorySettled(let rung, let footprint, let budget):
                note("memory: \(megabytes(footprint)) of a \(megabytes(budget)) budget at \(rung)")
            case .receiverLeft(let reason):
                note("the receiver left: \(reason)")
            case .paused:
                detail("paused")
            case .resumed:
                detail("resumed")
            case .receiverJoined:
                detail("a receiver reports")
            case .networkEstimate(let e):
                detail(String(format: "network: target %.0f kbit/s, %.1f%% lost", e.targetKbps, e.lossFraction * 100)
                       + (e.roundTripMilliseconds.map { String(format: ", round trip %.0f ms", $0) } ?? "") + (e.congested ? ", congested" : ""))
            default:
                break
            }
        }
    }

    /// The closing summary.
    private static func summary(_ s: SenderStatistics) -> String {
        """
        sent \(s.framesEncoded) frames (\(s.keyframes) keyframes) in \(String(format: "%.1f", s.elapsedSeconds)) s: \
        \(String(format: "%.1f", s.fps)) fps, \(String(format: "%.0f", s.bitrateKbps)) kbit/s, \
        \(s.packetsRetransmitted) retransmitted, \(s.fecPackets) FEC repairs
        network: target \(String(format: "%.0f", s.targetKbps)) kbit/s, encoder \(s.encoderKbps) kbit/s at \
        \(s.encodedWidth)x\(s.encodedHeight) \(s.encodedFPS) fps, round trip \
        \(s.roundTripMilliseconds.map { String(format: "%.1f ms", $0) } ?? "-"), \(s.qualitySteps) quality steps
        session: \(s.sessions) established, first after \(s.handshakeMilliseconds.map { String(format: "%.1f ms", $0) } ?? "-"); \
        \(s.framesBeforeSession) frames before it (not encoded), \(s.rtcpRejected) datagrams refused
        keyframes asked for: \(s.keyframeRequests) (\(s.receiversJoined) for receivers joining)\(rtcpPortLine(s))
        dropped: \(s.framesDroppedPoolExhausted) pool exhausted, \(s.framesDroppedEncoderBusy) encoder busy
        cpu: \(String(format: "%.2f", s.cpuMillisecondsPerFrame)) ms per frame; \
        peak footprint \(megabytes(s.peakFootprintBytes)), peak rss \(megabytes(s.peakResidentBytes))
        capture to send: \(s.captureToSend.text); encode: \(s.encodeMilliseconds.text); \
        first packet ahead of the encode's end: \(s.firstPacketLead.text)
        audio: \(s.audioStreams) streams, \(s.audioPacketsSent) packets
        memory: \(s.memoryRung) (budget \(s.memoryBudgetBytes > 0 ? megabytes(s.memoryBudgetBytes) : "off"), \(s.memorySteps) steps)
        """
    }
}

/// `share send --list`: what can be shared, on the desktop `--capture` takes.
func listSources(_ options: SendOptions) {
    let wayland = ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"].map { !$0.isEmpty } ?? false
    let auto = options.source.capture == "auto" && options.source.display == nil && wayland
    if options.source.capture == "portal" || (auto && !PipeWireCapturer.gnomeAnswers()) {
        print("the desktop's screen cast portal lists nothing: its dialog asks what to share (a monitor, or a window with --window)")
        return
    }
    if options.source.capture == "gnome" || auto {
        let monitors: [Monitor]
        do { monitors = try PipeWireCapturer.gnomeMonitors() } catch { fail("\(error)") }
        print("monitors of this GNOME desktop (--monitor CONNECTOR or INDEX):")
        for (index, monitor) in monitors.enumerated() {
            print("  \(index)  \(monitor.name)  \(monitor.bounds)\(monitor.primary ? "  primary" : "")")
        }
        print("windows: GNOME's screen cast takes a window by Mutter's id (--window ID); it has no list to give")
        return
    }
    let inventory: (monitors: [Monitor], windows: [TopLevelWindow])
    do { inventory = try ScreenCapturer.inventory(display: options.source.display) } catch { fail("\(error)") }
    print("monitors (--monitor NAME or INDEX):")
    for (index, monitor) in inventory.monitors.enumerated() {
        print("  \(index)  \(monitor.name)  \(monitor.bounds)\(monitor.primary ? "  primary" : "")")
    }
    if inventory.monitors.isEmpty { print("  none (no RandR monitors)") }
    print("windows (--window ID or NAME):")
    for window in inventory.windows {
        print("  0x\(String(window.id, radix: 16))  \(window.bounds)  \(window.name)")
    }
    if inventory.windows.isEmpty { print("  none with a name") }
}

/// What came in on the RTCP port of its own, when there is one.
func rtcpPortLine(_ s: SenderStatistics) -> String {
    let total = s.plainKeyframeRequests + s.plainRequestsLimited + s.plainRTCPIgnored + s.controlPortRefused
    guard total > 0 else { return "" }
    return "; RTCP port: \(s.plainKeyframeRequests) plain PLI/FIR honoured, \(s.plainRequestsLimited) too soon, "
        + "\(s.plainRTCPIgnored) other RTCP ignored, \(s.controlPortRefused) not RTCP"
}

/// The audio streams `--audio`, `--audio-source`, `--audio-file` and
/// `--audio-tone` ask for.
func audioInputs(_ o: SendOptions) throws -> [AudioInput] {
    if let path = o.sound.audioFile { return [AudioInput(source: .file(path))] }
    if let hertz = o.sound.audioTone {
        guard hertz > 0 && hertz < 24_000 else { throw UsageError("--audio-tone \(hertz) is not between 0 and 24000 Hz") }
        return [AudioInput(source: .tone(hertz: hertz))]
    }
    if let name = o.sound.audioSource { return [AudioInput(source: .named(name))] }
    switch o.sound.audio?.lowercased() {
    case nil:
        if AudioInput.pulseAudioAvailable { return [AudioInput(source: .system)] }
        warn("no PulseAudio server answers: sending video only (--audio none to say so)")
        return []
    case "system": return [AudioInput(source: .system)]
    case "mic", "microphone": return [AudioInput(source: .microphone)]
    case "both": return [AudioInput(source: .system), AudioInput(source: .microphone)]
    case "none": return []
    default: throw UsageError("--audio \(o.sound.audio!) is not system, mic, both or none")
    }
}

struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
