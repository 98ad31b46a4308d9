public import ShareBase

/// An H.264 access unit rebuilt from RTP packets.
public struct AccessUnit: Sendable, Equatable {
    /// RTP timestamp (90 kHz).
    public var timestamp: UInt32
    /// The NAL units in Annex B form with 4-byte start codes.
    public var data: [UInt8]
    /// Extended sequence numbers of the first and last packet.
    public var sequenceRange: ClosedRange<Int64>
    /// The first packet's header extension (carries the capture time).
    public var headerExtension: RTPHeaderExtension?
    /// When the last missing packet of the frame arrived.
    public var completedAt: MonotonicTime

    /// True when the unit holds an IDR slice.
    public var isKeyframe: Bool { AnnexB.containsIDR(data[...]) }
}

/// The leading NAL units of an access unit whose last packets are still on
/// their way: whole units, in order, contiguous from the unit's first packet,
/// so a decoder can start on the picture while the sender still encodes the
/// rest of it. The unit's `.frame` (whose data begins with every part
/// announced) or a `.lost` follows.
public struct EarlySlices: Sendable, Equatable {
    /// RTP timestamp of the unit.
    public var timestamp: UInt32
    /// Where `data` begins in the unit's Annex B data: parts follow each
    /// other without gaps, the first at 0.
    public var offset: Int
    /// Complete NAL units in Annex B form with 4-byte start codes.
    public var data: [UInt8]

    /// True when these units hold an IDR slice.
    public var holdsKeyframe: Bool { AnnexB.containsIDR(data[...]) }

    /// Units `data` of the access unit at `timestamp`, from `offset` on.
    public init(timestamp: UInt32, offset: Int, data: [UInt8]) {
        self.timestamp = timestamp
        self.offset = offset
        self.data = data
    }
}

/// What the assembler gave up on.
public struct FrameLoss: Sendable, Equatable {
    public enum Reason: Sendable, Equatable {
        /// Packets were missing for longer than the reorder delay, or the buffer was full.
        case missingPackets
        /// The packets were all there but did not form valid NAL units.
        case malformed(H264DepacketizeError)
    }

    public var reason: Reason
    /// Distinct RTP timestamps (frames) dropped, at least one.
    public var frames: Int
    /// Packets discarded with them.
    public var packets: Int

    public init(reason: Reason, frames: Int, packets: Int) {
        self.reason = reason
        self.frames = frames
        self.packets = packets
    }
}

/// Reorders RTP packets of one H.264 stream and rebuilds access units. A unit
/// is emitted only when every packet from the end of the previous unit to its
/// marker bit is present and depacketizes cleanly, so a decoder never sees a
/// corrupt frame; units that cannot be completed within `maxDelay` (time for
/// reordering and retransmission) are reported as lost. Duplicates and late
/// packets are counted and dropped. With `earlySlices`, the whole NAL units
/// at the start of a unit still arriving are announced as they come
/// (`.slices`), depacketized once: the unit is built on them. Sans-IO: time
/// comes in as `now`.
public struct H264FrameAssembler: Sendable {
    public enum Event: Sendable, Equatable {
        case frame(AccessUnit)
        /// The start of the unit being received (with `earlySlices`).
        case slices(EarlySlices)
        case lost(FrameLoss)
    }

    public struct Counters: Sendable, Equatable {
        public var packetsAccepted = 0
        public var duplicates = 0
        public var late = 0
        public var overflowed = 0
        public var framesEmitted = 0
        public var framesLost = 0
        /// Units some of whose NAL units were announced before they were complete.
        public var framesAnnouncedEarly = 0
        /// Gaps no longer waited for because a whole keyframe had arrived behind them.
        public var gapsSkippedForKeyframe = 0
    }

    /// The unit being received, depacketized as far as its packets are
    /// contiguous from its first one (with `earlySlices`).
    private struct Partial: Sendable {
        var start: Int64
        /// The last packet depacketized.
        var through: Int64
        var data: [UInt8] = []
        var depacketizer = H264Depacketizer()
        var failure: H264DepacketizeError?
        /// Bytes of `data` announced in `.slices` events.
        var announced = 0
    }

    /// How long a gap is waited for; the receiver tunes it to the path.
    public var maxDelay: Duration
    /// Waited beyond `maxDelay` for a burst's repairs (`NACKTracker.burstAllowance`).
    public var burstAllowance: Duration = .zero
    /// How long a gap is waited for when a whole keyframe has arrived
    /// behind it (decoding can start again there): past the path's
    /// reordering, it is a loss. Nil waits `maxDelay` whatever comes.
    public var keyframeSkipAfter: Duration?
    public let maxPackets: Int
    /// Whether the start of a unit still arriving is announced (`.slices`).
    public let earlySlices: Bool
    public private(set) var counters = Counters()

    private var unwrapper = SequenceUnwrapper()
    private var stored = StoredPackets()
    /// Extended sequence number the next unit starts at, once known.
    private var next: Int64?
    /// The lowest stored sequence, and whether a frame boundary must be found before emitting.
    private var resyncing = false
    /// Set once a unit has been emitted or dropped; earlier packets are late from then on.
    private var started = false
    private var gapDeadline: MonotonicTime?
    private var partial: Partial?
    /// The last unit's size: a unit announced before it is complete starts
    /// with room for about as much (screens change little frame to frame),
    /// instead of growing by doubling as its packets come.
    private var lastUnitBytes = 0

    public init(maxDelay: Duration = .milliseconds(80), maxPackets: Int = 4096, earlySlices: Bool = false) {
        self.maxDelay = maxDelay
        self.maxPackets = max(maxPackets, 16)
        self.earlySlices = earlySlices
    }

    /// Accepts one packet and returns the units (and losses) it completes, in order.
    public mutating func insert(_ packet: RTPPacket, now: MonotonicTime) -> [Event] {
        let sequence = unwrapper.unwrap(packet.sequenceNumber)
        var events: [Event] = []
        if stored.count >= maxPackets && stored[sequence] == nil {
            // Full: give up the unit being waited on before taking more. This
            // may move `next` past `sequence`, so lateness is checked after.
            counters.overflowed += 1
            giveUp(into: &events)
            if stored.count >= maxPackets { dropOldest(into: &events) }
        }
        if started, let next, sequence < next {
            counters.late += 1
            return events
        }
        if stored[sequence] != nil {
            counters.duplicates += 1
            return events
        }
        stored.keep(packet, as: sequence, arrival: now)
        counters.packetsAccepted += 1
        if !started {
            // Before the first unit, the earliest packet seen is the start.
            next = min(next ?? sequence, sequence)
        }
        drain(now: now, into: &events)
        return events
    }

    /// Gives up on gaps older than `maxDelay`; call it when no packet arrives.
    public mutating func poll(now: MonotonicTime) -> [Event] {
        var events: [Event] = []
        drain(now: now, into: &events)
        return events
    }

    /// When `poll` next needs to run, if a gap is being waited on.
    public var deadline: MonotonicTime? { gapDeadline }

    /// Packets held for reordering.
    public var bufferedPackets: Int { stored.count }

    private mutating func drain(now: MonotonicTime, into events: inout [Event]) {
        while true {
            if resyncing {
                guard let boundary = findBoundary() else { return }
                discard(below: boundary, reason: .missingPackets, into: &events)
                next = boundary
                resyncing = false
            }
            guard let start = next, let first = stored[start] else {
                checkGap(holeAt: next, now: now, into: &events)
                return
            }
            var sequence = start
            var complete = false
            while let packet = stored[sequence] {
                if packet.timestamp != first.timestamp {
                    // Sequence is contiguous but the timestamp changed with no
                    // marker: the previous unit ended at sequence - 1.
                    sequence -= 1
                    complete = true
                    break
                }
                if packet.marker {
                    complete = true
                    break
                }
                sequence += 1
            }
            guard complete else {
                if earlySlices && sequence > start { announce(start: start, through: sequence - 1, into: &events) }
                checkGap(holeAt: sequence, now: now, into: &events)
                return
            }
            gapDeadline = nil
            emit(start...sequence, now: now, into: &events)
            next = sequence + 1
        }
    }

    /// Waits for the hole at `holeAt` to fill. A hole matters once something
    /// beyond it has arrived, and is given up when the oldest packet waiting
    /// behind it has waited `maxDelay`.
    private mutating func checkGap(holeAt: Int64?, now: MonotonicTime, into events: inout [Event]) {
        guard let holeAt else {
            gapDeadline = nil
            return
        }
        var oldest: MonotonicTime?
        for (sequence, packet) in stored.packets where sequence > holeAt {
            if oldest == nil || packet.arrival < oldest! { oldest = packet.arrival }
        }
        guard let oldest else {
            gapDeadline = nil
            return
        }
        gapDeadline = oldest + maxDelay + burstAllowance
        // A whole keyframe behind the hole: decoding starts again from it,
        // so once the hole is older than reordering explains, nothing before
        // the keyframe is worth waiting for (a sender that sent it no longer
        // repairs what came before).
        if let skipAfter = keyframeSkipAfter, skipAfter < maxDelay, let keyframe = completeKeyframe(after: holeAt) {
            guard now >= oldest + skipAfter else {
                gapDeadline = oldest + skipAfter
                return
            }
            gapDeadline = nil
            counters.gapsSkippedForKeyframe += 1
            discard(below: keyframe, reason: .missingPackets, into: &events)
            next = keyframe
            drain(now: now, into: &events)
            return
        }
        if now >= gapDeadline! {
            giveUp(into: &events)
            drain(now: now, into: &events)
        }
    }

    /// Drops the unit being waited on and looks for the next clean start.
    private mutating func giveUp(into events: inout [Event]) {
        gapDeadline = nil
        resyncing = true
        if let boundary = findBoundary() {
            discard(below: boundary, reason: .missingPackets, into: &events)
            next = boundary
            resyncing = false
        }
    }

    /// The first sequence after `hole` that starts a whole unit holding an
    /// IDR slice: every packet from its start to its marker is stored, and
    /// its start is proven (the packet before it ends another unit, or it
    /// begins with a parameter set or delimiter, as an access unit may).
    private func completeKeyframe(after hole: Int64) -> Int64? {
        var best: Int64?
        for (sequence, packet) in stored.packets where sequence > hole {
            guard best.map({ sequence < $0 }) ?? true, H264PayloadInspection.carriesIDR(stored.payload(of: packet)) else { continue }
            var start = sequence
            while let previous = stored[start - 1], previous.timestamp == packet.timestamp, !previous.marker { start -= 1 }
            guard start > hole else { continue }
            if let before = stored[start - 1] {
                guard before.marker || before.timestamp != packet.timestamp else { continue }
            } else {
                guard let first = stored[start], H264PayloadInspection.beginsAccessUnit(stored.payload(of: first)) else { continue }
            }
            var end = start
            var complete = false
            while let next = stored[end], next.timestamp == packet.timestamp {
                if next.marker {
                    complete = true
                    break
                }
                end += 1
            }
            if complete { best = start }
        }
        return best
    }

    /// The first stored sequence that provably starts a unit after `next`: its
    /// predecessor is stored and carries the marker or another timestamp, or
    /// is lost and it begins with a parameter set or delimiter (a keyframe
    /// sent after loss, which the picture after it needs).
    private func findBoundary() -> Int64? {
        let floor = next ?? Int64.min
        var best: Int64?
        for (sequence, packet) in stored.packets where sequence > floor && best.map({ sequence < $0 }) ?? true {
            let starts = stored[sequence - 1].map { $0.marker || $0.timestamp != packet.timestamp }
                ?? H264PayloadInspection.beginsAccessUnit(stored.payload(of: packet))
            if starts { best = sequence }
        }
        return best
    }

    private mutating func dropOldest(into events: inout [Event]) {
        guard let oldest = stored.sequences.min() else { return }
        discard(below: oldest + 1, reason: .missingPackets, into: &events)
        next = oldest + 1
        resyncing = true
    }

    private mutating func discard(below limit: Int64, reason: FrameLoss.Reason, into events: inout [Event]) {
        let doomed = stored.sequences.filter { $0 < limit }
        guard !doomed.isEmpty else { return }
        var timestamps = Set<UInt32>()
        for sequence in doomed {
            if let packet = stored.forget(sequence) { timestamps.insert(packet.timestamp) }
        }
        if let partial, partial.start < limit { self.partial = nil }
        started = true
        let frames = max(timestamps.count, 1)
        counters.framesLost += frames
        events.append(.lost(FrameLoss(reason: reason, frames: frames, packets: doomed.count)))
    }

    /// Depacketizes the unit starting at `start` through `last` (contiguous,
    /// not complete) and announces the whole NAL units not announced yet.
    private mutating func announce(start: Int64, through last: Int64, into events: inout [Event]) {
        if partial?.start != start {
            partial = Partial(start: start, through: start - 1)
            partial!.data.reserveCapacity(lastUnitBytes + lastUnitBytes / 4 + 1500)
        }
        guard var unit = partial, unit.failure == nil, unit.through < last else { return }
        partial = nil  // Held here while it grows: no copy of its data.
        depacketize(&unit, through: last)
        let whole = unit.depacketizer.openUnitStart ?? unit.data.count
        if unit.failure == nil && whole > unit.announced, let first = stored[start] {
            if unit.announced == 0 { counters.framesAnnouncedEarly += 1 }
            events.append(.slices(EarlySlices(timestamp: first.timestamp, offset: unit.announced,
                                              data: Array(unit.data[unit.announced..<whole]))))
            unit.announced = whole
        }
        partial = unit
    }

    /// Appends the unit's packets after the ones done, through `last`.
    private func depacketize(_ unit: inout Partial, through last: Int64) {
        var sequence = unit.through + 1
        while sequence <= last, unit.failure == nil, let packet = stored[sequence] {
            do throws(H264DepacketizeError) {
                try unit.depacketizer.append(payload: stored.payload(of: packet), to: &unit.data)
            } catch {
                unit.failure = error
            }
            unit.through = sequence
            sequence += 1
        }
    }

    private mutating func emit(_ range: ClosedRange<Int64>, now: MonotonicTime, into events: inout [Event]) {
        started = true
        let first = stored[range.lowerBound]!
        // Built on what was announced of it, else from its first packet.
        var unit = partial?.start == range.lowerBound ? partial! : Partial(start: range.lowerBound, through: range.lowerBound - 1)
        partial = nil
        if unit.data.isEmpty {
            var total = 0
            for sequence in range { total += stored[sequence]?.payloadLength ?? 0 }
            unit.data.reserveCapacity(total + 64)
        }
        depacketize(&unit, through: range.upperBound)
        for sequence in range { stored.forget(sequence) }
        var failure = unit.failure
        if failure == nil && unit.depacketizer.inFragment { failure = .truncatedFragment }
        if let failure {
            counters.framesLost += 1
            events.append(.lost(FrameLoss(reason: .malformed(failure), frames: 1, packets: range.count)))
            return
        }
        counters.framesEmitted += 1
        lastUnitBytes = unit.data.count
        events.append(.frame(AccessUnit(timestamp: first.timestamp, data: unit.data, sequenceRange: range,
                                        headerExtension: stored.headerExtension(of: first), completedAt: now)))
    }
}
