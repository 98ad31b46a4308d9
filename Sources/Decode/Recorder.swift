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
    private let packet: UnsafeMutablePointer<AVPacket>
    private var firstTimestamp: Int64?
    private var lastPTS: Int64 = -1
    private var pending: (accessUnit: [UInt8], timestamp: Int64, isKeyframe: Bool)?
    private var lastDuration: Int64 = 3000
    public private(set) var framesWritten = 0

    /// Opens `path` for a `width` x `height` H.264 stream whose SPS and PPS
    /// are `parameterSets` (Annex B extradata; MP4 gets avcC from it).
    public init(path: String, width: Int, height: Int, parameterSets: [[UInt8]]) throws(LibAVError) {
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
        do {
            try LibAVError.check(avio_open(&ctx.pointee.pb, path, AVIO_FLAG_WRITE), "avio_open \(path)")
            var options: OpaquePointer?
            if container == .fragmentedMP4 {
                // An empty moov up front, then one moof+mdat per flushed frame.
                av_dict_set(&options, "movflags", "frag_custom+empty_moov+default_base_moof", 0)
            }
            defer { av_dict_free(&options) }
            try LibAVError.check(avformat_write_header(ctx, &options), "avformat_write_header")
            avio_flush(ctx.pointee.pb)
        } catch {
            close(writeTrailer: false)
            throw error
        }
    }

    deinit { close(writeTrailer: true) }

    /// Records one access unit with its 90 kHz RTP timestamp (unwrapped);
    /// the previous one is flushed to the file now that its duration is known.
    public func write(accessUnit: [UInt8], timestamp90kHz: Int64, isKeyframe: Bool) throws(LibAVError) {
        guard context != nil else { throw LibAVError(operation: "write", code: -1, message: "recording is closed") }
        if let previous = pending {
            let duration = timestamp90kHz - previous.timestamp
            if duration > 0 { lastDuration = duration }
            try flush(previous.accessUnit, timestamp: previous.timestamp, duration: max(duration, 1),
                      isKeyframe: previous.isKeyframe)
        }
        pending = (accessUnit, timestamp90kHz, isKeyframe)
    }

    private func flush(_ accessUnit: [UInt8], timestamp timestamp90kHz: Int64, duration: Int64,
                       isKeyframe: Bool) throws(LibAVError) {
        guard let context else { throw LibAVError(operation: "write", code: -1, message: "recording is closed") }
        let first = firstTimestamp ?? timestamp90kHz
        firstTimestamp = first
        let clock = AVRational(num: 1, den: 90_000)
        var pts = av_rescale_q(timestamp90kHz - first, clock, stream.pointee.time_base)
        if pts <= lastPTS { pts = lastPTS + 1 }  // a muxer refuses non-increasing timestamps
        lastPTS = pts
        try LibAVError.check(av_new_packet(packet, Int32(accessUnit.count)), "av_new_packet")
        defer { av_packet_unref(packet) }
        accessUnit.withUnsafeBufferPointer { packet.pointee.data.update(from: $0.baseAddress!, count: $0.count) }
        packet.pointee.pts = pts
        packet.pointee.dts = pts
        packet.pointee.duration = max(1, av_rescale_q(duration, clock, stream.pointee.time_base))
        packet.pointee.stream_index = stream.pointee.index
        if isKeyframe { packet.pointee.flags |= AV_PKT_FLAG_KEY }
        try LibAVError.check(av_write_frame(context, packet), "av_write_frame")
        // A NULL packet ends the Matroska cluster / MP4 fragment now.
        try LibAVError.check(av_write_frame(context, nil), "flush")
        avio_flush(context.pointee.pb)
        framesWritten += 1
    }

    /// Writes the held frame and the trailer (cues, durations) and closes the file.
    public func finish() { close(writeTrailer: true) }

    private func close(writeTrailer: Bool) {
        guard let context else { return }
        if writeTrailer, let last = pending {
            pending = nil
            try? flush(last.accessUnit, timestamp: last.timestamp, duration: lastDuration, isKeyframe: last.isKeyframe)
        }
        if writeTrailer && context.pointee.pb != nil { av_write_trailer(context) }
        if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
        self.context = nil
        var pkt: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&pkt)
    }
}
