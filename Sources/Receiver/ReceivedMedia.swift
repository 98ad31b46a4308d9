internal import ShareColor

/// A decoded picture lent to the host (`ReceiverConfiguration.onPicture`)
/// for the duration of the call, on the receiver's decode thread: I420
/// (YUV 4:2:0, 8 bits) planes owned by the decoder, which reuses them for
/// the next picture, in the stream's colour space (`colorSpace`: BT.601
/// video range from a `share` sender). Pictures sent otherwise (4:4:4 or
/// 4:2:2, 10 bits, luma alone, planar RGB) come converted to it. It cannot be copied or kept; read it,
/// convert it (`convertToBGRA`) or copy it (`i420Copy`) before returning,
/// and return quickly: the next picture waits.
public struct ReceivedPicture: ~Copyable {
    /// Pixels across.
    public let width: Int
    /// Pixels down.
    public let height: Int
    /// Bytes from one row of the Y plane to the next.
    public let lumaStride: Int
    /// Bytes from one row of the U plane to the next.
    public let uStride: Int
    /// Bytes from one row of the V plane to the next.
    public let vStride: Int
    private let y: UnsafePointer<UInt8>
    private let u: UnsafePointer<UInt8>
    private let v: UnsafePointer<UInt8>
    /// The matrix and range the planes' samples are in (a stream that does
    /// not say is BT.601, video range, as `share` sends); `convertToBGRA` uses it.
    public let colorSpace: ColorSpace
    /// When the sender captured it (Unix nanoseconds, the sender's clock):
    /// from the stream's capture-time extension (share's senders send it),
    /// else its sender reports, else estimated from arrival.
    public let capturedUnixNanoseconds: Int64
    /// The picture's RTP timestamp (90 kHz).
    public let rtpTimestamp: UInt32
    /// Whether it was coded as a keyframe.
    public let isKeyframe: Bool

    init(width: Int, height: Int, y: UnsafePointer<UInt8>, lumaStride: Int, u: UnsafePointer<UInt8>, uStride: Int,
         v: UnsafePointer<UInt8>, vStride: Int, colorSpace: ColorSpace, capturedUnixNanoseconds: Int64, rtpTimestamp: UInt32,
         isKeyframe: Bool) {
        self.width = width
        self.height = height
        self.y = y
        self.lumaStride = lumaStride
        self.u = u
        self.uStride = uStride
        self.v = v
        self.vStride = vStride
        self.colorSpace = colorSpace
        self.capturedUnixNanoseconds = capturedUnixNanoseconds
        self.rtpTimestamp = rtpTimestamp
        self.isKeyframe = isKeyframe
    }

    /// The Y (luma) value at (x, y).
    public func luma(x: Int, y row: Int) -> UInt8 { y[row * lumaStride + x] }

    /// The (U, V) pair covering (x, y).
    public func chroma(x: Int, y row: Int) -> (u: UInt8, v: UInt8) {
        (u[(row / 2) * uStride + x / 2], v[(row / 2) * vStride + x / 2])
    }

    /// Lends the three planes (rows of `lumaStride`, `uStride`, `vStride`
    /// bytes; U and V have half the rows, rounded up) for the duration of `body`.
    public func withPlanes<R>(_ body: (_ y: UnsafeBufferPointer<UInt8>, _ u: UnsafeBufferPointer<UInt8>,
                                       _ v: UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let chromaRows = (height + 1) / 2
        return try body(UnsafeBufferPointer(start: y, count: lumaStride * height),
                        UnsafeBufferPointer(start: u, count: uStride * chromaRows),
                        UnsafeBufferPointer(start: v, count: vStride * chromaRows))
    }

    /// Converts to BGRA (bytes B, G, R, A; alpha 255) into `pixels`, rows
    /// `stride` bytes apart (at least `width * 4`).
    public func convertToBGRA(into pixels: UnsafeMutableRawPointer, stride: Int) {
        precondition(stride >= width * 4, "a BGRA row of \(width) pixels needs \(width * 4) bytes")
        ColorConversion.convertI420(y: y, yStride: lumaStride, u: u, uStride: uStride, v: v, vStride: vStride,
                                    width: width, height: height, colors: colorSpace, to: pixels, stride: stride)
    }

    /// The picture as BGRA bytes, rows `width * 4` apart (allocates).
    public func bgra() -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        pixels.withUnsafeMutableBytes { convertToBGRA(into: $0.baseAddress!, stride: width * 4) }
        return pixels
    }

    /// An owned copy of the planes, to keep after the call (allocates).
    public func i420Copy() -> I420Image {
        I420Image(copying: y, yStride: lumaStride, u: u, uStride: uStride, v: v, vStride: vStride, width: width, height: height)
    }
}

/// 20 ms of decoded sound handed to the host (`ReceiverConfiguration.onSound`),
/// on the receiver's decode thread: 48 kHz, stereo, interleaved 16-bit
/// samples (a mono stream is decoded to both channels), in play order, with
/// any loss already concealed. Return quickly: the pictures wait.
public struct ReceivedSound: Sendable {
    /// Which audio stream (in the order the sender announced them: with
    /// pushed sound, the app's and the microphone's are two streams).
    public let stream: Int
    /// 960 stereo frames, left and right interleaved.
    public let samples: ArraySlice<Int16>
    /// When the sender captured the first sample (Unix nanoseconds, the
    /// sender's clock; estimated as for pictures).
    public let capturedUnixNanoseconds: Int64
}
