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
        configuration.handshakeName = name
        // The process is the sender: its whole footprint counts, as iOS counts an extension's.
        configuration.memoryAccounting = .process
        configuration.confirmation = accept ? .acceptNew : .ask(ConfirmationPrompt.ask)
        configuration.port = port
        configuration.rtcpPort = rtcpPort
        configuration.display = display
        configuration.capture = CaptureBackend(rawValue: capture) ?? .auto
        configuration.askForScreenAgain = forgetScreenChoice
        configuration.cursor = CursorMode(rawValue: cursor) ?? .auto
        configuration.source = captureSource()
        configuration.fps = fps
        configuration.bitrateKbps = bitrate
        // Standard receivers reading the SDP may join at any time and never
        // ask for a keyframe: a decoder shows a picture once a whole sweep
        // has passed (ffmpeg waits for the recovery point), so sweeps are short.
        configuration.keyframeInterval = keyint ?? (sdp != nil ? max(4, fps / 4) : nil)
        configuration.mtu = mtu
        configuration.encoderThreads = threads
        if everyFrame { configuration.stillRefresh = nil }
        configuration.congestionControl = !fixedBitrate
        configuration.intraRefresh = !periodicKeyframes
        configuration.forwardErrorCorrection = !noFec
        if let size {
            guard let parsed = VideoSize(size) else { fail("--size \(size) is not WIDTHxHEIGHT (16 to 8192 each)") }
            configuration.size = parsed
        }
        do { configuration.audio = try audioInputs(self) } catch { fail("\(error)") }
        // Each further audio stream two ports up, as RTP ports go.
        let streams = configuration.audio.indices
        configuration.audioPorts = audioPort.map { port in streams.map { port + 2 * $0 } } ?? []
        configuration.audioRTCPPorts = audioRTCPPort.map { port in streams.map { port + 2 * $0 } } ?? []
        do { configuration.memoryBudget = try budget() } catch { fail(error.message) }
        return configuration
    }

    /// A handshake with the key file's identity, or one static key: given,
    /// or made up for the SDP's or Janus's receivers (which cannot handshake).
    private func keying() -> SessionKeying {
        if sdp != nil && keyFile != nil {
            fail("--sdp is for other tools, which cannot handshake: use it with --srtp-key-file (or alone), not --key-file")
        }
        if (sdp != nil || fanout.isOn) && srtpKeyFile == nil { return .staticKey(.random(profile: .aes128CmHmacSha1_80)) }
        do { return try Keying.resolve(keyFile: keyFile, srtpKeyFile: srtpKeyFile, name: name) } catch { fail("\(error)") }
    }

    /// `--monitor`, `--window` or `--region`; the whole screen by default.
    private func captureSource() -> CaptureSource {
        if let text = region {
            guard let region = Rectangle(geometry: text) else { fail("--region \(text) is not WxH+X+Y") }
            return .region(region)
        }
        if let window { return .window(window) }
        if let monitor { return .monitor(monitor) }
        return .screen
    }
}

extension JanusFleet {
    /// Mountpoints on every Janus the options name, which then take the
    /// stream; a failure of all of them ends the program with why.
    static func mount(options o: SendOptions, configuration: inout SenderConfiguration) -> JanusFleet {
        if o.audioPort != nil || o.rtcpPort != nil || o.audioRTCPPort != nil { fail("--janus chooses the ports: no --audio-port or --rtcp-port") }
        return mount(o.fanout, name: o.name, configuration: &configuration)
    }
}
