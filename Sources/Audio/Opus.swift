internal import COpus

/// A libopus failure with its raw error code.
public struct OpusError: Error, Equatable, Sendable, CustomStringConvertible {
    public var operation: String
    public var code: Int32
    public var description: String { "\(operation): \(String(cString: opus_strerror(code))) (\(code))" }

    /// The one funnel from libopus return codes to Swift errors.
    static func check(_ code: Int32, _ operation: String) throws(OpusError) {
        if code < 0 { throw OpusError(operation: operation, code: code) }
    }
}

/// Opus at 48 kHz in 20 ms frames, as RFC 7587 streams use it.
public enum OpusFormat {
    public static let sampleRate = 48_000
    /// Samples per channel in one 20 ms frame.
    public static let frameSamples = 960
    /// The largest packet we produce (RFC 6716 allows 1275 per frame).
    public static let maxPacket = 1500
}

/// An Opus encoder for one stream: `.music` for system audio (stereo),
/// `.voice` for a microphone (mono).
///
/// Music is coded in CELT only (libopus's restricted low-delay application,
/// which also saves 4 ms of look-ahead). Left to choose, libopus codes a tone
/// or a quiet passage in its hybrid SILK+CELT mode when in-band FEC is on,
/// and libavcodec's native Opus decoder, which most players use, mis-decodes
/// such streams (a 660 Hz tone came out at 650 Hz with clipped bursts).
/// In-band FEC exists only in SILK, so a lost music packet is concealed;
/// voice keeps SILK and its FEC.
public final class OpusEncoder {
    public enum Content: Sendable { case music, voice }

    public let channels: Int
    private let encoder: OpaquePointer
    private var output = [UInt8](repeating: 0, count: OpusFormat.maxPacket)

    /// - Parameter complexity: libopus's 0-10 effort knob; 5 costs about a
    ///   third of the default 10 for a difference few can hear at these bitrates.
    public init(channels: Int, content: Content, bitrate: Int, expectedLossPercent: Int = 10,
                complexity: Int = 5) throws(OpusError) {
        var error: Int32 = 0
        let application = content == .voice ? OPUS_APPLICATION_VOIP : OPUS_APPLICATION_RESTRICTED_LOWDELAY
        guard let encoder = opus_encoder_create(Int32(OpusFormat.sampleRate), Int32(channels), application, &error),
              error == OPUS_OK else {
            throw OpusError(operation: "opus_encoder_create", code: error)
        }
        self.encoder = encoder
        self.channels = channels
        try OpusError.check(share_opus_set_bitrate(encoder, Int32(bitrate)), "OPUS_SET_BITRATE")
        // FEC carries a low-rate copy of the previous frame; it only kicks in
        // when the encoder expects loss.
        try OpusError.check(share_opus_set_inband_fec(encoder, 1), "OPUS_SET_INBAND_FEC")
        try OpusError.check(share_opus_set_packet_loss_perc(encoder, Int32(expectedLossPercent)), "OPUS_SET_PACKET_LOSS_PERC")
        try OpusError.check(share_opus_set_signal_voice(encoder, content == .voice ? 1 : 0), "OPUS_SET_SIGNAL")
        try OpusError.check(share_opus_set_complexity(encoder, Int32(complexity)), "OPUS_SET_COMPLEXITY")
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encodes one 20 ms frame of interleaved 16-bit samples and returns the packet.
    public func encode(_ pcm: [Int16]) throws(OpusError) -> ArraySlice<UInt8> {
        guard pcm.count == OpusFormat.frameSamples * channels else {
            throw OpusError(operation: "encode: \(pcm.count) samples for \(channels) channels", code: OPUS_BAD_ARG)
        }
        let capacity = Int32(output.count)
        let length = output.withUnsafeMutableBufferPointer { out in
            pcm.withUnsafeBufferPointer { opus_encode(encoder, $0.baseAddress!, Int32(OpusFormat.frameSamples), out.baseAddress!, capacity) }
        }
        try OpusError.check(length, "opus_encode")
        return output[0..<Int(length)]
    }
}

/// An Opus decoder that also conceals lost frames: from the next packet's
/// in-band FEC when it has one, else by packet loss concealment.
public final class OpusDecoder {
    public let channels: Int
    private let decoder: OpaquePointer
    private var pcm: [Int16]

    public init(channels: Int) throws(OpusError) {
        var error: Int32 = 0
        guard let decoder = opus_decoder_create(Int32(OpusFormat.sampleRate), Int32(channels), &error), error == OPUS_OK else {
            throw OpusError(operation: "opus_decoder_create", code: error)
        }
        self.decoder = decoder
        self.channels = channels
        pcm = [Int16](repeating: 0, count: 5760 * channels)
    }

    deinit { opus_decoder_destroy(decoder) }

    /// Decodes `packet`; with `fec` true, decodes the FEC copy of the frame
    /// before it instead. A nil packet asks for 20 ms of concealment.
    public func decode(_ packet: ArraySlice<UInt8>?, fec: Bool = false) throws(OpusError) -> ArraySlice<Int16> {
        let maxFrame = Int32(pcm.count / channels)
        let frames: Int32 = pcm.withUnsafeMutableBufferPointer { out in
            if let packet, !packet.isEmpty {
                return packet.withUnsafeBufferPointer {
                    // With FEC the frame size must be exactly the lost frame's.
                    opus_decode(decoder, $0.baseAddress, Int32($0.count), out.baseAddress!,
                                fec ? Int32(OpusFormat.frameSamples) : maxFrame, fec ? 1 : 0)
                }
            }
            return opus_decode(decoder, nil, 0, out.baseAddress!, Int32(OpusFormat.frameSamples), 0)
        }
        try OpusError.check(frames, "opus_decode")
        return pcm[0..<Int(frames) * channels]
    }
}
