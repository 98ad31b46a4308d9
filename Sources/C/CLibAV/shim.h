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

/// Which macroblock rows of the picture being decoded in parts are done,
/// learned from libavcodec's draw_horiz_band (called as each row is
/// finished, from its slice threads at once: the bits are set atomically),
/// and the picture they belong to. Reset before a picture's first part.
typedef struct share_av_rows {
    uint64_t done[64];          /* one bit per macroblock row: up to 4096 rows */
    const AVFrame *picture;     /* the picture being decoded */
    int unusable;               /* a field picture: rows are not reported as a frame's */
} share_av_rows;

static void share_av_row_done(struct AVCodecContext *context, const AVFrame *picture,
                              int offset[AV_NUM_DATA_POINTERS], int y, int type, int height) {
    (void)offset;
    share_av_rows *rows = (share_av_rows *)context->opaque;
    if (!rows) return;
    if (type != 3 /* PICT_FRAME */) { __atomic_store_n(&rows->unusable, 1, __ATOMIC_RELAXED); return; }
    __atomic_store_n(&rows->picture, picture, __ATOMIC_RELAXED);
    /* The band [y, y + height) ends where its rows are final (deblocked,
       the next row's top edge aside) or, with deblocking postponed to the
       end of the part (slice threads), where its row ends: either way a
       row r is done once the band ends at or below 16 (r + 1) - 4. The
       picture's bottom band ends every row left. */
    int first = (y + 4) / 16;
    int last = y + height >= context->height ? (context->height + 15) / 16 - 1 : (y + height + 4) / 16 - 1;
    for (int row = first < 0 ? 0 : first; row <= last && row < 64 * 64; row++)
        __atomic_fetch_or(&rows->done[row / 64], (uint64_t)1 << (row % 64), __ATOMIC_RELAXED);
}

/// Forgets every row done, before a picture's first part; atomically, as
/// the slice threads set them (see share_av_rows_picture).
static inline void share_av_rows_reset(share_av_rows *rows) {
    for (int word = 0; word < 64; word++) __atomic_store_n(&rows->done[word], 0, __ATOMIC_RELEASE);
    __atomic_store_n(&rows->picture, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&rows->unusable, 0, __ATOMIC_RELEASE);
}

/// Has `context` report its finished rows into `rows` (NULL: no more).
static inline void share_av_follow_rows(AVCodecContext *context, share_av_rows *rows) {
    context->opaque = rows;
    context->draw_horiz_band = rows ? share_av_row_done : NULL;
}

/// The picture being decoded in parts, once a row of it is done (NULL
/// before). Read atomically, as the slice threads write it: libavcodec may
/// learn its threads are done through atomics of its own, which
/// ThreadSanitizer cannot see.
static inline const AVFrame *share_av_rows_picture(const share_av_rows *rows) {
    return __atomic_load_n(&rows->picture, __ATOMIC_ACQUIRE);
}

/// Luma rows from the top of the picture being decoded that are final:
/// every macroblock row down to them done, and four rows short of the last
/// one, which the deblocking of the next row's top edge may still change.
/// All `height` once every row is done. Read atomically, as they are written.
static inline int share_av_rows_final(const share_av_rows *rows, int height) {
    if (__atomic_load_n(&rows->unusable, __ATOMIC_ACQUIRE)) return 0;
    int done = 0;
    while (done < 64 * 64 && (__atomic_load_n(&rows->done[done / 64], __ATOMIC_ACQUIRE) >> (done % 64) & 1)) done++;
    if (done * 16 >= height) return height;
    return done > 0 ? done * 16 - 4 : 0;
}
#endif
