internal import ShareWire
public import ShareBase

/// Spreads packets at a rate above the target (libwebrtc's pacer: 2.5x) so
/// a large frame never leaves as one burst that overflows a queue on the
/// path, sans-IO. Media is paced by a token bucket refilled by elapsed
/// time, with a small burst allowance so an ordinary frame leaves at once;
/// retransmissions come first, at the same pacing, but also draw on a
/// budget of their own, a set share of the target, so repairs cannot crowd
/// out the stream. Packets wait in rings of reusable buffers: nothing is
/// allocated per packet once warm.
public struct PacketPacer: Sendable {
    public enum Kind: Sendable, Equatable {
        /// Paced at the pacing rate.
        case media
        /// Paced, first in line, within the retransmission budget.
        case retransmission
        /// Leaves at once: audio and RTCP are small and time-critical.
        case immediate
        /// A bandwidth probe's padding: leaves at the time it was queued
        /// for (`enqueue`'s `now`), outside the pacing budget, since a
        /// probe is sent faster than the target on purpose.
        case probe
    }

    public struct Configuration: Sendable, Equatable {
        /// Pacing rate as a multiple of the target.
        public var pacingFactor = 2.5
        /// Time's worth of the pacing rate that may leave as one burst.
        public var burst: Duration = .milliseconds(20)
        /// Retransmissions may use at most this share of the target.
        public var retransmissionShare = 0.3
        /// A packet that waited longer than this is dropped (counted): it is
        /// too late to matter, and an ever-growing queue is worse.
        public var maxQueueDelay: Duration = .seconds(2)
        /// Packets the media queue holds at most, and bytes (what the
        /// sender's footprint pays for the queue, whether used or not once
        /// it has wrapped); repairs get a quarter of each.
        public var capacity = 1024
        public var capacityBytes = 512 * 1024

        public init() {}
    }

    public struct Counters: Sendable, Equatable {
        public var sent = 0
        public var dropped = 0
        public var retransmissionsDropped = 0
        /// Repairs dropped from the queue because a keyframe followed them.
        public var repairsSuperseded = 0
        /// Media packets dropped from the queue, not yet sent, because a
        /// keyframe followed them.
        public var mediaSuperseded = 0
        public var bytesSent = 0
    }

    public let configuration: Configuration
    public private(set) var counters = Counters()
    /// The rate the media bucket refills at.
    public private(set) var pacingRate: Bitrate
    private var retransmissionRate: Bitrate
    /// The buckets' levels, in bytes (fractions kept).
    private var mediaTokens: Double
    private var repairTokens: Double
    private var lastRefill: MonotonicTime?
    private var media: PacketRing
    private var repairs: PacketRing
    private var urgent: PacketRing
    private var probes: PacketRing

    public init(targetBitrate: Bitrate, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        pacingRate = .zero
        retransmissionRate = .zero
        mediaTokens = 0
        repairTokens = 0
        media = PacketRing(capacity: configuration.capacity, bytes: configuration.capacityBytes)
        repairs = PacketRing(capacity: max(64, configuration.capacity / 4), bytes: configuration.capacityBytes / 4)
        urgent = PacketRing(capacity: 128, bytes: 64 * 1024)
        probes = PacketRing(capacity: 128, bytes: 32 * 1024)
        setTarget(targetBitrate)
        mediaTokens = burstBytes
        repairTokens = repairDepth
    }

    /// Follows a new target bitrate, pacing at `pacingFactor` times it
    /// unless `pacingRate` says otherwise (under the target too: a queue
    /// the path left full drains while the pacer keeps under its rate),
    /// with the configured burst allowance unless `burst` says otherwise
    /// (zero: one packet at a time, each a pacing interval after the last,
    /// so none arrives at a full queue in a clump).
    public mutating func setTarget(_ bitrate: Bitrate, pacingRate rate: Bitrate? = nil, burst: Duration? = nil) {
        let target = max(bitrate, .kilobitsPerSecond(10))
        pacingRate = max(rate ?? target * configuration.pacingFactor, .kilobitsPerSecond(10))
        self.burst = burst ?? configuration.burst
        mediaTokens = min(mediaTokens, burstBytes)
        retransmissionRate = target * configuration.retransmissionShare
    }

    /// The burst allowance now (`setTarget`).
    private var burst: Duration = .zero
    private var burstBytes: Double { burst == .zero ? 1 : max(pacingRate.bytes(in: burst), 2 * 1500) }
    /// Repairs may leave together up to a quarter second of their budget:
    /// a burst of loss is asked for in one NACK, and its repairs must all
    /// arrive within the receiver's wait (50 ms on a short path), not one
    /// per refill (at a tenth of a second, twenty lost packets at 3 Mbit/s
    /// took 78 ms). The share over time stays `retransmissionShare`.
    private var repairDepth: Double { max(retransmissionRate.bytes(in: .milliseconds(250)), 2 * 1500) }

    /// Queues a packet (a probe's, to leave at `now`). Returns false
    /// (counted) when its queue is full.
    @discardableResult
    public mutating func enqueue(_ bytes: ArraySlice<UInt8>, kind: Kind, now: MonotonicTime) -> Bool {
        let accepted: Bool
        switch kind {
        case .media: accepted = media.push(bytes, at: now)
        case .retransmission: accepted = repairs.push(bytes, at: now)
        case .immediate: accepted = urgent.push(bytes, at: now)
        case .probe: accepted = probes.push(bytes, at: now)
        }
        if !accepted {
            counters.dropped += 1
            if kind == .retransmission { counters.retransmissionsDropped += 1 }
        }
        return accepted
    }

    /// Hands every packet that may leave by `now` to `send`, in order:
    /// immediate ones, probe padding that is due, then repairs within
    /// their budget, then media.
    /// `send` gets the bytes and whether it is a retransmission.
    public mutating func release(now: MonotonicTime, send: (ArraySlice<UInt8>, Kind) -> Void) {
        refill(now: now)
        while let bytes = urgent.front {
            send(bytes, .immediate)
            account(bytes.count)
            urgent.pop()
        }
        while let bytes = probes.front, let at = probes.frontTime, at <= now {
            send(bytes, .probe)
            account(bytes.count)
            probes.pop()
        }
        dropStale(now: now)
        // Repairs are on the wire too: they leave at the pacing rate (no
        // faster than a measured bottleneck drains) and spend its budget.
        while let bytes = repairs.front, mediaTokens > 0,
              repairTokens >= Double(bytes.count) || repairTokens >= repairDepth {
            repairTokens -= Double(bytes.count)
            mediaTokens -= Double(bytes.count)
            send(bytes, .retransmission)
            account(bytes.count)
            repairs.pop()
        }
        while let bytes = media.front, mediaTokens > 0 {
            mediaTokens -= Double(bytes.count)
            send(bytes, .media)
            account(bytes.count)
            media.pop()
        }
    }

    /// Drops the repairs waiting (a keyframe made them useless); returns how many.
    @discardableResult
    public mutating func dropRepairs() -> Int {
        let dropped = repairs.count
        while !repairs.isEmpty { repairs.pop() }
        counters.repairsSuperseded += dropped
        return dropped
    }

    /// Where the media queue ends now: `dropMedia(before:)` drops what
    /// was queued before this mark and is still waiting.
    public var mediaMark: Int { media.pushed }

    /// Drops the media packets queued before `mark` that have not left (a
    /// keyframe queued after them made them useless: the receiver decodes
    /// on from it). On a path that just fell to a fraction of the rate the
    /// pacer may still hold a frame or more coded for the old rate, which
    /// would take longer on the wire than the keyframe itself. Returns how
    /// many were dropped.
    @discardableResult
    public mutating func dropMedia(before mark: Int) -> Int {
        var dropped = 0
        while !media.isEmpty, media.popped < mark {
            media.pop()
            dropped += 1
        }
        counters.mediaSuperseded += dropped
        return dropped
    }

    /// When `release` next has something to send, if anything is queued.
    public func nextRelease(now: MonotonicTime) -> MonotonicTime? {
        if !urgent.isEmpty { return now }
        // When the pacing budget is positive again: media waits for it, repairs as well.
        let paced = wake(now, deficit: max(0, -mediaTokens + 1), rate: pacingRate)
        var next: MonotonicTime? = media.isEmpty ? nil : paced
        if let front = repairs.front {
            let deficit = max(0, min(Double(front.count), repairDepth) - repairTokens)
            let at = max(wake(now, deficit: deficit, rate: retransmissionRate), paced)
            next = min(next ?? at, at)
        }
        if let at = probes.frontTime { next = min(next ?? at, max(at, now)) }
        return next
    }

    /// Packets waiting.
    public var queued: Int { media.count + repairs.count + urgent.count + probes.count }
    /// Bytes waiting to be paced.
    public var queuedBytes: Int { media.bytes + repairs.bytes }

    /// How long the oldest waiting media packet has waited.
    public func queueDelay(now: MonotonicTime) -> Duration {
        media.frontTime.map { now.since($0) } ?? .zero
    }

    private func wake(_ now: MonotonicTime, deficit: Double, rate: Bitrate) -> MonotonicTime {
        guard deficit > 0 else { return now }
        let nanoseconds = deficit * 8 / max(rate.bitsPerSecond, 1) * 1e9
        return now + .nanoseconds(Int64(min(nanoseconds, 1e9)))
    }

    private mutating func refill(now: MonotonicTime) {
        if let last = lastRefill {
            let elapsed = now.since(last)
            mediaTokens = min(mediaTokens + pacingRate.bytes(in: elapsed), burstBytes)
            repairTokens = min(repairTokens + retransmissionRate.bytes(in: elapsed), repairDepth)
        }
        lastRefill = now
    }

    private mutating func account(_ bytes: Int) {
        counters.sent += 1
        counters.bytesSent += bytes
    }

    private mutating func dropStale(now: MonotonicTime) {
        while let at = repairs.frontTime, now.since(at) > configuration.maxQueueDelay / 4 {
            repairs.pop()
            counters.dropped += 1
            counters.retransmissionsDropped += 1
        }
        while let at = media.frontTime, now.since(at) > configuration.maxQueueDelay {
            media.pop()
            counters.dropped += 1
        }
    }
}

/// A FIFO of datagrams in one byte arena (allocated once; only what is
/// used is ever touched), with a small ring of entries pointing into it.
struct PacketRing: Sendable {
    private var arena: [UInt8]
    private var entries: [(start: Int, count: Int, time: MonotonicTime)]
    private var head = 0
    /// Where the next packet's bytes go.
    private var tail = 0
    private(set) var count = 0
    private(set) var bytes = 0
    /// Packets taken from the front so far, and so pushed so far.
    private(set) var popped = 0
    var pushed: Int { popped + count }

    init(capacity: Int, bytes arenaBytes: Int) {
        arena = [UInt8](unsafeUninitializedCapacity: max(arenaBytes, 2048)) { _, initialized in
            initialized = max(arenaBytes, 2048)
        }
        entries = Array(repeating: (0, 0, .zero), count: max(capacity, 1))
    }

    var isEmpty: Bool { count == 0 }

    mutating func push(_ packet: ArraySlice<UInt8>, at time: MonotonicTime) -> Bool {
        let size = packet.count
        guard count < entries.count, size > 0, size <= arena.count else { return false }
        // Live bytes run from the oldest packet's start to `tail`, maybe
        // wrapping past the end; a packet never straddles the end.
        var start = 0
        if count > 0 {
            let oldest = entries[head].start
            if tail > oldest {
                if tail + size <= arena.count {
                    start = tail
                } else if size <= oldest {
                    start = 0
                } else {
                    return false
                }
            } else {
                guard tail + size <= oldest else { return false }
                start = tail
            }
        }
        arena.withUnsafeMutableBufferPointer { destination in
            packet.withUnsafeBufferPointer { source in
                _ = UnsafeMutableBufferPointer(rebasing: destination[start..<(start + size)]).initialize(from: source)
            }
        }
        entries[(head + count) % entries.count] = (start, size, time)
        tail = start + size
        count += 1
        bytes += size
        return true
    }

    var front: ArraySlice<UInt8>? {
        guard count > 0 else { return nil }
        let entry = entries[head]
        return arena[entry.start..<(entry.start + entry.count)]
    }

    var frontTime: MonotonicTime? { count == 0 ? nil : entries[head].time }

    mutating func pop() {
        guard count > 0 else { return }
        bytes -= entries[head].count
        head = (head + 1) % entries.count
        count -= 1
        popped += 1
        if count == 0 { tail = 0 }
    }
}
