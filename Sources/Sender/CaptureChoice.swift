internal import SharePipeWireCapture
#if canImport(Glibc)
internal import Glibc
#endif

/// Which capture `CaptureBackend` means on this desktop: `auto` takes a
/// Wayland screen cast when WAYLAND_DISPLAY is set (an X11 capture there
/// sees only XWayland's windows: a black screen) unless an X display was
/// named, GNOME's own API when its service answers on the session bus (no
/// dialog), the portal otherwise.
enum CaptureChoice: Equatable {
    case x11
    case wayland(PipeWireCapturer.Backend)

    static func resolve(_ backend: CaptureBackend, display: String?,
                        environment: (String) -> String? = environment) -> CaptureChoice {
        switch backend {
        case .x11: return .x11
        case .portal: return .wayland(.portal)
        case .gnome: return .wayland(.gnome)
        case .auto:
            guard display == nil, let wayland = environment("WAYLAND_DISPLAY"), !wayland.isEmpty else { return .x11 }
            return .wayland(PipeWireCapturer.gnomeAnswers() ? .gnome : .portal)
        }
    }

    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// What the person sharing is told at the start. GNOME's API asks
    /// nobody and shows only a top-bar indicator, so it is said plainly.
    static func describe(_ screen: PipeWireCapturer) -> String {
        switch screen.backend {
        case .gnome:
            "\(screen.summary) through GNOME's screen cast (org.gnome.Mutter.ScreenCast): no dialog is shown, "
                + "GNOME shows only its top-bar indicator while the screen is captured"
        case .portal:
            "\(screen.summary) through the desktop's screen cast portal"
        }
    }
}
