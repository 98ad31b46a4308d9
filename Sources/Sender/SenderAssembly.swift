import Dispatch
internal import ShareAudio
internal import ShareBase
internal import ShareCapture
internal import ShareHandshake
internal import ShareSRTP
internal import ShareSession
internal import ShareTransport
internal import ShareWire
internal import ShareX11Capture
internal import SharePipeWireCapture
internal import ShareSync
import Synchronization

/// The steps `ScreenSender.init` takes, each one job: check the
/// configuration, open the socket, the screen and the audio, make the
/// network side, and connect the pointer. What they are given comes from
/// the `SenderPlan`.
extension ScreenSender {
    static func validate(_ configuration: SenderConfiguration) throws(SenderError) {
        guard (1...120).contains(configuration.fps) else { throw .configuration("--fps \(configuration.fps) outside 1-120") }
        guard (400...9000).contains(configuration.mtu) else { throw .configuration("--mtu \(configuration.mtu) outside 400-9000") }
        if let problem = configuration.handshakeName.flatMap(PeerName.problem) { throw .configuration(problem) }
        try checkPorts(configuration)
        if case .pushed(let size) = configuration.video,
           !(16...8192).contains(size.width) || !(16...8192).contains(size.height) {
            throw .configuration("pushed pictures of \(size) (16 to 8192 pixels a side)")
        }
    }

    static func openSocket(_ configuration: SenderConfiguration) throws(SenderError) -> (UDPSocket, SocketAddress) {
        do {
            let destination = try SocketAddress(host: configuration.host, port: configuration.port)
            return (try UDPSocket(connectedTo: destination), destination)
        } catch {
            throw .transport(error.description)
        }
    }

    /// Where the pictures come from, and their size: the screen behind the
    /// capture seam, or (no screen) the host's pushed pictures.
    static func openVideo(_ configuration: SenderConfiguration) throws(SenderError)
        -> (screen: (any ScreenSource)?, size: VideoSize, summary: String?) {
        if case .pushed(let size) = configuration.video { return (nil, size, nil) }
        let pointer = pointerPlacement(configuration)
        do {
            switch CaptureChoice.resolve(configuration.capture, display: configuration.display) {
            case .x11:
                let screen = try ScreenCapturer(display: configuration.display, slots: configuration.captureSlots,
                                                source: configuration.source, drawsCursor: pointer == .embed || pointer == .auto,
                                                tracksPointer: pointer == .metadata)
                return (screen, VideoSize(width: screen.width, height: screen.height),
                        "\(configuration.source) of X display \(configuration.display ?? CaptureChoice.environment("DISPLAY") ?? "(none)")")
            case .wayland(let backend):
                // The compositor draws the pointer in (embed, auto) or sends
                // it as metadata; it cannot switch mid-cast as X11 can.
                let screen = try PipeWireCapturer(backend: backend, source: configuration.source, slots: configuration.captureSlots,
                                                  drawsCursor: pointer != .none, tracksPointer: pointer == .metadata,
                                                  maxFPS: configuration.fps, askAgain: configuration.askForScreenAgain)
                return (screen, VideoSize(width: screen.width, height: screen.height), CaptureChoice.describe(screen))
            }
        } catch {
            throw .capture("\(error)")
        }
    }

    /// With a handshake, the streams start with throwaway keys: nothing is
    /// sent until the session's keys replace them.
    static func startKeys(_ configuration: SenderConfiguration) -> SRTPSessionKeys {
        switch configuration.keying {
        case .staticKey(let keying): .symmetric(keying)
        case .handshake: .symmetric(.random(profile: configuration.profile))
        }
    }

    /// The audio inputs that could start, their streams, and why the others did not.
    struct OpenedAudio {
        var channels: [AudioChannel] = []
        var streams: [LockedStream] = []
        var warnings: [String] = []
    }

    static func openAudio(_ configuration: SenderConfiguration, keys: SRTPSessionKeys) -> OpenedAudio {
        var opened = OpenedAudio()
        for (index, input) in configuration.audio.enumerated() {
            do {
                let channel = try AudioChannel(input: input, ssrc: configuration.ssrcs?.audio[index])
                opened.streams.append(LockedStream(try channel.makeStream(keys: keys, payloadType: configuration.audioPayloadType,
                                                                          cname: configuration.cname)))
                opened.channels.append(channel)
            } catch {
                opened.warnings.append("\(error); sending without \(input.label)")
            }
        }
        return opened
    }

    static func makeNetwork(_ configuration: SenderConfiguration, plan: SenderPlan, socket: UDPSocket,
                                    destination: SocketAddress, video: sending SendStream, audio: OpenedAudio,
                                    audioBitrate: Bitrate) throws(SenderError) -> NetworkDriver {
        let link = SessionLink(keying: configuration.keying, name: configuration.handshakeName, profile: configuration.profile,
                               instance: UInt64.random(in: 1...UInt64.max), confirmation: configuration.confirmation)
        let layout = audio.channels.map { AudioStreamLayout(ssrc: $0.ssrc, channels: UInt8($0.channels)) }
        // Audio streams are numbered as they started (as the SDP numbers them).
        let routes: MediaRoutes
        do {
            routes = try MediaRoutes.make(host: configuration.host, audioStreams: audio.channels.count,
                                          audioPorts: configuration.audioPorts, rtcpPort: configuration.rtcpPort,
                                          audioRTCPPorts: configuration.audioRTCPPorts, copies: configuration.copies)
        } catch {
            throw .transport(error.description)
        }
        return NetworkDriver(socket: socket, destination: destination, routes: routes, video: video, audio: audio.streams,
                             audioLayout: layout, congestion: plan.congestion(audio: audioBitrate), link: link,
                             adaptive: configuration.congestionControl, title: configuration.title)
    }

    /// The pointer apart from the pictures: always (`--cursor metadata`),
    /// or while the receivers say they draw it (`auto`).
    static func wirePointer(_ configuration: SenderConfiguration, capture: CaptureLoop?, network: NetworkDriver,
                                    context: SenderContext) {
        let placement = pointerPlacement(configuration)
        guard placement == .metadata || placement == .auto, let capture else { return }
        if placement == .metadata {
            capture.pointerWanted.store(true, ordering: .relaxed)
        } else {
            network.placePointer = { [capture, context] apart in
                if capture.pointerWanted.exchange(apart, ordering: .relaxed) != apart { context.captureWakeup.signal() }
            }
        }
        capture.pointerSink.withLock { $0 = { @Sendable [network] pointer in
            let position = CursorPosition(x: Int16(clamping: pointer.x), y: Int16(clamping: pointer.y),
                                          areaWidth: UInt16(clamping: pointer.areaWidth),
                                          areaHeight: UInt16(clamping: pointer.areaHeight), shape: pointer.serial,
                                          visible: pointer.visible)
            let shape = pointer.shape.map {
                CursorShape(serial: $0.serial, width: $0.width, height: $0.height, hotX: $0.hotX, hotY: $0.hotY, pixels: $0.pixels)
            }
            network.updateCursor(position, shape: shape)
        } }
    }


    /// Where the pointer goes: `auto` follows what receivers say only in a
    /// handshake session (the peer is a `share recv`); with a static key the
    /// players of the SDP and Janus's browsers draw no pointer: drawn in.
    static func pointerPlacement(_ c: SenderConfiguration) -> CursorMode {
        guard c.cursor == .auto else { return c.cursor }
        if case .handshake = c.keying { return .auto }
        return .embed
    }

    /// Ports of their own are for receivers that take a static key: a
    /// handshake needs the one port `share recv` listens on.
    static func checkPorts(_ c: SenderConfiguration) throws(SenderError) {
        try checkPortSet([("port", [c.port]), ("audio port", c.audioPorts), ("RTCP port", c.rtcpPort.map { [$0] } ?? []),
                          ("audio RTCP port", c.audioRTCPPorts)])
        for (name, list) in [("audio ports", c.audioPorts), ("audio RTCP ports", c.audioRTCPPorts)]
        where !list.isEmpty && list.count < c.audio.count {
            throw .configuration("\(list.count) \(name) for \(c.audio.count) audio streams")
        }
        for kind in PushedAudio.allCases where c.audio.filter({ $0.source == .pushed(kind) }).count > 1 {
            throw .configuration("two audio inputs pushed as \(kind): each pushed stream is one input")
        }
        if case .handshake = c.keying, !c.audioPorts.isEmpty || c.rtcpPort != nil || !c.audioRTCPPorts.isEmpty {
            throw .configuration("separate audio and RTCP ports are for SFUs and standard receivers, with a static key "
                + "(--srtp-key-file or --sdp); share recv takes everything on one port")
        }
        try checkCopies(c)
        try checkSSRCs(c)
    }

    /// Chosen SSRCs: one for each stream, none zero or used twice, and only
    /// where the key is the host's (a relay that demultiplexes by SSRC
    /// takes a static key), with no repair streams on SSRCs of their own.
    static func checkSSRCs(_ c: SenderConfiguration) throws(SenderError) {
        guard let chosen = c.ssrcs else { return }
        guard case .staticKey = c.keying, !c.retransmissionStream, !c.forwardErrorCorrection else {
            throw .configuration("chosen SSRCs are for a relay that takes a static key, with no repair streams")
        }
        guard chosen.audio.count == c.audio.count else {
            throw .configuration("\(chosen.audio.count) chosen audio SSRCs for \(c.audio.count) audio streams")
        }
        let all = [chosen.video] + chosen.audio
        guard !all.contains(0), Set(all).count == all.count else {
            throw .configuration("chosen SSRCs \(all) must be distinct and not 0")
        }
    }

    /// One destination's ports, by what each carries: each in 1-65535 and
    /// none used twice. `of` names the destination in the message.
    static func checkPortSet(_ ports: [(String, [Int])], of destination: String = "") throws(SenderError) {
        var used: Set<Int> = []
        for (name, list) in ports {
            for port in list {
                guard (1...65535).contains(port) else { throw .configuration("\(destination)\(name) \(port) outside 1-65535") }
                guard used.insert(port).inserted else {
                    throw .configuration("\(destination)\(name) \(port) is taken by another stream")
                }
            }
        }
    }

    /// Copies go to SFUs: a static key, and RTCP and audio on ports of their
    /// own at the first destination too, so nothing reaches a copy twice.
    static func checkCopies(_ c: SenderConfiguration) throws(SenderError) {
        guard !c.copies.isEmpty else { return }
        guard case .staticKey = c.keying, c.rtcpPort != nil, c.audioPorts.count >= c.audio.count else {
            throw .configuration("copies of the stream are for SFUs: a static key, and an RTCP port and audio ports of their own")
        }
        for copy in c.copies {
            try checkPortSet([("port", [copy.port]), ("RTCP port", copy.rtcpPort.map { [$0] } ?? []), ("audio port", copy.audioPorts)],
                             of: "a copy to \(copy.host): ")
            guard copy.audioPorts.count >= c.audio.count else {
                throw .configuration("a copy to \(copy.host) has \(copy.audioPorts.count) audio ports for \(c.audio.count) audio streams")
            }
        }
    }
}
