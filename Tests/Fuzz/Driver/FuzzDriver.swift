import FuzzChecks

#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Which check a run exercises: `SHARE_FUZZ_TARGET` (rtp, rtcp, h264, srtp).
private func selectedCheck() -> ([UInt8]) -> Void {
    let name = getenv("SHARE_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let check = FuzzChecks.targets[name] else {
        let names = FuzzChecks.targets.keys.sorted().joined(separator: ", ")
        fputs("share-fuzz: set SHARE_FUZZ_TARGET to one of: \(names)\n", stderr)
        exit(2)
    }
    return check
}

#if FUZZING
nonisolated(unsafe) private var check: (([UInt8]) -> Void)?

/// libFuzzer's entry point; built with `--sanitize fuzzer -Xswiftc -DFUZZING` (see `make fuzz`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    if check == nil { check = selectedCheck() }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    check!(bytes)
    return 0
}
#else
/// Without libFuzzer: replays the files named on the command line, to
/// reproduce a crash under a debugger.
@main
struct FuzzReplay {
    static func main() {
        let check = selectedCheck()
        for path in CommandLine.arguments.dropFirst() {
            guard let file = fopen(path, "rb") else {
                fputs("share-fuzz: cannot open \(path)\n", stderr)
                exit(1)
            }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = fread(&chunk, 1, chunk.count, file)
                if n <= 0 { break }
                bytes.append(contentsOf: chunk[0..<n])
            }
            fclose(file)
            check(bytes)
            print("ok \(path)")
        }
    }
}
#endif
