import ShareColor
@testable import ShareX11Capture
import Testing

/// The pointer drawn into the pictures, sans-IO: which parts of the
/// captured area are grabbed again when it moves or changes its image, and
/// which moves show at all.
@Suite("Drawn pointer: what its moves cost the picture")
struct DrawnPointerTests {
    /// The captured area: a 640x480 region at 100,100 of the screen.
    let area = Rectangle(x: 100, y: 100, width: 640, height: 480)

    @Test func aMoveGrabsWhereItWasAndWhereItIs() {
        var drawn = DrawnPointer()
        let first = drawn.draw(bounds: Rectangle(x: 200, y: 200, width: 24, height: 24), serial: 7, position: (204, 202), in: area)
        #expect(first == [Rectangle(x: 100, y: 100, width: 24, height: 24)], "the first picture with it: where it is")
        let still = drawn.draw(bounds: Rectangle(x: 200, y: 200, width: 24, height: 24), serial: 7, position: (204, 202), in: area)
        #expect(still.isEmpty, "still, the same image: nothing to grab again")
        let moved = drawn.draw(bounds: Rectangle(x: 300, y: 250, width: 24, height: 24), serial: 7, position: (304, 252), in: area)
        #expect(moved == [Rectangle(x: 100, y: 100, width: 24, height: 24), Rectangle(x: 200, y: 150, width: 24, height: 24)])
        #expect(drawn.position == (304, 252))
    }

    @Test func aNewImageInPlaceIsGrabbedAgain() {
        var drawn = DrawnPointer()
        _ = drawn.draw(bounds: Rectangle(x: 200, y: 200, width: 24, height: 24), serial: 7, position: (204, 202), in: area)
        let reshaped = drawn.draw(bounds: Rectangle(x: 200, y: 200, width: 24, height: 24), serial: 8, position: (204, 202), in: area)
        #expect(reshaped.count == 2 && reshaped.allSatisfy { $0 == Rectangle(x: 100, y: 100, width: 24, height: 24) })
    }

    @Test func partsOutsideTheAreaAreCutAndAHiddenPointerLeavesItsPlace() {
        var drawn = DrawnPointer()
        let edge = drawn.draw(bounds: Rectangle(x: 90, y: 95, width: 24, height: 24), serial: 1, position: (90, 95), in: area)
        #expect(edge == [Rectangle(x: 0, y: 0, width: 14, height: 19)])
        let hidden = drawn.draw(bounds: nil, serial: nil, position: nil, in: area)
        #expect(hidden == [Rectangle(x: 0, y: 0, width: 14, height: 19)], "its old place is grabbed again")
        #expect(drawn.position == (90, 95), "an unknown position keeps the last one")
    }

    @Test func onlyMovesNearTheAreaShow() {
        var drawn = DrawnPointer()
        _ = drawn.draw(bounds: Rectangle(x: 1000, y: 1000, width: 24, height: 24), serial: 1, position: (1000, 1000), in: area)
        #expect(!drawn.shows(movedTo: (1000, 1000), in: area), "not moved")
        #expect(!drawn.shows(movedTo: (1200, 900), in: area), "far from the area before and after")
        #expect(drawn.shows(movedTo: (780, 500), in: area), "within a cursor's reach of the area's right edge")
        #expect(!drawn.shows(movedTo: (740 + DrawnPointer.reach, 500), in: area), "a cursor's reach away and more")
        _ = drawn.draw(bounds: Rectangle(x: 400, y: 300, width: 24, height: 24), serial: 1, position: (400, 300), in: area)
        #expect(drawn.shows(movedTo: (1500, 1500), in: area), "leaving the area shows: its old place is uncovered")
    }
}
