#ifndef SHARE_CLIBAV_SHIM_H
#define SHARE_CLIBAV_SHIM_H
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>

/// AVERROR(EAGAIN) and AVERROR_EOF are function-like / FFERRTAG macros.
static inline int share_av_error_again(void) { return AVERROR(EAGAIN); }
static inline int share_av_error_eof(void) { return AVERROR_EOF; }
/// AV_NOPTS_VALUE is a cast of a 64-bit literal that Swift does not import.
static inline int64_t share_av_nopts(void) { return AV_NOPTS_VALUE; }
#endif
