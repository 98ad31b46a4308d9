#if canImport(Glibc)
internal import Glibc
#endif

/// Chooses each picture's quantizer so that the stream keeps to a bitrate
/// without a queue standing behind it: the rate control of an encoder run
/// at a constant quantizer per picture (x264's CQP, told each picture's
/// QP). x264's own ABR needs a half-size copy of every picture and a motion
/// search over it to guess a picture's cost before it is coded, whatever
/// changed; here the guess comes from what the capture already knows:
/// which macroblocks changed.
///
/// The model: a picture takes about `complexity` bits for each macroblock
/// it codes at the reference quantizer (26), halved for every 6 the
/// quantizer is higher; one complexity is learned for each kind of picture
/// (a keyframe codes every macroblock intra; a picture told what changed
/// codes those and the intra-refresh column; one told nothing is analysed
/// whole). A leaky bucket, drained at the bitrate in the pictures' own
/// time, holds what was coded and not yet sent: a picture aims at what
/// drained since the one before, plus half of the way back to a bucket
/// half full, and never at more than what fits in it (x264's VBV, at the
/// picture level).
///
/// The quantizer goes up at once, and down only with room to spare: x264
/// codes again every unchanged macroblock that was coded coarser than the
/// new quantizer (a still screen sharpens that way), so a lower quantizer
/// costs more than the changes, and staying put costs least. It goes down
/// by at most 4 a picture (x264's own step), and told what changed, by 4
/// only when the whole picture coded again would fit, else by one or two
/// when what they code again is paid for (priced as the last such step
/// took), or not at all; further only when even four times what the model
/// says would fit (a plain screen sharpens at once). A still screen (told
/// nothing changed) sharpens further, to `finestStill`, by as many steps
/// at once as its target pays for at what the steps before cost
/// (`sharpeningStep`).
/// Sans-IO: times are given.
///
/// Coarser is not always cheaper: past a point, x264 codes scrolling text
/// for more bits, not fewer (the reference is so coarse that every picture
/// has more to correct; `Benchmarks/quality.py`'s text scene, coded at one
/// quantizer after another), and a model that halves the bits for every 6
/// then holds the quantizer at the coarsest for good, overspending and
/// illegible. That trap has a sign: the bucket stays over its size, for
/// longer than any overshoot takes to drain. Once it has for `trapped`,
/// pictures other than keyframes go no coarser than `ceiling` until it is
/// back under. Coarser pictures still drain an overshoot at once, as a
/// deep queue needs (`Benchmarks/harness.py --network deepq`). A bitrate
/// too low even for the ceiling is the congestion controller's and the
/// quality ladder's to meet (frames skipped behind a queue, a smaller
/// picture).
public struct QuantizerControl: Sendable {
    /// What a picture is to x264.
    public enum Kind: Int, Sendable, CaseIterable {
        /// An IDR: every macroblock coded intra.
        case keyframe
        /// A picture told which macroblocks changed: those are coded, and
        /// the intra-refresh column, the rest skipped.
        case changes
        /// A picture told nothing: every macroblock analysed.
        case whole
    }

    /// The quantizer the complexities are given at.
    public static let reference = 26
    /// The most a quantizer goes down from one picture to the next (x264's
    /// own rate control's step).
    static let step = 4
    /// The finest quantizer of a picture with changes where the path holds
    /// the bitrate: screen text is sharp at it. A finer floor there adds
    /// bits that overflow a shallow queue on a lossy path and cost more
    /// frozen time than they buy (`Benchmarks/harness.py --network wifi`);
    /// an open path goes to `finestOpen`.
    public static let finest = 18
    /// The finest quantizer of a picture of a still screen (one told that
    /// nothing changed): it costs once, the screen then sends nothing new,
    /// and small text is sharper at it than at `finest` (a page of it read
    /// a second after it appears; `Benchmarks/quality.py --scenes
    /// still-text`). A picture with changes keeps to `finest`, so
    /// changing content costs what it did.
    public static let finestStill = 12
    /// The finest quantizer of any picture on an open path (`open`): the
    /// bitrate left unspent at `finest` buys the detail the peers' pictures
    /// have (`Benchmarks/quality.py`, the full rate), as far as the bucket
    /// pays for it.
    public static let finestOpen = 12
    /// The coarsest quantizer chosen (for a keyframe that must fit): H.264's coarsest.
    public static let coarsest = 51
    /// The coarsest quantizer of a picture that is not a keyframe once the
    /// bucket has been over its size for `trapped`.
    public static let ceiling = 40
    /// How long the bucket is over its size before the ceiling holds.
    static let trapped: UInt64 = 1_000_000_000

    /// Bits a second the stream is to keep to.
    public var bitrate: Double
    /// Whether the path is open: nothing holds the bitrate under what was
    /// configured (no congestion, no loss to protect against), so pictures
    /// with changes may go as fine as `finestOpen`. Where the path holds
    /// it, they keep to `finest`: there the bits a finer picture adds cost
    /// more frozen time than they buy.
    public var open = false
    /// The bucket in seconds of the bitrate (a picture may take that much
    /// at most when nothing is waiting).
    public let bufferSeconds: Double
    private let macroblocks: Int
    private let refreshMacroblocks: Int
    private let frameInterval: UInt64
    /// Bits coded and not yet drained.
    public private(set) var fullness: Double
    private var drainedAt: UInt64?
    /// When the last picture was coded.
    private var previousPicture: UInt64?
    /// Bits per coded macroblock at `reference`, by kind (and a fourth for
    /// changes of much of the screen).
    private var complexity: [Double]
    /// The quantizer of the last picture.
    public private(set) var last: Int
    /// Since when the bucket has been over its size (the pictures' clock).
    private var overSince: UInt64?

    /// `bufferFrames` of `fps` pictures a second at `bitrate` make the
    /// bucket, which starts `startFullness` full (so the first picture, a
    /// keyframe, may take at most what is left); `refreshMacroblocks` are
    /// coded intra in every picture besides its changes.
    public init(bitrate: Double, fps: Int, macroblocks: Int, refreshMacroblocks: Int, bufferFrames: Double = 4,
                startFullness: Double = 0.7) {
        self.bitrate = max(1000, bitrate)
        self.bufferSeconds = bufferFrames / Double(max(1, fps))
        self.macroblocks = max(1, macroblocks)
        self.refreshMacroblocks = max(0, refreshMacroblocks)
        self.frameInterval = 1_000_000_000 / UInt64(max(1, fps))
        self.fullness = startFullness * self.bitrate * bufferSeconds
        // Guessed high (a noisy photo; screen text takes a third of it), so
        // a first picture comes out coarse rather than flooding the path;
        // each kind then learns, and is priced as a keyframe until it has.
        complexity = [1500, 600, 300, 600]
        last = Self.coarsest
    }

    /// The bucket's size in bits.
    public var buffer: Double { bitrate * bufferSeconds }

    /// Whether the picture is sharpening: the last one was a keyframe
    /// coded coarser than `finestStill`, or was coded finer than the one
    /// before. A still screen then sharpens with each picture (as many
    /// steps as the bitrate pays for), so its pictures are worth sending often
    /// rather than once a second until it is sharp; when the bucket holds
    /// the quantizer where it is, they are not.
    public private(set) var sharpening = false

    /// Macroblocks a picture of `kind` codes, told `changed` of them changed.
    func coded(_ kind: Kind, changed: Int) -> Int {
        kind == .changes ? min(macroblocks, changed + refreshMacroblocks) : macroblocks
    }

    /// Macroblocks such a picture leaves alone (x264 skips them, unless
    /// the quantizer went finer than they were coded at).
    func untouched(_ kind: Kind, changed: Int) -> Int { macroblocks - coded(kind, changed: changed) }

    /// The bits a picture of `kind` is expected to take at `quantizer`.
    public func predictedBits(_ kind: Kind, changed: Int, quantizer: Int) -> Double {
        atReference(kind, changed: changed) * Self.scale(quantizer)
    }

    /// The bits a picture of `kind` is expected to take at `reference`.
    func atReference(_ kind: Kind, changed: Int) -> Double {
        Double(coded(kind, changed: changed)) * cost(of: model(kind, changed: changed))
    }

    /// The model a picture is priced and learned by: a change of a quarter
    /// of the screen or more is new content more than an edit, and has a
    /// complexity of its own. A model not seen yet is priced as the screen
    /// coded intra (a keyframe) was, once that is known.
    private func model(_ kind: Kind, changed: Int) -> Int {
        kind == .changes && changed * 4 >= macroblocks ? Self.wide : kind.rawValue
    }

    private static let wide = Kind.allCases.count

    private func cost(of model: Int) -> Double {
        let keyframe = Kind.keyframe.rawValue
        return !seen[model] && seen[keyframe] ? complexity[keyframe] : complexity[model]
    }

    /// Whether a picture of each model was seen yet: the first one replaces the guess.
    private var seen = [false, false, false, false]
    /// Bits a still screen's picture takes for each step its quantizer goes
    /// down, once one did. x264 codes every macroblock again, and the bits
    /// grow with the steps, hardly with how fine the quantizer already is
    /// (a page of small text, from the coarsest to `finestStill`). So a
    /// still picture goes down as many steps as its target pays for, and
    /// at least one (two when far off): a few
    /// large steps where small ones, each coding the whole screen again,
    /// took twice the time to sharpen (`Benchmarks/quality.py --scenes
    /// still-text`).
    private var sharpeningStep: Double?
    /// What a still picture's step is taken to cost: as learned, else half
    /// the keyframe's bits at the coarsest quantizer (a step costs about as
    /// much as x264's whole screen there; a first step from the coarsest
    /// costs next to nothing, and says little of the next).
    private var stepCost: Double? {
        sharpeningStep ?? (seen[Kind.keyframe.rawValue]
            ? complexity[Kind.keyframe.rawValue] * Double(macroblocks) * Self.scale(Self.coarsest) / 2 : nil)
    }
    /// The most steps a still picture goes down at once: the bits a step
    /// takes grow somewhat as the quantizer gets finer, and the cost learned
    /// at the last step may fall short by that much.
    static let stillSteps = 6
    /// The steps the last still picture went down.
    private var lastStillSteps = 0

    /// The quantizer for the next picture, `at` nanoseconds on the pictures'
    /// clock, `changed` macroblocks of it changed (ignored but for `.changes`).
    public mutating func quantizer(for kind: Kind, changed: Int, at now: UInt64) -> Int {
        let modelled = modelled(kind, changed: changed, at: now)
        if fullness <= buffer { overSince = nil }
        let held = overSince.map { now &- min($0, now) >= Self.trapped } ?? false
        return kind != .keyframe && held ? min(modelled, Self.ceiling) : modelled
    }

    /// The quantizer the model and the bucket choose.
    private mutating func modelled(_ kind: Kind, changed: Int, at now: UInt64) -> Int {
        drain(to: now)
        // What drained since the picture before (a frame interval for the first).
        let since = Double(previousPicture.map { min(now &- min($0, now), frameInterval * 16) } ?? frameInterval) / 1e9
        let room = buffer - fullness
        let aim = bitrate * since + (buffer / 2 - fullness) / 2
        let target = max(min(aim, room * 0.9), bitrate * Double(frameInterval) / 1e9 / 4)
        let bits = atReference(kind, changed: changed)
        // A keyframe may take what fits, as x264's VBV lets it.
        guard kind != .keyframe else { return Self.quantizer(bits: bits, target: max(target, room * 0.9)) }
        let still = Self.isStill(kind, changed: changed)
        let finest = still ? Self.finestStill : open ? Self.finestOpen : Self.finest
        let quantizer = { (bits: Double, target: Double) in Self.quantizer(bits: bits, target: target, finest: finest) }
        let wanted = quantizer(bits, target)
        // Up at once (coarser than where it learned, the model guesses high).
        if wanted >= last { return wanted }
        // Down only with room to spare, and `step` at most, as the model is
        // surest near where it learned; further when even four times what
        // it says would fit.
        let spare = quantizer(bits, target * 0.7)
        guard spare < last else { return last }
        if still, let perStep = stepCost {
            // At most twice the last picture's, as the cost learned at the
            // coarsest falls short of a finer step's; at least what a
            // picture told its changes takes below (one, or two when far).
            let paid = min(Int(target / perStep), max(2 * lastStillSteps, 1), Self.stillSteps)
            return max(finest, last - max(paid, last - finest > 4 ? 2 : 1))
        }
        guard kind == .changes else {
            return max(spare, min(last - Self.step, quantizer(bits * 4, target)))
        }
        // Told what changed, a lower quantizer also codes old macroblocks
        // again: that far when the whole picture coded intra would fit,
        // else a step at a time (two when far off), and only as many as
        // the target pays for, the old macroblocks priced as a step was
        // seen to cost them; none when not even one is paid for.
        let recoded = bits + Double(macroblocks) * complexity[Kind.keyframe.rawValue]
        let perStep = Double(untouched(kind, changed: changed)) * recodePrice
        let paid = (1...(last - spare > 4 ? 2 : 1)).last { steps in
            predictedBits(kind, changed: changed, quantizer: last - steps) + Double(steps) * perStep <= target
        } ?? 0
        let stepped = max(last - Self.step, min(quantizer(recoded, target), last - paid))
        return max(spare, min(stepped, quantizer(recoded * 4, target)))
    }

    /// Bits a step down takes for each macroblock a picture told its
    /// changes leaves alone: x264 codes it again where it was coded coarser
    /// than the new quantizer. A region of video beside the changes takes
    /// about the bits of a whole picture for each step, so a narrow change
    /// after wide ones, coded a step or two finer, came out as large as
    /// several pictures and filled a deep queue for a second
    /// (`Benchmarks/harness.py --network deepq --scenes video`). Priced as
    /// the last such step took, and never above what the recent pictures
    /// took for each macroblock: what they coded is at most what there is
    /// to code again, and content that got cheaper (the video closed) is
    /// let down to where its steps are seen to cost less.
    private var recodePrice: Double {
        let recent = recentBits / Double(macroblocks)
        return recodeStep.map { min($0, recent) } ?? recent
    }
    /// What a step down was seen to cost for each macroblock left alone.
    private var recodeStep: Double?
    /// The bits of the pictures before, smoothed (fast when dearer).
    private var recentBits = 0.0

    /// What the picture took: into the bucket, and into the model unless it
    /// was told its changes and coded finer than the one before (then it
    /// coded old macroblocks again, which says nothing about its changes).
    public mutating func encoded(_ kind: Kind, changed: Int, quantizer: Int, bits: Int, at now: UInt64) {
        drain(to: now)
        previousPicture = now
        fullness += Double(bits)
        sharpening = kind == .keyframe ? quantizer > Self.finestStill : quantizer < last
        defer { last = quantizer }
        overSince = fullness > buffer ? overSince ?? now : nil
        if Self.isStill(kind, changed: changed), quantizer < last {
            lastStillSteps = last - quantizer
            let observed = Double(bits) / Double(last - quantizer)
            sharpeningStep = stepCost.map { Self.learned($0, observed) } ?? observed
        }
        let unchanged = untouched(kind, changed: changed)
        // Only where most of the screen was left alone: there what the
        // changes took beside it is no more than a guess's error.
        if kind == .changes, changed > 0, quantizer < last, unchanged * 2 >= macroblocks {
            let beside = Double(bits) - predictedBits(kind, changed: changed, quantizer: quantizer)
            let observed = max(0, beside) / Double((last - quantizer) * unchanged)
            recodeStep = recodeStep.map { Self.learned($0, observed) } ?? observed
        }
        recentBits = Self.learned(recentBits, Double(bits))
        guard kind != .changes || quantizer >= last else { return }
        let observed = Double(bits) / Double(coded(kind, changed: changed)) / Self.scale(quantizer)
        let model = model(kind, changed: changed)
        let old = cost(of: model)
        complexity[model] = max(0.5, seen[model] ? Self.learned(old, observed) : observed)
        seen[model] = true
    }

    /// A cost learned from one more picture: fast when dearer than thought
    /// (a flood is worse than a blur).
    private static func learned(_ old: Double, _ observed: Double) -> Double {
        old + (observed - old) * (observed > old ? 0.7 : 0.4)
    }

    /// Whether a picture is of a still screen: told what changed, and nothing did.
    private static func isStill(_ kind: Kind, changed: Int) -> Bool { kind == .changes && changed == 0 }

    private mutating func drain(to now: UInt64) {
        if let drainedAt, now > drainedAt {
            fullness = max(0, fullness - bitrate * Double(now - drainedAt) / 1e9)
        }
        if drainedAt.map({ now > $0 }) ?? true { drainedAt = now }
    }

    /// 2^((reference - q) / 6): bits at `q` for a bit at `reference`.
    static func scale(_ quantizer: Int) -> Double {
        exp2(Double(reference - quantizer) / 6)
    }

    /// The finest quantizer at which `bits` (at `reference`) come to at most
    /// `target`, between `finest` and `coarsest` (every choice is made of these).
    static func quantizer(bits: Double, target: Double, finest: Int = finest) -> Int {
        guard bits > 0 else { return finest }
        guard target > 0 else { return coarsest }
        let exact = Double(reference) + 6 * log2(bits / target)
        return exact >= Double(coarsest) ? coarsest : max(finest, Int(exact.rounded(.up)))
    }
}
