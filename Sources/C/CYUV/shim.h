#ifndef SHARE_CYUV_SHIM_H
#define SHARE_CYUV_SHIM_H
/// libyuv's umbrella header pulls in C++-only headers (mjpeg_decoder.h) when
/// compiled as C++; only the C headers the sender needs are included.
#include <stdint.h>
#include <libyuv/convert.h>
#include <libyuv/convert_argb.h>
#include <libyuv/convert_from_argb.h>
#include <libyuv/planar_functions.h>
#include <libyuv/scale.h>
#include <libyuv/scale_argb.h>

/// Scales one band of a picture: rows `first_dst_row ..< first_dst_row +
/// dst_rows` of the whole `src_w` x `src_h` picture scaled to `dst_w` x
/// `dst_h`, exactly as scaling the whole picture would give them.
/// `band` holds the source rows from `first_src_row` on (as many as the
/// filter reads for these rows); `out` receives the scaled rows. libyuv
/// addresses rows from the picture's first; the picture is never whole in
/// memory, so its base addresses are computed here, in integers, and only
/// rows inside the band and `out` are read and written.
static inline int share_scale_band(const uint8_t *band, int stride, int src_w, int src_h, int first_src_row,
                                   uint8_t *out, int out_stride, int dst_w, int dst_h, int first_dst_row,
                                   int dst_rows) {
    const uint8_t *src_base = (const uint8_t *)((uintptr_t)band - (uintptr_t)first_src_row * (uintptr_t)stride);
    uint8_t *dst_base = (uint8_t *)((uintptr_t)out - (uintptr_t)first_dst_row * (uintptr_t)out_stride);
    return ARGBScaleClip(src_base, stride, src_w, src_h, dst_base, out_stride, dst_w, dst_h,
                         0, first_dst_row, dst_w, dst_rows, kFilterBox);
}

/// libyuv's YUV-to-RGB coefficients (globals of a type Swift sees only as
/// incomplete): `matrix` 0 BT.601, 1 BT.709, 2 BT.2020; `full` for samples
/// over the whole 0-255 range instead of 16-235.
static inline const struct YuvConstants *share_yuv_constants(int matrix, int full) {
    switch (matrix) {
    case 1: return full ? &kYuvF709Constants : &kYuvH709Constants;
    case 2: return full ? &kYuvV2020Constants : &kYuv2020Constants;
    default: return full ? &kYuvJPEGConstants : &kYuvI601Constants;
    }
}
#endif
