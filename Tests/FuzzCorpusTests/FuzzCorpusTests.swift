import FuzzChecks
import Foundation
import Testing

/// Replays every committed fuzz input, seeds and the crashes `make fuzz`
/// ever found, through the same invariant checks the fuzzer runs.
@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ target: String) -> [URL] {
        ["Corpus", "Crashes"].flatMap { folder -> [URL] in
            let dir = root.appendingPathComponent(folder).appendingPathComponent(target)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            return names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
        }
    }

    @Test(arguments: FuzzChecks.targets.keys.sorted())
    func replay(target: String) throws {
        let check = try #require(FuzzChecks.targets[target])
        let files = Self.inputs(target)
        #expect(!files.isEmpty, "no corpus for \(target)")
        for file in files { check(Array(try Data(contentsOf: file))) }
    }
}
