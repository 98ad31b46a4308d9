internal import ShareBase

/// What a network path does to datagrams in one direction: random and
/// bursty loss, delay with jitter (reordering or not), duplication, and a
/// bottleneck with a drop-tail queue whose rate may change on a schedule.
public struct ImpairmentProfile: Sendable, Equatable, CustomStringConvertible {
    /// Gilbert-Elliott two-state loss (RFC 3611 §4.7.2 uses the same model):
    /// per packet, good -> bad with `enterBad`, bad -> good with `leaveBad`;
    /// loss probability `lossInBad` in the bad state, none in the good.
    public struct Bursts: Sendable, Equatable {
        public var enterBad: Double
        public var leaveBad: Double
        public var lossInBad: Double

        public init(enterBad: Double, leaveBad: Double, lossInBad: Double = 1) {
            self.enterBad = enterBad
            self.leaveBad = leaveBad
            self.lossInBad = lossInBad
        }
    }

    /// A bottleneck rate from `start` on (nil: no limit).
    public struct RateStep: Sendable, Equatable {
        public var start: Duration
        public var bitsPerSecond: Double?

        public init(start: Duration, bitsPerSecond: Double?) {
            self.start = start
            self.bitsPerSecond = bitsPerSecond
        }
    }

    public var loss = 0.0
    public var bursts: Bursts?
    public var delay: Duration = .zero
    /// Uniform in [-jitter, +jitter] around `delay`.
    public var jitter: Duration = .zero
    /// With jitter: may a packet overtake an earlier one?
    public var reorder = false
    public var duplicate = 0.0
    /// The bottleneck: rates over time, the first from 0 s.
    public var rates: [RateStep] = []
    /// How long a full drop-tail queue takes to drain at the current rate.
    public var queue: Duration = .milliseconds(100)

    public init() {}

    public var isClean: Bool { self == ImpairmentProfile() }

    /// The rate in force `elapsed` after the start.
    public func rate(at elapsed: Duration) -> Double? {
        var current: Double?
        for step in rates where step.start <= elapsed { current = step.bitsPerSecond }
        return current
    }

    /// Parses `loss=2%,delay=50ms,jitter=20ms,reorder,duplicate=1%,
    /// burst=2%/30%,rate=4mbit/2mbit@10s/off@25s,queue=200ms`.
    public init(parsing text: String) throws(ImpairmentError) {
        self.init()
        for item in text.split(separator: ",").map({ $0.trimmingSpaces }) where !item.isEmpty {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            let key = parts[0]
            let value = parts.count > 1 ? parts[1] : ""
            switch key {
            case "loss": loss = try Self.fraction(value, key)
            case "duplicate": duplicate = try Self.fraction(value, key)
            case "delay": delay = try Self.duration(value, key)
            case "jitter": jitter = try Self.duration(value, key)
            case "queue": queue = try Self.duration(value, key)
            case "reorder": reorder = true
            case "burst":
                let probabilities = value.split(separator: "/").map(String.init)
                guard probabilities.count == 2 || probabilities.count == 3 else {
                    throw ImpairmentError("burst wants ENTER%/LEAVE%[/LOSS%], got \"\(value)\"")
                }
                bursts = Bursts(enterBad: try Self.fraction(probabilities[0], key),
                                leaveBad: try Self.fraction(probabilities[1], key),
                                lossInBad: probabilities.count == 3 ? try Self.fraction(probabilities[2], key) : 1)
            case "rate":
                rates = []
                for step in value.split(separator: "/").map(String.init) {
                    let pieces = step.split(separator: "@").map(String.init)
                    let start = pieces.count > 1 ? try Self.duration(pieces[1], key) : .zero
                    let bits: Double? = pieces[0] == "off" ? nil : try Self.bitrate(pieces[0])
                    rates.append(RateStep(start: start, bitsPerSecond: bits))
                }
            default:
                throw ImpairmentError("unknown impairment \"\(key)\" (known: loss, burst, delay, jitter, reorder, duplicate, rate, queue)")
            }
        }
    }

    public var description: String {
        var items: [String] = []
        if loss > 0 { items.append("loss=\(Self.percent(loss))") }
        if let bursts { items.append("burst=\(Self.percent(bursts.enterBad))/\(Self.percent(bursts.leaveBad))/\(Self.percent(bursts.lossInBad))") }
        if delay > .zero { items.append("delay=\(Self.milliseconds(delay))") }
        if jitter > .zero { items.append("jitter=\(Self.milliseconds(jitter))") }
        if reorder { items.append("reorder") }
        if duplicate > 0 { items.append("duplicate=\(Self.percent(duplicate))") }
        if !rates.isEmpty {
            let steps = rates.map { step in
                let rate = step.bitsPerSecond.map { "\(Int($0 / 1000))kbit" } ?? "off"
                return step.start == .zero ? rate : "\(rate)@\(Self.milliseconds(step.start))"
            }
            items.append("rate=" + steps.joined(separator: "/"))
            items.append("queue=\(Self.milliseconds(queue))")
        }
        return items.isEmpty ? "clean" : items.joined(separator: ",")
    }

    static func percent(_ value: Double) -> String {
        let scaled = (value * 1000).rounded() / 10
        return scaled == scaled.rounded() ? "\(Int(scaled))%" : "\(scaled)%"
    }

    static func milliseconds(_ value: Duration) -> String { "\(Int((value.seconds * 1000).rounded()))ms" }

    static func fraction(_ text: String, _ key: String) throws(ImpairmentError) -> Double {
        let percent = text.hasSuffix("%")
        guard let number = Double(percent ? String(text.dropLast()) : text) else {
            throw ImpairmentError("\(key) wants a percentage such as 2%, got \"\(text)\"")
        }
        let value = percent ? number / 100 : number
        guard (0...1).contains(value) else { throw ImpairmentError("\(key) \(text) is outside 0-100%") }
        return value
    }

    static func duration(_ text: String, _ key: String) throws(ImpairmentError) -> Duration {
        let units: [(String, Double)] = [("ms", 1e-3), ("us", 1e-6), ("s", 1)]
        for (suffix, scale) in units where text.hasSuffix(suffix) {
            if let number = Double(text.dropLast(suffix.count)), number >= 0, number * scale <= 3600 {
                return .nanoseconds(Int64(number * scale * 1e9))
            }
        }
        throw ImpairmentError("\(key) wants a duration such as 50ms or 2s, got \"\(text)\"")
    }

    static func bitrate(_ text: String) throws(ImpairmentError) -> Double {
        let lower = text.lowercased()
        let units: [(String, Double)] = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("g", 1e9), ("m", 1e6), ("k", 1e3),
                                         ("bit", 1)]
        for (suffix, scale) in units where lower.hasSuffix(suffix) {
            if let number = Double(lower.dropLast(suffix.count)), number > 0 { return number * scale }
        }
        if let number = Double(lower), number > 0 { return number }
        throw ImpairmentError("rate wants a bitrate such as 1mbit or 500kbit, got \"\(text)\"")
    }
}

/// A profile that could not be read.
public struct ImpairmentError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

/// Named network conditions for the harness and the tests: what goes
/// toward the receiver and what comes back.
public struct NetworkProfile: Sendable, Equatable {
    public var name: String
    public var forward: ImpairmentProfile
    public var reverse: ImpairmentProfile

    public init(name: String, forward: ImpairmentProfile, reverse: ImpairmentProfile) {
        self.name = name
        self.forward = forward
        self.reverse = reverse
    }

    public static func named(_ name: String) throws(ImpairmentError) -> NetworkProfile {
        func p(_ text: String) throws(ImpairmentError) -> ImpairmentProfile { try ImpairmentProfile(parsing: text) }
        switch name {
        case "clean": return .init(name: name, forward: .init(), reverse: .init())
        case "loss2": return .init(name: name, forward: try p("loss=2%"), reverse: .init())
        case "loss5": return .init(name: name, forward: try p("loss=5%"), reverse: .init())
        case "burst": return .init(name: name, forward: try p("burst=1%/25%"), reverse: .init())
        case "cap1m": return .init(name: name, forward: try p("rate=1mbit,queue=200ms"), reverse: .init())
        case "cap3m": return .init(name: name, forward: try p("rate=3mbit,queue=50ms"), reverse: .init())
        case "halving":
            return .init(name: name, forward: try p("rate=4mbit/2mbit@8s/off@20s,queue=100ms"), reverse: .init())
        case "rtt100":
            return .init(name: name, forward: try p("delay=50ms,loss=1%"), reverse: try p("delay=50ms"))
        case "jitter20":
            return .init(name: name, forward: try p("delay=30ms,jitter=20ms,reorder"), reverse: try p("delay=30ms"))
        // The paths of the second round (content that is hard to send):
        // heavy random loss at a short round trip; the rate falling to a
        // tenth for 6 s and coming back; the feedback path alone losing;
        // a slow link with a one-second queue; a long round trip; a
        // wifi-like mix of a cap, a shallow queue, jitter and bursts.
        case "loss10":
            return .init(name: name, forward: try p("delay=20ms,loss=10%"), reverse: try p("delay=20ms"))
        case "drop":
            return .init(name: name, forward: try p("rate=4mbit/400kbit@8s/off@14s,queue=100ms"), reverse: .init())
        case "fbloss": return .init(name: name, forward: .init(), reverse: try p("loss=10%"))
        case "deepq": return .init(name: name, forward: try p("rate=1500kbit,queue=1000ms"), reverse: .init())
        case "rtt400":
            return .init(name: name, forward: try p("delay=200ms,loss=1%"), reverse: try p("delay=200ms"))
        case "wifi":
            return .init(name: name, forward: try p("rate=2500kbit,queue=60ms,delay=15ms,jitter=8ms,burst=0.4%/30%"),
                         reverse: try p("delay=15ms,jitter=8ms"))
        default:
            throw ImpairmentError("unknown network profile \"\(name)\" (known: \(names.joined(separator: ", ")))")
        }
    }

    public static let names = ["clean", "loss2", "loss5", "burst", "cap1m", "cap3m", "halving", "rtt100", "jitter20",
                               "loss10", "drop", "fbloss", "deepq", "rtt400", "wifi"]
}
