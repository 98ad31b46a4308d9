public import Foundation

/// How many times a thread went to sleep so far (its voluntary context
/// switches in /proc): every sleep after the first in a wait is a wake-up.
/// `task` is a /proc task directory ("/proc/thread-self" for the caller's
/// own thread); nil when it cannot be read.
public func voluntarySwitches(task: String = "/proc/thread-self") -> Int? {
    guard let status = try? String(contentsOfFile: "\(task)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") })
    else { return nil }
    return Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "")
}

/// The sleeps so far of each named thread of process `pid`, summed over
/// threads of one name.
public func threadSleeps(pid: pid_t) -> [String: Int] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    var sleeps: [String: Int] = [:]
    for task in tasks {
        let path = "/proc/\(pid)/task/\(task)"
        guard let name = try? String(contentsOfFile: "\(path)/comm", encoding: .utf8),
              let count = voluntarySwitches(task: path) else { continue }
        sleeps[name.trimmingCharacters(in: .whitespacesAndNewlines), default: 0] += count
    }
    return sleeps
}
