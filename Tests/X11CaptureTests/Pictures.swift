import ShareFrames

/// Whether the captured picture shows colour `rgb` (0xRRGGBB) at (x, y).
/// Pictures are I420 (BT.601, limited range, chroma shared by 2x2 pixels):
/// read back in RGB they are within a few steps of what was drawn, inside
/// an area of one colour.
func shows(_ lease: borrowing FrameLease, _ x: Int, _ y: Int, _ rgb: UInt32) -> Bool {
    let p = lease.pixel(x: x, y: y)
    let wanted = (red: Int(rgb >> 16 & 0xFF), green: Int(rgb >> 8 & 0xFF), blue: Int(rgb & 0xFF))
    return abs(Int(p.red) - wanted.red) <= 6 && abs(Int(p.green) - wanted.green) <= 6 && abs(Int(p.blue) - wanted.blue) <= 6
}
