import ShareBase
import ShareFrames
import Testing

/// A screen whose content is redrawn at given times, each drawing a few
/// requests apart (damage at each), as XDamage in "no longer empty" mode
/// shows it to the capture thread, and a capture thread on a virtual clock
/// doing what a `GrabSchedule` says: the same steps the real loop takes,
/// with time passing only in waits and grabs.
private struct SimulatedCapture {
    /// When each drawing starts, and when its requests are drawn after that.
    let drawings: [UInt64]
    let parts: [UInt64]
    /// Every damage instant, in order.
    private let changes: [UInt64]
    var schedule: GrabSchedule
    /// How long a grab takes (XDamage is emptied as it starts).
    var grabTakes: UInt64 = 700_000
    var keyframeWanted: (UInt64) -> Bool = { _ in false }

    private(set) var now: UInt64 = 0
    private var nextChange = 0
    /// Damage not yet grabbed; whether XDamage reports the next drawing.
    private var pending = false
    private var armed = true
    /// An event the server sent that the thread has not read yet.
    private var unreadEvent = false
    /// Grabs: when, and how long before the newest drawing in the picture began.
    private(set) var grabs: [(time: UInt64, age: UInt64?)] = []
    /// When the thread watched for a next change (not for a drawing to go
    /// quiet), and how many watches of any kind it made (each a request to
    /// the X server and a few system calls).
    private(set) var longWatches: [UInt64] = []
    private(set) var watches = 0

    /// `seenLate`: how long after each drawing its damage reaches the
    /// thread (nothing: at once).
    init(drawings: [UInt64], parts: [UInt64] = [0, 40_000, 150_000], interval: UInt64 = 33_333_333,
         refresh: UInt64 = 1_000_000_000, seenLate: [UInt64] = []) {
        self.drawings = drawings
        self.parts = parts
        changes = drawings.enumerated().flatMap { index, start in
            parts.map { start + $0 + (index < seenLate.count ? seenLate[index] : 0) }
        }.sorted()
        schedule = GrabSchedule(quiet: .microseconds(250), settle: .milliseconds(2), refresh: .nanoseconds(Int64(refresh)),
                                longestWait: .milliseconds(20), interval: .nanoseconds(Int64(interval)))
    }

    /// Grabs that caught a drawing half done.
    var torn: Int {
        grabs.count { grab in drawings.contains { $0 < grab.time && grab.time < $0 + parts.last! } }
    }

    /// The screen as it is at `time`: changes drawn up to then.
    private mutating func advance(to time: UInt64) {
        while nextChange < changes.count, changes[nextChange] <= time {
            pending = true
            if armed {
                armed = false
                unreadEvent = true
            }
            nextChange += 1
        }
        now = max(now, time)
    }

    /// Waits until the next change or `until`, whichever is first; true when
    /// a change came (its event is read as it comes).
    private mutating func waitForEvent(until: UInt64) -> Bool {
        while nextChange < changes.count, changes[nextChange] <= until {
            let wasArmed = armed
            advance(to: changes[nextChange])
            if wasArmed { return true }
        }
        advance(to: max(now, until))
        return false
    }

    /// Reads an event the server sent: as it came while waiting, or found
    /// late (it came during a grab).
    private mutating func readEvents(asTheyCame: Bool) {
        if unreadEvent {
            unreadEvent = false
            schedule.changed(at: MonotonicTime(nanoseconds: now), asItCame: asTheyCame)
        }
    }

    mutating func run(until end: UInt64) {
        while now < end {
            advance(to: now)
            readEvents(asTheyCame: false)
            let step = schedule.next(now: MonotonicTime(nanoseconds: now), pending: pending, keyframeWanted: keyframeWanted(now))
            switch step {
            case .waitForChange(let until):
                if !pending, waitForEvent(until: until.nanoseconds) { readEvents(asTheyCame: true) }
            case .watchForNextChange(let until):
                watches += 1
                if until.nanoseconds > now + 400_000 { longWatches.append(now) }
                armed = true
                if waitForEvent(until: until.nanoseconds) { readEvents(asTheyCame: true) }
            case .sleep(let until):
                advance(to: until.nanoseconds)
            case .grab:
                let time = now
                _ = schedule.grabbed(at: MonotonicTime(nanoseconds: time))
                let newest = drawings.last { $0 <= time }
                grabs.append((time, newest.map { time - $0 }))
                pending = false
                armed = true
                unreadEvent = false
                advance(to: time + grabTakes)
            }
        }
    }

    /// Grabs after `from`: their times and the ages of what they show.
    func grabs(after from: UInt64) -> [(time: UInt64, age: UInt64?)] { grabs.filter { $0.time >= from } }
}

private func regular(hz: Double, seconds: Double, phase: UInt64 = 3_000_000) -> [UInt64] {
    (0..<Int(hz * seconds)).map { phase + UInt64(Double($0) * 1e9 / hz) }
}

private func ms(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

private func median(_ values: [UInt64]) -> UInt64 { values.sorted()[values.count / 2] }

@Suite("When the screen is grabbed")
struct GrabScheduleTests {
    /// Content faster than the frame rate in a steady rhythm (59 Hz, a
    /// video; 233 Hz, the harness's stamp): once the rhythm is learned every
    /// grab takes a change just drawn, at (nearly) the full frame rate and
    /// never faster than it. Grabbing at the grid's slots instead would show
    /// changes up to a whole period old (the check below on `plain`).
    @Test(arguments: [59.0, 60.0, 144.0, 233.0])
    func contentFasterThanTheFrameRateIsGrabbedJustDrawn(hz: Double) {
        var capture = SimulatedCapture(drawings: regular(hz: hz, seconds: 10))
        capture.run(until: 10_000_000_000)
        let settled = capture.grabs(after: 1_000_000_000)
        let ages = settled.compactMap(\.age)
        #expect(capture.schedule.rhythm.period != nil, "the rhythm is learned")
        // A quiet sleep and a quiet watch past the damage (0.5 ms); a change
        // pending at a slot is grabbed rather than waited past when it is
        // younger than half the wait, so at most about a third of a period.
        let period = 1e9 / hz
        #expect(median(ages) <= 1_000_000, "\(hz) Hz: changes grabbed \(ms(median(ages))) ms old (median)")
        #expect(ages.allSatisfy { Double($0) <= max(1e6, (period + max(1e6, period / 8)) / 3 + 0.2e6) },
                "\(hz) Hz: the oldest change grabbed \(ms(ages.max() ?? 0)) ms old")
        #expect(capture.torn == 0, "\(hz) Hz: \(capture.torn) grabs caught a drawing half done")
        let rate = Double(settled.count - 1) / (ms(settled.last!.time - settled.first!.time) / 1000)
        #expect(rate >= 29 && rate <= 30.05, "\(hz) Hz: \(rate) grabs a second")
        let gaps = zip(settled.dropFirst(), settled).map { $0.time - $1.time }
        #expect(gaps.allSatisfy { $0 >= 33_333_333 / 2 }, "\(hz) Hz: grabs \(ms(gaps.min()!)) ms apart at the closest")

        // What the grid alone gives the same content: most of a period on average.
        var plain = SimulatedCapture(drawings: regular(hz: hz, seconds: 10))
        plain.keyframeWanted = { _ in true }  // a keyframe request is never held back for a fresh change
        plain.run(until: 10_000_000_000)
        let plainAges = plain.grabs(after: 1_000_000_000).compactMap(\.age)
        #expect(Double(median(plainAges)) > 1e9 / hz / 4, "\(hz) Hz on the grid alone: \(ms(median(plainAges))) ms")
        #expect(median(ages) < median(plainAges))
    }

    /// The same on a busy machine: the X server, drawing for others on a
    /// shared core, tells of each change 0.2 to 3.5 ms after it is drawn,
    /// at random. That is harsher than measured (the harness's 59 Hz scene
    /// at 1080p on two cores: 14% of the gaps between changes seen were
    /// more than a tenth off the period; here 24%). The rhythm must hold
    /// through that jitter: lost, every grab waits for the grid's slot and
    /// takes a change up to a period old.
    @Test func aRhythmSeenWithJitterIsStillGrabbedJustDrawn() {
        var generator = SplitMix(seed: 11)
        let drawings = regular(hz: 59, seconds: 20)
        let late = drawings.map { _ in 200_000 + generator.next() % 3_300_000 }
        var capture = SimulatedCapture(drawings: drawings, seenLate: late)
        // Whether the rhythm is known, looked at every 100 ms after the first second.
        var looks: [Bool] = []
        for tenth in 10...200 {
            capture.run(until: UInt64(tenth) * 100_000_000)
            if tenth > 10 { looks.append(capture.schedule.rhythm.period != nil) }
        }
        let known = Double(looks.count { $0 }) / Double(looks.count)
        let ages = capture.grabs(after: 1_000_000_000).compactMap(\.age).sorted()
        let p95 = ages[ages.count * 95 / 100]
        #expect(known >= 0.95, "the rhythm known at \(Int(known * 100))% of the looks")
        // As `contentFasterThanTheFrameRateIsGrabbedJustDrawn` bounds every
        // age, plus the lateness; not every one here: when the change waited
        // for is told later than the one pending was, beyond the wait's
        // margin, the pending one is grabbed.
        let period = 1e9 / 59
        let bound = (period + period / 8) / 3 + 0.2e6 + 3.5e6
        #expect(median(ages) <= 5_000_000, "changes grabbed \(ms(median(ages))) ms old (median)")
        #expect(Double(p95) <= bound, "changes grabbed \(ms(p95)) ms old (p95)")
        #expect(capture.torn == 0)
    }

    /// Content slower than the frame rate (20 Hz): each change is grabbed
    /// once, as soon as its drawing has finished, nothing waited for.
    @Test func contentSlowerThanTheFrameRateIsGrabbedAsItChanges() {
        var capture = SimulatedCapture(drawings: regular(hz: 20, seconds: 5))
        capture.run(until: 5_000_000_000)
        // After the first grabs, which keep to the grid the very first began.
        let grabs = capture.grabs(after: 100_000_000)
        #expect(grabs.count >= 97 && grabs.count <= 98, "\(grabs.count) grabs of the 98 changes")
        #expect(grabs.allSatisfy { ($0.age ?? .max) <= 600_000 },
                "each one as its drawing ends: \(grabs.compactMap { $0.age.map(ms) }.filter { $0 > 0.6 })")
        #expect(capture.torn == 0)
        let watches = capture.longWatches.count { $0 > 100_000_000 }
        #expect(watches == 0, "no waiting for a change that is not needed: \(watches)")
        // One watch a drawing tells it has finished (its three requests come
        // within the sleep before it).
        #expect(capture.watches <= capture.grabs.count + 3, "\(capture.watches) watches for \(capture.grabs.count) grabs")
    }

    /// Typing, scrolling by hand: changes at uneven gaps, often faster than
    /// the frame rate. No rhythm is claimed, and no grab is held back: each
    /// comes at its slot or as its drawing ends.
    @Test func unevenChangesAreNotHeldBack() {
        var generator = SplitMix(seed: 7)
        var time: UInt64 = 0
        var changes: [UInt64] = []
        while time < 10_000_000_000 {
            time += 4_000_000 + generator.next() % 60_000_000
            changes.append(time)
        }
        var capture = SimulatedCapture(drawings: changes)
        capture.run(until: 10_000_000_000)
        let grabs = capture.grabs(after: 0)
        #expect(capture.schedule.rhythm.period == nil)
        var slot: UInt64 = 0
        for (index, grab) in grabs.enumerated().dropFirst() {
            let previous = grabs[index - 1].time
            // The grid: a slot an interval after the one before, or after the
            // grab before when it was quiet.
            slot = slot + 33_333_333 < previous ? previous + 33_333_333 : slot + 33_333_333
            // A drawing (0.15 ms), a quiet sleep after its damage and a quiet
            // watch (0.25 ms each); at a slot, the watch at least.
            let drawn = changes.last { $0 < grab.time }.map { $0 + 150_000 + 500_000 } ?? 0
            let due = max(slot + 250_000, drawn)
            #expect(grab.time <= due + 100_000, "grab \(index) \(ms(grab.time - due)) ms late")
        }
    }

    /// A drawing made of requests drawn a while apart is waited for until it
    /// goes quiet, however long it goes on up to `settle`; one that goes on
    /// longer is grabbed as it is then (the rest comes in the next picture).
    @Test func aDrawingIsGrabbedWhenItHasFinished() {
        let slow = (0..<8).map { UInt64($0) * 200_000 }  // 1.4 ms of drawing
        var capture = SimulatedCapture(drawings: regular(hz: 20, seconds: 3), parts: slow)
        capture.run(until: 3_000_000_000)
        #expect(capture.torn == 0, "\(capture.torn) grabs caught a drawing half done")
        let ages = capture.grabs(after: 100_000_000).compactMap(\.age)
        #expect(ages.allSatisfy { $0 >= 1_400_000 && $0 <= 2_000_000 }, "grabbed \(ages.map(ms)) ms after drawing began")

        let endless = (0..<20).map { UInt64($0) * 250_000 }  // 4.75 ms
        var long = SimulatedCapture(drawings: regular(hz: 10, seconds: 3), parts: endless)
        long.run(until: 3_000_000_000)
        let waits = long.drawings.dropFirst(2).map { start in (long.grabs.first { $0.time > start }?.time ?? .max) - start }
        #expect(waits.allSatisfy { $0 <= 2_100_000 }, "held at most `settle`: \(waits.map(ms)) ms")
    }

    /// A still screen is grabbed every refresh and nothing else.
    @Test func aStillScreenIsGrabbedEveryRefresh() {
        var capture = SimulatedCapture(drawings: [], refresh: 500_000_000)
        capture.run(until: 5_000_000_000)
        #expect(capture.grabs.count == 10 || capture.grabs.count == 11, "\(capture.grabs.count) grabs in 5 s")
    }

    /// The rhythm: learned from agreeing gaps, dropped when they disagree or
    /// pause; predictions land on the rhythm's beat.
    @Test func theRhythmIsLearnedOnlyWhileItKeepsTime() {
        var rhythm = ChangeRhythm()
        for _ in 0..<3 { rhythm.add(gap: .nanoseconds(16_666_667)) }
        #expect(rhythm.period == nil, "three gaps are not yet a rhythm")
        rhythm.add(gap: .nanoseconds(16_900_000))
        #expect(rhythm.period == .nanoseconds(16_666_667))
        rhythm.add(gap: .nanoseconds(40_000_000))
        #expect(rhythm.period == .nanoseconds(16_666_667), "one odd gap in five is jitter")
        rhythm.add(gap: .nanoseconds(5_000_000))
        #expect(rhythm.period == .nanoseconds(16_666_667), "two odd gaps in five keep a rhythm learned")
        rhythm.add(gap: .nanoseconds(25_000_000))
        #expect(rhythm.period == nil, "three lose it")
        var fresh = ChangeRhythm()
        for gap: Int64 in [16_666_667, 40_000_000, 16_666_667, 5_000_000, 16_666_667] { fresh.add(gap: .nanoseconds(gap)) }
        #expect(fresh.period == nil, "two odd gaps in five do not teach one")
        for _ in 0..<5 { rhythm.add(gap: .nanoseconds(4_291_845)) }
        #expect(rhythm.period == .nanoseconds(4_291_845))
        #expect(rhythm.nextChange(after: MonotonicTime(nanoseconds: 100_000_000), seen: MonotonicTime(nanoseconds: 90_000_000))
                == MonotonicTime(nanoseconds: 90_000_000 + 3 * 4_291_845))
        rhythm.add(gap: .nanoseconds(2_000_000_000))
        #expect(rhythm.period == nil, "a pause forgets")
    }
}

/// A small deterministic generator (SplitMix64).
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
