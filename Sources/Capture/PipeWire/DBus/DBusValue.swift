/// A D-Bus value, as far as the screen-cast APIs use them: the basic types,
/// variants, `a{sv}` dictionaries (the options and results every call
/// takes and gives), arrays and structures (read only: the portal's list of
/// streams is `a(ua{sv})`).
enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    /// A Unix descriptor, owned by whoever reads it.
    case fd(Int32)
    indirect case variant(DBusValue)
    /// `a{sv}`.
    case dictionary([String: DBusValue])
    case array([DBusValue])
    case structure([DBusValue])

    /// The value inside any number of variants.
    var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    var string: String? {
        switch unwrapped {
        case .string(let s), .objectPath(let s): s
        default: nil
        }
    }

    var uint32: UInt32? {
        if case .uint32(let v) = unwrapped { return v }
        return nil
    }

    var dictionary: [String: DBusValue]? {
        if case .dictionary(let d) = unwrapped { return d }
        return nil
    }

    var array: [DBusValue]? {
        if case .array(let a) = unwrapped { return a }
        return nil
    }

    var structure: [DBusValue]? {
        if case .structure(let s) = unwrapped { return s }
        return nil
    }

    /// The type signature of a value that can be written (arrays and
    /// structures are read only).
    var signature: String {
        switch self {
        case .byte: "y"
        case .bool: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .fd: "h"
        case .variant: "v"
        case .dictionary: "a{sv}"
        case .array, .structure: "?"
        }
    }
}
