public import ShareCapture
public import ShareHandshake
public import ShareSRTP
internal import ShareSession
#if canImport(Glibc)
internal import Glibc
#endif
internal import ShareVideo
public import ShareWire
public import ShareGovernor

/// A picture size.
public struct VideoSize: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Pixels across.
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// A size of `width` x `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses "1280x720".
    public init?(_ text: String) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w >= 16, h >= 16, w <= 8192, h <= 8192
        else { return nil }
        self.init(width: w, height: h)
    }

    /// Rounded down to even dimensions, as 4:2:0 needs.
    public var even: VideoSize { VideoSize(width: width & ~1, height: height & ~1) }
    public var description: String { "\(width)x\(height)" }
}

/// What the memory governor measures against its budget.
public enum MemoryAccounting: String, Sendable, CaseIterable {
    /// The process's footprint (RssAnon + RssShmem of /proc/self/status),
    /// as iOS counts a broadcast extension: right when the process is the
    /// sender and nothing else.
    case process
    /// What the sender itself holds, by its own account: its capture slots,
    /// encoder pictures and look-ahead, scaling buffer, retransmission
    /// history (as filled), pacer queues and audio. A host's own memory is
    /// not the sender's to govern.
    case sender
}

/// Whether the mouse pointer is in the picture.
public enum CursorMode: String, Sendable, CaseIterable {
    /// Sent apart while every receiver that reports draws it itself (a
    /// `share recv` showing the picture in a window, recording nothing),
    /// drawn in otherwise: from the start until the receiver's first
    /// report, whenever a receiver that does not draw it reports (ffmpeg,
    /// a recording), and always with a static key (SDP players, Janus).
    case auto
    /// Drawn into each picture where it is (XFixes); a pointer that moves over a still screen brings a new picture.
    case embed
    /// Sent apart from the picture (RTCP APP: its position as it moves, its
    /// shape when it changes) for a receiver that draws it itself; a pointer
    /// that moves over a still screen costs no picture at all. Receivers
    /// that do not know it (ffmpeg, a browser) show no pointer.
    case metadata
    /// Left out.
    case none
}

/// How the screen is captured.
public enum CaptureBackend: String, Sendable, Equatable, CaseIterable {
    /// A Wayland desktop's screen cast when `WAYLAND_DISPLAY` is set
    /// (GNOME's own when its service answers, the portal otherwise), the X
    /// display otherwise.
    case auto
    /// The X display (XCB, MIT-SHM, XDamage): on Wayland it sees only XWayland's windows.
    case x11
    /// The xdg-desktop-portal ScreenCast portal, any Wayland desktop with a
    /// backend: the desktop asks the person sharing once, then remembers.
    case portal
    /// GNOME's org.gnome.Mutter.ScreenCast: no dialog.
    case gnome
}

/// Where the pictures come from.
public enum VideoInput: Sendable, Equatable {
    /// The X display (`display`, `source`, `cursor`).
    case screen
    /// Pictures the host pushes (`ScreenSender.push`), nominally of this
    /// size: the encoded size, default bitrate and ladders follow it (or
    /// `size`); pictures of another size are scaled to it.
    case pushed(VideoSize)
}

/// Everything a sender needs to start.
public struct SenderConfiguration: Sendable {
    /// The encoder thread count `encoderThreads == nil` means for a size and
    /// rate: one up to 720p30's pixel rate, two sliced threads (one on a
    /// single core) up to 1080p30's, and x264's own choice above. Two
    /// threads halve the picture between them, so its encode ends sooner,
    /// and glass to glass too, for a few percent more CPU a frame; at 720p
    /// the share is larger, and the sender's CPU margin against its peers
    /// there cannot spare it (`Benchmarks/harness.py --senders
    /// 'share,share[--threads 2],ffmpeg,gstreamer'`).
    public static func defaultEncoderThreads(size: VideoSize, fps: Int) -> Int {
        let pixelRate = size.width * size.height * fps
        if pixelRate <= 1280 * 720 * 30 { return 1 }
        return pixelRate <= 1920 * 1080 * 30 ? min(2, max(1, onlineCores)) : 0
    }

    private static let onlineCores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

    /// The receiver's host name or address (IPv4 or IPv6).
    public var host: String
    /// The receiver's port: video RTP, and everything else unless the ports
    /// below say otherwise (what `share recv` takes).
    public var port: Int = 5004
    /// For an SFU or a standard receiver (static key only): each audio
    /// stream's RTP on a port of its own (in the order of `audio`), with its
    /// RTCP muxed there unless `audioRTCPPorts` says otherwise. Empty: audio
    /// on `port`.
    public var audioPorts: [Int] = []
    /// For an SFU or a standard receiver (static key only): the video's
    /// RTCP on a port of its own (RFC 3605). Sender reports go there, and
    /// plain PLI/FIR are taken from there (from that address only, at most
    /// twice a second): Janus asks for keyframes this way. nil: muxed on `port`.
    public var rtcpPort: Int?
    /// Each audio stream's RTCP on a port of its own. Empty: muxed.
    public var audioRTCPPorts: [Int] = []
    /// More places that get every packet sent to the one above (other SFUs'
    /// mountpoints): the same protected stream, copied, with no second
    /// encode. Static key, with `rtcpPort` and `audioPorts`, only: each
    /// copy's RTCP port takes its own keyframe requests, and a copy can be
    /// dropped while the others go on (`ScreenSender.dropDestination`).
    public var copies: [MediaCopy] = []
    /// SSRCs the host chooses instead of fresh random ones, for a relay
    /// that tells the streams apart by SSRC on one port (Janus's remote
    /// publisher). Static key only, with no repair streams. nil: random.
    public var ssrcs: ChosenSSRCs?
    /// How the screen is captured: X11, or a Wayland desktop's screen cast
    /// through PipeWire; `auto` follows `WAYLAND_DISPLAY`.
    public var capture: CaptureBackend = .auto
    /// Through the portal: ask the person which screen to share even when
    /// the desktop remembered an earlier choice.
    public var askForScreenAgain = false
    /// X display to capture; nil means $DISPLAY.
    public var display: String?
    /// What of it: the screen, a region, a monitor, or a window followed as it moves.
    public var source: CaptureSource = .screen
    /// The mouse pointer (presenters point at things): sent apart for
    /// receivers that draw it, drawn into the picture for the others
    /// (`auto`), always one or the other, or left out.
    public var cursor: CursorMode = .auto
    /// The screen (default), or pictures the host pushes.
    public var video: VideoInput = .screen
    /// Pictures per second, 1-120 (the memory governor and the quality ladder
    /// may capture fewer; the encoder's rate stays this).
    public var fps: Int = 30
    /// Target bitrate; nil sizes it to the resolution.
    public var bitrateKbps: Int?
    /// Frames per intra-refresh sweep (a column of intra blocks crossing
    /// the picture, so a receiver can join or recover without an IDR).
    /// IDR frames come when a receiver asks (PLI/FIR) and, with
    /// `intraRefresh` off, every interval. nil: with a handshake, no sweeps
    /// (the receiver is a `ScreenReceiver`, which asks for an IDR when it
    /// joins or loses a picture, and does not use sweeps to recover; a
    /// sweep over text costs as much as two keyframes and drives the
    /// quantizer coarse while it lasts); with a static key, whose receivers
    /// may join without asking, three seconds' worth.
    public var keyframeInterval: Int?

    /// The interval the encoder is opened with (`keyframeInterval`, or
    /// its default for how the session is keyed); nil: the encoder's own.
    var refreshInterval: Int? {
        if let keyframeInterval { return keyframeInterval }
        if intraRefresh, case .handshake = keying { return H264Encoder.Configuration.never }
        return nil
    }
    /// Periodic intra refresh instead of periodic IDR frames (no frame much
    /// larger than the others, so no burst to overflow a queue on the path).
    public var intraRefresh = true
    /// Follow the path: RFC 8888 feedback drives a delay- and loss-based
    /// controller that sets the encoder's bitrate (and, below a floor, its
    /// frame rate and size) and the pacer's rate. Off: the configured
    /// bitrate is sent whatever happens (for receivers that send no feedback).
    public var congestionControl = true
    /// Retransmissions on their own SSRC (RFC 4588 RTX, payload type
    /// `retransmissionPayloadType`); off resends the original packets.
    public var retransmissionStream = true
    /// The payload type of the video's retransmissions (RFC 4588 RTX).
    public var retransmissionPayloadType: UInt8 = 97
    /// FlexFEC (RFC 8627) on its own SSRC, sent when the round trip makes
    /// NACK repairs too slow and packets are being lost.
    public var forwardErrorCorrection = true
    /// The payload type of the video's FlexFEC repairs (RFC 8627).
    public var fecPayloadType: UInt8 = 98
    /// Scale the picture to this size before encoding; nil keeps the screen's size.
    public var size: VideoSize?
    /// Largest UDP payload.
    public var mtu: Int = 1200
    /// How the SRTP keys are agreed: a handshake (pre-shared key or
    /// identities) or, for other tools, a static SDES key.
    public var keying: SessionKeying
    /// Whether a receiver never met before gets the stream (identities): by
    /// default not; `.ask` lets a person compare the code first.
    public var confirmation: ConfirmationPolicy = .refuseNew
    /// The SRTP suite a handshake asks for.
    public var profile: SRTPProfile = .aes128CmHmacSha1_80
    /// Capture slots (MIT-SHM segments) in the frame pool. Two suffice: the
    /// encoder holds a lease only while converting it; every slot the
    /// process touches counts in its footprint (8 MB each at 1080p).
    public var captureSlots: Int = 2
    /// x264 threads; nil picks one up to 720p30's pixel rate, two up to
    /// 1080p30's, and lets x264 choose above (`defaultEncoderThreads`).
    public var encoderThreads: Int?
    /// While nothing on screen changes (XDamage), grab, convert and encode
    /// nothing, but still one picture every `stillRefresh` so a receiver sees
    /// the stream is alive. A keyframe request always gets a fresh picture.
    /// nil captures every frame regardless.
    public var stillRefresh: Duration? = .seconds(1)
    /// The RTCP canonical name (CNAME) the streams carry.
    public var cname: String = "share"
    /// The name the receiver is told in a handshake (`user@host`-like, 1 to
    /// 48 printable bytes); nil: the identity's, or user@host.
    public var handshakeName: String?
    /// The RTP payload type of the H.264 video.
    public var payloadType: UInt8 = 96
    /// The memory budget the governor keeps the sender under; nil turns
    /// the governor off.
    public var memoryBudget: MemoryBudget? = .default
    /// What the budget is measured against: for a library in a host
    /// process, what the sender itself holds (the default); for a process
    /// that is only the sender, its whole footprint as iOS counts it
    /// (`share send`).
    public var memoryAccounting: MemoryAccounting = .sender
    /// Extra time the encode stage takes per frame: a diagnostic knob that
    /// simulates a slow encoder (tests use it to prove capture never waits).
    /// Not part of the product's surface: the tests' own knob, behind SPI
    /// (`@_spi(Testing) import ShareSender`).
    @_spi(Testing) public var simulatedEncodeDelay: Duration = .zero
    /// Audio streams, each sent as its own Opus stream (its own SSRC), not mixed.
    public var audio: [AudioInput] = []
    /// The RTP payload type of every Opus stream.
    public var audioPayloadType: UInt8 = 111
    /// What the stream is called (a window's or an application's name, up
    /// to 200 bytes): in the setup, and told to the receiver, which shows
    /// it in its window's title (`ReceiverEvent.senderTitled`).
    public var title: String?
    /// How often `SenderEvent.statistics` reports the counters (nil: never).
    public var statisticsInterval: Duration?

    /// A sender to `host` (port 5004), keyed as `keying`: a handshake (a
    /// pre-shared key, `SessionKeying.keyFile(_:)`, or identities) or a static
    /// SDES key for other tools.
    public init(host: String, keying: SessionKeying) {
        self.host = host
        self.keying = keying
    }

    /// A sender with one static SDES key (the interop mode).
    public init(host: String, keying: SRTPKeyingMaterial) {
        self.init(host: host, keying: .staticKey(keying))
    }
}

/// What the host learns when the sender starts (ReplayKit's setup info).
/// Its description never shows a key (the SDP's `a=crypto` is redacted).
public struct SenderSetup: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The captured (or pushed) picture's size.
    public var sourceSize: VideoSize
    /// The size it is encoded at (smaller when `size` or the memory budget says so).
    public var encodedSize: VideoSize
    /// The configured frame rate.
    public var fps: Int
    /// The encoder's starting bitrate (kbit/s).
    public var bitrateKbps: Int
    /// Where the streams go (address and port).
    public var destination: String
    /// `SenderConfiguration.title`.
    public var title: String?
    /// The SDP a third-party receiver (ffmpeg, ffplay, GStreamer, VLC) can
    /// use, with the static key: nil when keys come from a handshake.
    public var sessionDescription: SessionDescription?
    /// What is captured and how, in words for the person sharing ("monitor
    /// Meta-0 through GNOME's screen cast ..."); nil for pushed pictures.
    public var capture: String?

    public var description: String {
        "SenderSetup(" + (title.map { "\"\($0)\", " } ?? "")
            + "\(sourceSize) as \(encodedSize) at \(fps) fps, \(bitrateKbps) kbit/s to \(destination))"
    }

    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(self, children: ["sourceSize": sourceSize, "encodedSize": encodedSize, "fps": fps,
                                "bitrateKbps": bitrateKbps, "destination": destination, "title": title as Any])
    }
}

/// One more destination of every packet (`SenderConfiguration.copies`):
/// an SFU mountpoint's ports, shaped like the first destination's.
public struct MediaCopy: Sendable, Equatable {
    /// Its host name or address.
    public var host: String
    /// Video RTP.
    public var port: Int
    /// The video's RTCP (sender reports out, plain PLI/FIR in); nil: none sent there.
    public var rtcpPort: Int?
    /// Each audio stream's RTP (and RTCP), in the order of `audio`.
    public var audioPorts: [Int]

    /// A copy to `host`'s ports: video RTP, the video's RTCP, and each audio stream's.
    public init(host: String, port: Int, rtcpPort: Int?, audioPorts: [Int]) {
        self.host = host
        self.port = port
        self.rtcpPort = rtcpPort
        self.audioPorts = audioPorts
    }
}

/// The streams' SSRCs when the host chooses them (`SenderConfiguration.ssrcs`).
/// With a key used once, fixed numbers reuse no keystream: SRTP's keystream
/// depends on the key, the SSRC and the packet index together.
public struct ChosenSSRCs: Sendable, Equatable {
    /// The video's.
    public var video: UInt32
    /// Each audio stream's, in the order of `SenderConfiguration.audio`.
    public var audio: [UInt32]

    /// The video's SSRC and each audio stream's.
    public init(video: UInt32, audio: [UInt32]) {
        self.video = video
        self.audio = audio
    }
}
