public import ShareColor
public import ShareBase
internal import ShareSync
internal import Dispatch
#if canImport(Glibc)
internal import Glibc
#endif

/// Saves a sample of the pictures a receiver shows (`share recv
/// --save-frames`), chosen by `PictureSampleSchedule`, as one-picture Y4M
/// files beside an `index.json` that says which frame or instant each is
/// and the colour space it was decoded in: the harness compares them with
/// the scene's reference pictures. Offered pictures on the decode thread;
/// copies are made only of pictures kept, and written on a queue of its own.
public final class PictureSampler: Sendable {
    /// One saved picture, as `index.json` lists it.
    public struct Saved: Sendable, Equatable {
        /// The file's name in the directory.
        public var file: String
        /// The scene's frame number it shows, when kept by number.
        public var frame: UInt32?
        /// Seconds after the first picture it was on screen at, when kept by time.
        public var afterSeconds: Double?
        /// Seconds after the first picture it was shown.
        public var shownSeconds: Double
        /// "bt601", "bt709" or "bt2020", and whether the samples span 0-255.
        public var matrix: String
        public var fullRange: Bool
        public var keyframe: Bool
    }

    private struct Held {
        var image: I420Image
        var colors: ColorSpace
        var keyframe: Bool
        var frame: UInt32?
        var shown: Duration
    }

    private struct State {
        var schedule: PictureSampleSchedule
        var held: Held?
        var saved: [Saved] = []
        var failures: [String] = []
    }

    private let directory: String
    private let state: Locked<State>
    private let writing = DispatchQueue(label: "share.picture-sampler")

    /// Saves into `directory` (made if missing) the pictures `schedule` keeps.
    public init(directory: String, schedule: PictureSampleSchedule) throws(SampleDirectoryError) {
        if mkdir(directory, 0o755) != 0 && errno != EEXIST { throw SampleDirectoryError(directory: directory, errno: errno) }
        var status = stat()
        guard stat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw SampleDirectoryError(directory: directory, errno: ENOTDIR)
        }
        self.directory = directory
        state = Locked(State(schedule: schedule))
    }

    /// A picture numbered `frame` (nil: unread) was shown at `now`;
    /// `copy` makes an owned copy of it, called only when it is kept.
    public func offer(frame: UInt32?, keyframe: Bool, colors: ColorSpace, now: MonotonicTime? = nil,
                      copy: () -> I420Image) {
        let now = now ?? SystemClock.now()
        state.withLock { state in
            let at = Self.instant(now)
            let decision = state.schedule.shown(frame: frame, at: at)
            let shown = at - (state.schedule.firstShown ?? at)
            if let held = state.held {
                for instant in decision.heldWasShownAt { save(held, at: instant, into: &state) }
            }
            guard decision.saveAsFrame != nil || decision.hold else {
                state.held = nil
                return
            }
            let picture = Held(image: copy(), colors: colors, keyframe: keyframe, frame: frame, shown: shown)
            if let number = decision.saveAsFrame { save(picture, number: number, into: &state) }
            state.held = decision.hold ? picture : nil
        }
    }

    /// Saves what the instants reached by `now` showed, waits for every
    /// file, writes `index.json` and returns what was saved and what failed.
    public func finish(now: MonotonicTime? = nil) -> (saved: [Saved], failures: [String]) {
        let now = now ?? SystemClock.now()
        state.withLock { state in
            guard let held = state.held else { return }
            for instant in state.schedule.finish(at: Self.instant(now)) { save(held, at: instant, into: &state) }
            state.held = nil
        }
        writing.sync {}
        let (saved, failures) = state.withLock { ($0.saved, $0.failures) }
        let index = "[\n" + saved.map(Self.json).joined(separator: ",\n") + "\n]\n"
        let indexFailure = Self.write([Array(index.utf8)], to: directory + "/index.json")
        return (saved, failures + (indexFailure.map { [$0] } ?? []))
    }

    /// `now` on the schedule's clock (any one clock throughout).
    private static func instant(_ now: MonotonicTime) -> Duration { .nanoseconds(Int64(clamping: now.nanoseconds)) }

    private func save(_ picture: Held, number: UInt32, into state: inout State) {
        record(picture, file: "frame-\(number).y4m", frame: number, after: nil, into: &state)
    }

    private func save(_ picture: Held, at instant: Duration, into state: inout State) {
        let milliseconds = Int((instant.seconds * 1000).rounded())
        record(picture, file: "after-\(milliseconds)ms.y4m", frame: picture.frame, after: instant.seconds, into: &state)
    }

    private func record(_ picture: Held, file: String, frame: UInt32?, after: Double?, into state: inout State) {
        let matrix = switch picture.colors.matrix {
        case .bt601: "bt601"
        case .bt709: "bt709"
        case .bt2020: "bt2020"
        }
        state.saved.append(Saved(file: file, frame: after == nil ? frame : nil, afterSeconds: after,
                                 shownSeconds: picture.shown.seconds, matrix: matrix,
                                 fullRange: picture.colors.fullRange, keyframe: picture.keyframe))
        let (path, image) = (directory + "/" + file, picture.image)
        writing.async { [state = self.state] in
            let header = "YUV4MPEG2 W\(image.width) H\(image.height) F30:1 Ip A1:1 C420jpeg\nFRAME\n"
            if let failure = Self.write([Array(header.utf8), image.storage], to: path) {
                state.withLock { $0.failures.append(failure) }
            }
        }
    }

    /// Writes `chunks` to a new file at `path`; the reason when it could not.
    private static func write(_ chunks: [[UInt8]], to path: String) -> String? {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return "cannot create \(path): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        for chunk in chunks {
            var done = 0
            while done < chunk.count {
                let n = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, chunk.count - done) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return "cannot write \(path): \(String(cString: strerror(errno)))" }
                done += n
            }
        }
        return nil
    }

    private static func json(_ saved: Saved) -> String {
        var fields = ["\"file\": \"\(saved.file)\"", "\"shownSeconds\": \(saved.shownSeconds)",
                      "\"matrix\": \"\(saved.matrix)\"", "\"fullRange\": \(saved.fullRange)", "\"keyframe\": \(saved.keyframe)"]
        if let frame = saved.frame { fields.append("\"frame\": \(frame)") }
        if let after = saved.afterSeconds { fields.append("\"afterSeconds\": \(after)") }
        return "  {" + fields.joined(separator: ", ") + "}"
    }
}

/// `share recv --save-frames` was given a directory it cannot make or use.
public struct SampleDirectoryError: Error, Sendable, CustomStringConvertible {
    public let directory: String
    public let errno: Int32
    public var description: String {
        "--save-frames: cannot use \(directory) as a directory: \(String(cString: strerror(errno)))"
    }
}
