/// Which shown pictures a picture-quality measurement keeps (sans-IO: told
/// each picture's frame number and when it was shown).
///
/// - By frame number: the first picture shown of every frame whose number
///   is a multiple of `every`. The scene is a function of its frame number,
///   so each is compared with `share scene --render N`.
/// - By time: what the viewer saw `after` each given time since the first
///   picture: the last picture shown at or before it. A still screen's
///   frame number never changes, so its quality is asked at instants.
public struct PictureSampleSchedule: Sendable {
    /// What to do with a picture just shown.
    public struct Decision: Sendable, Equatable {
        /// Save it, as reference frame `frame`.
        public var saveAsFrame: UInt32?
        /// Save the picture held before this one, as what was on screen at each of these instants.
        public var heldWasShownAt: [Duration] = []
        /// Keep a copy of it: a later instant may need it.
        public var hold = false
    }

    private let every: UInt32
    private var pending: [Duration]
    private var seen = Set<UInt32>()
    /// When the first picture was shown (nil before it).
    public private(set) var firstShown: Duration?

    /// Keeps frames numbered a multiple of `every` (0: none) and what was on screen at each of `after`.
    public init(every: Int, after: [Duration]) {
        self.every = UInt32(clamping: max(0, every))
        pending = after.filter { $0 >= .zero }.sorted()
    }

    /// A picture numbered `frame` (nil: its number could not be read) was shown at `shown` (any clock, one clock throughout).
    public mutating func shown(frame: UInt32?, at shown: Duration) -> Decision {
        let start = firstShown ?? shown
        firstShown = start
        var decision = Decision()
        let elapsed = shown - start
        // Instants this picture comes after were showing the held one.
        while let next = pending.first, next < elapsed {
            decision.heldWasShownAt.append(next)
            pending.removeFirst()
        }
        if let frame, every > 0, frame % every == 0, seen.insert(frame).inserted { decision.saveAsFrame = frame }
        decision.hold = !pending.isEmpty
        return decision
    }

    /// The run ended at `end`: the instants it reached were showing the held picture.
    public mutating func finish(at end: Duration) -> [Duration] {
        guard let start = firstShown else { return [] }
        let reached = pending.filter { $0 <= end - start }
        pending.removeAll()
        return reached
    }
}
