public import ArgumentParser
public import ShareGovernor

/// Range checks on numeric options, as usage errors (exit 64) that name the
/// option, before anything starts. Numbers are parsed `.unconditional`, so
/// `--bitrate -5` reaches these and is told its range, not "Missing value".
enum Ranges {
    static func check<T: Comparable>(_ value: T?, _ range: ClosedRange<T>, _ option: String, _ unit: String = "") throws {
        guard let value, !range.contains(value) else { return }
        throw ValidationError("\(option) \(value) is outside \(range.lowerBound)-\(range.upperBound)\(unit.isEmpty ? "" : " \(unit)")")
    }

    static func checkPort(_ value: Int?, _ option: String) throws { try check(value, 1...65535, option) }

    /// A duration in seconds: finite and above zero.
    static func checkSeconds(_ value: Double?, _ option: String = "--duration") throws {
        guard let value, !(value > 0 && value.isFinite) else { return }
        throw ValidationError("\(option) \(value) must be a number of seconds above 0")
    }

    /// `--stats-interval`: seconds from a tenth to an hour, and only with a file to rewrite.
    static func checkStatsInterval(_ value: Double?, statsJson: String?) throws {
        guard let value else { return }
        try check(value, 0.1...3600, "--stats-interval", "seconds")
        if statsJson == nil { throw ValidationError("--stats-interval rewrites the --stats-json file: give --stats-json too") }
    }

    /// The smallest memory budget taken at all: less than the process's
    /// own code and runtime, so nothing could run in it. Between this and
    /// what the sender turns out to need, it starts, measures, and says
    /// what it needs (the receiver is told too), since that depends on the
    /// screen and the machine.
    static let smallestBudget = MemoryBudget(.mebibytes(4))
}

extension SendOptions {
    /// `--memory-budget`: the default when not given, nil for 0 (no
    /// governor), else a size the sender can run in.
    public func budget() throws(ValidationError) -> MemoryBudget? {
        guard let text = running.memoryBudget else { return .default }
        if text == "0" { return nil }
        guard let budget = MemoryBudget(text) else {
            throw ValidationError("--memory-budget \(text) is not a size like 50M or 32MiB (up to 1T), or 0 for none")
        }
        if budget.bytes < Ranges.smallestBudget.bytes {
            throw ValidationError("--memory-budget \(text) is below \(Ranges.smallestBudget), in which nothing can run (0 turns the governor off)")
        }
        return budget
    }
}
