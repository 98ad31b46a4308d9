public import ShareColor
internal import CLibAV

/// A decoded picture, still owned by the decoder until the next decode call.
public struct DecodedPicture: Sendable, Equatable {
    public var width: Int
    public var height: Int
}

/// H.264 decoding through libavcodec, set for low delay: one output per
/// input access unit, slice threads only (frame threads add a frame of delay).
/// An access unit may also come in parts (whole NAL units, in order):
/// `decodeStart` decodes the slices that arrived while the rest of the
/// picture is still on its way, `decode` the rest; the picture comes out as
/// soon as its last slice is decoded (libavcodec's chunked input).
public final class H264Decoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let frame: UnsafeMutablePointer<AVFrame>
    /// Receives into here: avcodec_receive_frame clears its frame even when it returns EAGAIN.
    private let incoming: UnsafeMutablePointer<AVFrame>
    /// Access units that failed to decode (corrupt or missing references).
    public private(set) var errors = 0
    public private(set) var decoded = 0
    /// The picture the last part completed, if a part did (an access unit
    /// whose last slices came in a part): what `decode` of the rest returns.
    private var completedEarly: DecodedPicture?

    /// - Parameter parameterSets: SPS/PPS from SDP (sprop-parameter-sets), if any.
    public init(parameterSets: [[UInt8]] = [], threads: Int = 2) throws(LibAVError) {
        _ = LibAVLogging.configured
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_H264) else {
            throw LibAVError(operation: "avcodec_find_decoder", code: -1, message: "no H.264 decoder in libavcodec")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw LibAVError(operation: "avcodec_alloc_context3", code: -1, message: "out of memory")
        }
        context.pointee.flags |= Int32(AV_CODEC_FLAG_LOW_DELAY)
        // Input may end at any NAL unit, not only at a picture's end: a
        // picture is output once its last macroblock row is decoded.
        context.pointee.flags2 |= Int32(AV_CODEC_FLAG2_CHUNKS)
        context.pointee.thread_count = Int32(threads)
        context.pointee.thread_type = FF_THREAD_SLICE
        if !parameterSets.isEmpty {
            let annexB: [UInt8] = parameterSets.flatMap { [0, 0, 0, 1] + $0 }
            let size = annexB.count
            if let extradata = av_mallocz(size + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) {
                annexB.withUnsafeBufferPointer { extradata.update(from: $0.baseAddress!, count: size) }
                context.pointee.extradata = extradata
                context.pointee.extradata_size = Int32(size)
            }
        }
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0, let packet = av_packet_alloc(), let frame = av_frame_alloc(),
              let incoming = av_frame_alloc() else {
            avcodec_free_context(&ctx)
            throw LibAVError(operation: "avcodec_open2", code: status, message: LibAVError.describe(status))
        }
        self.context = context
        self.packet = packet
        self.frame = frame
        self.incoming = incoming
    }

    deinit {
        var ctx: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&ctx)
        var pkt: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&pkt)
        var frm: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frm)
        var inc: UnsafeMutablePointer<AVFrame>? = incoming
        av_frame_free(&inc)
    }

    /// Decodes one Annex B access unit, or the rest of one whose start went
    /// to `decodeStart`. Returns the picture it produced, or nil when the
    /// decoder produced none (needs a keyframe, or failed).
    public func decode(_ accessUnit: [UInt8]) -> DecodedPicture? {
        decode(accessUnit[...])
    }

    /// Decodes one Annex B access unit, or the rest of one begun with
    /// `decodeStart` (empty when every slice came early).
    public func decode(_ accessUnit: ArraySlice<UInt8>) -> DecodedPicture? {
        let early = completedEarly
        completedEarly = nil
        guard !accessUnit.isEmpty else {
            if early == nil { errors += 1 }
            return early
        }
        guard send(accessUnit) else {
            errors += 1
            return nil
        }
        let picture = receive() ?? early
        if picture == nil { errors += 1 }
        return picture
    }

    /// Decodes the leading NAL units of an access unit still arriving; the
    /// rest follows with `decode`. False when libavcodec refused them (the
    /// unit is then best dropped: `discardPartial`, and wait for a keyframe).
    public func decodeStart(_ part: ArraySlice<UInt8>) -> Bool {
        guard !part.isEmpty else { return true }
        guard send(part) else { return false }
        if let picture = receive() { completedEarly = picture }
        return true
    }

    /// Forgets a picture begun with `decodeStart` whose rest will not come
    /// (lost): the next access unit starts clean. References are forgotten
    /// too, so the next picture decoded should be a keyframe.
    public func discardPartial() {
        completedEarly = nil
        avcodec_flush_buffers(context)
    }

    private func send(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard av_new_packet(packet, Int32(bytes.count)) >= 0 else { return false }
        defer { av_packet_unref(packet) }
        bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        return avcodec_send_packet(context, packet) >= 0
    }

    /// The newest picture libavcodec has ready, if any.
    private func receive() -> DecodedPicture? {
        var picture: DecodedPicture?
        while true {
            let received = avcodec_receive_frame(context, incoming)
            if received < 0 { break }
            av_frame_unref(frame)
            av_frame_move_ref(frame, incoming)
            // decode_error_flags marks pictures concealed from missing data.
            if frame.pointee.decode_error_flags != 0 {
                errors += 1
            }
            decoded += 1
            picture = DecodedPicture(width: Int(frame.pointee.width), height: Int(frame.pointee.height))
        }
        return picture
    }

    /// Lends the last decoded picture's planes (YUV 4:2:0) to `body`.
    public func withLastPicture<R>(
        _ body: (_ y: UnsafePointer<UInt8>, _ yStride: Int, _ u: UnsafePointer<UInt8>, _ uStride: Int,
                 _ v: UnsafePointer<UInt8>, _ vStride: Int, _ width: Int, _ height: Int) -> R
    ) -> R? {
        let f = frame.pointee
        guard let y = f.data.0, let u = f.data.1, let v = f.data.2, f.width > 0 else { return nil }
        return body(y, Int(f.linesize.0), u, Int(f.linesize.1), v, Int(f.linesize.2), Int(f.width), Int(f.height))
    }

    /// The last decoded picture as an owned I420 image (tests, probes).
    public func lastPicture() -> I420Image? {
        withLastPicture { y, ys, u, us, v, vs, width, height in
            I420Image(copying: y, yStride: ys, u: u, uStride: us, v: v, vStride: vs, width: width, height: height)
        }
    }
}
