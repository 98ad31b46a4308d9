public import ShareColor
internal import CLibAV

/// A decoded picture, still owned by the decoder until the next decode call.
public struct DecodedPicture: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// The RTP timestamp its access unit was given (`decode(_:timestamp:)`):
    /// with B-frames the picture that comes out is an earlier unit's.
    public var timestamp: UInt32?
    /// Whether it was coded as an intra picture.
    public var isKeyframe: Bool

    public init(width: Int, height: Int, timestamp: UInt32? = nil, isKeyframe: Bool = false) {
        self.width = width
        self.height = height
        self.timestamp = timestamp
        self.isKeyframe = isKeyframe
    }
}

/// H.264 decoding through libavcodec, for low delay: one output per input
/// access unit for a stream that says it sends no picture ahead of one shown
/// before it (share's own; x264 says so), slice threads only (frame threads
/// add a frame of delay). A stream with B-frames comes out in display
/// order, `reorderDepth` units late (`holding` until then).
/// An access unit may also come in parts (whole NAL units, in order):
/// `decodeStart` decodes the slices that arrived while the rest of the
/// picture is still on its way, `decode` the rest; the picture comes out as
/// soon as its last slice is decoded (libavcodec's chunked input).
public final class H264Decoder {
    private var context: UnsafeMutablePointer<AVCodecContext>
    /// What the decoder was opened with, to open it again (`startOver`).
    private let parameterSets: [[UInt8]]
    private let threads: Int
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
    /// The last picture's planes reduced to 8 bits (a deeper stream), and
    /// which picture (by `decoded`) they hold.
    private var reduced: [UInt8] = []
    private var reducedFor = -1
    /// The last picture as I420 when it was decoded as something else, its
    /// colour space, and which picture it holds; room for planar RGB's BGRA on the way.
    private var i420: I420Image?
    private var i420Colors = ColorSpace.bt601
    private var i420For = -1
    private var scratch: [UInt8] = []
    private var knownFormat: (code: Int32, format: PictureFormat?)?
    /// Which rows of the picture begun with `decodeStart` are done
    /// (libavcodec reports them as it goes), and whether one is begun.
    private let rows: UnsafeMutablePointer<share_av_rows>
    private var begun = false

    /// - Parameter parameterSets: SPS/PPS from SDP (sprop-parameter-sets), if any.
    public init(parameterSets: [[UInt8]] = [], threads: Int = 2) throws(LibAVError) {
        _ = LibAVLogging.configured
        let rows = UnsafeMutablePointer<share_av_rows>.allocate(capacity: 1)
        rows.initialize(to: share_av_rows())
        let context: UnsafeMutablePointer<AVCodecContext>
        do {
            context = try Self.open(parameterSets: parameterSets, threads: threads, rows: rows)
        } catch {
            rows.deallocate()
            throw error
        }
        guard let packet = av_packet_alloc(), let frame = av_frame_alloc(), let incoming = av_frame_alloc() else {
            var ctx: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&ctx)
            rows.deallocate()
            throw LibAVError(operation: "av_frame_alloc", code: -1, message: "out of memory")
        }
        self.rows = rows
        self.context = context
        self.packet = packet
        self.frame = frame
        self.incoming = incoming
        self.parameterSets = parameterSets
        self.threads = threads
    }

    /// An open libavcodec H.264 decoder.
    private static func open(parameterSets: [[UInt8]], threads: Int,
                             rows: UnsafeMutablePointer<share_av_rows>) throws(LibAVError) -> UnsafeMutablePointer<AVCodecContext> {
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_H264) else {
            throw LibAVError(operation: "avcodec_find_decoder", code: -1, message: "no H.264 decoder in libavcodec")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw LibAVError(operation: "avcodec_alloc_context3", code: -1, message: "out of memory")
        }
        // Input may end at any NAL unit, not only at a picture's end: a
        // picture is output once its last macroblock row is decoded.
        context.pointee.flags2 |= Int32(AV_CODEC_FLAG2_CHUNKS)
        context.pointee.thread_count = Int32(threads)
        context.pointee.thread_type = FF_THREAD_SLICE
        share_av_follow_rows(context, rows)
        if !parameterSets.isEmpty {
            let annexB: [UInt8] = parameterSets.flatMap { [0, 0, 0, 1] + $0 }
            let size = annexB.count
            if let extradata = av_mallocz(size + Int(AV_INPUT_BUFFER_PADDING_SIZE))?.assumingMemoryBound(to: UInt8.self) {
                annexB.withUnsafeBufferPointer { extradata.update(from: $0.baseAddress!, count: size) }
                context.pointee.extradata = extradata
                context.pointee.extradata_size = Int32(size)
            }
        }
        let status = avcodec_open2(context, codec, nil)
        guard status >= 0 else {
            var ctx: UnsafeMutablePointer<AVCodecContext>? = context
            avcodec_free_context(&ctx)
            throw LibAVError(operation: "avcodec_open2", code: status, message: LibAVError.describe(status))
        }
        return context
    }

    /// Starts over for a new sender: what libavcodec learned of the last
    /// stream (its B-frame depth, which only grows, its references) is
    /// forgotten, and no picture is lent until the next is decoded.
    public func startOver() {
        begun = false
        guard let fresh = try? Self.open(parameterSets: parameterSets, threads: threads, rows: rows) else {
            avcodec_flush_buffers(context)
            return
        }
        var old: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&old)
        context = fresh
        av_frame_unref(frame)
        completedEarly = nil
        holding = false
        knownFormat = nil
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
        rows.deallocate()
    }

    /// Decodes one Annex B access unit, or the rest of one whose start went
    /// to `decodeStart`. Returns the picture it produced, or nil when the
    /// decoder produced none (needs a keyframe, or failed, or `holding`).
    public func decode(_ accessUnit: [UInt8], timestamp: UInt32? = nil) -> DecodedPicture? {
        decode(accessUnit[...], timestamp: timestamp)
    }

    /// Decodes one Annex B access unit, or the rest of one begun with
    /// `decodeStart` (empty when every slice came early). `timestamp` goes
    /// with the unit to the picture it becomes.
    public func decode(_ accessUnit: ArraySlice<UInt8>, timestamp: UInt32? = nil) -> DecodedPicture? {
        let early = completedEarly
        completedEarly = nil
        holding = false
        begun = false
        guard !accessUnit.isEmpty else {
            if early == nil { errors += 1 }
            return early
        }
        guard send(accessUnit, timestamp: timestamp) else {
            errors += 1
            return nil
        }
        let picture = receive() ?? early
        if picture == nil {
            // A stream with B-frames: pictures leave in display order, up to
            // `reorderDepth` units after they came in.
            if reorderDepth > 0 { holding = true } else { errors += 1 }
        }
        return picture
    }

    /// How many pictures the stream may send ahead of one it shows before
    /// them (its B-frames; from the SPS, or found by libavcodec): pictures
    /// come out that many access units late. 0 for share's own streams.
    public var reorderDepth: Int { Int(context.pointee.has_b_frames) }

    /// The stream's picture size as its parameter sets give it (before
    /// any picture came out: a stream with B-frames holds its first).
    public var pictureSize: (width: Int, height: Int) { (Int(context.pointee.width), Int(context.pointee.height)) }

    /// Whether the last `decode` took its unit without error but gave no
    /// picture yet, as a stream with B-frames does (`reorderDepth`).
    public private(set) var holding = false

    /// Decodes the leading NAL units of an access unit still arriving; the
    /// rest follows with `decode`. False when libavcodec refused them (the
    /// unit is then best dropped: `discardPartial`, and wait for a keyframe).
    public func decodeStart(_ part: ArraySlice<UInt8>) -> Bool {
        guard !part.isEmpty else { return true }
        if !begun {
            share_av_rows_reset(rows)
            begun = true
        }
        guard send(part) else { return false }
        if let picture = receive() { completedEarly = picture }
        return true
    }

    /// Forgets a picture begun with `decodeStart` whose rest will not come
    /// (lost): the next access unit starts clean. References are forgotten
    /// too, so the next picture decoded should be a keyframe.
    public func discardPartial() {
        completedEarly = nil
        begun = false
        avcodec_flush_buffers(context)
    }

    private func send(_ bytes: ArraySlice<UInt8>, timestamp: UInt32? = nil) -> Bool {
        guard av_new_packet(packet, Int32(bytes.count)) >= 0 else { return false }
        defer { av_packet_unref(packet) }
        bytes.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        packet.pointee.pts = timestamp.map { Int64($0) } ?? share_av_nopts()
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
            let pts = frame.pointee.pts
            picture = DecodedPicture(width: Int(frame.pointee.width), height: Int(frame.pointee.height),
                                     timestamp: pts == share_av_nopts() ? nil : UInt32(truncatingIfNeeded: pts),
                                     isKeyframe: frame.pointee.pict_type == AV_PICTURE_TYPE_I)
        }
        return picture
    }

    /// Lends the picture begun with `decodeStart`, and how many of its rows
    /// from the top are final (decoded, and deblocked but for the next
    /// row's edge), to `body`: so they can be shown while the rest is on
    /// its way. Nil when no picture is begun, or it is not 8 bits a sample.
    /// The picture `decode` then completes is the same (its planes at the
    /// same addresses).
    package func withRowsBegun<R>(_ body: (PlanarPicture, _ finalRows: Int) -> R) -> R? {
        guard begun, let begunPicture = share_av_rows_picture(rows) else { return nil }
        let f = begunPicture.pointee
        guard f.width > 0, let format = format(of: f.format), format.depth == 8 else { return nil }
        // The picture as it will come out: cropped (to 1080 rows of 1088
        // coded, say); cropped at the top or left, its planes would move.
        guard f.crop_top == 0, f.crop_left == 0 else { return nil }
        let (width, height) = (Int(f.width) - Int(f.crop_right), Int(f.height) - Int(f.crop_bottom))
        guard let picture = Self.planes(of: f, format: format, width: width, height: height) else { return nil }
        return body(picture, Int(share_av_rows_final(rows, Int32(height))))
    }

    /// An 8-bit picture's planes as libavcodec holds them, `width` x `height`
    /// of them; nil when a plane its layout needs is missing.
    private static func planes(of f: AVFrame, format: PictureFormat, width: Int, height: Int) -> PlanarPicture? {
        guard let first = f.data.0 else { return nil }
        let planes = (UnsafePointer(first), f.data.1.map { UnsafePointer($0) }, f.data.2.map { UnsafePointer($0) })
        guard format.layout == .gray || (planes.1 != nil && planes.2 != nil) else { return nil }
        return PlanarPicture(layout: format.layout, width: width, height: height, colors: format.colors(of: f), planes: planes,
                             strides: (Int(f.linesize.0), Int(f.linesize.1), Int(f.linesize.2)))
    }

    /// Lends the last decoded picture's planes, 8 bits a sample, to `body`:
    /// as decoded, or reduced from the 9 to 14 bits of a deeper stream
    /// (once per picture). Nil before the first picture, or when it came in
    /// a pixel format share cannot show (`unshownFormat` names it).
    package func withLastPicture<R>(_ body: (PlanarPicture) -> R) -> R? {
        let f = frame.pointee
        guard f.width > 0, let format = format(of: f.format), f.data.0 != nil else { return nil }
        let (width, height) = (Int(f.width), Int(f.height))
        let (chromaWidth, chromaHeight) = format.chromaSize(width: width, height: height)
        let colors = format.colors(of: f)
        guard format.depth > 8 else { return Self.planes(of: f, format: format, width: width, height: height).map(body) }
        // Deeper samples, 16 bits each: reduced plane by plane, rows packed.
        let sizes = [(width, height)] + (format.layout == .gray ? [] : [(chromaWidth, chromaHeight), (chromaWidth, chromaHeight)])
        let needed = sizes.reduce(0) { $0 + $1.0 * $1.1 }
        if reducedFor != decoded {
            if reduced.count < needed { reduced = [UInt8](repeating: 0, count: needed) }
            let sources = [f.data.0, f.data.1, f.data.2]
            let strides = [f.linesize.0, f.linesize.1, f.linesize.2]
            var failed = false
            reduced.withUnsafeMutableBufferPointer { buffer in
                var offset = 0
                for (plane, size) in sizes.enumerated() {
                    guard let source = sources[plane] else { failed = true; return }
                    ColorConversion.reduceTo8Bits(source, sourceStride: Int(strides[plane]), depth: format.depth,
                                                  into: buffer.baseAddress! + offset, stride: size.0, width: size.0, height: size.1)
                    offset += size.0 * size.1
                }
            }
            guard !failed else { return nil }
            reducedFor = decoded
        }
        return reduced.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            let lumaBytes = width * height
            let chromaBytes = chromaWidth * chromaHeight
            let planes = format.layout == .gray ? (base, nil, nil) : (base, base + lumaBytes, base + lumaBytes + chromaBytes)
            return body(PlanarPicture(layout: format.layout, width: width, height: height, colors: colors, planes: planes,
                                      strides: (width, chromaWidth, chromaWidth)))
        }
    }

    /// The last picture's pixel format when it is one share cannot show
    /// (none that libavcodec's H.264 decoder gives today); nil otherwise.
    public var unshownFormat: String? {
        let f = frame.pointee
        guard f.width > 0, format(of: f.format) == nil else { return nil }
        return av_get_pix_fmt_name(AVPixelFormat(f.format)).map { String(cString: $0) } ?? "pixel format \(f.format)"
    }

    /// What `format` (an AVPixelFormat) means for showing it, looked up once per format.
    private func format(of format: Int32) -> PictureFormat? {
        if knownFormat?.code != format { knownFormat = (format, PictureFormat(format)) }
        return knownFormat?.format
    }

    /// Lends the last decoded picture as 8-bit I420 planes (what it was
    /// decoded as, or a conversion made once per picture: chroma averaged
    /// down, deeper samples reduced) and the colour space they are in.
    public func withLastI420<R>(
        _ body: (_ y: UnsafePointer<UInt8>, _ yStride: Int, _ u: UnsafePointer<UInt8>, _ uStride: Int,
                 _ v: UnsafePointer<UInt8>, _ vStride: Int, _ width: Int, _ height: Int, _ colors: ColorSpace) -> R
    ) -> R? {
        let direct: R?? = withLastPicture { picture -> R? in
            guard picture.layout == .yuv420 else { return nil }
            return picture.withPlanes { y, ys, u, us, v, vs in
                body(y, ys, u, us, v, vs, picture.width, picture.height, picture.colors)
            }
        }
        switch direct {
        case nil: return nil
        case .some(.some(let result)): return result
        case .some(nil): break
        }
        if i420For != decoded {
            let converted: (I420Image, ColorSpace)? = withLastPicture { picture in
                var image = i420.flatMap { $0.width == picture.width && $0.height == picture.height ? $0 : nil }
                    ?? I420Image(width: picture.width, height: picture.height)
                i420 = nil  // one reference while it is written
                let (ys, cs) = (image.lumaStride, image.chromaStride)
                image.withMutablePlanes { y, u, v in
                    picture.convertToI420(y: y, yStride: ys, u: u, uStride: cs, v: v, vStride: cs, scratch: &scratch)
                }
                return (image, picture.i420Colors)
            }
            guard let converted else { return nil }
            (i420, i420Colors) = (converted.0, converted.1)
            i420For = decoded
        }
        guard let image = i420 else { return nil }
        return image.withPlanes { y, u, v in
            body(y, image.lumaStride, u, image.chromaStride, v, image.chromaStride, image.width, image.height, i420Colors)
        }
    }

    /// The last decoded picture as an owned I420 image (tests, probes).
    public func lastPicture() -> I420Image? {
        withLastI420 { y, ys, u, us, v, vs, width, height, _ in
            I420Image(copying: y, yStride: ys, u: u, uStride: us, v: v, vStride: vs, width: width, height: height)
        }
    }
}
