internal import CYUV

/// Where an I420 picture's three planes are: a view over memory someone
/// else owns (a frame pool slot, an `I420Image`), valid only inside the
/// closure that lends it.
package struct I420Planes {
    package let y: UnsafeMutablePointer<UInt8>
    package let u: UnsafeMutablePointer<UInt8>
    package let v: UnsafeMutablePointer<UInt8>
    package let lumaStride: Int
    package let chromaStride: Int
    package let width: Int
    package let height: Int

    /// The planes of a picture stored as `I420Image` stores it (Y, then U,
    /// then V, each row packed) at `base`.
    package init(packedAt base: UnsafeMutablePointer<UInt8>, width: Int, height: Int) {
        let chromaStride = (width + 1) / 2
        y = base
        u = base + width * height
        v = base + width * height + chromaStride * ((height + 1) / 2)
        lumaStride = width
        self.chromaStride = chromaStride
        self.width = width
        self.height = height
    }

    /// Bytes a packed picture of this size takes.
    package static func packedBytes(width: Int, height: Int) -> Int {
        width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
    }

    /// Copies rows `rows` (even-aligned, as bands are) of `other`, a picture
    /// of the same size, into these planes.
    package func copyRows(_ rows: Range<Int>, from other: I420Planes) {
        for row in rows {
            (y + row * lumaStride).update(from: other.y + row * other.lumaStride, count: width)
        }
        let chromaRows = (rows.lowerBound / 2)..<((rows.upperBound + 1) / 2)
        let chromaWidth = (width + 1) / 2
        for row in chromaRows {
            (u + row * chromaStride).update(from: other.u + row * other.chromaStride, count: chromaWidth)
            (v + row * chromaStride).update(from: other.v + row * other.chromaStride, count: chromaWidth)
        }
    }
}

extension ColorConversion {
    /// Converts one band of a BGRX picture into `planes`, scaling when the
    /// planes are smaller than the picture. The band holds the picture's
    /// rows `sourceRows` (`stride` bytes apart); `rows` are the rows of
    /// `planes` it fills (even-aligned, so no chroma row is split between
    /// bands). Scaling goes through `scaled`, room for `rows.count` rows of
    /// `planes.width` BGRX pixels. Band by band, the result is the same as
    /// converting the whole picture at once.
    package static func convertBand(_ band: UnsafeRawPointer, stride: Int, sourceWidth: Int, sourceHeight: Int,
                                    sourceRows: Range<Int>, into planes: I420Planes, rows: Range<Int>,
                                    scaled: UnsafeMutableRawPointer?) {
        let source = band.assumingMemoryBound(to: UInt8.self)
        let chromaRow = rows.lowerBound / 2
        let (y, u, v) = (planes.y + rows.lowerBound * planes.lumaStride, planes.u + chromaRow * planes.chromaStride,
                         planes.v + chromaRow * planes.chromaStride)
        let (ys, cs) = (Int32(planes.lumaStride), Int32(planes.chromaStride))
        if planes.width == sourceWidth && planes.height == sourceHeight {
            let first = source + (rows.lowerBound - sourceRows.lowerBound) * stride
            _ = ARGBToI420(first, Int32(stride), y, ys, u, cs, v, cs, Int32(planes.width), Int32(rows.count))
            return
        }
        guard let scaled else { preconditionFailure("a scaled band needs room for its scaled rows") }
        let out = scaled.assumingMemoryBound(to: UInt8.self)
        let outStride = planes.width * 4
        _ = share_scale_band(source, Int32(stride), Int32(sourceWidth), Int32(sourceHeight), Int32(sourceRows.lowerBound),
                             out, Int32(outStride), Int32(planes.width), Int32(planes.height), Int32(rows.lowerBound),
                             Int32(rows.count))
        _ = ARGBToI420(out, Int32(outStride), y, ys, u, cs, v, cs, Int32(planes.width), Int32(rows.count))
    }

    /// Scales a whole BGRX picture to `outWidth` x `outHeight` BGRX (rows
    /// `outStride` bytes apart, packed by default), as libyuv does it in one
    /// call: the reference the bands are checked against, and the
    /// receiver's window fitting a picture to its size.
    package static func scaleBGRA(_ pixels: UnsafeRawPointer, stride: Int, width: Int, height: Int,
                                  to out: UnsafeMutableRawPointer, outWidth: Int, outHeight: Int, outStride: Int? = nil) {
        _ = ARGBScale(pixels.assumingMemoryBound(to: UInt8.self), Int32(stride), Int32(width), Int32(height),
                      out.assumingMemoryBound(to: UInt8.self), Int32(outStride ?? outWidth * 4), Int32(outWidth),
                      Int32(outHeight), kFilterBox)
    }
}

extension I420Image {
    /// The picture's planes, lent for the duration of `body`.
    package mutating func withPlanes<R>(_ body: (I420Planes) throws -> R) rethrows -> R {
        let (width, height) = (self.width, self.height)
        return try withMutablePlanes { y, _, _ in try body(I420Planes(packedAt: y, width: width, height: height)) }
    }
}

extension ColorConversion {
    /// Blends a premultiplied-ARGB image (`imageWidth` x `imageHeight`, a
    /// 32-bit word a pixel, as XFixes gives the pointer) onto BGRX pixels
    /// (`stride` bytes a row, `width` x `rows` of them) with its top left
    /// corner at (`left`, `top`) of those pixels; what falls outside is left out.
    package static func blendPremultiplied(_ image: UnsafePointer<UInt32>, imageWidth: Int, imageHeight: Int,
                                           onto pixels: UnsafeMutableRawPointer, stride: Int, width: Int, rows: Int,
                                           left: Int, top: Int) {
        let (firstRow, endRow) = (max(0, -top), min(imageHeight, rows - top))
        let (firstColumn, endColumn) = (max(0, -left), min(imageWidth, width - left))
        guard firstRow < endRow, firstColumn < endColumn else { return }
        let bytes = pixels.assumingMemoryBound(to: UInt8.self)
        for row in firstRow..<endRow {
            let line = bytes + (top + row) * stride
            for column in firstColumn..<endColumn {
                let argb = image[row * imageWidth + column]
                let alpha = argb >> 24
                guard alpha > 0 else { continue }
                let pixel = line + (left + column) * 4
                let keep = 255 - alpha
                pixel[0] = UInt8(min(255, (argb & 0xFF) + (UInt32(pixel[0]) * keep + 127) / 255))
                pixel[1] = UInt8(min(255, (argb >> 8 & 0xFF) + (UInt32(pixel[1]) * keep + 127) / 255))
                pixel[2] = UInt8(min(255, (argb >> 16 & 0xFF) + (UInt32(pixel[2]) * keep + 127) / 255))
            }
        }
    }
}
