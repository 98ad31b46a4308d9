public import ShareColor
internal import CX264
#if canImport(Glibc)
internal import Glibc
#endif

/// Why the H.264 encoder could not start or encode.
public struct EncoderError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { "H.264 encoder: \(message)" }
    init(_ message: String) { self.message = message }
}

/// What the encoder produced for one picture.
public struct EncodedFrameInfo: Sendable, Equatable {
    public var isKeyframe: Bool
    /// Size of the Annex B access unit in bytes.
    public var size: Int
    /// The quantizer x264 coded the picture at (the rate control's choice).
    public var quantizer: Double
}

/// x264 configured for screen sharing: the ultrafast preset with the
/// zerolatency tune (no B-frames, no lookahead, sliced threads), Annex B
/// output with SPS/PPS repeated before each IDR, each picture at the
/// quantizer a `QuantizerControl` chooses for the bitrate (x264's ABR would
/// analyse a half-size copy of every picture first, whatever changed).
///
/// With `sliceMaxSize` each picture is cut into slices of at most that many
/// bytes, and each slice is handed over as soon as x264 has written it
/// (x264's `nalu_process`) and the slices above it have been, while the
/// rest of the picture is still being encoded: its packets can leave before
/// the frame is done. On sliced threads each thread writes a band of the
/// picture: the top band's slices leave as they are written, the others
/// once the band above is done.
public final class H264Encoder {
    public struct Configuration: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var fps: Int
        public var bitrateKbps: Int
        /// Frames between refreshes: with `intraRefresh`, the length of one
        /// sweep of intra blocks across the picture; without, between IDR
        /// frames. `never`: none but the first picture and those asked for.
        public var keyframeInterval: Int
        /// Encoder threads; 0 lets x264 choose from the core count.
        public var threads: Int
        /// Periodic intra refresh (a column of intra blocks sweeping across
        /// the picture) instead of periodic IDR frames, so no frame is much
        /// larger than the others; an IDR comes only when asked for.
        public var intraRefresh: Bool
        /// The rate control's bucket in frames' worth of the bitrate: how far
        /// one frame may exceed the average (and so how large an asked-for
        /// IDR may be).
        public var vbvFrames: Double
        /// The largest slice in bytes (NAL overhead included), a whole number
        /// of RTP packets' payload; nil: one slice per picture (per thread).
        public var sliceMaxSize: Int?
        /// The fewest slices a picture is cut into (each of at most that
        /// share of its macroblocks), however few bytes it takes: a streamed
        /// picture's first slices then leave, and can be decoded, while
        /// x264 still encodes the rest. 1: slices end by size only.
        public var minimumSlices: Int

        public init(width: Int, height: Int, fps: Int = 30, bitrateKbps: Int? = nil, keyframeInterval: Int? = nil,
                    threads: Int = 0, intraRefresh: Bool = true, vbvFrames: Double = 4, sliceMaxSize: Int? = nil,
                    minimumSlices: Int = 1) {
            self.width = width
            self.height = height
            self.fps = fps
            self.bitrateKbps = bitrateKbps ?? Self.defaultBitrateKbps(width: width, height: height, fps: fps)
            self.keyframeInterval = keyframeInterval ?? fps * 3
            self.threads = threads
            self.intraRefresh = intraRefresh
            self.vbvFrames = vbvFrames
            self.sliceMaxSize = sliceMaxSize
            self.minimumSlices = minimumSlices
        }

        /// A `keyframeInterval` of no periodic refresh at all (x264's
        /// infinite interval): for receivers that ask for what they need.
        public static let never = Int(X264_KEYINT_MAX_INFINITE)

        /// Whether slices are handed over while the picture is encoded
        /// (from x264's threads, in order), rather than once it is done.
        var streamsSlices: Bool { sliceMaxSize != nil }

        /// The picture's 16x16 macroblocks.
        var macroblocks: Int { ((width + 15) / 16) * ((height + 15) / 16) }

        /// Macroblocks the intra-refresh column codes in a picture: the
        /// picture swept once every `keyframeInterval` pictures.
        var refreshMacroblocks: Int {
            intraRefresh && keyframeInterval < Self.never ? (macroblocks + keyframeInterval - 1) / max(1, keyframeInterval) : 0
        }

        /// A bitrate sized to the picture: 0.1 bit per pixel per frame,
        /// which keeps text sharp for screen content (2.8 Mbit/s at 720p30,
        /// 6.2 Mbit/s at 1080p30).
        public static func defaultBitrateKbps(width: Int, height: Int, fps: Int) -> Int {
            max(300, Int(Double(width * height * fps) * 0.1 / 1000))
        }
    }

    public let configuration: Configuration
    private let encoder: OpaquePointer
    private var picture = x264_picture_t()
    private var frameCount: Int64 = 0
    /// Each picture's quantizer, for the bitrate.
    public private(set) var rate: QuantizerControl
    /// Pictures since the last IDR (x264 starts with one).
    private var sinceKeyframe = Int.max
    /// The last picture's time on the pictures' clock (nanoseconds).
    private var lastTime: UInt64?
    /// Where x264's NAL units go as they are written, grouped into parts.
    private let parts: SliceCollector

    public init(_ configuration: Configuration) throws(EncoderError) {
        try Self.validate(configuration)
        var param = try Self.parameters(configuration)
        let c = configuration
        guard let encoder = share_x264_encoder_open(&param) else {
            throw EncoderError("x264_encoder_open failed for \(c.width)x\(c.height)")
        }
        self.encoder = encoder
        self.configuration = configuration
        // The first picture (an IDR) may take a third of the bucket: sent
        // before any feedback, it must not overflow a slow path's queue on its own.
        rate = QuantizerControl(bitrate: Double(c.bitrateKbps) * 1000, fps: c.fps, macroblocks: c.macroblocks,
                                refreshMacroblocks: c.refreshMacroblocks, bufferFrames: c.vbvFrames, startFullness: 0.7)
        parts = SliceCollector(macroblocks: Int32(c.macroblocks))
        x264_picture_init(&picture)
        if c.streamsSlices { picture.opaque = Unmanaged.passUnretained(parts).toOpaque() }
    }

    /// Refuses what x264 (or a receiver) cannot take, saying why.
    private static func validate(_ c: Configuration) throws(EncoderError) {
        guard c.width >= 16, c.height >= 16, c.width % 2 == 0, c.height % 2 == 0 else {
            throw EncoderError("\(c.width)x\(c.height) is not an even size of at least 16x16")
        }
        guard (1...240).contains(c.fps) else { throw EncoderError("fps \(c.fps) outside 1-240") }
        guard c.bitrateKbps >= 16 else { throw EncoderError("bitrate \(c.bitrateKbps) kbit/s is too low") }
        if let size = c.sliceMaxSize, size < 100 { throw EncoderError("slices of at most \(size) bytes are too small") }
        guard (1...64).contains(c.minimumSlices) else { throw EncoderError("\(c.minimumSlices) slices a picture: 1-64") }
    }

    /// x264's parameters for `c`: ultrafast and zero latency, a told
    /// quantizer a picture, the colours said, slices as configured,
    /// baseline-compatible.
    private static func parameters(_ c: Configuration) throws(EncoderError) -> x264_param_t {
        var param = x264_param_t()
        guard x264_param_default_preset(&param, "ultrafast", "zerolatency") == 0 else {
            throw EncoderError("x264 rejected preset ultrafast/zerolatency")
        }
        param.i_width = Int32(c.width)
        param.i_height = Int32(c.height)
        param.i_csp = X264_CSP_I420
        param.i_fps_num = UInt32(c.fps)
        param.i_fps_den = 1
        // Constant frame rate: with b_vfr_input x264 holds each picture
        // until the next one's timestamp arrives (a frame of latency). A
        // lower capture rate is a higher bitrate per frame instead (setBitrate).
        param.i_timebase_num = 1
        param.i_timebase_den = UInt32(c.fps)
        param.b_vfr_input = 0
        param.i_keyint_max = Int32(min(max(1, c.keyframeInterval), Configuration.never))
        param.i_keyint_min = min(param.i_keyint_max, Int32(c.fps))
        param.i_threads = Int32(c.threads)
        param.i_log_level = X264_LOG_WARNING
        // Every picture is told its quantizer (`rate`). x264 clamps a told
        // quantizer to the span of its I, P and B quantizers in CQP: the
        // I and B factors (unused otherwise: every picture is told) stretch
        // that span over the rate control's.
        param.rc.i_rc_method = X264_RC_CQP
        let finestChosen = min(QuantizerControl.finestStill, QuantizerControl.finestOpen)
        let (finest, coarsest) = (Double(finestChosen), Double(QuantizerControl.coarsest))
        let middle = ((finest + coarsest) / 2).rounded()
        param.rc.i_qp_constant = Int32(middle)
        param.rc.f_ip_factor = Float(exp2((middle - finest + 0.5) / 6))
        param.rc.f_pb_factor = Float(exp2((coarsest - middle) / 6))
        param.b_intra_refresh = c.intraRefresh ? 1 : 0
        // Pictures may say which macroblocks did not change since the one
        // before (`encode(_:changes:)`): x264 skips them without analysis.
        param.analyse.b_mb_info = 1
        param.b_repeat_headers = 1
        param.b_annexb = 1
        // Say what the pictures are: converted from the screen (sRGB: BT.709
        // primaries, sRGB's transfer) with libyuv's BT.601 matrix, video
        // range. A receiver that guesses from the size would take 720p and
        // up for BT.709 and shift every colour.
        param.vui.i_colorprim = 1  // bt709
        param.vui.i_transfer = 13  // iec61966-2-1
        param.vui.i_colmatrix = 6  // smpte170m
        param.vui.b_fullrange = 0
        if let size = c.sliceMaxSize { param.i_slice_max_size = Int32(size) }
        if c.minimumSlices > 1 {
            param.i_slice_max_mbs = Int32((c.macroblocks + c.minimumSlices - 1) / c.minimumSlices)
        }
        if c.streamsSlices {
            // Called from inside x264_encoder_encode for every NAL unit as it
            // is finished (on sliced threads from each thread, out of the
            // picture's order), with the picture's opaque pointer: the collector.
            param.nalu_process = { encoder, nal, opaque in
                guard let encoder, let nal, let opaque else { return }
                Unmanaged<SliceCollector>.fromOpaque(opaque).takeUnretainedValue().encapsulate(nal, encoder: encoder)
            }
        }
        // Baseline-compatible output that every RTP peer decodes.
        guard x264_param_apply_profile(&param, "baseline") == 0 else {
            throw EncoderError("x264 rejected the baseline profile")
        }
        return param
    }

    deinit { x264_encoder_close(encoder) }

    /// The stream's SPS and PPS NAL units (without start codes), for SDP's
    /// sprop-parameter-sets and recorder extradata.
    public func parameterSets() -> [[UInt8]] {
        guard configuration.streamsSlices else { return Self.parameterSets(of: encoder) }
        // x264 would hand a streaming encoder's headers to `nalu_process`
        // with no picture to say where they go: a twin without the callback,
        // opened with the same parameters, writes the same sets.
        var param = x264_param_t()
        x264_encoder_parameters(encoder, &param)
        param.nalu_process = nil
        guard let twin = share_x264_encoder_open(&param) else { return [] }
        defer { x264_encoder_close(twin) }
        return Self.parameterSets(of: twin)
    }

    private static func parameterSets(of encoder: OpaquePointer) -> [[UInt8]] {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        guard x264_encoder_headers(encoder, &nals, &count) >= 0, let nals else { return [] }
        var sets: [[UInt8]] = []
        for i in 0..<Int(count) {
            let nal = nals[i]
            guard nal.i_type == Int32(NAL_SPS.rawValue) || nal.i_type == Int32(NAL_PPS.rawValue),
                  let payload = nal.p_payload else { continue }
            // Annex B output: skip the start code x264 wrote.
            let bytes = Array(UnsafeBufferPointer(start: payload, count: Int(nal.i_payload)))
            let skip = bytes.starts(with: [0, 0, 0, 1]) ? 4 : (bytes.starts(with: [0, 0, 1]) ? 3 : 0)
            sets.append(Array(bytes[skip...]))
        }
        return sets
    }

    /// Encodes `image` and replaces `accessUnit` with the Annex B output.
    /// Returns nil when x264 emitted nothing for this picture.
    public func encode(_ image: I420Image, forceKeyframe: Bool = false,
                       into accessUnit: inout [UInt8]) throws(EncoderError) -> EncodedFrameInfo? {
        // x264 only reads the picture: its planes are lent without a copy.
        let result = image.withPlanes { y, _, _ in
            let planes = I420Planes(packedAt: UnsafeMutablePointer(mutating: y), width: image.width, height: image.height)
            return Result { () throws(EncoderError) in try encode(planes, forceKeyframe: forceKeyframe, into: &accessUnit) }
        }
        return try result.get()
    }

    /// Encodes the picture in `planes` and replaces `accessUnit` with the
    /// whole Annex B output. Returns nil when x264 emitted nothing.
    package func encode(_ planes: I420Planes, forceKeyframe: Bool = false, changes: [Rectangle]? = nil, time: UInt64? = nil,
                        into accessUnit: inout [UInt8]) throws(EncoderError) -> EncodedFrameInfo? {
        accessUnit.removeAll(keepingCapacity: true)
        return try encode(planes, forceKeyframe: forceKeyframe, changes: changes, time: time) { part, _ in
            accessUnit.append(contentsOf: part)
        }
    }

    /// Encodes the picture in `planes` (x264 copies it in before returning)
    /// and hands the Annex B output to `emit` in parts, in order: each part
    /// is one slice with the parameter sets or SEI written just before it,
    /// and the last part says so. With `sliceMaxSize` the parts come while
    /// x264 is still encoding the rest of the picture, on sliced threads
    /// from x264's own threads (one call at a time). The bytes are lent for
    /// the call only. Returns nil when x264 emitted
    /// nothing for this picture.
    ///
    /// `changes`, when known, are the only parts that differ from the picture
    /// encoded just before: every macroblock outside them is marked constant
    /// (X264_MBINFO_CONSTANT) and skipped without analysis, so a small change
    /// costs x264 in proportion to its size.
    ///
    /// `time` is when the picture was taken (monotonic nanoseconds), for
    /// the rate control's bucket; nil: a frame interval after the one before.
    package func encode(_ planes: I420Planes, forceKeyframe: Bool = false, changes: [Rectangle]? = nil, time: UInt64? = nil,
                        emit: (_ part: UnsafeBufferPointer<UInt8>, _ endsFrame: Bool) -> Void) throws(EncoderError) -> EncodedFrameInfo? {
        guard planes.width == configuration.width, planes.height == configuration.height else {
            throw EncoderError("picture is \(planes.width)x\(planes.height), encoder is \(configuration.width)x\(configuration.height)")
        }
        var output = x264_picture_t()
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        let c = configuration
        let keyframe = forceKeyframe || sinceKeyframe == Int.max || (!c.intraRefresh && sinceKeyframe + 1 >= c.keyframeInterval)
        let flags = changes.map { Self.constantMacroblocks(width: planes.width, height: planes.height, except: $0) }
        let changed = flags.map { flags in (0..<c.macroblocks).reduce(0) { $0 + (flags[$1] == 0 ? 1 : 0) } } ?? c.macroblocks
        let kind: QuantizerControl.Kind = keyframe ? .keyframe : (flags == nil ? .whole : .changes)
        let now = time ?? lastTime.map { $0 &+ 1_000_000_000 / UInt64(c.fps) } ?? 0
        lastTime = now
        let quantizer = rate.quantizer(for: kind, changed: changed, at: now)
        picture.i_qpplus1 = Int32(quantizer + 1)
        picture.i_type = forceKeyframe ? X264_TYPE_IDR : X264_TYPE_AUTO
        picture.i_pts = frameCount
        frameCount += 1
        picture.img.i_csp = X264_CSP_I420
        picture.img.i_plane = 3
        picture.img.plane = (planes.y, planes.u, planes.v, nil)
        picture.img.i_stride = (Int32(planes.lumaStride), Int32(planes.chromaStride), Int32(planes.chromaStride), 0)
        picture.prop.mb_info = flags
        // x264 keeps the flags with its frame and frees them when done with it.
        picture.prop.mb_info_free = changes == nil ? nil : { free($0) }
        let size = withoutActuallyEscaping(emit) { emit in
            parts.begin(emit)
            defer { parts.end() }
            let size = x264_encoder_encode(encoder, &nals, &count, &picture, &output)
            if size > 0, !configuration.streamsSlices, let nals {
                // Written already (Annex B, escaped): grouped the same way.
                for index in 0..<Int(count) { parts.take(nals[index]) }
            }
            return size
        }
        picture.img.plane = (nil, nil, nil, nil)
        picture.prop.mb_info = nil
        picture.prop.mb_info_free = nil
        guard size >= 0 else { throw EncoderError("x264_encoder_encode failed (\(size))") }
        guard size > 0, let frame = parts.finished else { return nil }
        sinceKeyframe = frame.idr ? 0 : sinceKeyframe &+ 1
        rate.encoded(frame.idr ? .keyframe : kind, changed: changed, quantizer: quantizer, bits: frame.bytes * 8, at: now)
        return EncodedFrameInfo(isKeyframe: frame.idr, size: frame.bytes, quantizer: Double(output.i_qpplus1 - 1))
    }

    /// One flag per macroblock (16x16 pixels, row by row): constant,
    /// except where a macroblock touches one of `changes`. Allocated with
    /// malloc, for x264 to free.
    package static func constantMacroblocks(width: Int, height: Int, except changes: [Rectangle]) -> UnsafeMutablePointer<UInt8> {
        let (columns, rows) = ((width + 15) / 16, (height + 15) / 16)
        let flags = malloc(columns * rows)!.assumingMemoryBound(to: UInt8.self)
        flags.initialize(repeating: UInt8(X264_MBINFO_CONSTANT), count: columns * rows)
        for area in changes where area.width > 0 && area.height > 0 {
            let (left, right) = (max(0, area.x / 16), min(columns, (area.x + area.width + 15) / 16))
            let (top, bottom) = (max(0, area.y / 16), min(rows, (area.y + area.height + 15) / 16))
            for row in top..<max(top, bottom) { (flags + row * columns + left).update(repeating: 0, count: max(0, right - left)) }
        }
        return flags
    }

    /// The bitrate the encoder aims at now (kbit/s).
    public var bitrateKbps: Int { Int(rate.bitrate / 1000) }

    /// Changes the target bitrate, and the bucket with it: the next
    /// picture is coded to it.
    public func setBitrate(kbps: Int) {
        rate.bitrate = Double(max(16, kbps)) * 1000
    }

    /// Whether the path is open (the whole configured bitrate is the
    /// stream's): the rate control may then spend what it leaves unspent
    /// on finer pictures (`QuantizerControl.open`).
    public var openPath: Bool {
        get { rate.open }
        set { rate.open = newValue }
    }
}
