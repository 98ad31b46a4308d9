/// A screen cast a desktop granted: the PipeWire node that carries its
/// pictures, how to reach PipeWire for it, and whether the desktop ended it.
protocol ScreenCastSession: AnyObject, Sendable {
    /// The stream's PipeWire node.
    var node: UInt32 { get }
    /// A descriptor to reach PipeWire through (a portal's remote); -1: the user's daemon.
    var pipeWireDescriptor: Int32 { get }
    /// The bus connection's descriptor (readable when the desktop says
    /// something, such as that the cast closed); -1: none.
    var busDescriptor: Int32 { get }
    /// What is cast, in words ("monitor Meta-0").
    var summary: String { get }
    /// Whether the desktop closed the cast (reads what the bus has, never
    /// waits; once closed, always closed).
    func closed() -> Bool
    /// Ends the cast.
    func stop()
}

/// Why a Wayland screen cast could not start or went on no further, in
/// words for the person sharing.
public enum ScreenCastError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The service is not there (no portal, not GNOME, no PipeWire).
    case unavailable(String)
    /// The person sharing said no in the desktop's dialog.
    case cancelled(String)
    /// The source asked for cannot be cast this way.
    case unsupported(String)
    /// The cast was ended by the desktop or the source went away.
    case ended(String)
    /// Anything else, with its cause.
    case failed(String)
    /// A reply that was not what the API promises.
    case unexpected(String)

    public var description: String {
        switch self {
        case .unavailable(let m), .cancelled(let m), .unsupported(let m), .ended(let m), .failed(let m): m
        case .unexpected(let m): "the desktop's screen cast answered unexpectedly: \(m)"
        }
    }
}

extension ScreenCastError {
    /// A D-Bus failure in words for the person sharing: no bus, the
    /// service not there (`missing` says what that means), or the cause.
    init(_ error: DBusError, missing: String) {
        if error.name == DBusError.noSessionBus {
            self = .unavailable(error.message)
        } else if error.serviceMissing {
            self = .unavailable(missing)
        } else {
            self = .failed(error.message)
        }
    }
}
