internal import ShareWire

/// A BGRA test picture: four coloured quadrants and a bar at `offset`.
public func testPicture(width: Int, height: Int, offset: Int) -> [UInt8] {
    var pixels = [UInt8](repeating: 0, count: width * height * 4)
    let colours: [(UInt8, UInt8, UInt8)] = [(0, 0, 255), (0, 255, 0), (255, 0, 0), (255, 255, 255)]  // BGR
    for y in 0..<height {
        for x in 0..<width {
            let quadrant = (y < height / 2 ? 0 : 2) + (x < width / 2 ? 0 : 1)
            var (b, g, r) = colours[quadrant]
            if (x + offset) % width < 16 { (b, g, r) = (0, 0, 0) }
            let i = (y * width + x) * 4
            pixels[i] = b; pixels[i + 1] = g; pixels[i + 2] = r; pixels[i + 3] = 255
        }
    }
    return pixels
}

/// An Annex B stream's access units: a delimiter after a unit's slices
/// starts the next (parameter sets may come before the first one's).
public func annexBAccessUnits(_ stream: [UInt8]) -> [[UInt8]] {
    var units: [[UInt8]] = [[]]
    var sliced = false
    for nal in AnnexB.nalUnits(in: stream) {
        let type = stream[nal.lowerBound] & 0x1F
        if type == 9 && sliced {
            units.append([])
            sliced = false
        }
        if (1...5).contains(type) { sliced = true }
        units[units.count - 1] += [0, 0, 0, 1] + stream[nal]
    }
    return units
}
