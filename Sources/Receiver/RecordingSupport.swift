internal import ShareWire
internal import ShareSync
#if canImport(Glibc)
internal import Glibc
#endif

/// Video and audio that arrive before the recording starts: kept from the
/// first keyframe on, written in order once the file is opened.
struct Preroll {
    enum Item {
        case video([UInt8], Int64, Bool, Int, Int)
        case audio(Int, ArraySlice<UInt8>, Int64, Int)
    }

    private var items: [Item] = []

    var firstKeyframe: (data: [UInt8], width: Int, height: Int)? {
        for case .video(let data, _, true, let width, let height) in items { return (data, width, height) }
        return nil
    }

    mutating func add(_ item: Item) {
        if case .video(_, _, let key, _, _) = item, !key, firstKeyframe == nil { return }
        items.append(item)
        // Never more than a few seconds: a sender that never sends a keyframe
        // must not grow the receiver.
        if items.count > 2000 { items.removeFirst(items.count - 2000) }
    }

    /// The items in time order across tracks, each track's in the order
    /// it came: pictures stay in the order they are decoded (with B-frames
    /// not their presentation order), each audio stream sorted by time.
    mutating func drain() -> [Item] {
        defer { items.removeAll() }
        func time(_ item: Item) -> Int64 {
            switch item {
            case .video(_, let t, _, _, _): t
            case .audio(_, _, let t, _): t
            }
        }
        let video = items.filter { if case .video = $0 { true } else { false } }
        let audio = items.filter { if case .audio = $0 { true } else { false } }.sorted { time($0) < time($1) }
        var merged: [Item] = []
        merged.reserveCapacity(items.count)
        var (v, a) = (0, 0)
        while v < video.count || a < audio.count {
            if a == audio.count || (v < video.count && time(video[v]) <= time(audio[a])) {
                merged.append(video[v])
                v += 1
            } else {
                merged.append(audio[a])
                a += 1
            }
        }
        return merged
    }
}

/// Sender-clock estimates for streams with neither capture times nor sender
/// reports yet: the first packet's arrival anchors the stream's RTP clock.
struct Timeline {
    private var anchors: [UInt32: (timestamp: UInt32, arrival: Int64)] = [:]

    mutating func estimate(ssrc: UInt32, timestamp: UInt32, clockRate: Int, arrival: Int64) -> Int64 {
        guard let anchor = anchors[ssrc] else {
            anchors[ssrc] = (timestamp, arrival)
            return arrival
        }
        let ticks = Int64(Int32(bitPattern: timestamp &- anchor.timestamp))
        return anchor.arrival + ticks * 1_000_000 / Int64(max(clockRate, 1))
    }
}


