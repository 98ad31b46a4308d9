import Foundation
import ShareCommands
import ShareFanout
import ShareSender
import Synchronization

/// Every Janus of a run (`--janus` given once or more, `--janus-list`): a
/// mountpoint on each, fed by one encode (the first is the sender's
/// destination and the others copies, or, with `--janus-ingest`, all fed by
/// the ingest's forwarders), watched while the stream runs so that one that
/// goes away is reported and dropped while the others go on, and every
/// mountpoint removed at the end.
final class JanusFleet: Sendable {
    let mounts: [JanusMount]
    /// The relay that feeds the mounts, when there is one.
    let ingest: JanusIngest?
    /// Set when the ingest went away (the run then ended on that).
    private let ingestGone = Atomic<Bool>(false)
    /// Set once the run ends: the watchers stop.
    private let ended = Atomic<Bool>(false)
    /// Which mounts were dropped (by index), so they are not removed at the end.
    private let dropped: Mutex<Set<Int>> = Mutex([])

    /// How often each server is asked whether it is there, and how many
    /// answers in a row may be missing before it is dropped.
    static let checkInterval: Duration = .seconds(1)
    static let missesAllowed = 2

    private init(mounts: [JanusMount], ingest: JanusIngest?) {
        self.mounts = mounts
        self.ingest = ingest
    }

    /// Creates a mountpoint on each server and sets `configuration` up to
    /// send to all of them. A server that fails is reported and left out;
    /// the program ends, with why, when none is left.
    static func mount(_ o: JanusOptions, name: String?, configuration: inout SenderConfiguration) -> JanusFleet {
        let targets: [JanusTarget]
        do { targets = try o.targets() } catch { fail("\(error.message)") }
        let trust: TLSTrust = o.janusInsecure ? .none : o.janusCa.map { .authority(file: $0) } ?? .system
        if o.janusInsecure {
            warn("janus: warning: --janus-insecure: Janus's certificate is not checked (allowed on loopback only)")
        }
        if o.janusAllowPlainHttp {
            warn("janus: warning: --janus-allow-plain-http: to a plain http:// Janus on another machine, "
                 + "\(JanusClient.plainTextCarries) cross the network in clear")
        }
        let rule = HTTPTransportRule(trust: trust, plainHTTPBeyondLoopback: o.janusAllowPlainHttp, carries: JanusClient.plainTextCarries)
        let request: MountpointRequest
        do { request = try JanusMount.request(name: name, configuration: configuration) } catch { fail("janus: \(error)") }
        var ingest: JanusIngest?
        if let target = o.ingest {
            do { ingest = try JanusIngest.create(target, rule: rule, request: request) } catch { fail("janus: ingest \(target.url): \(error)") }
        }
        var mounts: [JanusMount] = []
        var failures: [String] = []
        for target in targets {
            do {
                let mount = try JanusMount.create(target, rule: rule, request: request)
                do { try ingest?.feed(mounts.count, mount) } catch {
                    mount.remove()
                    throw error
                }
                mounts.append(mount)
            } catch {
                failures.append("janus: \(error)")
                if targets.count > 1 || ingest != nil { warn("janus: \(target.url) left out: \(error)") }
            }
        }
        guard let first = mounts.first else {
            ingest?.remove()
            fail(failures.count == 1 ? failures[0] : "janus: no server took the stream")
        }
        // Janus sends no per-packet feedback and no NACK: a fixed rate, and
        // no repair streams on SSRCs the mountpoint does not know.
        configuration.congestionControl = false
        configuration.retransmissionStream = false
        configuration.forwardErrorCorrection = false
        if let ingest {
            ingest.direct(&configuration)
            return JanusFleet(mounts: mounts, ingest: ingest)
        }
        configuration.host = first.client.url.host
        configuration.port = first.mountpoint.videoPort
        configuration.rtcpPort = first.mountpoint.videoRTCPPort
        configuration.audioPorts = first.mountpoint.audioPorts
        configuration.copies = mounts.dropFirst().map {
            MediaCopy(host: $0.client.url.host, port: $0.mountpoint.videoPort, rtcpPort: $0.mountpoint.videoRTCPPort,
                      audioPorts: $0.mountpoint.audioPorts)
        }
        return JanusFleet(mounts: mounts, ingest: nil)
    }

    /// One line a server: its mountpoint and the link that watches it.
    func announce() {
        if let ingest {
            note("janus: relaying through \(ingest.client.url) (room \(ingest.relay.room)): one stream up, forwarded to \(mounts.count) "
                 + (mounts.count == 1 ? "edge" : "edges"))
        }
        for mount in mounts {
            note("janus: mountpoint \(mount.mountpoint.id) at \(mount.client.url); watch: \(mount.viewerLink)")
        }
    }

    /// Asks each server every second whether it is there; one that misses
    /// two answers in a row is dropped from the stream (the others go on),
    /// and when none is left the run ends.
    func watch(_ sender: ScreenSender, stop: StopSignal) {
        for (index, mount) in mounts.enumerated() {
            watch(mount.client) { [self] why in drop(index, sender: sender, stop: stop, why: why) }
        }
        if let ingest {
            watch(ingest.client) { [self] why in
                ingestGone.store(true, ordering: .relaxed)
                warn("janus: the ingest \(ingest.client.url) went away (\(why)): every edge was fed through it")
                stop.fire("the ingest Janus went away")
            }
        }
    }

    /// Asks `client`'s server every second whether it is there, and calls
    /// `gone` once when it misses two answers in a row.
    private func watch(_ client: JanusClient, gone: @escaping @Sendable (String) -> Void) {
        let thread = Thread { [self] in
            var misses = 0
            while !ended.load(ordering: .relaxed) {
                Thread.sleep(forTimeInterval: Double(Self.checkInterval.components.seconds))
                guard !ended.load(ordering: .relaxed) else { return }
                do {
                    try client.ping(timeout: Self.checkInterval)
                    misses = 0
                } catch {
                    misses += 1
                    guard misses >= Self.missesAllowed else { continue }
                    gone("\(error)")
                    return
                }
            }
        }
        thread.name = "janus-watch"
        thread.start()
    }

    private func drop(_ index: Int, sender: ScreenSender, stop: StopSignal, why: String) {
        guard let left = dropped.withLock({ $0.insert(index).inserted ? mounts.count - $0.count : nil }) else { return }
        if let ingest { ingest.stopFeeding(index) } else if mounts.count > 1 { sender.dropDestination(index) }
        warn("janus: \(mounts[index].client.url) went away (\(why)): no longer sent to; \(left) of \(mounts.count) still fed")
        if left == 0 { stop.fire("every Janus went away") }
    }

    /// Why the run ended for want of Janus, if it did: every edge, or the ingest, went away.
    var lost: String? {
        if ingestGone.load(ordering: .relaxed) { return "the ingest Janus went away" }
        return dropped.withLock { $0.count } == mounts.count ? "every Janus went away" : nil
    }

    /// Stops the watchers and removes every mountpoint whose server is still there.
    func remove() {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        let gone = dropped.withLock { $0 }
        for (index, mount) in mounts.enumerated() where !gone.contains(index) {
            mount.remove()
        }
        if let ingest, !ingestGone.load(ordering: .relaxed) { ingest.remove() }
    }

    /// Each server's keyframe requests, for the closing summary (several servers only).
    func summary(_ s: SenderStatistics) -> [String] {
        if let ingest {
            return ["janus ingest \(ingest.client.url): asked for \(s.plainKeyframeRequests) keyframes for \(ingest.fed) of \(mounts.count) edges"]
        }
        guard s.destinations.count == mounts.count else { return [] }
        return zip(mounts, s.destinations).map { mount, destination in
            "janus \(mount.client.url): asked for \(destination.keyframeRequests) keyframes" + (destination.dropped ? "; dropped" : "")
        }
    }
}
