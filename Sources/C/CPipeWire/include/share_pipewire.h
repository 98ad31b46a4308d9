#ifndef SHARE_PIPEWIRE_H
#define SHARE_PIPEWIRE_H

// A PipeWire video stream consumed for screen capture: negotiation of the
// formats capture converts (32-bit RGB in shared memory), the newest buffer
// held for the capturing thread and every older one handed back at once,
// damage and pointer metadata gathered as buffers come. SPA's pod builder
// and iterators are macros and inline functions, so they live here, in C;
// Swift sees only these calls. Everything is reached under the stream's
// thread-loop lock (share_pw_lock), the same lock PipeWire's thread holds
// while it runs the callbacks.

#include <stddef.h>
#include <stdint.h>

typedef struct share_pw_capture share_pw_capture;

/// The pixel layouts negotiated, in capture's own terms.
enum share_pw_layout {
    SHARE_PW_LAYOUT_NONE = 0,
    SHARE_PW_LAYOUT_BGRX = 1,   // BGRx and BGRA: blue in the lowest byte
    SHARE_PW_LAYOUT_RGBX = 2,   // RGBx and RGBA
    SHARE_PW_LAYOUT_BGR10 = 3,  // xRGB_210LE: red in bits 20-29
    SHARE_PW_LAYOUT_RGB10 = 4,  // xBGR_210LE: red in bits 0-9
};

enum share_pw_state {
    SHARE_PW_CONNECTING = 0,
    SHARE_PW_PAUSED = 1,
    SHARE_PW_STREAMING = 2,
    SHARE_PW_ENDED = 3,    // the producer went away (the screen cast stopped)
    SHARE_PW_FAILED = 4,   // an error, with its text
};

#define SHARE_PW_MAX_DAMAGE 32

typedef struct share_pw_rect {
    int32_t x, y;
    uint32_t width, height;
} share_pw_rect;

/// The newest picture, lent until share_pw_give_back.
typedef struct share_pw_frame {
    const void *pixels;
    int32_t stride;
    uint32_t width, height;
    int32_t layout;          // enum share_pw_layout
    uint64_t arrived_ns;     // CLOCK_MONOTONIC when it came
    uint64_t sequence;       // pictures that came so far, this one included
    // What changed since the picture taken before (every buffer's damage
    // since then); damage_all: anything may have (no metadata, too many parts).
    int32_t damage_all;
    int32_t damage_count;
    share_pw_rect damage[SHARE_PW_MAX_DAMAGE];
} share_pw_frame;

/// The pointer as the last metadata gave it.
typedef struct share_pw_pointer {
    int32_t known;           // metadata has said where it is
    int32_t visible;
    int32_t x, y;            // the hot spot, in the stream's pixels
    int32_t hot_x, hot_y;
    uint32_t serial;         // counts shapes seen
    uint32_t width, height;  // the shape's size (0: none yet)
} share_pw_pointer;

/// Connects to PipeWire (through `fd` when it is not -1, as a portal gives
/// one; else the user's daemon) and asks node `node` for video of at most
/// `max_fps` pictures a second, with pointer metadata. Writes a reason into
/// `error` and returns NULL when it cannot.
share_pw_capture *share_pw_start(int fd, uint32_t node, uint32_t max_fps, char *error, size_t error_size);
/// Stops the stream and frees everything (the lock must not be held).
void share_pw_stop(share_pw_capture *capture);

/// A descriptor readable when a picture, pointer news or a state change came
/// (read it to clear: share_pw_clear_wakeup).
int share_pw_wakeup_fd(share_pw_capture *capture);
void share_pw_clear_wakeup(share_pw_capture *capture);

void share_pw_lock(share_pw_capture *capture);
void share_pw_unlock(share_pw_capture *capture);

// The calls below need the lock.

/// The state now, with the error's text for SHARE_PW_FAILED.
int share_pw_state(share_pw_capture *capture, char *error, size_t error_size);
/// The negotiated size and layout (0 before negotiation).
void share_pw_size(share_pw_capture *capture, uint32_t *width, uint32_t *height, int32_t *layout);
/// Pictures that came, pictures replaced by a newer one before they were
/// taken, and buffers that held no picture (pointer news only).
void share_pw_counts(share_pw_capture *capture, uint64_t *arrived, uint64_t *replaced, uint64_t *empty);
/// Whether a picture not taken yet is held.
int share_pw_has_frame(share_pw_capture *capture);
/// Lends the newest picture (1), or nothing new (0). The damage gathered so
/// far goes with it and starts again.
int share_pw_take(share_pw_capture *capture, share_pw_frame *frame);
/// Hands the lent picture's buffer back to PipeWire, its pages dropped from
/// this process first (they are the compositor's memory, read whole).
void share_pw_give_back(share_pw_capture *capture);
/// The pointer; its shape is copied into `pixels` (premultiplied ARGB,
/// `capacity` words at most) when `pixels` is not NULL.
void share_pw_pointer_read(share_pw_capture *capture, share_pw_pointer *pointer, uint32_t *pixels, size_t capacity);
/// Bytes of the stream's buffers mapped into this process.
uint64_t share_pw_buffer_bytes(share_pw_capture *capture);
/// Times the pointer moved or changed shape.
uint64_t share_pw_pointer_changes(share_pw_capture *capture);

#endif
