/// An RTCP APP packet (RFC 3550 §6.7): a subtype, the sender's SSRC, a
/// four-character name and data in 32-bit words (padded with zeros).
public struct ApplicationPacket: Equatable, Sendable {
    public var subtype: UInt8
    public var ssrc: UInt32
    public var name: [UInt8]
    public var data: [UInt8]

    public init(subtype: UInt8, ssrc: UInt32, name: String, data: [UInt8]) {
        self.init(subtype: subtype, ssrc: ssrc, name: Array(name.utf8.prefix(4)), data: data)
    }

    init(subtype: UInt8, ssrc: UInt32, name: [UInt8], data: [UInt8]) {
        self.subtype = subtype & 0x1F
        self.ssrc = ssrc
        self.name = name
        self.data = data + [UInt8](repeating: 0, count: (4 - data.count % 4) % 4)
    }
}

/// What a sender is doing, as its receiver should show it.
public enum StreamState: UInt8, Sendable, Equatable {
    case live = 0
    case paused = 1
    /// Stopped for good, with a reason (an error, or the user's stop).
    case finished = 2
}

/// One audio stream a sender sends: its SSRC and channel count.
public struct AudioStreamLayout: Equatable, Sendable {
    public var ssrc: UInt32
    public var channels: UInt8

    public init(ssrc: UInt32, channels: UInt8) {
        self.ssrc = ssrc
        self.channels = channels
    }
}

/// share's sender state, told reliably: an APP packet named `SHST` whose
/// subtype is the state, its data a 16-bit sequence number, a reason length
/// byte and the reason (UTF-8), then optionally the audio streams the sender
/// sends (a count byte, then an SSRC and a channel count for each), so a
/// receiver can lay out its recording before the first sound arrives. The
/// sender repeats it until the receiver answers with an `SHAK` packet
/// carrying the same sequence number. A receiver that does not know the
/// layout ignores the bytes after the reason.
public struct StateAnnouncement: Equatable, Sendable {
    public var state: StreamState
    public var sequence: UInt16
    public var reason: String?
    /// The audio streams, when the sender says (nil: not said; empty: none).
    public var audio: [AudioStreamLayout]?

    public static let name = "SHST"
    /// At most this many audio streams are described.
    public static let maximumAudioStreams = 16

    public init(state: StreamState, sequence: UInt16, reason: String? = nil, audio: [AudioStreamLayout]? = nil) {
        self.state = state
        self.sequence = sequence
        self.reason = reason
        self.audio = audio.map { Array($0.prefix(Self.maximumAudioStreams)) }
    }

    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Array(Self.name.utf8), let state = StreamState(rawValue: packet.subtype) else { return nil }
        var reader = ByteReader(packet.data[...])
        guard let sequence = reader.readUInt16(), let length = reader.readUInt8(),
              let text = reader.readSlice(Int(length)) else { return nil }
        var audio: [AudioStreamLayout]?
        // Zero padding reads as "no streams said": only a non-zero count, or
        // the explicit marker of an empty list, describes streams.
        if let count = reader.readUInt8(), count > 0 {
            var streams: [AudioStreamLayout] = []
            if count != Self.noAudioMarker {
                for _ in 0..<min(Int(count), Self.maximumAudioStreams) {
                    guard let ssrc = reader.readUInt32(), let channels = reader.readUInt8() else { return nil }
                    streams.append(AudioStreamLayout(ssrc: ssrc, channels: channels))
                }
            }
            audio = streams
        }
        self.init(state: state, sequence: sequence, reason: length == 0 ? nil : String(decoding: text, as: UTF8.self),
                  audio: audio)
    }

    /// The count byte that says "no audio streams" (a zero would be padding).
    static let noAudioMarker: UInt8 = 0xFF

    public func packet(ssrc: UInt32) -> RTCPPacket {
        let text = Array((reason ?? "").utf8.prefix(200))
        var data: [UInt8] = []
        data.appendUInt16(sequence)
        data.append(UInt8(text.count))
        data += text
        if let audio {
            data.append(audio.isEmpty ? Self.noAudioMarker : UInt8(audio.count))
            for stream in audio {
                data.appendUInt32(stream.ssrc)
                data.append(stream.channels)
            }
        }
        return .application(ApplicationPacket(subtype: state.rawValue, ssrc: ssrc, name: Self.name, data: data))
    }
}

/// The receiver's answer to a state announcement: APP `SHAK`, its data the
/// sequence number answered.
public struct StateAcknowledgement: Equatable, Sendable {
    public var sequence: UInt16
    public static let name = "SHAK"

    public init(sequence: UInt16) { self.sequence = sequence }

    public init?(_ packet: ApplicationPacket) {
        guard packet.name == Array(Self.name.utf8) else { return nil }
        var reader = ByteReader(packet.data[...])
        guard let sequence = reader.readUInt16() else { return nil }
        self.sequence = sequence
    }

    public func packet(ssrc: UInt32) -> RTCPPacket {
        var data: [UInt8] = []
        data.appendUInt16(sequence)
        return .application(ApplicationPacket(subtype: 0, ssrc: ssrc, name: Self.name, data: data))
    }
}
