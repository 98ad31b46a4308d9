// See include/share_pipewire.h.
#include "share_pipewire.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <pipewire/pipewire.h>
#include <spa/buffer/meta.h>
#include <spa/param/video/format-utils.h>
#include <spa/pod/builder.h>
#include <spa/utils/result.h>

// The largest pointer shape kept (a 4x scaled 64x64 cursor).
#define SHARE_PW_POINTER_SIDE 256
#define SHARE_PW_BUFFERS 3
// The largest cursor metadata accepted: compositors offer a fixed size of
// their own (Mutter 43: room for 384x384), which must fall in the range.
#define SHARE_PW_CURSOR_META_SIDE 1024
#define SHARE_PW_CURSOR_META_SIZE(side) \
    (sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + (side) * (side) * 4)

struct share_pw_capture {
    struct pw_thread_loop *loop;
    struct pw_context *context;
    struct pw_core *core;
    struct spa_hook core_listener;
    struct pw_stream *stream;
    struct spa_hook stream_listener;
    int wakeup;

    int state;
    char error[256];
    uint32_t width, height;
    int32_t layout;

    // The newest picture not taken yet, and the one lent out.
    struct pw_buffer *held;
    uint64_t held_arrived;
    struct pw_buffer *lent;
    uint64_t arrived, replaced, empty;
    // Buffers PipeWire gave this stream, and the bytes they map.
    uint32_t buffers;
    uint64_t buffer_bytes;

    // Damage since the last take.
    bool damage_all;
    int32_t damage_count;
    share_pw_rect damage[SHARE_PW_MAX_DAMAGE];

    share_pw_pointer pointer;
    uint32_t pointer_pixels[SHARE_PW_POINTER_SIDE * SHARE_PW_POINTER_SIDE];
    uint64_t pointer_changes;
};

static uint64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void wake(struct share_pw_capture *c) {
    uint64_t one = 1;
    ssize_t n = write(c->wakeup, &one, sizeof one);
    (void)n;
}

static void fail(struct share_pw_capture *c, const char *what) {
    if (c->state != SHARE_PW_FAILED) {
        c->state = SHARE_PW_FAILED;
        snprintf(c->error, sizeof c->error, "%s", what);
    }
    wake(c);
}

static int32_t layout_of(enum spa_video_format format) {
    switch (format) {
    case SPA_VIDEO_FORMAT_BGRx:
    case SPA_VIDEO_FORMAT_BGRA: return SHARE_PW_LAYOUT_BGRX;
    case SPA_VIDEO_FORMAT_RGBx:
    case SPA_VIDEO_FORMAT_RGBA: return SHARE_PW_LAYOUT_RGBX;
    case SPA_VIDEO_FORMAT_xRGB_210LE: return SHARE_PW_LAYOUT_BGR10;
    case SPA_VIDEO_FORMAT_xBGR_210LE: return SHARE_PW_LAYOUT_RGB10;
    default: return SHARE_PW_LAYOUT_NONE;
    }
}

// Damage of one buffer joins what was gathered since the last take.
static void gather_damage(struct share_pw_capture *c, struct spa_buffer *buffer) {
    struct spa_meta *meta = spa_buffer_find_meta(buffer, SPA_META_VideoDamage);
    if (meta == NULL) {
        c->damage_all = true;
        return;
    }
    struct spa_meta_region *region;
    spa_meta_for_each(region, meta) {
        if (!spa_meta_region_is_valid(region)) break;
        if (c->damage_count == SHARE_PW_MAX_DAMAGE) {
            c->damage_all = true;
            return;
        }
        share_pw_rect *r = &c->damage[c->damage_count++];
        r->x = region->region.position.x;
        r->y = region->region.position.y;
        r->width = region->region.size.width;
        r->height = region->region.size.height;
    }
}

// The pointer's position and, when it came with it, its shape.
static void read_cursor(struct share_pw_capture *c, struct spa_buffer *buffer) {
    struct spa_meta_cursor *cursor = spa_buffer_find_meta_data(buffer, SPA_META_Cursor, sizeof *cursor);
    if (cursor == NULL) return;
    share_pw_pointer *p = &c->pointer;
    bool visible = spa_meta_cursor_is_valid(cursor);
    bool changed = visible != (p->visible != 0) || !p->known;
    if (visible) {
        changed = changed || p->x != cursor->position.x || p->y != cursor->position.y;
        p->x = cursor->position.x;
        p->y = cursor->position.y;
        p->hot_x = cursor->hotspot.x;
        p->hot_y = cursor->hotspot.y;
        if (cursor->bitmap_offset >= sizeof *cursor) {
            struct spa_meta_bitmap *bitmap = SPA_PTROFF(cursor, cursor->bitmap_offset, struct spa_meta_bitmap);
            uint32_t w = bitmap->size.width, h = bitmap->size.height;
            bool rgba = bitmap->format == SPA_VIDEO_FORMAT_RGBA, bgra = bitmap->format == SPA_VIDEO_FORMAT_BGRA;
            if ((rgba || bgra) && w > 0 && h > 0 && w <= SHARE_PW_POINTER_SIDE && h <= SHARE_PW_POINTER_SIDE &&
                bitmap->stride >= (int32_t)(w * 4) && bitmap->offset >= sizeof *bitmap) {
                const uint8_t *rows = SPA_PTROFF(bitmap, bitmap->offset, const uint8_t);
                for (uint32_t y = 0; y < h; y++) {
                    const uint8_t *s = rows + (size_t)y * (size_t)bitmap->stride;
                    for (uint32_t x = 0; x < w; x++, s += 4) {
                        uint32_t r = rgba ? s[0] : s[2], g = s[1], b = rgba ? s[2] : s[0], a = s[3];
                        c->pointer_pixels[y * w + x] = a << 24 | r << 16 | g << 8 | b;
                    }
                }
                p->width = w;
                p->height = h;
                p->serial += 1;
                changed = true;
            }
        }
    }
    p->visible = visible;
    p->known = 1;
    if (changed) {
        c->pointer_changes += 1;
        wake(c);
    }
}

static void on_process(void *data) {
    struct share_pw_capture *c = data;
    struct pw_buffer *b;
    while ((b = pw_stream_dequeue_buffer(c->stream)) != NULL) {
        struct spa_buffer *buffer = b->buffer;
        read_cursor(c, buffer);
        struct spa_data *d = &buffer->datas[0];
        bool picture = buffer->n_datas > 0 && d->data != NULL && d->chunk->size > 0 &&
                       (d->chunk->flags & SPA_CHUNK_FLAG_CORRUPTED) == 0;
        if (!picture) {
            c->empty += 1;
            pw_stream_queue_buffer(c->stream, b);
            continue;
        }
        gather_damage(c, buffer);
        if (c->held != NULL) {
            c->replaced += 1;
            pw_stream_queue_buffer(c->stream, c->held);
        }
        c->held = b;
        c->held_arrived = monotonic_ns();
        c->arrived += 1;
        wake(c);
    }
}

static void give_back_all(struct share_pw_capture *c) {
    if (c->held != NULL) pw_stream_queue_buffer(c->stream, c->held);
    c->held = NULL;
}

static void on_state_changed(void *data, enum pw_stream_state old, enum pw_stream_state state, const char *error) {
    struct share_pw_capture *c = data;
    (void)old;
    switch (state) {
    case PW_STREAM_STATE_ERROR: fail(c, error != NULL ? error : "the stream failed"); return;
    case PW_STREAM_STATE_UNCONNECTED:
        if (c->state != SHARE_PW_FAILED) c->state = SHARE_PW_ENDED;
        break;
    case PW_STREAM_STATE_CONNECTING: c->state = SHARE_PW_CONNECTING; break;
    case PW_STREAM_STATE_PAUSED:
        if (c->state == SHARE_PW_STREAMING || c->state == SHARE_PW_CONNECTING) c->state = SHARE_PW_PAUSED;
        break;
    case PW_STREAM_STATE_STREAMING: c->state = SHARE_PW_STREAMING; break;
    }
    wake(c);
}

// A format was chosen: its size and layout, then the buffers and metadata wanted.
static void on_param_changed(void *data, uint32_t id, const struct spa_pod *param) {
    struct share_pw_capture *c = data;
    if (param == NULL || id != SPA_PARAM_Format) return;
    uint32_t media_type, media_subtype;
    if (spa_format_parse(param, &media_type, &media_subtype) < 0 || media_type != SPA_MEDIA_TYPE_video ||
        media_subtype != SPA_MEDIA_SUBTYPE_raw) return;
    struct spa_video_info_raw info;
    if (spa_format_video_raw_parse(param, &info) < 0) {
        fail(c, "the stream's video format could not be read");
        return;
    }
    int32_t layout = layout_of(info.format);
    if (layout == SHARE_PW_LAYOUT_NONE) {
        fail(c, "the stream offered a pixel format capture cannot convert");
        return;
    }
    give_back_all(c);
    c->width = info.size.width;
    c->height = info.size.height;
    c->layout = layout;
    c->damage_all = true;

    uint8_t storage[1024];
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(storage, sizeof storage);
    const struct spa_pod *params[4];
    params[0] = spa_pod_builder_add_object(&builder, SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        // Three: one the compositor writes, the newest kept for capture, one
        // spare. Each is a whole picture mapped into this process and read
        // in full, so each counts in the footprint (Mutter offers up to 16).
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(SHARE_PW_BUFFERS, 2, SHARE_PW_BUFFERS),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemFd) | (1 << SPA_DATA_MemPtr)));
    params[1] = spa_pod_builder_add_object(&builder, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Header),
        SPA_PARAM_META_size, SPA_POD_Int(sizeof(struct spa_meta_header)));
    params[2] = spa_pod_builder_add_object(&builder, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_VideoDamage),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(sizeof(struct spa_meta_region) * SHARE_PW_MAX_DAMAGE,
                                                      sizeof(struct spa_meta_region),
                                                      sizeof(struct spa_meta_region) * SHARE_PW_MAX_DAMAGE));
    params[3] = spa_pod_builder_add_object(&builder, SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(SPA_META_Cursor),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(SHARE_PW_CURSOR_META_SIZE(64), SHARE_PW_CURSOR_META_SIZE(1),
                                                      SHARE_PW_CURSOR_META_SIZE(SHARE_PW_CURSOR_META_SIDE)));
    pw_stream_update_params(c->stream, params, 4);
    wake(c);
}

static uint64_t mapped_bytes(struct pw_buffer *buffer) {
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < buffer->buffer->n_datas; i++) bytes += buffer->buffer->datas[i].maxsize;
    return bytes;
}

static void on_add_buffer(void *data, struct pw_buffer *buffer) {
    struct share_pw_capture *c = data;
    c->buffers += 1;
    c->buffer_bytes += mapped_bytes(buffer);
}

static void on_remove_buffer(void *data, struct pw_buffer *buffer) {
    struct share_pw_capture *c = data;
    c->buffers -= c->buffers > 0 ? 1 : 0;
    c->buffer_bytes -= SPA_MIN(c->buffer_bytes, mapped_bytes(buffer));
    if (c->held == buffer) c->held = NULL;
    if (c->lent == buffer) c->lent = NULL;
}

static const struct pw_stream_events stream_events = {
    PW_VERSION_STREAM_EVENTS,
    .state_changed = on_state_changed,
    .param_changed = on_param_changed,
    .add_buffer = on_add_buffer,
    .remove_buffer = on_remove_buffer,
    .process = on_process,
};

static void on_core_error(void *data, uint32_t id, int seq, int res, const char *message) {
    struct share_pw_capture *c = data;
    (void)seq;
    if (id == PW_ID_CORE) {
        char text[200];
        snprintf(text, sizeof text, "PipeWire: %s (%s)", message != NULL ? message : "error", spa_strerror(res));
        fail(c, text);
    }
}

static const struct pw_core_events core_events = {
    PW_VERSION_CORE_EVENTS,
    .error = on_core_error,
};

static const struct spa_pod *format_param(struct spa_pod_builder *b, uint32_t max_fps) {
    struct spa_rectangle size = SPA_RECTANGLE(1280, 720), min_size = SPA_RECTANGLE(1, 1),
                         max_size = SPA_RECTANGLE(16384, 16384);
    struct spa_fraction rate = SPA_FRACTION(0, 1), fps = SPA_FRACTION(max_fps, 1), min_fps = SPA_FRACTION(1, 1),
                        max = SPA_FRACTION(max_fps, 1);
    return spa_pod_builder_add_object(b, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(7, SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRx,
            SPA_VIDEO_FORMAT_BGRA, SPA_VIDEO_FORMAT_RGBx, SPA_VIDEO_FORMAT_RGBA, SPA_VIDEO_FORMAT_xRGB_210LE,
            SPA_VIDEO_FORMAT_xBGR_210LE),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&size, &min_size, &max_size),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&rate),
        SPA_FORMAT_VIDEO_maxFramerate, SPA_POD_CHOICE_RANGE_Fraction(&fps, &min_fps, &max));
}

share_pw_capture *share_pw_start(int fd, uint32_t node, uint32_t max_fps, char *error, size_t error_size) {
    pw_init(NULL, NULL);
    struct share_pw_capture *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    c->wakeup = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->loop = pw_thread_loop_new("share-pipewire", NULL);
    if (c->wakeup < 0 || c->loop == NULL) {
        snprintf(error, error_size, "cannot start PipeWire's thread: %s", strerror(errno));
        goto failed;
    }
    c->context = pw_context_new(pw_thread_loop_get_loop(c->loop), NULL, 0);
    if (c->context == NULL) {
        snprintf(error, error_size, "cannot make a PipeWire context: %s", strerror(errno));
        goto failed;
    }
    if (pw_thread_loop_start(c->loop) < 0) {
        snprintf(error, error_size, "cannot start PipeWire's thread");
        goto failed;
    }
    pw_thread_loop_lock(c->loop);
    c->core = fd >= 0 ? pw_context_connect_fd(c->context, fd, NULL, 0) : pw_context_connect(c->context, NULL, 0);
    if (c->core == NULL) {
        snprintf(error, error_size, "no PipeWire: cannot connect to its daemon (%s)", strerror(errno));
        pw_thread_loop_unlock(c->loop);
        goto failed;
    }
    pw_core_add_listener(c->core, &c->core_listener, &core_events, c);
    c->stream = pw_stream_new(c->core, "share",
        pw_properties_new(PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Screen", NULL));
    if (c->stream == NULL) {
        snprintf(error, error_size, "cannot make a PipeWire stream: %s", strerror(errno));
        pw_thread_loop_unlock(c->loop);
        goto failed;
    }
    pw_stream_add_listener(c->stream, &c->stream_listener, &stream_events, c);
    uint8_t storage[1024];
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(storage, sizeof storage);
    const struct spa_pod *params[1] = {format_param(&builder, max_fps > 0 ? max_fps : 60)};
    // The node by id, as screen casts give it (a target.object would be taken as a serial).
    int res = pw_stream_connect(c->stream, PW_DIRECTION_INPUT, node,
                                PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS, params, 1);
    pw_thread_loop_unlock(c->loop);
    if (res < 0) {
        snprintf(error, error_size, "cannot connect to PipeWire node %u: %s", node, spa_strerror(res));
        goto failed;
    }
    return c;
failed:
    share_pw_stop(c);
    return NULL;
}

void share_pw_stop(share_pw_capture *c) {
    if (c == NULL) return;
    if (c->loop != NULL) pw_thread_loop_stop(c->loop);
    if (c->stream != NULL) pw_stream_destroy(c->stream);
    if (c->core != NULL) pw_core_disconnect(c->core);
    if (c->context != NULL) pw_context_destroy(c->context);
    if (c->loop != NULL) pw_thread_loop_destroy(c->loop);
    if (c->wakeup >= 0) close(c->wakeup);
    free(c);
}

int share_pw_wakeup_fd(share_pw_capture *c) { return c->wakeup; }

void share_pw_clear_wakeup(share_pw_capture *c) {
    uint64_t count;
    ssize_t n = read(c->wakeup, &count, sizeof count);
    (void)n;
}

void share_pw_lock(share_pw_capture *c) { pw_thread_loop_lock(c->loop); }
void share_pw_unlock(share_pw_capture *c) { pw_thread_loop_unlock(c->loop); }

int share_pw_state(share_pw_capture *c, char *error, size_t error_size) {
    if (c->state == SHARE_PW_FAILED && error != NULL) snprintf(error, error_size, "%s", c->error);
    return c->state;
}

void share_pw_size(share_pw_capture *c, uint32_t *width, uint32_t *height, int32_t *layout) {
    *width = c->width;
    *height = c->height;
    *layout = c->layout;
}

void share_pw_counts(share_pw_capture *c, uint64_t *arrived, uint64_t *replaced, uint64_t *empty) {
    *arrived = c->arrived;
    *replaced = c->replaced;
    *empty = c->empty;
}

int share_pw_has_frame(share_pw_capture *c) { return c->held != NULL; }

int share_pw_take(share_pw_capture *c, share_pw_frame *frame) {
    if (c->held == NULL || c->lent != NULL) return 0;
    struct spa_data *d = &c->held->buffer->datas[0];
    // A buffer that cannot hold the negotiated picture is given back unread.
    if (d->chunk->stride <= 0 || (uint32_t)d->chunk->stride < c->width * 4 ||
        (uint64_t)d->chunk->offset + (uint64_t)d->chunk->stride * c->height > d->maxsize) {
        pw_stream_queue_buffer(c->stream, c->held);
        c->held = NULL;
        return 0;
    }
    c->lent = c->held;
    c->held = NULL;
    frame->pixels = SPA_PTROFF(d->data, d->chunk->offset, const void);
    frame->stride = d->chunk->stride;
    frame->width = c->width;
    frame->height = c->height;
    frame->layout = c->layout;
    frame->arrived_ns = c->held_arrived;
    frame->sequence = c->arrived;
    frame->damage_all = c->damage_all;
    frame->damage_count = c->damage_all ? 0 : c->damage_count;
    memcpy(frame->damage, c->damage, sizeof c->damage);
    c->damage_all = false;
    c->damage_count = 0;
    return 1;
}

// Drops this process's view of a buffer's pages once they were read: the
// compositor's memory stays the compositor's, and reading the next picture
// maps it again. Without it every buffer ever read stays mapped, whole, in
// this process (RssShmem), and three 1080p buffers alone are half the
// memory budget.
static void unmap_pages(struct pw_buffer *buffer) {
    for (uint32_t i = 0; i < buffer->buffer->n_datas; i++) {
        struct spa_data *d = &buffer->buffer->datas[i];
        if (d->type != SPA_DATA_MemFd || d->data == NULL || d->maxsize == 0) continue;
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t start = (uintptr_t)d->data & ~(uintptr_t)(page - 1);
        uintptr_t end = ((uintptr_t)d->data + d->maxsize) & ~(uintptr_t)(page - 1);
        if (end > start) madvise((void *)start, end - start, MADV_DONTNEED);
    }
}

void share_pw_give_back(share_pw_capture *c) {
    if (c->lent != NULL) {
        unmap_pages(c->lent);
        pw_stream_queue_buffer(c->stream, c->lent);
    }
    c->lent = NULL;
}

void share_pw_pointer_read(share_pw_capture *c, share_pw_pointer *pointer, uint32_t *pixels, size_t capacity) {
    *pointer = c->pointer;
    size_t words = (size_t)c->pointer.width * c->pointer.height;
    if (pixels != NULL && words <= capacity) memcpy(pixels, c->pointer_pixels, words * 4);
}

uint64_t share_pw_pointer_changes(share_pw_capture *c) { return c->pointer_changes; }

uint64_t share_pw_buffer_bytes(share_pw_capture *c) { return c->buffer_bytes; }
