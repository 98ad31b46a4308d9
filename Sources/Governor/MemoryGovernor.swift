public import ShareBase

/// A memory budget, parsed from "50MiB", "32M", "8m", "1G", "1048576".
public struct MemoryBudget: Sendable, Equatable, CustomStringConvertible {
    /// The budget.
    public var size: ByteCount
    /// The budget in bytes (for JSON and the control channel).
    public var bytes: Int { size.bytes }

    /// A budget of `size`.
    public init(_ size: ByteCount) { self.size = size }

    /// A budget of `bytes` bytes.
    public init(bytes: Int) { size = .bytes(bytes) }

    /// 50 MiB: the memory limit of an iOS broadcast upload extension, which this design follows.
    public static let `default` = MemoryBudget(.mebibytes(50))

    /// A budget written as a size: a number with an optional unit (b, k, m or
    /// g, with or without "b"/"ib"; powers of 1024), up to 1 TiB; nil otherwise.
    public init?(_ text: String) {
        let lower = text.lowercased().filter { !$0.isWhitespace }
        let digits = lower.prefix { $0.isNumber || $0 == "." }
        guard let value = Double(digits), value > 0, value.isFinite else { return nil }
        let unit = lower.dropFirst(digits.count)
        let scale: Double
        switch unit {
        case "", "b": scale = 1
        case "k", "kb", "kib": scale = 1024
        case "m", "mb", "mib": scale = 1_048_576
        case "g", "gb", "gib": scale = 1_073_741_824
        default: return nil
        }
        // Past 1 TiB it is no budget at all: refused rather than trapping on the conversion.
        guard value * scale <= Double(1 << 40) else { return nil }
        size = .bytes(Int(value * scale))
    }

    public var description: String {
        if bytes & ((1 << 20) - 1) == 0 { return "\(bytes >> 20) MiB" }
        let tenths = (bytes * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}

/// One rung of the ladder: what the sender runs with.
public struct MemoryRung: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Packets kept for retransmission.
    public var historyPackets: Int
    public var fps: Int
    /// The encoded picture's height (the width follows the aspect ratio).
    public var height: Int
    /// Fraction of the configured bitrate.
    public var bitrateScale: Double
    /// A short name for logs and the status line.
    public var name: String

    public var description: String { name }
}

/// What the governor knows about the big consumers, to predict a step's
/// effect before taking it: memory as a function of the rung.
public struct MemoryAccount: Sendable, Equatable {
    /// Memory that does not depend on the rung (runtime, libraries' data, capture bands).
    public var fixed: ByteCount
    public var sourceWidth: Int
    public var sourceHeight: Int
    /// Pictures of the encoded size the frame pool holds.
    public var pictureSlots: Int

    public init(fixed: ByteCount, sourceWidth: Int, sourceHeight: Int, pictureSlots: Int = 1) {
        self.fixed = fixed
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.pictureSlots = pictureSlots
    }

    /// What the rung-dependent consumers take: x264 at ultrafast keeps
    /// about 12 bytes per pixel of picture state and lookahead, each picture
    /// of the frame pool 1.5 (I420; capture converts and scales into them
    /// band by band, so the captured size costs nothing here); the
    /// retransmission history about 1.3 KB a packet.
    public func variable(_ rung: MemoryRung) -> ByteCount {
        let height = min(rung.height, sourceHeight)
        let width = sourceWidth * height / max(sourceHeight, 1)
        let pixels = width * height
        return .bytes(pixels * 12 + pixels * 3 / 2 * pictureSlots) + Self.historyPacket * rung.historyPackets
    }

    /// A retransmission history entry: a full packet and its bookkeeping.
    public static let historyPacket = ByteCount.bytes(1300)

    /// What the sender is predicted to take at `rung`.
    public func predicted(_ rung: MemoryRung) -> ByteCount { fixed + variable(rung) }
}

/// The memory-budget governor, as a pure state machine: fed footprint
/// samples with the time, it answers with the rung to run at, stepping down
/// the ladder (cheapest step first) when the footprint nears the budget and
/// back up, with hysteresis, when it stays well below; when even the bottom
/// rung cannot fit it fails with a specific message.
public struct MemoryGovernor: Sendable {
    public enum Decision: Sendable, Equatable {
        case stay
        /// Moved to rung `to` (index into `ladder`).
        case step(from: Int, to: Int)
        /// The budget cannot be met even at the bottom of the ladder.
        case fail(String)
    }

    public private(set) var budget: MemoryBudget
    public private(set) var ladder: [MemoryRung]
    public private(set) var rung = 0
    public private(set) var account: MemoryAccount
    /// Step down once the footprint passes this share of the budget.
    public var highWater = 0.92
    /// Step back up only after the footprint stayed below this share…
    public var lowWater = 0.70
    /// …for this long, and never sooner than this after a step down.
    public var climbAfter: Duration = .seconds(10)
    public var settle: Duration = .seconds(1)
    private var lastStep: MonotonicTime?
    private var lowSince: MonotonicTime?

    /// The ladder for a source picture: shrink the retransmission history,
    /// (above 1080 lines, downscale to 1080), then halve the frame rate
    /// twice (30 → 15 → 5), then downscale (1080 → 720 → 540 → 360 lines),
    /// then halve the bitrate.
    public static func ladder(fps: Int, sourceHeight: Int, history: Int) -> [MemoryRung] {
        var rungs = [MemoryRung(historyPackets: history, fps: fps, height: sourceHeight, bitrateScale: 1, name: "full")]
        var r = rungs[0]
        r.historyPackets = min(history, 128); r.name = "short history"; rungs.append(r)
        // A picture taller than 1080 lines is encoded at 1080 before the
        // rate is cut: on a 4K screen the picture halves, the motion stays.
        if sourceHeight > 1080 { r.height = 1080; r.name = "1080p"; rungs.append(r) }
        if fps > 15 { r.fps = 15; r.name = "15 fps"; rungs.append(r) }
        if fps > 5 { r.fps = 5; r.name = "5 fps"; rungs.append(r) }
        for height in [1080, 720, 540, 360] where height < r.height {
            r.height = height; r.name = "\(height)p at \(r.fps) fps"; rungs.append(r)
        }
        r.bitrateScale = 0.5; r.name += ", half bitrate"; rungs.append(r)
        return rungs
    }

    public init(budget: MemoryBudget, ladder: [MemoryRung], account: MemoryAccount) {
        self.budget = budget
        self.ladder = ladder
        self.account = account
    }

    public var current: MemoryRung { ladder[rung] }

    /// The picture being captured changed size (a resized window, a screen
    /// that changed size): the account follows it, and the ladder is made
    /// again for it (its full size is the new one). The rung kept is the
    /// one of the same name, else the first predicted to take no more than
    /// the current one.
    public mutating func setSource(width: Int, height: Int) {
        let before = current
        let beforeSize = account.predicted(before)
        account.sourceWidth = width
        account.sourceHeight = height
        ladder = Self.ladder(fps: ladder[0].fps, sourceHeight: height, history: ladder[0].historyPackets)
        rung = ladder.firstIndex { $0.name == before.name }
            ?? ladder.firstIndex { account.predicted($0) <= beforeSize } ?? ladder.count - 1
    }

    /// A new budget from now on: the next samples step down at once if the
    /// footprint is over its high-water mark, or climb (with the usual
    /// patience) when well below it.
    public mutating func setBudget(_ newBudget: MemoryBudget) {
        budget = newBudget
        lowSince = nil
    }

    /// Starts at the highest rung predicted to fit under the high-water
    /// mark, so a tight budget never sees the full-size encoder at all.
    public mutating func chooseStart() -> Decision {
        let target = budget.size * highWater
        guard let first = ladder.indices.first(where: { account.predicted(ladder[$0]) <= target }) else {
            return checkFeasible() == .stay ? .step(from: 0, to: ladder.count - 1) : checkFeasible()
        }
        rung = first
        return first == 0 ? .stay : .step(from: 0, to: first)
    }

    /// Whether the budget can be met at all: the bottom rung's prediction.
    public func checkFeasible() -> Decision {
        let need = account.predicted(ladder[ladder.count - 1])
        guard need <= budget.size else { return .fail(failure(need: need)) }
        return .stay
    }

    /// Feeds one footprint sample taken at `now`.
    public mutating func observe(footprint: ByteCount, now: MonotonicTime) -> Decision {
        let over = footprint > budget.size
        // Learn the fixed part from what is measured at the current rung.
        account.fixed = max(.zero, footprint - account.variable(current))
        if footprint > budget.size * highWater {
            lowSince = nil
            // Over the budget, react at once; near it, let the last step settle first.
            if !over, let lastStep, now.since(lastStep) < settle { return .stay }
            let target = budget.size * highWater
            guard rung < ladder.count - 1 else {
                return over ? .fail(failure(need: footprint)) : .stay
            }
            // The first step predicted to get under the high-water mark, else the bottom.
            var next = rung + 1
            while next < ladder.count - 1 && account.predicted(ladder[next]) > target { next += 1 }
            if account.predicted(ladder[next]) > budget.size && next == ladder.count - 1 && over {
                return .fail(failure(need: account.predicted(ladder[next])))
            }
            let from = rung
            rung = next
            lastStep = now
            return .step(from: from, to: next)
        }
        guard rung > 0, footprint < budget.size * lowWater else {
            lowSince = nil
            return .stay
        }
        let since = lowSince ?? now
        lowSince = since
        guard now.since(since) >= climbAfter, lastStep.map({ now.since($0) >= climbAfter }) ?? true else { return .stay }
        // Climb one rung, only if its prediction stays under the high-water mark.
        guard account.predicted(ladder[rung - 1]) < budget.size * highWater else { return .stay }
        let from = rung
        rung -= 1
        lastStep = now
        lowSince = nil
        return .step(from: from, to: rung)
    }

    private func failure(need: ByteCount) -> String {
        let bottom = ladder[ladder.count - 1]
        return "cannot run within \(budget): needs at least \(need.mebibytesRoundedUp) MiB at \(bottom.height)p"
    }
}
