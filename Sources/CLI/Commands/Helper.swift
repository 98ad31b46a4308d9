import Foundation

/// Runs the tool that does the work, `share-send` or `share-recv`, found next
/// to the running `share`, with the same arguments. The sender tool never
/// loads the receiver's decoder libraries and vice versa, which keeps the
/// sender's memory footprint small.
public func execTool(_ name: String) -> Never {
    let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let path = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent(name).path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        fail("\(name) is missing: it must be installed next to \(own)")
    }
    let arguments = [name] + CommandLine.arguments.dropFirst()
    let argv = arguments.map { strdup($0) } + [nil]
    execv(path, argv)
    fail("cannot run \(path): \(String(cString: strerror(errno)))")
}
