internal import CLibAV

/// Writes received H.264 access units to a file without re-encoding, so
/// that the file plays whenever the process stops, even by SIGKILL: each
/// frame is flushed as its own Matroska cluster or fragmented-MP4 fragment.
/// A frame is held until the next one arrives so that it is written with its
/// true duration (a fragment cannot be amended once flushed); a kill loses
/// at most that one frame, and `framesWritten` counts only flushed frames.
public final class Recorder {
    public enum Container: String, Sendable {
        case matroska
        case fragmentedMP4

        /// The container for a file name's extension (.mkv, .mp4, .m4v, .mov).
        public init?(path: String) {
            let lower = path.lowercased()
            if lower.hasSuffix(".mkv") {
                self = .matroska
            } else if lower.hasSuffix(".mp4") || lower.hasSuffix(".m4v") || lower.hasSuffix(".mov") {
                self = .fragmentedMP4
            } else {
                return nil
            }
        }

        var muxer: String { self == .matroska ? "matroska" : "mp4" }
    }

    public let path: String
    public let container: Container
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let stream: UnsafeMutablePointer<AVStream>
    private var audioStreams: [UnsafeMutablePointer<AVStream>] = []
    private var audioLastPTS: [Int64] = []
    /// Where each audio track's written sound ends, in the track's time base.
    private var audioEnd: [Int64] = []
    /// Each audio track's last Opus TOC byte: holes are filled in its mode.
    private var audioTOC: [UInt8] = []
    private let packet: UnsafeMutablePointer<AVPacket>
    private var lastDTS = Int64.min
    private var decodeTimes: DecodeTimes
    /// The held video frame, on the recording's timeline in microseconds.
    /// Its presentation and decode times (the same without B-frames).
    private var pending: (accessUnit: [UInt8], time: Int64, decodeTime: Int64, isKeyframe: Bool)?
    private var lastDuration: Int64 = 33_333
    /// The first video frame's time: zero on the file's timeline.
    private var origin: Int64?
    public private(set) var framesWritten = 0
    public private(set) var audioPacketsWritten = 0
    public var audioTrackCount: Int { audioStreams.count }
    private static let microseconds = AVRational(num: 1, den: 1_000_000)

    /// Opens `path` for a `width` x `height` H.264 stream whose SPS and PPS
    /// are `parameterSets` (Annex B extradata; MP4 gets avcC from it) and
    /// one Opus track per entry of `audioChannels`.
    /// A stream with B-frames (`reorderDepth` pictures sent ahead of one
    /// shown before them) is written with decode times apart from the
    /// presentation times it comes with.
    public init(path: String, width: Int, height: Int, parameterSets: [[UInt8]],
                audioChannels: [Int] = [], reorderDepth: Int = 0) throws(LibAVError) {
        decodeTimes = DecodeTimes(depth: reorderDepth)
        _ = LibAVLogging.configured
        guard let container = Container(path: path) else {
            throw LibAVError(operation: "record", code: -1,
                             message: "cannot tell the container from \"\(path)\": use .mkv or .mp4")
        }
        self.path = path
        self.container = container
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try LibAVError.check(avformat_alloc_output_context2(&ctx, nil, container.muxer, path), "avformat_alloc_output_context2")
        guard let ctx, let stream = avformat_new_stream(ctx, nil), let packet = av_packet_alloc() else {
            throw LibAVError(operation: "avformat_new_stream", code: -1, message: "out of memory")
        }
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.codec_id = AV_CODEC_ID_H264
        parameters.pointee.width = Int32(width)
        parameters.pointee.height = Int32(height)
        parameters.pointee.video_delay = Int32(max(0, reorderDepth))
        let extradata: [UInt8] = parameterSets.flatMap { [0, 0, 0, 1] + $0 }
        if !extradata.isEmpty, let buffer = av_mallocz(extradata.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) {
            extradata.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            parameters.pointee.extradata = buffer.assumingMemoryBound(to: UInt8.self)
            parameters.pointee.extradata_size = Int32(extradata.count)
        }
        stream.pointee.time_base = AVRational(num: 1, den: 90_000)
        self.stream = stream
        self.packet = packet
        self.context = ctx
        for channels in audioChannels {
            guard let audio = avformat_new_stream(ctx, nil) else {
                close(writeTrailer: false)
                throw LibAVError(operation: "avformat_new_stream", code: -1, message: "out of memory")
            }
            let p = audio.pointee.codecpar!
            p.pointee.codec_type = AVMEDIA_TYPE_AUDIO
            p.pointee.codec_id = AV_CODEC_ID_OPUS
            p.pointee.sample_rate = 48_000
            av_channel_layout_default(&p.pointee.ch_layout, Int32(channels))
            // RFC 7845 §5.1 identification header: "OpusHead", version 1,
            // channels, pre-skip, 48000 Hz, gain 0, mapping family 0. The
            // pre-skip is libopus's lookahead at 48 kHz (312 samples); with 0,
            // libavcodec's native decoder garbles the first frames.
            let preSkip = UInt16(312)
            let head: [UInt8] = Array("OpusHead".utf8)
                + [1, UInt8(channels), UInt8(preSkip & 0xFF), UInt8(preSkip >> 8), 0x80, 0xBB, 0, 0, 0, 0, 0]
            p.pointee.initial_padding = Int32(preSkip)
            if let buffer = av_mallocz(head.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) {
                head.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
                p.pointee.extradata = buffer.assumingMemoryBound(to: UInt8.self)
                p.pointee.extradata_size = Int32(head.count)
            }
            audio.pointee.time_base = AVRational(num: 1, den: 48_000)
            audioStreams.append(audio)
            audioLastPTS.append(-1)
            audioEnd.append(0)
            audioTOC.append(0)
        }
        do {
            try LibAVError.check(avio_open(&ctx.pointee.pb, path, AVIO_FLAG_WRITE), "avio_open \(path)")
            var options: OpaquePointer?
            // B-frames' first decode times fall before the first picture's
            // presentation: every track is shifted by the same amount.
            if reorderDepth > 0 { ctx.pointee.avoid_negative_ts = AVFMT_AVOID_NEG_TS_MAKE_NON_NEGATIVE }
            if container == .fragmentedMP4 {
                // An empty moov up front, then one moof+mdat per flushed frame.
                av_dict_set(&options, "movflags", "frag_custom+empty_moov+default_base_moof", 0)
            }
            defer { av_dict_free(&options) }
            try LibAVError.check(avformat_write_header(ctx, &options), "avformat_write_header")
            try Self.flush(ctx)
        } catch {
            close(writeTrailer: false)
            throw error
        }
    }

    deinit { close(writeTrailer: true) }

    /// Records one access unit at `time` microseconds (any origin, the same
    /// for every track: the first video frame becomes zero); the previous one
    /// is flushed now that its duration is known.
    public func writeVideo(accessUnit: [UInt8], time absolute: Int64, isKeyframe: Bool) throws(LibAVError) {
        guard context != nil else { throw LibAVError(operation: "write", code: -1, message: "recording is closed") }
        let start = origin ?? absolute
        origin = start
        let time = absolute - start
        let decodeTime = decodeTimes.depth > 0 ? decodeTimes.next(pts: time, duration: lastDuration) : time
        if let previous = pending {
            // A frame lasts until the next is decoded (with B-frames the
            // next may be shown before it).
            let duration = decodeTime - previous.decodeTime
            if duration > 0 { lastDuration = duration }
            try flushVideo(previous.accessUnit, time: previous.time, decodeTime: previous.decodeTime,
                           duration: max(duration, 1), isKeyframe: previous.isKeyframe)
        }
        pending = (accessUnit, time, decodeTime, isKeyframe)
    }

    /// The same with a 90 kHz RTP timestamp (unwrapped) as the time.
    public func write(accessUnit: [UInt8], timestamp90kHz: Int64, isKeyframe: Bool) throws(LibAVError) {
        try writeVideo(accessUnit: accessUnit, time: timestamp90kHz * 100 / 9, isKeyframe: isKeyframe)
    }

    /// Writes one Opus packet of `track` covering `samples` (48 kHz) from
    /// `time` microseconds, and flushes it. Packets before the start are dropped.
    public func writeAudio(track: Int, packet opus: ArraySlice<UInt8>, time absolute: Int64, samples: Int) throws(LibAVError) {
        guard context != nil, let origin, track < audioStreams.count, !opus.isEmpty else { return }
        let time = absolute - origin
        guard time >= 0 else { return }
        let audio = audioStreams[track]
        let pts = av_rescale_q(time, Self.microseconds, audio.pointee.time_base)
        // A packet that would overlap the previous one is dropped, never
        // squeezed in: squeezing would shift all sound after it.
        guard pts > audioLastPTS[track] else { return }
        // A hole (the track started after the video, or packets were lost)
        // is filled, so the track plays continuously from the start in every
        // container (fragmented MP4 would otherwise stretch the first sample
        // over the hole).
        try fillHole(track: track, until: pts, toc: opus[opus.startIndex])
        try writeAudioPacket(track: track, opus, pts: pts, samples: samples)
        audioTOC[track] = opus[opus.startIndex]
        audioPacketsWritten += 1
    }

    /// Fills a hole with Opus packets that hold only a TOC byte: a frame of
    /// length zero, which decoders conceal (RFC 6716 §3.2.1; libopus fades the
    /// sound out, from silence when nothing came before). The TOC is the
    /// stream's own (the packet before the hole, or after it at the start),
    /// so the decoder never switches mode (SILK, hybrid, CELT) or channel
    /// count for a filler: libavcodec's native decoder, which most players
    /// use, garbles the sound for seconds after a hybrid-CELT-hybrid switch.
    private func fillHole(track: Int, until pts: Int64, toc next: UInt8) throws(LibAVError) {
        // Code 0 (one frame) with the configuration and stereo flag kept.
        let toc = (audioLastPTS[track] < 0 ? next : audioTOC[track]) & 0xFC
        let samples = Self.opusFrameSamples(toc: toc)
        let step = max(1, av_rescale_q(Int64(samples), AVRational(num: 1, den: 48_000), audioStreams[track].pointee.time_base))
        var end = audioEnd[track]
        var frames = 0
        while pts - end >= step && frames < 3000 {  // at most a minute of 20 ms frames per hole
            try writeAudioPacket(track: track, [toc], pts: end, samples: samples)
            end = audioEnd[track]
            frames += 1
        }
    }

    /// Samples (48 kHz) in one frame of the TOC's configuration (RFC 6716 §3.1).
    static func opusFrameSamples(toc: UInt8) -> Int {
        let config = Int(toc >> 3)
        let milliseconds10: Int = switch config {
        case 0...11: [100, 200, 400, 600][config % 4]  // SILK: 10, 20, 40, 60 ms
        case 12...15: [100, 200][config % 2]            // hybrid: 10, 20 ms
        default: [25, 50, 100, 200][config % 4]         // CELT: 2.5, 5, 10, 20 ms
        }
        return 48 * milliseconds10 / 10
    }

    private func writeAudioPacket(track: Int, _ opus: ArraySlice<UInt8>, pts: Int64, samples: Int) throws(LibAVError) {
        guard let context else { return }
        let audio = audioStreams[track]
        let duration = av_rescale_q(Int64(samples), AVRational(num: 1, den: 48_000), audio.pointee.time_base)
        audioLastPTS[track] = pts
        audioEnd[track] = pts + duration
        try LibAVError.check(av_new_packet(packet, Int32(opus.count)), "av_new_packet")
        defer { av_packet_unref(packet) }
        opus.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        packet.pointee.pts = pts
        packet.pointee.dts = pts
        packet.pointee.duration = duration
        packet.pointee.stream_index = audio.pointee.index
        packet.pointee.flags |= AV_PKT_FLAG_KEY
        try LibAVError.check(av_write_frame(context, packet), "av_write_frame audio")
        // The muxer buffers the write itself: a full disk shows in the I/O context.
        try Self.check(context, "writing audio")
    }

    /// Flushes the file's buffer and reports a write that failed (no space,
    /// an I/O error): avio keeps such an error in its context, and the
    /// muxer's own calls return success all the same.
    private static func flush(_ context: UnsafeMutablePointer<AVFormatContext>) throws(LibAVError) {
        avio_flush(context.pointee.pb)
        try check(context, "writing the recording")
    }

    private static func check(_ context: UnsafeMutablePointer<AVFormatContext>, _ operation: String) throws(LibAVError) {
        guard let pb = context.pointee.pb else { return }
        let error = pb.pointee.error
        guard error < 0 else { return }
        throw LibAVError(operation: operation, code: error, message: LibAVError.describe(error))
    }

    private func flushVideo(_ accessUnit: [UInt8], time: Int64, decodeTime: Int64, duration: Int64,
                            isKeyframe: Bool) throws(LibAVError) {
        guard let context else { throw LibAVError(operation: "write", code: -1, message: "recording is closed") }
        var pts = av_rescale_q(time, Self.microseconds, stream.pointee.time_base)
        let ticks = max(1, av_rescale_q(duration, Self.microseconds, stream.pointee.time_base))
        // A muxer refuses decode times that do not rise.
        var dts = av_rescale_q(decodeTime, Self.microseconds, stream.pointee.time_base)
        if dts <= lastDTS { dts = lastDTS + 1 }
        lastDTS = dts
        if decodeTimes.depth == 0 { pts = dts } else { pts = max(pts, dts) }
        try LibAVError.check(av_new_packet(packet, Int32(accessUnit.count)), "av_new_packet")
        defer { av_packet_unref(packet) }
        accessUnit.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        packet.pointee.pts = pts
        packet.pointee.dts = dts
        packet.pointee.duration = ticks
        packet.pointee.stream_index = stream.pointee.index
        if isKeyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        try LibAVError.check(av_write_frame(context, packet), "av_write_frame")
        // A NULL packet ends the Matroska cluster / MP4 fragment now.
        try LibAVError.check(av_write_frame(context, nil), "flush")
        try Self.flush(context)
        framesWritten += 1
    }

    /// Writes the held frame and the trailer (cues, durations) and closes
    /// the file; throws when any of that could not be written (what was
    /// flushed before stays playable).
    public func finish() throws(LibAVError) {
        if let error = close(writeTrailer: true) { throw error }
    }

    /// Closes the file, after the held frame and the trailer when asked;
    /// the first write that failed, if any.
    @discardableResult
    private func close(writeTrailer: Bool) -> LibAVError? {
        guard let context else { return nil }
        var failure: LibAVError?
        if writeTrailer, let last = pending {
            pending = nil
            do {
                try flushVideo(last.accessUnit, time: last.time, decodeTime: last.decodeTime, duration: lastDuration,
                               isKeyframe: last.isKeyframe)
            } catch {
                failure = error
            }
        }
        if writeTrailer && context.pointee.pb != nil && failure == nil {
            do {
                try LibAVError.check(av_write_trailer(context), "av_write_trailer")
                try Self.flush(context)
            } catch {
                failure = error
            }
        }
        if context.pointee.pb != nil {
            let closed = avio_closep(&context.pointee.pb)
            if failure == nil, closed < 0 {
                failure = LibAVError(operation: "closing the recording", code: closed, message: LibAVError.describe(closed))
            }
        }
        avformat_free_context(context)
        self.context = nil
        var pkt: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&pkt)
        return failure
    }
}

/// Decode times for a stream whose pictures are sent up to `depth` ahead of
/// one shown before them (B-frames), from their presentation times in the
/// order they are sent: each is the smallest of the last `depth + 1`
/// presentation times (the first ones a frame apart below the first, so
/// they start below zero: the file is shifted to start at zero), always
/// rising, so none is after its own presentation.
struct DecodeTimes {
    let depth: Int
    /// The largest presentation times seen, ascending (`depth + 1` of them).
    private var window: [Int64] = []
    private var last = Int64.min

    init(depth: Int) { self.depth = max(0, depth) }

    mutating func next(pts: Int64, duration: Int64) -> Int64 {
        if window.isEmpty {
            window = (0...depth).map { pts - Int64(depth - $0) * duration }
        } else {
            window[0] = pts
            var i = 0
            while i < depth && window[i] > window[i + 1] {
                window.swapAt(i, i + 1)
                i += 1
            }
        }
        var dts = window[0]
        if dts <= last { dts = last + 1 }
        last = dts
        return dts
    }
}
