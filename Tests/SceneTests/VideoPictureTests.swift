import ShareScene
import Testing

/// The video-like region of `share scene --video`: a function of the frame
/// number alone, different everywhere every frame, and moving as a pan (so
/// an encoder can predict it in part, as it can a film).
@Suite("Video picture: content that is hard to send")
struct VideoPictureTests {
    let picture = VideoPicture()
    let width = 320
    let height = 180

    func render(_ frame: Int, by source: VideoPicture? = nil) -> [UInt32] {
        var pixels = [UInt32](repeating: 0, count: width * height)
        pixels.withUnsafeMutableBufferPointer { (source ?? picture).render(frame: frame, width: width, height: height, into: $0) }
        return pixels
    }

    func channels(_ rgb: UInt32) -> [Int] { [Int(rgb >> 16 & 0xFF), Int(rgb >> 8 & 0xFF), Int(rgb & 0xFF)] }

    @Test func aFrameIsAFunctionOfItsNumberAlone() {
        #expect(render(17) == render(17))
        #expect(render(17) == render(17, by: VideoPicture()), "another instance draws the same")
    }

    @Test func everyFrameChangesAlmostEverywhere() {
        let (a, b) = (render(40), render(41))
        let changed = zip(a, b).count { $0 != $1 }
        #expect(changed * 10 > a.count * 9, "\(changed) of \(a.count) pixels changed")
    }

    /// Away from the disc, frame n+1 is frame n moved 3 pixels left and 2
    /// up, within the grain (16 levels).
    @Test func theMotionIsAPan() {
        let (a, b) = (render(60), render(61))
        var near = 0, compared = 0
        for y in 0..<(height - 2) {
            for x in 0..<(width - 3) {
                compared += 1
                let before = channels(a[(y + 2) * width + x + 3]), after = channels(b[y * width + x])
                if zip(before, after).allSatisfy({ abs($0 - $1) <= 16 }) { near += 1 }
            }
        }
        #expect(near * 10 > compared * 8, "\(near) of \(compared) pixels follow the pan")
    }

    /// There is detail to code: neighbouring pixels differ (no flat areas
    /// an encoder could skip).
    @Test func thePictureHasDetail() {
        let a = render(5)
        let differing = (1..<a.count).count { a[$0] != a[$0 - 1] }
        #expect(differing * 10 > a.count * 9)
    }
}
