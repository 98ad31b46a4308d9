@testable import ShareSender
import SharePipeWireCapture
import Testing

/// Which capture `--capture` means: Wayland's screen cast where a Wayland
/// desktop runs (an X11 capture there shows only XWayland's windows), X11
/// elsewhere or where an X display was named.
@Suite("The capture backend chosen")
struct CaptureChoiceTests {
    @Test func autoCapturesX11WithoutAWaylandDisplay() {
        #expect(CaptureChoice.resolve(.auto, display: nil, environment: { _ in nil }) == .x11)
        #expect(CaptureChoice.resolve(.auto, display: nil, environment: { $0 == "WAYLAND_DISPLAY" ? "" : nil }) == .x11)
    }

    @Test func autoCapturesTheXDisplayNamedEvenOnWayland() {
        #expect(CaptureChoice.resolve(.auto, display: ":5", environment: { $0 == "WAYLAND_DISPLAY" ? "wayland-0" : nil }) == .x11)
    }

    @Test func aBackendNamedIsTaken() {
        #expect(CaptureChoice.resolve(.x11, display: nil, environment: { _ in "wayland-0" }) == .x11)
        #expect(CaptureChoice.resolve(.portal, display: nil, environment: { _ in nil }) == .wayland(.portal))
        #expect(CaptureChoice.resolve(.gnome, display: ":5", environment: { _ in nil }) == .wayland(.gnome))
    }
}
