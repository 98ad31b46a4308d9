public import ArgumentParser

/// Options of `share send`, parsed by the `share` dispatcher (to fail fast
/// and print help) and again by `share-send`, which does the work.
public struct SendOptions: ParsableArguments {
    @Argument(help: "The receiver's host name or address (with --janus, none: Janus's host).") public var host: String?
    @OptionGroup(title: "Where to send") public var destination: SendDestination
    @OptionGroup(title: "Keys and trust") public var trust: SendTrust
    @OptionGroup(title: "What to share") public var source: SendSource
    @OptionGroup(title: "Picture") public var picture: SendPicture
    @OptionGroup(title: "Network") public var network: SendNetwork
    @OptionGroup(title: "Sound") public var sound: SendSound
    @OptionGroup(title: "Running") public var running: SendRunning
    @OptionGroup(title: "Fan-out through Janus") public var fanout: JanusOptions
    @OptionGroup(title: "Output") public var output: OutputOptions
    public mutating func validate() throws {
        if source.list { return }
        if host == nil && !fanout.isOn { throw ValidationError("give the receiver's host (or --janus URL)") }
        if [source.monitor, source.region, source.window].compactMap({ $0 }).count > 1 {
            throw ValidationError("share one thing: --monitor, --region or --window")
        }
        if !["auto", "embed", "metadata", "none"].contains(source.cursor) {
            throw ValidationError("--cursor \(source.cursor) is not auto, embed, metadata or none")
        }
        if host != nil && fanout.isOn { throw ValidationError("--janus sends to Janus's host: give no receiver host") }
        if fanout.janusIngest != nil && trust.srtpKeyFile != nil {
            // The relay tells the streams apart by fixed SSRCs: a key used
            // in two runs would then encrypt two streams with one keystream.
            throw ValidationError("--janus-ingest takes a fresh key each run: leave out --srtp-key-file")
        }
        // host:port (one colon, digits after it: not an IPv6 address).
        if let host, host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":"),
           let port = Int(host[host.index(after: colon)...]) {
            throw ValidationError("\(host): give the port apart: share send \(host[..<colon]) --port \(port)")
        }
        if !["auto", "x11", "portal", "gnome"].contains(source.capture) {
            throw ValidationError("--capture \(source.capture) is not auto, x11, portal or gnome")
        }
        try validateRanges()
    }

    private func validateRanges() throws {
        try Ranges.checkPort(destination.port, "--port")
        try Ranges.checkPort(destination.audioPort, "--audio-port")
        try Ranges.checkPort(destination.rtcpPort, "--rtcp-port")
        try Ranges.checkPort(destination.audioRTCPPort, "--audio-rtcp-port")
        try Ranges.check(picture.fps, 1...120, "--fps")
        try Ranges.check(picture.bitrate, 50...200_000, "--bitrate", "kbit/s")
        try Ranges.check(picture.keyint, 1...100_000, "--keyint", "frames")
        try Ranges.check(network.mtu, 400...9000, "--mtu", "bytes")
        try Ranges.check(picture.threads, 0...64, "--threads")
        try Ranges.check(sound.audioTone, 1...24_000, "--audio-tone", "Hz")
        try Ranges.checkSeconds(running.duration)
        try Ranges.checkStatsInterval(running.statsInterval, statsJson: running.statsJson)
        _ = try budget()
    }

    public init() {}
}

/// `share send`'s options: where the stream goes: the receiver's ports.
public struct SendDestination: ParsableArguments {
    @Option(parsing: .unconditional, help: "The receiver's UDP port (RTP and RTCP share it).") public var port = 5004
    @Option(parsing: .unconditional, help: "SFUs and standard receivers: audio on this port of its own (a second audio stream two up), as Janus and ffmpeg want it. Static key only.")
    public var audioPort: Int?
    @Option(parsing: .unconditional, help: "SFUs and standard receivers: the video's RTCP on this port of its own (RFC 3605); plain PLI/FIR from there ask for a keyframe (Janus sends them). Static key only.")
    public var rtcpPort: Int?
    @Option(parsing: .unconditional, help: "The audio's RTCP on this port of its own (default: muxed on the audio port).")
    public var audioRTCPPort: Int?

    public init() {}
}

/// `share send`'s options: whom the stream is for, and how it is keyed.
public struct SendTrust: ParsableArguments {
    @Option(help: "A key file both ends hold (mode 0600, from `share keygen`): it authenticates the handshake. Without it, identities and a code to compare.")
    public var keyFile: String?
    @Option(help: "Interop: a static SRTP key (mode 0600) used for every session, no handshake; for receivers such as ffmpeg, GStreamer, VLC or Janus.")
    public var srtpKeyFile: String?
    @Option(help: "Interop: write an SDP that ffmpeg, ffplay, GStreamer or VLC can receive with (mode 0600: it holds the key). Uses --srtp-key-file's key, or a fresh one for this run; no handshake.")
    public var sdp: String?
    @Option(help: "The name the receiver knows this sender by (default: the identity's, or user@host).")
    public var name: String?
    @Flag(help: "Send to a receiver never met before without asking (unattended use); it is remembered.")
    public var accept = false

    public init() {}
}

/// `share send`'s options: what is captured, and how.
public struct SendSource: ParsableArguments {
    @Option(help: "How to capture the screen: auto (a Wayland desktop's screen cast when WAYLAND_DISPLAY is set, X11 otherwise), x11, portal (the desktop's ScreenCast portal: it asks once, then remembers) or gnome (GNOME's own screen cast: no dialog).")
    public var capture = "auto"
    @Flag(help: "With the portal: ask which screen to share again, instead of the one the desktop remembered.")
    public var forgetScreenChoice = false
    @Option(help: "The X display to capture (default: $DISPLAY).") public var display: String?
    @Option(help: "Share one monitor only: its name or index (see --list).") public var monitor: String?
    @Option(help: "Share a region of the screen: WxH+X+Y.") public var region: String?
    @Option(help: "Share one window, by id (0x...) or name (see --list); followed as it moves.") public var window: String?
    @Option(help: "The mouse pointer: auto (sent apart while the receiver is a share recv that shows the picture and records nothing, drawn into the picture otherwise and with a static key), embed (always drawn in), metadata (always sent apart for share recv to draw: moving it costs no picture; other receivers show none) or none.")
    public var cursor = "auto"
    @Flag(help: "List the display's monitors and windows, and exit.") public var list = false

    public init() {}
}

/// `share send`'s options: how the picture is encoded.
public struct SendPicture: ParsableArguments {
    @Option(parsing: .unconditional, help: "Frames per second (1-120).") public var fps = 30
    @Option(parsing: .unconditional, help: "Target bitrate in kbit/s, 50-200000 (default: sized to the resolution).") public var bitrate: Int?
    @Option(parsing: .unconditional, help: "Frames per intra-refresh sweep, or between keyframes with --periodic-keyframes (default: none with a handshake, whose receiver asks for a keyframe when it needs one; 3 seconds' worth with a static key; with --sdp a quarter second, so a receiver that joins without asking has a picture within half a second).")
    public var keyint: Int?
    @Option(help: "Scale to this size before encoding, e.g. 1280x720.") public var size: String?
    @Option(parsing: .unconditional, help: "Encoder threads (default: 1 up to 720p30, 2 up to 1080p30, else x264 chooses; 0: x264 chooses).") public var threads: Int?
    @Flag(help: "Grab and encode every frame even while nothing on screen changes (default: a still screen costs one frame a second).")
    public var everyFrame = false

    public init() {}
}

/// `share send`'s options: how the stream meets the network.
public struct SendNetwork: ParsableArguments {
    @Flag(help: "Send at --bitrate whatever the path does (no congestion control), for receivers that send no feedback.")
    public var fixedBitrate = false
    @Flag(help: "An IDR frame every --keyint frames instead of periodic intra refresh (bursty; for receivers that join without asking).")
    public var periodicKeyframes = false
    @Flag(help: "Never send FlexFEC repairs (by default they start when the round trip makes retransmissions too slow and packets are lost).")
    public var noFec = false
    @Option(parsing: .unconditional, help: "Largest UDP payload in bytes (400-9000).") public var mtu = 1200

    public init() {}
}

/// `share send`'s options: what is heard.
public struct SendSound: ParsableArguments {
    @Option(help: "Audio to send: system, mic, both (two streams, not mixed) or none (default: system when a PulseAudio server answers).")
    public var audio: String?
    @Option(help: "Send this PulseAudio source instead (a name from `pactl list short sources`).") public var audioSource: String?
    @Option(help: "Send this 16-bit 48 kHz WAV file as audio, looped.") public var audioFile: String?
    @Option(parsing: .unconditional, help: "Send a sine tone of this frequency as audio (1-24000 Hz).") public var audioTone: Double?

    public init() {}
}

/// `share send`'s options: how long it runs, what it leaves, how it is driven.
public struct SendRunning: ParsableArguments {
    @Option(help: "Stay under this memory footprint (e.g. 50M, 32MiB; default 50 MiB; 0 turns the governor off).")
    public var memoryBudget: String?
    @Option(parsing: .unconditional, help: "Stop after this many seconds.") public var duration: Double?
    @Option(help: "Write the final counters and latency percentiles as JSON.") public var statsJson: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("With --stats-json: rewrite it this often while running, not only at the end.", valueName: "seconds"))
    public var statsInterval: Double?
    @Option(help: "Control socket for `share ctl` (default: $XDG_RUNTIME_DIR/share/send-<pid>.sock).") public var control: String?

    public init() {}
}

/// Options of `share recv`, in the groups its help shows.
public struct ReceiveOptions: ParsableArguments {
    @OptionGroup(title: "Sessions") public var session: ReceiveSession
    @OptionGroup(title: "Showing and recording") public var show: ReceiveShow
    @OptionGroup(title: "Measuring") public var measure: ReceiveMeasure
    @OptionGroup(title: "Running") public var running: ReceiveRunning
    @OptionGroup(title: "Output") public var output: OutputOptions

    public init() {}
}

/// `share recv`'s options: where it listens, and whom it takes a stream from.
public struct ReceiveSession: ParsableArguments {
    @Option(parsing: .unconditional, help: "UDP port to listen on (default 5004, or the SDP's).") public var port: Int?
    @Option(help: "A key file both ends hold (mode 0600, from `share keygen`): it authenticates each sender's handshake. Without it, identities and a code to compare.")
    public var keyFile: String?
    @Option(help: "Interop: a static SRTP key (mode 0600), no handshake; for senders such as ffmpeg or GStreamer.")
    public var srtpKeyFile: String?
    @Option(help: "Interop: receive what this SDP describes (another tool's stream, key included; mode 0600 when it holds a key).")
    public var sdp: String?
    @Flag(help: "Accept a sender never met before without asking (unattended use); it is remembered.")
    public var accept = false
    @Option(help: "The name senders know this receiver by (default: the identity's, or user@host).")
    public var name: String?

    public func validate() throws {
        // 0: any free port (it is printed once listening).
        try Ranges.check(port, 0...65535, "--port")
    }

    public init() {}
}

/// `share recv`'s options: what becomes of the stream.
public struct ReceiveShow: ParsableArguments {
    @Option(help: "Show the picture on this X display (default: $DISPLAY).") public var display: String?
    @Flag(help: "Do not open a window.") public var noWindow = false
    @Flag(help: "Do not play the audio (it is still recorded).") public var noAudio = false
    @Option(help: "Record to this file without re-encoding (.mkv or .mp4; stays playable if interrupted).")
    public var record: String?
    @Flag(help: "Decode each frame only once all of it arrived, not its first slices as they come (for comparison).")
    public var wholeFrames = false

    public init() {}
}

/// `share recv`'s options: the benchmarks' instruments.
public struct ReceiveMeasure: ParsableArguments {
    @Flag(help: "Read the frame stamp `share scene --stamp` draws from every picture: glass-to-glass latency (sender and receiver on one machine).")
    public var readStamps = false
    @Option(help: ArgumentHelp("Save a sample of the pictures shown into this directory, as Y4M files with an index.json (the harness's picture-quality measurement; implies --read-stamps).", valueName: "dir"))
    public var saveFrames: String?
    @Option(help: ArgumentHelp("With --save-frames: keep the first picture of every Nth frame of the scene, by the frame number its stamp carries (`share scene --number-frames`); 0 keeps none.", valueName: "n"))
    public var saveEvery = 10
    @Option(help: ArgumentHelp("With --save-frames: also keep what was on screen these many seconds after the first picture (a still screen's quality over time), e.g. 1,5.", valueName: "seconds"))
    public var saveAfter: String?
    /// `--save-after`'s instants, in seconds.
    public var saveAfterSeconds: [Double] { (saveAfter ?? "").split(separator: ",").compactMap { Double($0) } }

    public func validate() throws {
        if saveEvery < 0 { throw ValidationError("--save-every takes 0 or more frames: \(saveEvery)") }
        if let saveAfter {
            let parts = saveAfter.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.allSatisfy({ Double($0).map { $0 >= 0 && $0.isFinite } ?? false }) else {
                throw ValidationError("--save-after takes seconds (0 or more), comma-separated: \"\(saveAfter)\"")
            }
        }
        if (saveAfter != nil || saveEvery != 10) && saveFrames == nil {
            throw ValidationError("--save-every and --save-after choose what --save-frames keeps: give --save-frames too")
        }
    }

    public init() {}
}

/// `share recv`'s options: how long it runs, what it leaves, how it is driven.
public struct ReceiveRunning: ParsableArguments {
    @Option(parsing: .unconditional, help: "Stop after this many seconds.") public var duration: Double?
    @Option(help: "Write the final counters and latency percentiles as JSON.") public var statsJson: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("With --stats-json: rewrite it this often while running, not only at the end.", valueName: "seconds"))
    public var statsInterval: Double?
    @Option(help: "Control socket for `share ctl` (default: $XDG_RUNTIME_DIR/share/recv-<pid>.sock).") public var control: String?

    public func validate() throws {
        try Ranges.checkSeconds(duration)
        try Ranges.checkStatsInterval(statsInterval, statsJson: statsJson)
    }

    public init() {}
}

/// Options of `share scene`.
public struct SceneOptions: ParsableArguments {
    @Option(help: "The X display to draw on (default: $DISPLAY).") public var display: String?
    @Option(parsing: .unconditional, help: "Frames per second (1-240).") public var fps = 30
    @Option(parsing: .unconditional, help: "Stop after this many seconds.") public var duration: Double?
    @Flag(help: "Instead, flash the screen white and beep (1 kHz, into PulseAudio) at the same instant every 2 s: an A/V sync probe.")
    public var avSync = false
    @Flag(help: "Draw a frame stamp (the drawing time as a row of black/white blocks, top left) each time; `share recv --read-stamps` reads it back.")
    public var stamp = false
    @Option(help: "With --stamp: redraw the stamp this many times a second (moving content keeps --fps), so a capturing sender finds a fresh one whenever it grabs. A prime rate keeps its phase drifting against any capture rate.")
    public var stampRate = 233
    @Flag(name: .customLong("static"), help: "Draw one frame, then leave the screen still (an idle-screen benchmark).")
    public var stillScreen = false
    @Flag(help: "Move the mouse pointer round a circle at --fps; with --static only the pointer moves (a cursor benchmark).")
    public var pointer = false
    @Flag(help: "With --static: type a character --fps times a second into a line of text, a caret blinking twice a second after it (a small-change benchmark).")
    public var typing = false
    @Flag(help: "Draw content that is hard to send instead: a window playing a video (a detailed picture panning, a disc crossing it, grain new every frame) beside a page of text scrolling up.")
    public var video = false
    @Flag(help: "Draw a page of small text instead (dark on light, like a document or code), scrolling up two pixels a frame; with --static, a still page.")
    public var text = false
    @Flag(help: "With --stamp: a second row of blocks carries the scene's frame number, so a receiver knows which reference picture (--render) a picture shows.")
    public var numberFrames = false
    @Flag(help: "Draw each frame with the server held, so no capture sees one half drawn (for picture-quality measurement).")
    public var grabServer = false
    @Option(help: ArgumentHelp("Instead, draw these frames one by one (comma-separated numbers) exactly, read each back from the screen and write it to --out as PNG: the reference pictures.", valueName: "n,..."))
    public var render: String?
    @Option(help: ArgumentHelp("With --render: the PNG file to write; %d in it stands for the frame number (needed for more than one frame).", valueName: "path"))
    public var out: String?
    /// `--render`'s frame numbers.
    public var renderFrames: [Int] { (render ?? "").split(separator: ",").compactMap { Int($0) } }
    @Flag(help: "Draw the frames whose numbers come on standard input, one a line, each exactly (no clock), answering each with its number once it is on the screen: a caller steps the scene (the per-stage benchmarks).")
    public var framesFromStdin = false

    public init() {}

    public mutating func validate() throws {
        if let render {
            let parts = render.split(separator: ",", omittingEmptySubsequences: false)
            guard !parts.isEmpty, parts.allSatisfy({ Int($0).map { $0 >= 0 } ?? false }) else {
                throw ValidationError("--render takes frame numbers (0 or more), comma-separated: \"\(render)\"")
            }
            guard let out else { throw ValidationError("--render needs --out, the PNG file to write") }
            if parts.count > 1 && !out.contains("%d") {
                throw ValidationError("--out needs %d (the frame number) to write \(parts.count) frames")
            }
        } else if out != nil {
            throw ValidationError("--out is where --render writes: give --render too")
        }
        if numberFrames && !stamp { throw ValidationError("--number-frames adds to the stamp: give --stamp too") }
        if text && video { throw ValidationError("draw one scene: --text or --video") }
        try Ranges.check(fps, 1...240, "--fps")
        try Ranges.checkSeconds(duration)
    }
}

/// Options of `share relay`.
public struct RelayOptions: ParsableArguments {
    @Option(help: "UDP port to listen on: point the sender here.") public var listen: Int
    @Option(help: "Where to forward, HOST:PORT (the receiver).") public var to: String
    @Option(help: "A named network (\(networkNames)); --forward/--reverse add to or replace it.")
    public var network: String?
    @Option(help: "Impairments toward the receiver, e.g. loss=2%,delay=50ms,jitter=20ms,reorder,duplicate=1%,burst=1%/25%,rate=4mbit/2mbit@10s/off@25s,queue=200ms.")
    public var forward: String?
    @Option(help: "Impairments on the way back to the sender (same form).") public var reverse: String?
    @Option(help: "Seed of the random choices (a run can be repeated exactly).") public var seed: UInt64 = 1
    @Option(parsing: .unconditional, help: "Stop after this many seconds.") public var duration: Double?
    @Option(help: "Write the counters of both directions as JSON (on exit).") public var statsJson: String?

    public init() {}

    public func validate() throws {
        try Ranges.checkPort(listen, "--listen")
        try Ranges.checkSeconds(duration)
    }
}

/// The names `share relay --network` takes (kept here for help text only).
public let networkNames = "clean, loss2, loss5, burst, cap1m, cap3m, halving, rtt100, jitter20, loss10, drop, fbloss, deepq, rtt400, wifi"

/// Command descriptions shared by the dispatcher and the tools.
public enum CommandText {
    public static let send = CommandConfiguration(
        commandName: "send", abstract: "Capture the screen (X11, or a Wayland desktop through PipeWire) and send it to a receiver.",
        discussion: """
            Examples:
              share send viewer.example
                  the screen; the first time both ends show a code to compare
              share send viewer.example --key-file share.key
                  no code: both ends hold the key file (from share keygen)
              share send viewer.example --window Firefox
                  one window, followed as it moves (share send --list names them)
              share send 192.0.2.7 --sdp stream.sdp --audio none
                  for another player: ffplay -protocol_whitelist
                  file,udp,rtp,srtp,crypto stream.sdp
              share send --janus https://janus.example:8089/janus
                  to many browsers through Janus (with --janus-secrets)
            More in man share-send, and docs/usage.md in the source.
            """)
    public static let receive = CommandConfiguration(
        commandName: "recv", abstract: "Receive a shared screen: show it, record it, or both.",
        discussion: """
            Examples:
              share recv
                  a window; the first time, a code to compare with the sender's
              share recv --key-file share.key --record talk.mkv
                  show and record (the file plays even if cut short)
              share recv --no-window --record talk.mkv --quiet
                  record only, saying only what goes wrong
              share recv --sdp stream.sdp
                  another tool's stream (ffmpeg, GStreamer), as its SDP says
            More in man share-recv, and docs/usage.md in the source.
            """)
    public static let relay = CommandConfiguration(
        commandName: "relay",
        abstract: "Forward UDP between a sender and a receiver through a simulated network (loss, delay, jitter, bottleneck).")
    public static let scene = CommandConfiguration(
        commandName: "scene", abstract: "Draw moving content (scrolling text, moving shapes) on a display, for demos and benchmarks.")
}

/// How much `share send` and `share recv` say on standard error.
public struct OutputOptions: ParsableArguments {
    @Flag(help: "Say only warnings, questions and errors (and the summary at the end); no status line.")
    public var quiet = false
    @Flag(help: "Say more: each network estimate, pauses, key renewals; without a terminal, the status line every ten seconds.")
    public var verbose = false

    public init() {}

    public var verbosity: Verbosity { Verbosity.from(quiet: quiet, verbose: verbose) }

    public func validate() throws {
        if quiet && verbose { throw ValidationError("--quiet or --verbose: one") }
    }
}
