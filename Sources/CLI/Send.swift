import ArgumentParser
import Foundation
import ShareSender
import ShareSession
import ShareSRTP

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Capture this X display and send it to a receiver.")

    @Argument(help: "The receiver's host name or address.") var host: String
    @Option(help: "The receiver's UDP port (RTP and RTCP share it).") var port = 5004
    @Option(help: "The X display to capture (default: $DISPLAY).") var display: String?
    @Option(help: "Frames per second.") var fps = 30
    @Option(help: "Target bitrate in kbit/s (default: sized to the resolution).") var bitrate: Int?
    @Option(help: "Frames between keyframes (default: 5 seconds' worth).") var keyint: Int?
    @Option(help: "Scale to this size before encoding, e.g. 1280x720.") var size: String?
    @Option(help: "Largest UDP payload in bytes.") var mtu = 1200
    @Option(help: "SRTP key file (mode 0600), as written by `share keygen`.") var keyFile: String
    @Option(help: "Write an SDP that ffmpeg, ffplay, GStreamer or VLC can receive with (mode 0600, it holds the key).")
    var sdp: String?
    @Option(help: "Stop after this many seconds.") var duration: Double?
    @Option(help: "Write the final counters and latency percentiles as JSON.") var statsJson: String?

    func run() throws {
        let keying: SRTPKeyingMaterial
        do { keying = try KeyFile.read(keyFile) } catch { fail("\(error)") }
        var configuration = SenderConfiguration(host: host, keying: keying)
        configuration.port = port
        configuration.display = display
        configuration.fps = fps
        configuration.bitrateKbps = bitrate
        configuration.keyframeInterval = keyint
        configuration.mtu = mtu
        if let size {
            guard let parsed = VideoSize(size) else { fail("--size \(size) is not WIDTHxHEIGHT (16 to 8192 each)") }
            configuration.size = parsed
        }
        let sender: ScreenSender
        do { sender = try ScreenSender(configuration: configuration) } catch { fail("\(error)") }
        let setup = sender.setup
        if let sdp {
            do { try KeyFile.writeSecret(setup.sessionDescription.serialized(), to: sdp) } catch { fail("\(error)") }
        }
        let stop = StopSignal(duration: duration)
        sender.start { event in
            if case .finished(let error?) = event {
                note("\(error)")
                stop.fire("error")
            }
        }
        note("sending \(setup.sourceSize) as \(setup.encodedSize) at \(setup.fps) fps, \(setup.bitrateKbps) kbit/s to \(setup.destination)")
        let status = StatusLine()
        status.start {
            let s = sender.statistics
            return String(format: "%.1f fps  %.0f kbit/s  dropped %d  footprint %@  rss %@", s.fps, s.bitrateKbps,
                          s.framesDroppedPoolExhausted + s.framesDroppedEncoderBusy, megabytes(s.footprintBytes),
                          megabytes(s.residentBytes))
        }
        stop.wait()
        status.stop()
        sender.stop()
        let s = sender.statistics
        print("""
            sent \(s.framesEncoded) frames (\(s.keyframes) keyframes) in \(String(format: "%.1f", s.elapsedSeconds)) s: \
            \(String(format: "%.1f", s.fps)) fps, \(String(format: "%.0f", s.bitrateKbps)) kbit/s, \
            \(s.packetsRetransmitted) retransmitted
            dropped: \(s.framesDroppedPoolExhausted) pool exhausted, \(s.framesDroppedEncoderBusy) encoder busy
            cpu: \(String(format: "%.2f", s.cpuMillisecondsPerFrame)) ms per frame; \
            peak footprint \(megabytes(s.peakFootprintBytes)), peak rss \(megabytes(s.peakResidentBytes))
            capture to send: \(s.captureToSend.text)
            """)
        if let statsJson { writeJSON(s, to: statsJson) }
        if let error = sender.error { fail("\(error)") }
    }
}
