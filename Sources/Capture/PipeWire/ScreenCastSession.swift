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
    /// Runs `body`, which talks to the desktop over D-Bus, and puts what
    /// fails in words for the person sharing: no bus, the service not there
    /// (`missing` says what that means), the service without the interface
    /// (`noInterface`, when given), or the cause.
    static func during<T>(missing: String, noInterface: String? = nil, _ body: () throws -> T) throws(ScreenCastError) -> T {
        do {
            return try body()
        } catch let error as ScreenCastError {
            throw error
        } catch let error as DBusError {
            if error.name == DBusError.noSessionBus { throw .unavailable(error.message) }
            if error.serviceMissing { throw .unavailable(missing) }
            if let noInterface, error.interfaceMissing { throw .unavailable("\(noInterface) (\(error))") }
            throw .failed(error.message)
        } catch {
            throw .failed("\(error)")
        }
    }
}
