internal import ShareBase
internal import CPipeWire
public import ShareCapture
internal import ShareSync

extension PipeWireCapturer {
    /// The compositor draws the pointer in or sends it as metadata, as asked
    /// when the cast started; metadata is read apart from then on.
    public func placePointer(apart: Bool) { pointerApart = apart }

    /// Where the metadata last put the pointer, with its shape when that
    /// changed since the last call.
    public func readPointer() -> PointerState? {
        guard pointerApart else { return nil }
        var shape = pointerShape
        let (pointer, changes) = stream.locked { ($0.pointer(shape: &shape), $0.pointerChanges) }
        pointerShape = shape
        if changes != pointerChangesSeen {
            pointerChangesSeen = changes
            pointerMovedAt = SystemClock.now()
        }
        guard pointer.known != 0 else { return nil }
        var newShape: PointerShape?
        if pointer.serial != pointerSerial, pointer.width > 0 {
            pointerSerial = pointer.serial
            newShape = PointerShape(serial: pointer.serial, width: Int(pointer.width), height: Int(pointer.height),
                                    hotX: Int(pointer.hot_x), hotY: Int(pointer.hot_y), pixels: shape)
        }
        let (x, y) = (Int(pointer.x), Int(pointer.y))
        let visible = pointer.visible != 0 && x >= 0 && y >= 0 && x < width && y < height
        return PointerState(x: x, y: y, areaWidth: width, areaHeight: height, serial: pointer.serial, visible: visible,
                            shape: newShape)
    }

    /// Still for a second: the compositor tells every move, so a resting
    /// pointer needs no looking at.
    public var pointerResting: Bool { SystemClock.now().since(pointerMovedAt) > .seconds(1) }

    /// Moves wake the waits (the stream's descriptor), so a resting pointer
    /// is only looked at now and then.
    public var restingPointerCheck: Duration? { .seconds(1) }
}
