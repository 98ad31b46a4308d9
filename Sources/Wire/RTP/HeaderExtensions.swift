/// One element of an RFC 8285 header extension: a local identifier and its data.
public struct RTPExtensionElement: Equatable, Sendable {
    public var id: UInt8
    public var data: ArraySlice<UInt8>

    public init(id: UInt8, data: ArraySlice<UInt8>) {
        self.id = id
        self.data = data
    }
}

/// Why RFC 8285 extension elements could not be read or written.
public enum RTPExtensionError: Error, Equatable, Sendable {
    /// The profile word is neither 0xBEDE nor 0x100x.
    case unknownProfile(UInt16)
    /// An element claims more bytes than remain.
    case truncatedElement(id: UInt8)
    /// An id or length the chosen form cannot carry.
    case unrepresentable(id: UInt8, length: Int)
    /// More than 255 words of extension data.
    case tooLong(Int)
}

/// RFC 8285 header extensions in their one-byte (profile 0xBEDE, ids 1-14,
/// 1-16 bytes) and two-byte (profile 0x100x, ids 1-255, 0-255 bytes) forms.
public enum RTPHeaderExtensionForm: Sendable, Equatable {
    case oneByte
    /// The two-byte form; `appBits` are the low four bits of the profile word.
    case twoByte(appBits: UInt8)

    public static let oneByteProfile: UInt16 = 0xBEDE

    public init?(profile: UInt16) {
        if profile == Self.oneByteProfile {
            self = .oneByte
        } else if profile & 0xFFF0 == 0x1000 {
            self = .twoByte(appBits: UInt8(profile & 0x000F))
        } else {
            return nil
        }
    }

    public var profile: UInt16 {
        switch self {
        case .oneByte: Self.oneByteProfile
        case .twoByte(let bits): 0x1000 | UInt16(bits & 0x0F)
        }
    }

    /// The smallest form that can carry all `elements`.
    public static func fitting(_ elements: [RTPExtensionElement]) -> Self {
        let oneByteFits = elements.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.data.count) }
        return oneByteFits ? .oneByte : .twoByte(appBits: 0)
    }
}

extension RTPHeaderExtension {
    /// The RFC 8285 elements; padding bytes are skipped.
    public func elements() throws(RTPExtensionError) -> [RTPExtensionElement] {
        guard let form = RTPHeaderExtensionForm(profile: profile) else { throw .unknownProfile(profile) }
        var reader = ByteReader(data)
        var result: [RTPExtensionElement] = []
        while let first = reader.readUInt8() {
            switch form {
            case .oneByte:
                // RFC 8285 §4.2: a 4-bit ID and a 4-bit length that is the
                // number of data bytes minus one; ID 0 is padding and ID 15
                // means "stop processing".
                let id = first >> 4
                if id == 0 { continue }
                if id == 15 { return result }
                let length = Int(first & 0x0F) + 1
                guard let bytes = reader.readSlice(length) else { throw .truncatedElement(id: id) }
                result.append(RTPExtensionElement(id: id, data: bytes))
            case .twoByte:
                // RFC 8285 §4.3: an 8-bit ID (0 is padding) and an 8-bit length.
                if first == 0 { continue }
                guard let length = reader.readUInt8(), let bytes = reader.readSlice(Int(length))
                else { throw .truncatedElement(id: first) }
                result.append(RTPExtensionElement(id: first, data: bytes))
            }
        }
        return result
    }

    /// The data of the element with `id`, if present and well formed.
    public func element(id: UInt8) -> ArraySlice<UInt8>? {
        guard let all = try? elements() else { return nil }
        return all.first { $0.id == id }?.data
    }

    /// Builds an extension holding `elements`, padded to a 32-bit boundary.
    public init(elements: [RTPExtensionElement], form: RTPHeaderExtensionForm? = nil) throws(RTPExtensionError) {
        let form = form ?? .fitting(elements)
        var data: [UInt8] = []
        for element in elements {
            switch form {
            case .oneByte:
                guard (1...14).contains(element.id), (1...16).contains(element.data.count) else {
                    throw .unrepresentable(id: element.id, length: element.data.count)
                }
                data.append(element.id << 4 | UInt8(element.data.count - 1))
            case .twoByte:
                guard element.id >= 1, element.data.count <= 255 else {
                    throw .unrepresentable(id: element.id, length: element.data.count)
                }
                data.append(element.id)
                data.append(UInt8(element.data.count))
            }
            data.append(contentsOf: element.data)
        }
        data.appendZeros((4 - data.count % 4) % 4)
        guard data.count / 4 <= 0xFFFF else { throw .tooLong(data.count / 4) }
        self.init(profile: form.profile, data: data[...])
    }
}

/// The abs-capture-time header extension
/// (http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time): the
/// capture instant as a 64-bit NTP timestamp (Q32.32 seconds since 1900),
/// optionally followed by the capturer's estimated clock offset.
public struct AbsoluteCaptureTime: Equatable, Sendable {
    public static let uri = "http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time"

    public var ntpTimestamp: NTPTimestamp
    public var estimatedClockOffset: Int64?

    public init(ntpTimestamp: NTPTimestamp, estimatedClockOffset: Int64? = nil) {
        self.ntpTimestamp = ntpTimestamp
        self.estimatedClockOffset = estimatedClockOffset
    }

    public init?(_ data: ArraySlice<UInt8>) {
        var reader = ByteReader(data)
        guard data.count == 8 || data.count == 16, let ntp = reader.readUInt64() else { return nil }
        ntpTimestamp = NTPTimestamp(rawValue: ntp)
        estimatedClockOffset = reader.readUInt64().map { Int64(bitPattern: $0) }
    }

    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        out.appendUInt64(ntpTimestamp.rawValue)
        if let estimatedClockOffset { out.appendUInt64(UInt64(bitPattern: estimatedClockOffset)) }
        return out
    }
}

/// A 64-bit NTP timestamp (RFC 5905 §6): seconds since 1900-01-01 in the high
/// 32 bits and the fraction of a second in the low 32 bits.
public struct NTPTimestamp: RawRepresentable, Hashable, Comparable, Sendable {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Seconds between the NTP epoch (1900) and the Unix epoch (1970).
    public static let unixEpochOffset: UInt64 = 2_208_988_800

    /// The NTP timestamp of a Unix time given in nanoseconds.
    public init(unixNanoseconds: UInt64) {
        let seconds = unixNanoseconds / 1_000_000_000 + Self.unixEpochOffset
        let nanos = unixNanoseconds % 1_000_000_000
        rawValue = seconds << 32 | (nanos << 32) / 1_000_000_000
    }

    /// The Unix time in nanoseconds.
    public var unixNanoseconds: UInt64 {
        let seconds = (rawValue >> 32) &- Self.unixEpochOffset
        let fraction = rawValue & 0xFFFF_FFFF
        return seconds &* 1_000_000_000 &+ (fraction &* 1_000_000_000) >> 32
    }

    /// The Unix time in microseconds, negative before 1970 (RFC 3550 lets a
    /// sender send any NTP time, 0 among them). Within ±2^52, so a caller
    /// may scale it to nanoseconds without overflow.
    public var unixMicroseconds: Int64 {
        let seconds = Int64(rawValue >> 32) - Int64(Self.unixEpochOffset)
        let fraction = Int64(rawValue & 0xFFFF_FFFF)
        return seconds * 1_000_000 + (fraction * 1_000_000) >> 32
    }

    /// The middle 32 bits, as used by LSR and DLSR in reception reports (RFC 3550 §6.4.1).
    public var middle32: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 16) }

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}
