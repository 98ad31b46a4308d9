internal import ShareBase
internal import ShareDecode
internal import ShareWire
#if canImport(Glibc)
internal import Glibc
internal import ShareSync
#endif

/// The receiver's recording, one complete file per session: the first to
/// the path given, the next ones beside it (`rec-2.mkv`, `rec-3.mkv`, ...).
/// A file cannot gain tracks later, so each opens once its session's audio
/// streams are known: at the first keyframe when the sender said which it
/// sends (share's senders do, in their state announcement); otherwise once
/// they have shown up (200 ms after the first, as `both` sends two) or
/// after 2 s without audio (PulseAudio's first capture can take over a
/// second), or when the session ends first; until then
/// pictures wait in the pre-roll from the first keyframe on, so none is
/// lost. An existing file is never overwritten: a session whose name is
/// taken (an earlier run's recording) takes the next free number, and
/// `notice` says so.
///
/// A write that fails (no space, an I/O error) or a file removed from under
/// it stops that session's recording at once: `notice` says so, `faults`
/// counts it and the pictures not written, and the file keeps what was
/// written before, playable. Pictures go on being shown; the next session
/// tries a new file. Used by the decode thread only.
final class SessionRecording {
    /// What went wrong with the recording, if anything.
    struct Faults: Sendable, Equatable {
        /// Sessions whose recording stopped on a fault.
        var count = 0
        /// The last fault, for people.
        var last: String?
        /// Pictures received after a fault, not recorded.
        var framesNotRecorded = 0
    }

    private let path: String
    private let notice: (String) -> Void
    private var recorder: Recorder?
    private var preroll = Preroll()
    private var session = 1
    /// When this session's first packet and first audio arrived.
    private var firstPacketAt: MonotonicTime?
    private var firstAudioAt: MonotonicTime?
    /// The sender said which audio streams it sends (then the file opens at
    /// the first keyframe, without waiting for sound).
    private var layoutKnown = false
    /// How many pictures the stream sends ahead of one shown before them
    /// (B-frames), as the decoder knows it when the file opens.
    var reorderDepth = 0
    /// Written to the files of earlier sessions.
    private var framesBefore = 0
    private var audioBefore = 0
    private(set) var faults = Faults()
    /// This session's recording stopped on a fault.
    private var stopped = false
    /// The open file, its identity on disk, and when it was last looked for.
    private var file: (path: String, device: UInt, inode: UInt)?
    private var lookedAt = MonotonicTime.zero

    init(path: String, notice: @escaping (String) -> Void = { _ in }) {
        self.path = path
        self.notice = notice
    }

    var framesWritten: Int { framesBefore + (recorder?.framesWritten ?? 0) }
    var audioPacketsWritten: Int { audioBefore + (recorder?.audioPacketsWritten ?? 0) }

    /// Media of this session arrived (its clock starts the 2 s wait).
    func noteMedia(audio: Bool) {
        let now = SystemClock.now()
        if firstPacketAt == nil { firstPacketAt = now }
        if audio && firstAudioAt == nil { firstAudioAt = now }
    }

    /// The sender described its audio streams.
    func noteAudioLayout() { layoutKnown = true }

    /// Whether an audio track of this index can still be recorded (the file,
    /// once open, has the tracks it opened with).
    func accepts(audioTrack index: Int) -> Bool { recorder == nil || index < recorder!.audioTrackCount }

    /// Writes an item, or keeps it until the file opens.
    func add(_ item: Preroll.Item) {
        if stopped {
            if case .video = item { faults.framesNotRecorded += 1 }
            return
        }
        guard recorder != nil else {
            preroll.add(item)
            return
        }
        do {
            try write(item)
            if case .video = item { try checkFileStillThere() }
        } catch {
            fail(error.description)
        }
    }

    /// Opens this session's file when its tracks are known, with the audio
    /// channel counts in track order.
    func openWhenReady(audioChannels: [Int]) {
        guard recorder == nil, !stopped, let first = firstPacketAt else { return }
        let now = SystemClock.now()
        let audioSettled = layoutKnown || (firstAudioAt.map { now.since($0) > .milliseconds(200) } ?? false)
        guard audioSettled || now.since(first) > .seconds(2) else { return }
        do { try open(audioChannels: audioChannels) } catch { fail(error.description) }
    }

    /// Once a second: the file is still where it was written (a recording
    /// removed from under the receiver would go on into an unlinked file).
    private func checkFileStillThere() throws(ReceiverError) {
        let now = SystemClock.now()
        guard let file, now.since(lookedAt) >= .seconds(1) else { return }
        lookedAt = now
        var info = stat()
        guard stat(file.path, &info) == 0, UInt(info.st_dev) == file.device, UInt(info.st_ino) == file.inode else {
            throw .recording("\(file.path) was removed or replaced while recording")
        }
    }

    /// A fault: this session's recording stops (what was written stays
    /// playable), said at once and counted.
    private func fail(_ why: String) {
        let written = recorder?.framesWritten ?? 0
        let path = file?.path ?? Self.path(path, session: session)
        try? recorder?.finish()
        framesBefore += written
        audioBefore += recorder?.audioPacketsWritten ?? 0
        recorder = nil
        file = nil
        stopped = true
        preroll = Preroll()
        faults.count += 1
        faults.last = why
        notice("recording stopped: \(why); \(path) keeps the \(written) frames written before it, and plays; "
               + "the picture goes on")
    }

    /// Opens the file with the tracks known now and writes the pre-roll.
    private func open(audioChannels: [Int]) throws(ReceiverError) {
        guard recorder == nil, !stopped, let keyframe = preroll.firstKeyframe else { return }
        let wanted = Self.path(path, session: session)
        while access(Self.path(path, session: session), F_OK) == 0 { session += 1 }
        let file = Self.path(path, session: session)
        if file != wanted { notice("\(wanted) exists (kept): this session records to \(file)") }
        do {
            recorder = try Recorder(path: file, width: keyframe.width, height: keyframe.height,
                                    parameterSets: ScreenReceiver.parameterSets(of: keyframe.data),
                                    audioChannels: audioChannels, reorderDepth: reorderDepth)
        } catch {
            throw .recording(error.description)
        }
        var info = stat()
        if stat(file, &info) == 0 { self.file = (file, UInt(info.st_dev), UInt(info.st_ino)) }
        lookedAt = SystemClock.now()
        for item in preroll.drain() { try write(item) }
    }

    /// The session ended: its file is finished (complete and playable, even
    /// for a session too short to have opened it yet); the next session
    /// records to the next numbered file. Nothing happens for a session that
    /// brought nothing.
    func endSession(audioChannels: [Int]) {
        guard firstPacketAt != nil || recorder != nil else { return }
        finish(audioChannels: audioChannels)
        framesBefore += recorder?.framesWritten ?? 0
        audioBefore += recorder?.audioPacketsWritten ?? 0
        recorder = nil
        file = nil
        stopped = false
        preroll = Preroll()
        firstPacketAt = nil
        firstAudioAt = nil
        layoutKnown = false
        session += 1
    }

    /// Finishes the file, opening it first when the session ended before it could.
    func finish(audioChannels: [Int]) {
        do {
            try open(audioChannels: audioChannels)
            try recorder?.finish()
        } catch {
            fail("\(error)")
        }
    }

    /// Why nothing could be recorded at `path`, checked before anything is
    /// received (the file itself opens with the first session): its
    /// directory is missing, not a directory, or not writable. nil: fine.
    static func directoryProblem(_ path: String) -> String? {
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        var info = stat()
        guard stat(directory, &info) == 0 else { return "there is no directory \(directory)" }
        guard info.st_mode & S_IFMT == S_IFDIR else { return "\(directory) is not a directory" }
        guard access(directory, W_OK | X_OK) == 0 else { return "the directory \(directory) is not writable" }
        return nil
    }

    /// Where session `session` records: `path`, then `name-2.ext`, ...
    static func path(_ path: String, session: Int) -> String {
        guard session > 1 else { return path }
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        guard let dot = path[slash...].lastIndex(of: ".") else { return "\(path)-\(session)" }
        return "\(path[..<dot])-\(session)\(path[dot...])"
    }

    private func write(_ item: Preroll.Item) throws(ReceiverError) {
        guard let recorder else { return }
        do {
            switch item {
            case .video(let data, let time, let key, _, _):
                try recorder.writeVideo(accessUnit: data, time: time, isKeyframe: key)
            case .audio(let track, let payload, let time, let samples):
                try recorder.writeAudio(track: track, packet: payload, time: time, samples: samples)
            }
        } catch {
            throw .recording(error.description)
        }
    }
}
