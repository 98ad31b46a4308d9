// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so embedders of `share` never pull in
// package-benchmark. Run: `make bench` (or `swift package benchmark` here).
let package = Package(
    name: "share-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "share", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "WireBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ShareWire", package: "share"),
                .product(name: "ShareSRTP", package: "share"),
            ],
            path: "Benchmarks/WireBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Per-stage cost on real pictures of the demo scene (starts its own Xvfb).
        .executableTarget(
            name: "StageBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ShareWire", package: "share"),
                .product(name: "ShareSRTP", package: "share"),
                .product(name: "ShareSession", package: "share"),
                .product(name: "ShareX11Capture", package: "share"),
                .product(name: "ShareColor", package: "share"),
                .product(name: "ShareVideo", package: "share"),
                .product(name: "ShareDecode", package: "share"),
            ],
            path: "Benchmarks/StageBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // A host pushing into a running sender (the embeddable sender's promise: a push never waits).
        .executableTarget(
            name: "EmbeddingBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ShareSender", package: "share"),
            ],
            path: "Benchmarks/EmbeddingBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The session handshake's cost at each end (`share` is told apart by it at startup).
        .executableTarget(
            name: "HandshakeBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ShareHandshake", package: "share"),
                .product(name: "ShareWire", package: "share"),
            ],
            path: "Benchmarks/HandshakeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
