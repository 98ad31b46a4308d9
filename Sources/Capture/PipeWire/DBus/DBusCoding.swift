internal import CDBus

/// D-Bus type codes (libdbus's DBUS_TYPE_* are macros Swift cannot import).
private enum TypeCode {
    static let byte = Int32(UInt8(ascii: "y")), bool = Int32(UInt8(ascii: "b")), int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u")), int64 = Int32(UInt8(ascii: "x")), uint64 = Int32(UInt8(ascii: "t"))
    static let double = Int32(UInt8(ascii: "d")), string = Int32(UInt8(ascii: "s")), objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g")), fd = Int32(UInt8(ascii: "h")), variant = Int32(UInt8(ascii: "v"))
    static let array = Int32(UInt8(ascii: "a")), structure = Int32(UInt8(ascii: "r")), dictEntry = Int32(UInt8(ascii: "e"))
}

/// Writes `DBusValue`s into a message.
enum DBusWriter {
    static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) {
        switch value {
        case .byte(var v): _ = dbus_message_iter_append_basic(&iterator, TypeCode.byte, &v)
        case .bool(let b):
            var v: dbus_bool_t = b ? 1 : 0
            _ = dbus_message_iter_append_basic(&iterator, TypeCode.bool, &v)
        case .int32(var v): _ = dbus_message_iter_append_basic(&iterator, TypeCode.int32, &v)
        case .uint32(var v): _ = dbus_message_iter_append_basic(&iterator, TypeCode.uint32, &v)
        case .int64(var v): _ = dbus_message_iter_append_basic(&iterator, TypeCode.int64, &v)
        case .uint64(var v): _ = dbus_message_iter_append_basic(&iterator, TypeCode.uint64, &v)
        case .double(var v): _ = dbus_message_iter_append_basic(&iterator, TypeCode.double, &v)
        case .fd(var v): _ = dbus_message_iter_append_basic(&iterator, TypeCode.fd, &v)
        case .string(let s): appendString(s, code: TypeCode.string, to: &iterator)
        case .objectPath(let s): appendString(s, code: TypeCode.objectPath, to: &iterator)
        case .variant(let inner):
            var sub = DBusMessageIter()
            _ = dbus_message_iter_open_container(&iterator, TypeCode.variant, inner.signature, &sub)
            append(inner, to: &sub)
            _ = dbus_message_iter_close_container(&iterator, &sub)
        case .dictionary(let entries):
            var array = DBusMessageIter()
            _ = dbus_message_iter_open_container(&iterator, TypeCode.array, "{sv}", &array)
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                var pair = DBusMessageIter()
                _ = dbus_message_iter_open_container(&array, TypeCode.dictEntry, nil, &pair)
                appendString(key, code: TypeCode.string, to: &pair)
                append(.variant(entry.unwrapped), to: &pair)
                _ = dbus_message_iter_close_container(&array, &pair)
            }
            _ = dbus_message_iter_close_container(&iterator, &array)
        case .array, .structure:
            preconditionFailure("only basic values, variants and a{sv} are written")
        }
    }

    private static func appendString(_ s: String, code: Int32, to iterator: inout DBusMessageIter) {
        s.withCString { pointer in
            var p: UnsafePointer<CChar>? = pointer
            _ = dbus_message_iter_append_basic(&iterator, code, &p)
        }
    }
}

/// Reads a message's arguments as `DBusValue`s.
enum DBusReader {
    static func arguments(of message: OpaquePointer) -> [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        return values(&iterator)
    }

    private static func values(_ iterator: inout DBusMessageIter) -> [DBusValue] {
        var out: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != 0 {
            if let value = value(&iterator) { out.append(value) }
            _ = dbus_message_iter_next(&iterator)
        }
        return out
    }

    private static func basic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ zero: T) -> T {
        var v = zero
        dbus_message_iter_get_basic(&iterator, &v)
        return v
    }

    private static func value(_ iterator: inout DBusMessageIter) -> DBusValue? {
        let code = dbus_message_iter_get_arg_type(&iterator)
        switch code {
        case TypeCode.byte: return .byte(basic(&iterator, UInt8(0)))
        case TypeCode.bool: return .bool(basic(&iterator, dbus_bool_t(0)) != 0)
        case TypeCode.int32: return .int32(basic(&iterator, Int32(0)))
        case TypeCode.uint32: return .uint32(basic(&iterator, UInt32(0)))
        case TypeCode.int64: return .int64(basic(&iterator, Int64(0)))
        case TypeCode.uint64: return .uint64(basic(&iterator, UInt64(0)))
        case TypeCode.double: return .double(basic(&iterator, Double(0)))
        case TypeCode.fd: return .fd(basic(&iterator, Int32(-1)))
        case TypeCode.string, TypeCode.signature:
            return .string(basic(&iterator, UnsafePointer<CChar>?.none).map { String(cString: $0) } ?? "")
        case TypeCode.objectPath:
            return .objectPath(basic(&iterator, UnsafePointer<CChar>?.none).map { String(cString: $0) } ?? "")
        case TypeCode.variant:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return value(&sub).map { .variant($0) }
        case TypeCode.structure, TypeCode.dictEntry:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .structure(values(&sub))
        case TypeCode.array:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            let elements = values(&sub)
            // a{sv} (every entry a string and a value) reads as a dictionary.
            var dictionary: [String: DBusValue] = [:]
            let isDictionary = dbus_message_iter_get_element_type(&iterator) == TypeCode.dictEntry && elements.allSatisfy { entry in
                guard let pair = entry.structure, pair.count == 2, case .string(let key) = pair[0] else { return false }
                dictionary[key] = pair[1]
                return true
            }
            return isDictionary ? .dictionary(dictionary) : .array(elements)
        default: return nil
        }
    }
}

extension DBusReader {
    /// `values` written into a method call and read back, as the bus would
    /// carry them (no connection needed).
    static func roundTrip(_ values: [DBusValue]) -> [DBusValue] {
        guard let message = dbus_message_new_method_call("org.example.Peer", "/", "org.example.Peer", "Echo") else { return [] }
        defer { dbus_message_unref(message) }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for value in values { DBusWriter.append(value, to: &iterator) }
        return arguments(of: message)
    }
}
