import Foundation

/// A BGRA picture the example draws into.
struct Canvas {
    let width: Int
    let height: Int
    var pixels: [UInt8]

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 4)
    }

    /// The scene at `seconds`: still squares, a moving ball, the time of day.
    mutating func draw(at seconds: Double) {
        fill(x: 0, y: 0, width: width, height: height, red: 32, green: 32, blue: 40)
        fill(x: 40, y: 40, width: 80, height: 80, red: 230, green: 30, blue: 30)
        fill(x: 520, y: 240, width: 80, height: 80, red: 30, green: 30, blue: 230)
        let ballX = 20 + Int((seconds * 120).truncatingRemainder(dividingBy: Double(width - 40)))
        disc(centerX: ballX, centerY: 200, radius: 18, red: 40, green: 220, blue: 60)
        let now = Calendar.current.dateComponents([.hour, .minute, .second], from: Date())
        let text = String(format: "%02d:%02d:%02d", now.hour ?? 0, now.minute ?? 0, now.second ?? 0)
        var x = 180
        for character in text {
            if character == ":" {
                fill(x: x + 4, y: 56, width: 6, height: 6, red: 255, green: 255, blue: 255)
                fill(x: x + 4, y: 84, width: 6, height: 6, red: 255, green: 255, blue: 255)
                x += 16
            } else if let digit = character.wholeNumberValue {
                drawDigit(digit, x: x, y: 40)
                x += 36
            }
        }
    }

    /// Which of the seven segments (top, top right, bottom right, bottom,
    /// bottom left, top left, middle) each digit lights.
    private static let segments: [[Bool]] = [
        [true, true, true, true, true, true, false], [false, true, true, false, false, false, false],
        [true, true, false, true, true, false, true], [true, true, true, true, false, false, true],
        [false, true, true, false, false, true, true], [true, false, true, true, false, true, true],
        [true, false, true, true, true, true, true], [true, true, true, false, false, false, false],
        [true, true, true, true, true, true, true], [true, true, true, true, false, true, true],
    ]

    private mutating func drawDigit(_ digit: Int, x: Int, y: Int) {
        let (long, thick) = (24, 4)
        let places = [(x + thick, y, long, thick), (x + long + thick, y + thick, thick, long),
                      (x + long + thick, y + 2 * thick + long, thick, long), (x + thick, y + 2 * long + 2 * thick, long, thick),
                      (x, y + 2 * thick + long, thick, long), (x, y + thick, thick, long), (x + thick, y + long + thick, long, thick)]
        for (lit, place) in zip(Self.segments[digit], places) where lit {
            fill(x: place.0, y: place.1, width: place.2, height: place.3, red: 255, green: 255, blue: 255)
        }
    }

    private mutating func fill(x: Int, y: Int, width w: Int, height h: Int, red: UInt8, green: UInt8, blue: UInt8) {
        for row in max(0, y)..<min(height, y + h) {
            for column in max(0, x)..<min(width, x + w) {
                let i = (row * width + column) * 4
                pixels[i] = blue
                pixels[i + 1] = green
                pixels[i + 2] = red
                pixels[i + 3] = 255
            }
        }
    }

    private mutating func disc(centerX: Int, centerY: Int, radius: Int, red: UInt8, green: UInt8, blue: UInt8) {
        for dy in -radius...radius {
            let half = Int(Double(radius * radius - dy * dy).squareRoot())
            fill(x: centerX - half, y: centerY + dy, width: 2 * half + 1, height: 1, red: red, green: green, blue: blue)
        }
    }
}
