import ShareCommands
import ShareFanout
import ShareGovernor
import ShareHandshake
import ShareSender

extension SendOptions {
    /// The sender these options ask for; a bad option ends the program
    /// with what is wrong with it, before anything is opened.
    func senderConfiguration() -> SenderConfiguration {
        var configuration = SenderConfiguration(host: host ?? "", keying: keying())
        configuration.handshakeName = trust.name
        // The process is the sender: its whole footprint counts, as iOS counts an extension's.
        configuration.memoryAccounting = .process
        configuration.confirmation = trust.accept ? .acceptNew : .ask(ConfirmationPrompt.ask)
        configuration.port = destination.port
        configuration.rtcpPort = destination.rtcpPort
        configuration.display = source.display
        configuration.capture = CaptureBackend(rawValue: source.capture) ?? .auto
        configuration.askForScreenAgain = source.forgetScreenChoice
        configuration.cursor = CursorMode(rawValue: source.cursor) ?? .auto
        configuration.source = captureSource()
        configuration.fps = picture.fps
        configuration.bitrateKbps = picture.bitrate
        // Standard receivers reading the SDP may join at any time and never
        // ask for a keyframe: a decoder shows a picture once a whole sweep
        // has passed (ffmpeg waits for the recovery point), so sweeps are short.
        configuration.keyframeInterval = picture.keyint ?? (trust.sdp != nil ? max(4, picture.fps / 4) : nil)
        configuration.mtu = network.mtu
        configuration.encoderThreads = picture.threads
        if picture.everyFrame { configuration.stillRefresh = nil }
        configuration.congestionControl = !network.fixedBitrate
        configuration.intraRefresh = !network.periodicKeyframes
        configuration.forwardErrorCorrection = !network.noFec
        if let size = picture.size {
            guard let parsed = VideoSize(size) else { fail("--size \(size) is not WIDTHxHEIGHT (16 to 8192 each)") }
            configuration.size = parsed
        }
        do { configuration.audio = try audioInputs(self) } catch { fail("\(error)") }
        // Each further audio stream two ports up, as RTP ports go.
        let streams = configuration.audio.indices
        configuration.audioPorts = destination.audioPort.map { port in streams.map { port + 2 * $0 } } ?? []
        configuration.audioRTCPPorts = destination.audioRTCPPort.map { port in streams.map { port + 2 * $0 } } ?? []
        do { configuration.memoryBudget = try budget() } catch { fail(error.message) }
        return configuration
    }

    /// A handshake with the key file's identity, or one static key: given,
    /// or made up for the SDP's or Janus's receivers (which cannot handshake).
    private func keying() -> SessionKeying {
        if trust.sdp != nil && trust.keyFile != nil {
            fail("--sdp is for other tools, which cannot handshake: use it with --srtp-key-file (or alone), not --key-file")
        }
        if (trust.sdp != nil || fanout.isOn) && trust.srtpKeyFile == nil { return .staticKey(.random(profile: .aes128CmHmacSha1_80)) }
        do { return try Keying.resolve(keyFile: trust.keyFile, srtpKeyFile: trust.srtpKeyFile, name: trust.name) } catch { fail("\(error)") }
    }

    /// `--monitor`, `--window` or `--region`; the whole screen by default.
    private func captureSource() -> CaptureSource {
        if let text = source.region {
            guard let region = Rectangle(geometry: text) else { fail("--region \(text) is not WxH+X+Y") }
            return .region(region)
        }
        if let window = source.window { return .window(window) }
        if let monitor = source.monitor { return .monitor(monitor) }
        return .screen
    }
}

extension JanusFleet {
    /// Mountpoints on every Janus the options name, which then take the
    /// stream; a failure of all of them ends the program with why.
    static func mount(options o: SendOptions, configuration: inout SenderConfiguration) -> JanusFleet {
        if o.destination.audioPort != nil || o.destination.rtcpPort != nil || o.destination.audioRTCPPort != nil { fail("--janus chooses the ports: no --audio-port or --rtcp-port") }
        return mount(o.fanout, name: o.trust.name, configuration: &configuration)
    }
}
