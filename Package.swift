// swift-tools-version: 6.1
import PackageDescription

/// Strict settings every Swift module of `share` is built with.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// A C library reached through pkg-config-less Debian headers: one module map
/// and one shim header each, under `Sources/C/`.
func cLibrary(_ name: String, _ apt: String) -> Target {
    .systemLibrary(name: name, path: "Sources/C/\(name)", providers: [.apt([apt])])
}

let package = Package(
    name: "share",
    products: [
        .executable(name: "share", targets: ["share"]),
        .executable(name: "share-send", targets: ["share-send"]),
        .executable(name: "share-recv", targets: ["share-recv"]),
        .executable(name: "share-relay", targets: ["share-relay"]),
        .library(name: "ShareWire", targets: ["ShareWire"]),
        .library(name: "ShareSRTP", targets: ["ShareSRTP"]),
        .library(name: "ShareSender", targets: ["ShareSender"]),
        .library(name: "ShareReceiver", targets: ["ShareReceiver"]),
        // The stages on their own (the per-stage benchmarks use them).
        .library(name: "ShareSession", targets: ["ShareSession"]),
        .library(name: "ShareCongestion", targets: ["ShareCongestion"]),
        .library(name: "ShareHandshake", targets: ["ShareHandshake"]),
        .library(name: "ShareGovernor", targets: ["ShareGovernor"]),
        .library(name: "ShareX11", targets: ["ShareX11"]),
        .library(name: "ShareColor", targets: ["ShareColor"]),
        .library(name: "ShareVideo", targets: ["ShareVideo"]),
        .library(name: "ShareDecode", targets: ["ShareDecode"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // `make docs`: DocC for the embeddable sender and receiver.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // C libraries, each imported by exactly one Swift module.
        cLibrary("CSRTP", "libsrtp2-dev"),
        cLibrary("CX264", "libx264-dev"),
        cLibrary("COpus", "libopus-dev"),
        cLibrary("CYUV", "libyuv-dev"),
        cLibrary("CXCB", "libxcb-shm0-dev"),
        cLibrary("CLibAV", "libavformat-dev"),
        cLibrary("CPulse", "libpulse-dev"),
        .systemLibrary(name: "CMalloc", path: "Sources/C/CMalloc"),
        // AES-ICM and HMAC-SHA1 on OpenSSL for libsrtp2's crypto kernel: no
        // allocation per packet (Debian's libsrtp2 is built on NSS, which allocates).
        .target(name: "CSRTPCrypto", path: "Sources/C/CSRTPCrypto",
                linkerSettings: [.linkedLibrary("crypto"), .linkedLibrary("srtp2")]),

        // Wire formats: pure Swift, sans-IO, no Foundation.
        .target(name: "ShareWire", path: "Sources/Wire", swiftSettings: strict),
        // The frame stamp: drawing time as a row of black/white blocks, read back from decoded pictures.
        .target(name: "ShareStamp", path: "Sources/Stamp", swiftSettings: strict),
        // SRTP/SRTCP contexts over libsrtp2.
        .target(name: "ShareSRTP", dependencies: ["CSRTP", "CSRTPCrypto", "ShareWire"], path: "Sources/SRTP", swiftSettings: strict),

        // Colour conversion and scaling (libyuv), for the sender and the receiver window.
        .target(name: "ShareColor", dependencies: ["CYUV"], path: "Sources/Color", swiftSettings: strict),
        // H.264 encoding (x264): sender only.
        .target(name: "ShareVideo", dependencies: ["CX264", "ShareColor", "ShareSync"], path: "Sources/Video",
                swiftSettings: strict),

        // H.264 decoding and crash-safe recording (libavcodec, libavformat): receiver only.
        .target(name: "ShareDecode", dependencies: ["CLibAV", "ShareColor"], path: "Sources/Decode",
                swiftSettings: strict),

        // X11 through XCB: screen capture (MIT-SHM), the demo scene, the receiver window.
        // A lock ThreadSanitizer can see, for every module whose threads share state.
        .target(name: "ShareSync", path: "Sources/Sync", swiftSettings: strict),
        // The frame pool: pictures leased to the encoder, never retained; band geometry.
        .target(name: "ShareFrames", dependencies: ["ShareColor", "ShareSync"], path: "Sources/Frames", swiftSettings: strict),
        .target(name: "ShareX11", dependencies: ["CXCB", "ShareSync", "ShareFrames", "ShareColor"], path: "Sources/X11",
                swiftSettings: strict),

        // Audio: Opus (libopus) and PulseAudio capture and playback.
        .target(name: "ShareAudio", dependencies: ["COpus", "CPulse"], path: "Sources/Audio", swiftSettings: strict),
        // RTP sessions, sans-IO: streams, RTCP feedback, retransmission, jitter buffer.
        .target(name: "ShareSession", dependencies: ["ShareWire", "ShareSRTP"], path: "Sources/Session",
                swiftSettings: strict),
        // Congestion control, sans-IO: RFC 8888 feedback, delay-based and
        // loss-based estimators, AIMD rate control, the pacer, the quality ladder.
        .target(name: "ShareCongestion", dependencies: ["ShareWire"], path: "Sources/Congestion",
                swiftSettings: strict),
        // The impairment relay: a simulated network path (loss, bursts, delay,
        // jitter, duplication, a bottleneck with a drop-tail queue) for tests and the harness.
        .target(name: "ShareImpairment", dependencies: ["ShareWire", "ShareTransport", "ShareSync"], path: "Sources/Impairment",
                swiftSettings: strict),
        // The session handshake, sans-IO: ephemeral X25519, HKDF, per-direction
        // SRTP keys, authenticated by a pre-shared key or by identity keys
        // with a short authentication string; the trust-on-first-use store.
        .target(name: "ShareHandshake",
                dependencies: ["ShareWire", "ShareSRTP", .product(name: "Crypto", package: "swift-crypto")],
                path: "Sources/Handshake", swiftSettings: strict),
        // The memory-budget governor, sans-IO: a ladder of cheaper ways to run,
        // stepped down and up by the footprint measured.
        .target(name: "ShareGovernor", dependencies: ["ShareWire"], path: "Sources/Governor", swiftSettings: strict),
        // Latency samples and their percentiles (sender and receiver statistics).
        .target(name: "ShareLatency", dependencies: ["ShareWire", "ShareSync"], path: "Sources/Latency", swiftSettings: strict),
        // UDP sockets (and a TCP stream for API calls): the only module that owns sockets.
        .target(name: "ShareTransport", path: "Sources/Transport", swiftSettings: strict),
        // Fan-out through an SFU: Janus's HTTP API (create and remove the sender's mountpoint).
        .target(name: "ShareFanout", dependencies: ["ShareTransport", "ShareWire"], path: "Sources/Fanout", swiftSettings: strict),

        // The embeddable sender: capture → convert → encode → RTP/SRTP → UDP.
        .target(name: "ShareSender",
                dependencies: ["ShareX11", "ShareFrames", "ShareColor", "ShareVideo", "ShareAudio", "ShareWire", "ShareSRTP",
                               "ShareSession", "ShareCongestion", "ShareHandshake", "ShareGovernor", "ShareLatency",
                               "ShareTransport", "ShareSync", "CMalloc"],
                path: "Sources/Sender", swiftSettings: strict),

        // The embeddable receiver: UDP → SRTP → jitter buffer → decode → window / recording.
        .target(name: "ShareReceiver",
                dependencies: ["ShareX11", "ShareColor", "ShareDecode", "ShareAudio", "ShareWire", "ShareSRTP",
                               "ShareSession", "ShareHandshake", "ShareLatency", "ShareTransport", "ShareStamp", "ShareSync"],
                path: "Sources/Receiver", swiftSettings: strict),

        // The command line. `share` parses and dispatches; `share-send` and
        // `share-recv` do the work, so the sender never loads the receiver's
        // decoder libraries. None holds pipeline logic.
        .target(name: "ShareCommands",
                dependencies: ["ShareWire", "ShareSRTP", "ShareHandshake", "ShareSync",
                               .product(name: "ArgumentParser", package: "swift-argument-parser")],
                path: "Sources/CLI/Commands"),
        .executableTarget(name: "share", dependencies: ["ShareCommands",
                                                        .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Sources/CLI/Dispatcher"),
        .executableTarget(name: "share-send",
                          dependencies: ["ShareColor", "ShareCommands", "ShareSender", "ShareSession", "ShareSRTP", "ShareX11", "ShareAudio",
                                         "ShareHandshake", "ShareFanout",
                                         "ShareStamp", "ShareGovernor", "ShareLatency",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Sources/CLI/SendTool"),
        .executableTarget(name: "share-recv",
                          dependencies: ["ShareCommands", "ShareReceiver", "ShareSession", "ShareSRTP", "ShareWire",
                                         "ShareHandshake", "ShareLatency",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Sources/CLI/ReceiveTool"),

        .executableTarget(name: "share-relay",
                          dependencies: ["ShareCommands", "ShareImpairment", "ShareTransport",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Sources/CLI/RelayTool"),

        // Small programs on the public API alone (ShareSender, ShareReceiver),
        // built by `swift build` and run end to end by `make test`.
        .executableTarget(name: "minimal-sender", dependencies: ["ShareSender"], path: "examples/minimal-sender",
                          swiftSettings: strict),
        .executableTarget(name: "push-frames", dependencies: ["ShareSender"], path: "examples/push-frames",
                          swiftSettings: strict),
        .executableTarget(name: "embedded-viewer", dependencies: ["ShareReceiver"], path: "examples/embedded-viewer",
                          swiftSettings: strict),

        // Invariant checks shared by the libFuzzer targets and the corpus replay test.
        .target(name: "FuzzChecks", dependencies: ["ShareWire", "ShareSRTP", "ShareSession", "ShareCongestion", "ShareHandshake",
                                                   "ShareFanout"], path: "Tests/Fuzz/Checks",
                swiftSettings: strict),

        // libFuzzer driver (`make fuzz`); without -DFUZZING it replays files.
        .executableTarget(name: "share-fuzz", dependencies: ["FuzzChecks"], path: "Tests/Fuzz/Driver",
                          swiftSettings: strict),
        .target(name: "TestSupport", dependencies: ["ShareWire", "CXCB"], path: "Tests/Support", swiftSettings: strict),
        .testTarget(name: "WireTests", dependencies: ["ShareWire", "TestSupport"], path: "Tests/WireTests",
                    swiftSettings: strict),
        .testTarget(name: "CodecTests", dependencies: ["ShareVideo", "ShareDecode", "ShareColor", "ShareFrames", "ShareWire", "ShareStamp",
                                                    "TestSupport"],
                    path: "Tests/CodecTests", swiftSettings: strict),
        .testTarget(name: "X11Tests", dependencies: ["ShareX11", "ShareFrames", "ShareColor", "TestSupport"], path: "Tests/X11Tests",
                    swiftSettings: strict),
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "ShareHandshake", "ShareSRTP", "ShareTransport", "ShareWire"],
                    path: "Tests/EndToEndTests",
                    swiftSettings: strict),
        .testTarget(name: "SessionTests", dependencies: ["ShareSession", "ShareGovernor", "ShareLatency", "ShareSRTP", "ShareWire", "TestSupport"],
                    path: "Tests/SessionTests", swiftSettings: strict),
        .testTarget(name: "AudioTests", dependencies: ["ShareAudio", "ShareWire", "TestSupport"], path: "Tests/AudioTests",
                    swiftSettings: strict),
        .testTarget(name: "SenderTests", dependencies: ["ShareSender", "ShareReceiver", "ShareSRTP", "ShareWire", "ShareX11", "ShareSync", "ShareGovernor",
                                                     "ShareStamp", "ShareAudio", "ShareVideo", "ShareDecode", "ShareColor", "ShareSession", "ShareFrames",
                                                     "TestSupport"], path: "Tests/SenderTests",
                    swiftSettings: strict),
        // Only the public API, as an embedder sees it: ShareSender and ShareReceiver (no @testable, no SPI).
        .testTarget(name: "EmbeddingTests", dependencies: ["ShareSender", "ShareReceiver", "TestSupport"],
                    path: "Tests/EmbeddingTests", swiftSettings: strict),
        .testTarget(name: "CongestionTests", dependencies: ["ShareCongestion", "ShareImpairment", "ShareSession", "ShareWire",
                                                         "TestSupport"],
                    path: "Tests/CongestionTests", swiftSettings: strict),
        .testTarget(name: "HandshakeTests", dependencies: ["ShareHandshake", "ShareSRTP", "ShareWire", "TestSupport"],
                    path: "Tests/HandshakeTests", swiftSettings: strict),
        .testTarget(name: "SRTPTests", dependencies: ["ShareSRTP", "ShareWire", "TestSupport"], path: "Tests/SRTPTests",
                    swiftSettings: strict),
        .testTarget(name: "FanoutTests", dependencies: ["ShareFanout", "ShareTransport", "TestSupport"], path: "Tests/FanoutTests",
                    swiftSettings: strict),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzChecks"], path: "Tests/FuzzCorpusTests",
                    swiftSettings: strict),
    ]
)
