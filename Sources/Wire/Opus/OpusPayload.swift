/// Why bytes are not a valid Opus packet (RFC 6716 §3.4 "R1"-"R7").
public enum OpusPacketError: Error, Equatable, Sendable {
    case empty
    case truncated
    case tooLong(samples: Int)
    case badFrameCount
}

/// The facts of an Opus packet that RTP needs (RFC 6716 §3.1, the TOC byte):
/// how many 48 kHz samples it covers, and whether it is stereo. RFC 7587 §4.2:
/// the RTP payload is exactly one Opus packet; the RTP clock is always 48 kHz.
public struct OpusPacketInfo: Equatable, Sendable {
    /// The RTP clock rate for Opus whatever the coded bandwidth (RFC 7587 §4.1).
    public static let clockRate: UInt32 = 48_000

    public var configuration: UInt8
    public var isStereo: Bool
    public var frameCount: Int
    /// Duration of one frame in 48 kHz samples.
    public var samplesPerFrame: Int

    /// Duration of the packet in 48 kHz samples: the RTP timestamp increment.
    public var samples: Int { frameCount * samplesPerFrame }

    /// Whether the packet carries in-band FEC, a low-bitrate copy of the
    /// frame before it (LBRR, RFC 6716 §4.2.4): only a SILK layer can
    /// (SILK-only or hybrid, configs 0-15; never CELT-only), and only when
    /// its first frame's LBRR flag is set for the mid or the side channel.
    public var carriesFEC: Bool

    public init(packet: ArraySlice<UInt8>) throws(OpusPacketError) {
        guard let toc = packet.first else { throw .empty }
        configuration = toc >> 3
        isStereo = toc & 0x04 != 0
        // RFC 6716 §3.1, Table 2: configs 0-11 SILK (10/20/40/60 ms), 12-15
        // hybrid (10/20 ms), 16-31 CELT (2.5/5/10/20 ms).
        let config = Int(configuration)
        switch config {
        case 0...11: samplesPerFrame = [480, 960, 1920, 2880][config % 4]
        case 12...15: samplesPerFrame = [480, 960][config % 2]
        default: samplesPerFrame = [120, 240, 480, 960][config % 4]
        }
        switch toc & 0x03 {
        case 0: frameCount = 1
        case 1, 2: frameCount = 2
        default:
            // Code 3: the second byte holds the frame count M in its low six bits.
            guard packet.count >= 2 else { throw .truncated }
            frameCount = Int(packet[packet.startIndex + 1] & 0x3F)
            guard frameCount >= 1 else { throw .badFrameCount }
        }
        carriesFEC = false
        // RFC 6716 §3.4 [R5]: a packet covers at most 120 ms.
        guard samples <= 5760 else { throw .tooLong(samples: samples) }
        if configuration < 16, let first = Self.firstFrame(packet, code: toc & 0x03), first < packet.endIndex {
            // RFC 6716 §4.2.3: the SILK layer opens with each SILK frame's
            // voice-activity flag and then the LBRR flag, mid channel then
            // side, each an even-odds range-coded bit: the first byte's top
            // bits, in order. A 40 or 60 ms frame holds two or three.
            let silkFrames = max(samplesPerFrame / 960, 1)
            let byte = packet[first]
            carriesFEC = byte >> (7 - silkFrames) & 1 == 1 || (isStereo && byte >> (6 - 2 * silkFrames) & 1 == 1)
        }
    }

    /// Where the first frame's bytes begin (RFC 6716 §3.2), or nil when the
    /// packet ends first or the frame is empty.
    private static func firstFrame(_ packet: ArraySlice<UInt8>, code: UInt8) -> Int? {
        var at = packet.startIndex + 1
        // A frame length: one byte, or two when the first is 252-255 (§3.2.1).
        func length() -> Int? {
            guard at < packet.endIndex else { return nil }
            let first = Int(packet[at])
            guard first >= 252 else { at += 1; return first }
            guard at + 1 < packet.endIndex else { return nil }
            defer { at += 2 }
            return first + 4 * Int(packet[at + 1])
        }
        switch code {
        case 0, 1:
            return at
        case 2:
            guard let first = length(), first > 0 else { return nil }
            return at
        default:
            // §3.2.5: the frame count byte (VBR and padding flags, M), the
            // padding length (each 255 adds 254 and goes on), then in VBR
            // the lengths of all frames but the last.
            guard at < packet.endIndex else { return nil }
            let header = packet[at]
            at += 1
            if header & 0x40 != 0 {
                while true {
                    guard at < packet.endIndex else { return nil }
                    at += 1
                    if packet[at - 1] != 255 { break }
                }
            }
            if header & 0x80 != 0 {
                for frame in 0..<max(Int(header & 0x3F) - 1, 0) {
                    guard let bytes = length(), frame > 0 || bytes > 0 else { return nil }
                }
            }
            return at
        }
    }
}

/// RFC 7587 payloading: checks each encoded packet and advances the 48 kHz
/// timestamp by its duration. The RTP header itself is `RTPPacketizer`'s.
public struct OpusPayloader: Sendable {
    /// The RTP timestamp of the next packet.
    public private(set) var nextTimestamp: UInt32

    public init(initialTimestamp: UInt32) { nextTimestamp = initialTimestamp }

    /// Returns the timestamp for `packet` and moves past it.
    public mutating func timestamp(for packet: ArraySlice<UInt8>) throws(OpusPacketError) -> UInt32 {
        let info = try OpusPacketInfo(packet: packet)
        defer { nextTimestamp &+= UInt32(info.samples) }
        return nextTimestamp
    }

    /// Skips `samples` of silence that were not sent (DTX), keeping the clock true.
    public mutating func skip(samples: Int) {
        nextTimestamp &+= UInt32(truncatingIfNeeded: samples)
    }
}
