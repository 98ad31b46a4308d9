#ifndef SHARE_CXCB_SHIM_H
#define SHARE_CXCB_SHIM_H
#include <poll.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/xfixes.h>
#include <xcb/damage.h>
#include <xcb/randr.h>
#include <xcb/xinput.h>
#include <xcb/xtest.h>

/// The extension ids (xcb_shm_id, ...) are globals of an incomplete struct
/// type, which Swift cannot take the address of.
static inline const xcb_query_extension_reply_t *share_xcb_shm_extension(xcb_connection_t *c) {
    return xcb_get_extension_data(c, &xcb_shm_id);
}
static inline const xcb_query_extension_reply_t *share_xcb_xfixes_extension(xcb_connection_t *c) {
    return xcb_get_extension_data(c, &xcb_xfixes_id);
}
static inline const xcb_query_extension_reply_t *share_xcb_damage_extension(xcb_connection_t *c) {
    return xcb_get_extension_data(c, &xcb_damage_id);
}
static inline const xcb_query_extension_reply_t *share_xcb_randr_extension(xcb_connection_t *c) {
    return xcb_get_extension_data(c, &xcb_randr_id);
}
static inline const xcb_query_extension_reply_t *share_xcb_input_extension(xcb_connection_t *c) {
    return xcb_get_extension_data(c, &xcb_input_id);
}
static inline const xcb_query_extension_reply_t *share_xcb_test_extension(xcb_connection_t *c) {
    return xcb_get_extension_data(c, &xcb_test_id);
}
/// Asks XInput 2 for the events in `mask` (XCB_INPUT_XI_EVENT_MASK_..., 0 for
/// none) from every master device on `window`: one mask of one word, a
/// variable-length struct Swift cannot build.
static inline void share_xcb_select_input_events(xcb_connection_t *c, xcb_window_t window, uint32_t mask) {
    struct { xcb_input_event_mask_t head; uint32_t mask; } masks = { { XCB_INPUT_DEVICE_ALL_MASTER, 1 }, mask };
    xcb_input_xi_select_events(c, window, 1, &masks.head);
}
/// The XInput 2 event type of `event` when it is a generic event of the
/// extension with major opcode `opcode`; -1 for any other event.
static inline int share_xcb_input_event_type(const xcb_generic_event_t *event, uint8_t opcode) {
    if ((event->response_type & 0x7f) != XCB_GE_GENERIC) return -1;
    const xcb_ge_generic_event_t *generic = (const xcb_ge_generic_event_t *)event;
    return generic->extension == opcode ? generic->event_type : -1;
}
/// IPC_PRIVATE and IPC_RMID are macros of a cast expression Swift does not import.
static inline int share_shm_create(size_t size) { return shmget(IPC_PRIVATE, size, IPC_CREAT | 0600); }
static inline int share_shm_remove(int id) { return shmctl(id, IPC_RMID, NULL); }
/// Waits until the connection's socket has something to read, `wake` (the
/// reading end of a pipe, or -1) is signalled, or `nanoseconds` pass: pselect, whose
/// timeout is in nanoseconds (poll(2) counts whole milliseconds; ppoll would
/// need _GNU_SOURCE, which changes the system headers this module shares
/// with others). A signalled `wake` is read (emptied); returns 1 then, else 0.
static inline int share_xcb_wait_readable(xcb_connection_t *c, int wake, unsigned long long nanoseconds) {
    int fd = xcb_get_file_descriptor(c);
    int woken = 0;
    if (fd >= 0 && fd < FD_SETSIZE && wake < FD_SETSIZE) {
        fd_set readable;
        FD_ZERO(&readable);
        FD_SET(fd, &readable);
        if (wake >= 0) FD_SET(wake, &readable);
        struct timespec wait = { .tv_sec = (time_t)(nanoseconds / 1000000000ULL), .tv_nsec = (long)(nanoseconds % 1000000000ULL) };
        int highest = wake > fd ? wake : fd;
        if (pselect(highest + 1, &readable, NULL, NULL, &wait, NULL) > 0 && wake >= 0) woken = FD_ISSET(wake, &readable);
    } else {
        struct pollfd descriptors[2] = { { .fd = fd, .events = POLLIN, .revents = 0 }, { .fd = wake, .events = POLLIN, .revents = 0 } };
        if (poll(descriptors, wake >= 0 ? 2 : 1, (int)((nanoseconds + 999999ULL) / 1000000ULL)) > 0 && wake >= 0) {
            woken = (descriptors[1].revents & POLLIN) != 0;
        }
    }
    if (woken) {
        char signals[64];
        (void)read(wake, signals, sizeof signals);
    }
    return woken;
}
#endif
