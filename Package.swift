// swift-tools-version: 6.1
// share: a screen-sharing peer for Linux.
// Copyright (C) 2026 the share authors. Licensed under the GNU General Public
// License, version 3 or (at your option) any later version: see LICENSE.
// SPDX-License-Identifier: GPL-3.0-or-later
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
        .library(name: "ShareBase", targets: ["ShareBase"]),
        .library(name: "ShareWire", targets: ["ShareWire"]),
        .library(name: "ShareSRTP", targets: ["ShareSRTP"]),
        .library(name: "ShareSender", targets: ["ShareSender"]),
        .library(name: "ShareReceiver", targets: ["ShareReceiver"]),
        // The stages on their own (the per-stage benchmarks use them).
        .library(name: "ShareSession", targets: ["ShareSession"]),
        .library(name: "ShareCongestion", targets: ["ShareCongestion"]),
        .library(name: "ShareHandshake", targets: ["ShareHandshake"]),
        .library(name: "ShareGovernor", targets: ["ShareGovernor"]),
        .library(name: "ShareCapture", targets: ["ShareCapture"]),
        .library(name: "ShareX11Capture", targets: ["ShareX11Capture"]),
        .library(name: "SharePipeWireCapture", targets: ["SharePipeWireCapture"]),
        .library(name: "ShareWindow", targets: ["ShareWindow"]),
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
        .systemLibrary(name: "CDBus", path: "Sources/C/CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        // PipeWire's stream API and SPA's pod builder are macros and inline
        // functions: a small C shim negotiates and keeps the newest buffer.
        .systemLibrary(name: "CPipeWireHeaders", path: "Sources/C/CPipeWireHeaders", pkgConfig: "libpipewire-0.3",
                       providers: [.apt(["libpipewire-0.3-dev"])]),
        .target(name: "CPipeWire", dependencies: ["CPipeWireHeaders"], path: "Sources/C/CPipeWire"),
        // AES-ICM and HMAC-SHA1 on OpenSSL for libsrtp2's crypto kernel: no
        // allocation per packet (Debian's libsrtp2 is built on NSS, which allocates).
        .target(name: "CSRTPCrypto", path: "Sources/C/CSRTPCrypto",
                linkerSettings: [.linkedLibrary("crypto"), .linkedLibrary("srtp2")]),
        // TLS for an SFU's https API, on the OpenSSL whose libcrypto SRTP
        // already links: a non-blocking client whose socket Swift waits on.
        .target(name: "CTLS", path: "Sources/C/CTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),

        // The general pieces every layer uses: the monotonic instant, a seeded
        // generator, a token bucket, a bounded history, Base64. No I/O, no Foundation.
        .target(name: "ShareBase", path: "Sources/Base", swiftSettings: strict),
        // Wire formats: pure Swift, sans-IO, no Foundation.
        .target(name: "ShareWire", dependencies: ["ShareBase"], path: "Sources/Wire", swiftSettings: strict),
        // SRTP/SRTCP contexts over libsrtp2.
        .target(name: "ShareSRTP", dependencies: ["CSRTP", "CSRTPCrypto", "ShareBase", "ShareWire"], path: "Sources/SRTP", swiftSettings: strict),

        // Colour conversion and scaling (libyuv), for the sender and the receiver window.
        .target(name: "ShareColor", dependencies: ["CYUV"], path: "Sources/Color", swiftSettings: strict),
        // H.264 encoding (x264): sender only.
        .target(name: "ShareVideo", dependencies: ["CX264", "ShareColor", "ShareSync"], path: "Sources/Video",
                swiftSettings: strict),

        // H.264 decoding and crash-safe recording (libavcodec, libavformat): receiver only.
        .target(name: "ShareDecode", dependencies: ["CLibAV", "ShareColor"], path: "Sources/Decode",
                swiftSettings: strict),

        // A lock ThreadSanitizer can see, for every module whose threads share state.
        .target(name: "ShareSync", dependencies: ["ShareBase"], path: "Sources/Sync", swiftSettings: strict),
        // The frame pool: pictures leased to the encoder, never retained; band geometry.
        .target(name: "ShareFrames", dependencies: ["ShareBase", "ShareColor", "ShareSync"], path: "Sources/Frames", swiftSettings: strict),
        // X11 through XCB: the connection and MIT-SHM segments that capture and the window share.
        .target(name: "ShareX11", dependencies: ["CXCB", "ShareColor"], path: "Sources/X11", swiftSettings: strict),
        // The capture seam: what the sender's capture loop needs of a screen
        // (pictures into the frame pool, changes, the pointer, a pause, the end).
        .target(name: "ShareCapture", dependencies: ["ShareFrames", "ShareColor"], path: "Sources/Capture/Seam",
                swiftSettings: strict),
        // X11 capture behind the seam: bands through MIT-SHM, XDamage, XFixes, RandR, XInput 2.
        .target(name: "ShareX11Capture", dependencies: ["CXCB", "ShareX11", "ShareBase", "ShareCapture", "ShareFrames", "ShareColor", "ShareSync"],
                path: "Sources/Capture/X11", swiftSettings: strict),
        // Wayland capture behind the seam: a PipeWire screen cast granted by
        // GNOME's own API or the desktop portal, over D-Bus (libdbus).
        .target(name: "SharePipeWireCapture", dependencies: ["CPipeWire", "CDBus", "ShareBase", "ShareCapture", "ShareFrames", "ShareColor", "ShareSync"],
                path: "Sources/Capture/PipeWire", swiftSettings: strict),
        // The receiver's window on X11.
        .target(name: "ShareWindow", dependencies: ["CXCB", "ShareX11", "ShareColor"], path: "Sources/Window", swiftSettings: strict),

        // Audio: Opus (libopus) and PulseAudio capture and playback.
        .target(name: "ShareAudio", dependencies: ["COpus", "CPulse"], path: "Sources/Audio", swiftSettings: strict),
        // RTP sessions, sans-IO: streams, RTCP feedback, retransmission, jitter buffer.
        .target(name: "ShareSession", dependencies: ["ShareBase", "ShareWire", "ShareSRTP"], path: "Sources/Session",
                swiftSettings: strict),
        // Congestion control, sans-IO: RFC 8888 feedback, delay-based and
        // loss-based estimators, AIMD rate control, the pacer, the quality ladder.
        .target(name: "ShareCongestion", dependencies: ["ShareBase", "ShareWire"], path: "Sources/Congestion",
                swiftSettings: strict),
        // Tooling, not products: the impairment relay (a simulated network
        // path: loss, bursts, delay, jitter, duplication, a bottleneck with a
        // drop-tail queue) for tests and the harness; the demo scene and the
        // frame stamp (drawing time as black/white blocks, read back from
        // what a receiver shows) for `share scene`, the harness and tests.
        .target(name: "ShareImpairment", dependencies: ["ShareBase", "ShareTransport", "ShareSync"], path: "Sources/Tooling/Impairment",
                swiftSettings: strict),
        .target(name: "ShareScene", dependencies: ["CXCB", "ShareX11", "ShareBase", "ShareColor", "ShareLatency", "ShareSync"],
                path: "Sources/Tooling/Scene", swiftSettings: strict),
        // The session handshake, sans-IO: ephemeral X25519, HKDF, per-direction
        // SRTP keys, authenticated by a pre-shared key or by identity keys
        // with a short authentication string; the trust-on-first-use store.
        .target(name: "ShareHandshake",
                dependencies: ["ShareBase", "ShareWire", "ShareSRTP", .product(name: "Crypto", package: "swift-crypto")],
                path: "Sources/Handshake", swiftSettings: strict),
        // The memory-budget governor, sans-IO: a ladder of cheaper ways to run,
        // stepped down and up by the footprint measured.
        .target(name: "ShareGovernor", dependencies: ["ShareBase"], path: "Sources/Governor", swiftSettings: strict),
        // Latency samples and their percentiles (sender and receiver statistics).
        .target(name: "ShareLatency", dependencies: ["ShareBase", "ShareSync"], path: "Sources/Latency", swiftSettings: strict),
        // UDP sockets (and a TCP stream for API calls): the only module that owns sockets.
        .target(name: "ShareTransport", path: "Sources/Transport", swiftSettings: strict),
        // Fan-out through an SFU: Janus's HTTP API over http or https (create and remove the sender's mountpoint).
        .target(name: "ShareFanout", dependencies: ["CTLS", "ShareTransport", "ShareWire"], path: "Sources/Fanout", swiftSettings: strict),

        // The embeddable sender: capture → convert → encode → RTP/SRTP → UDP.
        .target(name: "ShareSender",
                dependencies: ["ShareCapture", "ShareX11Capture", "SharePipeWireCapture", "ShareFrames", "ShareColor", "ShareVideo", "ShareAudio", "ShareBase", "ShareWire", "ShareSRTP",
                               "ShareSession", "ShareCongestion", "ShareHandshake", "ShareGovernor", "ShareLatency",
                               "ShareTransport", "ShareSync", "CMalloc"],
                path: "Sources/Sender", swiftSettings: strict),

        // The embeddable receiver: UDP → SRTP → jitter buffer → decode → window / recording.
        .target(name: "ShareReceiver",
                dependencies: ["ShareWindow", "ShareX11", "ShareColor", "ShareDecode", "ShareAudio", "ShareBase", "ShareWire", "ShareSRTP",
                               "ShareSession", "ShareHandshake", "ShareLatency", "ShareTransport", "ShareSync"],
                path: "Sources/Receiver", swiftSettings: strict),

        // The command line. `share` parses and dispatches; `share-send` and
        // `share-recv` do the work, so the sender never loads the receiver's
        // decoder libraries. None holds pipeline logic.
        .target(name: "ShareCommands",
                dependencies: ["ShareBase", "ShareWire", "ShareSRTP", "ShareHandshake", "ShareSync", "ShareGovernor",
                               .product(name: "ArgumentParser", package: "swift-argument-parser")],
                path: "Sources/CLI/Commands", plugins: ["VersionStamp"]),
        // `git describe` at build time, for `share --version`.
        .plugin(name: "VersionStamp", capability: .buildTool(), path: "Sources/Plugins/VersionStamp"),
        .executableTarget(name: "share", dependencies: ["ShareCommands",
                                                        .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Sources/CLI/Dispatcher"),
        .executableTarget(name: "share-send",
                          dependencies: ["ShareColor", "ShareCommands", "ShareSender", "ShareSession", "ShareSRTP", "ShareX11Capture",
                                         "SharePipeWireCapture", "ShareAudio",
                                         "ShareHandshake", "ShareFanout",
                                         "ShareScene", "ShareGovernor", "ShareLatency", "ShareBase", "ShareSync",
                                         .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Sources/CLI/SendTool"),
        .executableTarget(name: "share-recv",
                          dependencies: ["ShareCommands", "ShareReceiver", "ShareSession", "ShareSRTP", "ShareWire",
                                         "ShareHandshake", "ShareLatency", "ShareScene",
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
        .target(name: "FuzzChecks", dependencies: ["ShareBase", "ShareWire", "ShareSRTP", "ShareSession", "ShareCongestion", "ShareHandshake",
                                                   "ShareFanout"], path: "Tests/Fuzz/Checks",
                swiftSettings: strict),

        // libFuzzer driver (`make fuzz`); without -DFUZZING it replays files.
        .executableTarget(name: "share-fuzz", dependencies: ["FuzzChecks"], path: "Tests/Fuzz/Driver",
                          swiftSettings: strict),
        .target(name: "TestSupport", dependencies: ["ShareBase", "ShareWire", "CXCB"], path: "Tests/Support",
                exclude: ["Wayland/gnome-session.sh", "Wayland/remote_input.py"], swiftSettings: strict),
        // One test target a module, named after it; EndToEndTests and
        // EmbeddingTests run the binaries and the public API as a user and
        // an embedder meet them.
        .testTarget(name: "WireTests", dependencies: ["ShareBase", "ShareWire", "TestSupport"], path: "Tests/WireTests",
                    swiftSettings: strict),
        .testTarget(name: "BaseTests", dependencies: ["ShareBase"], path: "Tests/BaseTests", swiftSettings: strict),
        .testTarget(name: "SyncTests", dependencies: ["ShareSync"], path: "Tests/SyncTests", swiftSettings: strict),
        .testTarget(name: "SupportTests", dependencies: ["TestSupport"], path: "Tests/SupportTests", swiftSettings: strict),
        // H.264 encode (ShareVideo) and decode (ShareDecode) together, end to end in one process:
        // slices, skipped macroblocks, the round trip.
        .testTarget(name: "CodecTests", dependencies: ["ShareVideo", "ShareDecode", "ShareColor", "ShareFrames", "ShareBase", "ShareWire", "ShareScene",
                                                    "TestSupport"],
                    path: "Tests/CodecTests", swiftSettings: strict),
        .testTarget(name: "FramesTests", dependencies: ["ShareBase", "ShareFrames", "ShareColor"], path: "Tests/FramesTests", swiftSettings: strict),
        .testTarget(name: "VideoTests", dependencies: ["ShareVideo", "ShareColor", "TestSupport"], path: "Tests/VideoTests",
                    swiftSettings: strict),
        // The decoder fed by x264 (and by ffmpeg's other formats): ShareVideo makes its input.
        .testTarget(name: "DecodeTests", dependencies: ["ShareDecode", "ShareVideo", "ShareColor", "ShareWire", "TestSupport"],
                    path: "Tests/DecodeTests", swiftSettings: strict),
        .testTarget(name: "PipeWireCaptureTests", dependencies: ["SharePipeWireCapture"], path: "Tests/PipeWireCaptureTests",
                    swiftSettings: strict),
        .testTarget(name: "X11CaptureTests", dependencies: ["ShareX11Capture", "ShareCapture", "ShareX11", "ShareScene", "ShareFrames",
                                                         "ShareColor", "ShareSync", "TestSupport"],
                    path: "Tests/X11CaptureTests", swiftSettings: strict),
        .testTarget(name: "WindowTests", dependencies: ["ShareWindow", "TestSupport"], path: "Tests/WindowTests", swiftSettings: strict),
        .testTarget(name: "SceneTests", dependencies: ["ShareScene", "ShareLatency", "ShareColor", "ShareDecode", "ShareVideo", "ShareBase"], path: "Tests/SceneTests",
                    swiftSettings: strict),
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "ShareHandshake", "ShareSRTP", "ShareTransport", "ShareBase", "ShareWire"],
                    path: "Tests/EndToEndTests",
                    swiftSettings: strict),
        .testTarget(name: "SessionTests", dependencies: ["ShareSession", "ShareSRTP", "ShareBase", "ShareWire", "TestSupport"],
                    path: "Tests/SessionTests", swiftSettings: strict),
        .testTarget(name: "GovernorTests", dependencies: ["ShareGovernor", "ShareSession", "ShareBase", "ShareWire"], path: "Tests/GovernorTests",
                    swiftSettings: strict),
        .testTarget(name: "LatencyTests", dependencies: ["ShareLatency"], path: "Tests/LatencyTests", swiftSettings: strict),
        .testTarget(name: "AudioTests", dependencies: ["ShareAudio", "ShareBase", "ShareWire", "TestSupport"], path: "Tests/AudioTests",
                    swiftSettings: strict),
        .testTarget(name: "SenderTests", dependencies: ["ShareSender", "ShareReceiver", "ShareSRTP", "ShareBase", "ShareWire", "ShareX11Capture", "SharePipeWireCapture",
                                                     "ShareCapture", "ShareSync", "ShareGovernor", "ShareScene", "ShareAudio", "ShareCongestion",
                                                     "ShareVideo", "ShareDecode", "ShareColor", "ShareSession", "ShareFrames",
                                                     "TestSupport"], path: "Tests/SenderTests",
                    swiftSettings: strict),
        .testTarget(name: "ReceiverTests", dependencies: ["ShareReceiver", "ShareSession", "ShareBase", "ShareWire", "ShareSync", "ShareColor",
                                                       "ShareDecode", "ShareFrames", "ShareVideo", "TestSupport"],
                    path: "Tests/ReceiverTests", swiftSettings: strict),
        // Only the public API, as an embedder sees it: ShareSender and ShareReceiver (no @testable, no SPI).
        .testTarget(name: "EmbeddingTests", dependencies: ["ShareSender", "ShareReceiver", "TestSupport"],
                    path: "Tests/EmbeddingTests", swiftSettings: strict),
        .testTarget(name: "CongestionTests", dependencies: ["ShareCongestion", "ShareImpairment", "ShareSession", "ShareBase", "ShareWire",
                                                         "TestSupport"],
                    path: "Tests/CongestionTests", swiftSettings: strict),
        .testTarget(name: "HandshakeTests", dependencies: ["ShareHandshake", "ShareSRTP", "ShareBase", "ShareWire", "TestSupport"],
                    path: "Tests/HandshakeTests", swiftSettings: strict),
        .testTarget(name: "SRTPTests", dependencies: ["ShareSRTP", "ShareBase", "ShareWire", "TestSupport"], path: "Tests/SRTPTests",
                    swiftSettings: strict),
        .testTarget(name: "FanoutTests", dependencies: ["ShareFanout", "ShareTransport", "TestSupport"], path: "Tests/FanoutTests",
                    swiftSettings: strict),
        .testTarget(name: "FuzzCorpusTests", dependencies: ["FuzzChecks"], path: "Tests/FuzzCorpusTests",
                    swiftSettings: strict),
    ]
)
