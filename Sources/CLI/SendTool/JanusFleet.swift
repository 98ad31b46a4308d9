import Foundation
import ShareCommands
import ShareFanout
import ShareSender
import Synchronization

/// Every Janus of a run (`--janus` given once or more, `--janus-list`): a
/// mountpoint on each, fed by one encode (the first is the sender's
/// destination, the others copies), watched while the stream runs so that
/// one that goes away is reported and dropped while the others go on, and
/// every mountpoint removed at the end.
final class JanusFleet: Sendable {
    let mounts: [JanusMount]
    /// Set once the run ends: the watchers stop.
    private let ended = Atomic<Bool>(false)
    /// Which mounts were dropped (by index), so they are not removed at the end.
    private let dropped: Mutex<Set<Int>> = Mutex([])

    /// How often each server is asked whether it is there, and how many
    /// answers in a row may be missing before it is dropped.
    static let checkInterval: Duration = .seconds(1)
    static let missesAllowed = 2

    private init(mounts: [JanusMount]) {
        self.mounts = mounts
    }

    /// Creates a mountpoint on each server and sets `configuration` up to
    /// send to all of them. A server that fails is reported and left out;
    /// the program ends, with why, when none is left.
    static func mount(_ o: JanusOptions, name: String?, configuration: inout SenderConfiguration) -> JanusFleet {
        let targets: [JanusTarget]
        do { targets = try o.targets() } catch { fail("\(error.message)") }
        let trust: TLSTrust = o.janusInsecure ? .none : o.janusCa.map { .authority(file: $0) } ?? .system
        if o.janusInsecure {
            note("janus: warning: --janus-insecure: Janus's certificate is not checked (allowed on loopback only)")
        }
        if o.janusAllowPlainHttp {
            note("janus: warning: --janus-allow-plain-http: to a plain http:// Janus on another machine, "
                 + "\(JanusClient.plainTextCarries) cross the network in clear")
        }
        let rule = HTTPTransportRule(trust: trust, plainHTTPBeyondLoopback: o.janusAllowPlainHttp, carries: JanusClient.plainTextCarries)
        let request: MountpointRequest
        do { request = try JanusMount.request(name: name, configuration: configuration) } catch { fail("janus: \(error)") }
        var mounts: [JanusMount] = []
        var failures: [String] = []
        for target in targets {
            do {
                mounts.append(try JanusMount.create(target, rule: rule, request: request))
            } catch {
                failures.append("janus: \(error)")
                if targets.count > 1 { note("janus: \(target.url) left out: \(error)") }
            }
        }
        guard let first = mounts.first else { fail(failures.count == 1 ? failures[0] : "janus: no server took the stream") }
        configuration.host = first.client.url.host
        configuration.port = first.mountpoint.videoPort
        configuration.rtcpPort = first.mountpoint.videoRTCPPort
        configuration.audioPorts = first.mountpoint.audioPorts
        configuration.copies = mounts.dropFirst().map {
            MediaCopy(host: $0.client.url.host, port: $0.mountpoint.videoPort, rtcpPort: $0.mountpoint.videoRTCPPort,
                      audioPorts: $0.mountpoint.audioPorts)
        }
        // Janus sends no per-packet feedback and no NACK: a fixed rate, and
        // no repair streams on SSRCs the mountpoint does not know.
        configuration.congestionControl = false
        configuration.retransmissionStream = false
        configuration.forwardErrorCorrection = false
        return JanusFleet(mounts: mounts)
    }

    /// One line a server: its mountpoint and the link that watches it.
    func announce() {
        for mount in mounts {
            note("janus: mountpoint \(mount.mountpoint.id) at \(mount.client.url); watch: \(mount.viewerLink)")
        }
    }

    /// Asks each server every second whether it is there; one that misses
    /// two answers in a row is dropped from the stream (the others go on),
    /// and when none is left the run ends.
    func watch(_ sender: ScreenSender, stop: StopSignal) {
        for (index, mount) in mounts.enumerated() {
            let thread = Thread { [self] in
                var misses = 0
                while !ended.load(ordering: .relaxed) {
                    Thread.sleep(forTimeInterval: Double(Self.checkInterval.components.seconds))
                    guard !ended.load(ordering: .relaxed) else { return }
                    do {
                        try mount.client.ping(timeout: Self.checkInterval)
                        misses = 0
                    } catch {
                        misses += 1
                        guard misses >= Self.missesAllowed else { continue }
                        drop(index, sender: sender, stop: stop, why: "\(error)")
                        return
                    }
                }
            }
            thread.name = "janus-watch"
            thread.start()
        }
    }

    private func drop(_ index: Int, sender: ScreenSender, stop: StopSignal, why: String) {
        guard let left = dropped.withLock({ $0.insert(index).inserted ? mounts.count - $0.count : nil }) else { return }
        if mounts.count > 1 { sender.dropDestination(index) }
        note("janus: \(mounts[index].client.url) went away (\(why)): no longer sent to; \(left) of \(mounts.count) still fed")
        if left == 0 { stop.fire("every Janus went away") }
    }

    /// Whether every server went away (the run then ended on that).
    var allGone: Bool { dropped.withLock { $0.count } == mounts.count }

    /// Stops the watchers and removes every mountpoint whose server is still there.
    func remove() {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        let gone = dropped.withLock { $0 }
        for (index, mount) in mounts.enumerated() where !gone.contains(index) {
            mount.remove()
        }
    }

    /// Each server's keyframe requests, for the closing summary (several servers only).
    func summary(_ s: SenderStatistics) -> [String] {
        guard s.destinations.count == mounts.count else { return [] }
        return zip(mounts, s.destinations).map { mount, destination in
            "janus \(mount.client.url): asked for \(destination.keyframeRequests) keyframes" + (destination.dropped ? "; dropped" : "")
        }
    }
}
