#ifndef SHARE_CXCB_SHIM_H
#define SHARE_CXCB_SHIM_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <poll.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <xcb/xfixes.h>
#include <xcb/damage.h>
#include <xcb/randr.h>

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
/// IPC_PRIVATE and IPC_RMID are macros of a cast expression Swift does not import.
static inline int share_shm_create(size_t size) { return shmget(IPC_PRIVATE, size, IPC_CREAT | 0600); }
static inline int share_shm_remove(int id) { return shmctl(id, IPC_RMID, NULL); }
/// Waits until the connection's socket has something to read or `nanoseconds`
/// pass (ppoll: poll(2) counts in whole milliseconds; ppoll is a GNU
/// extension Glibc's Swift module does not show).
static inline void share_xcb_wait_readable(xcb_connection_t *c, unsigned long long nanoseconds) {
    struct pollfd descriptor = { .fd = xcb_get_file_descriptor(c), .events = POLLIN, .revents = 0 };
    struct timespec wait = { .tv_sec = (time_t)(nanoseconds / 1000000000ULL), .tv_nsec = (long)(nanoseconds % 1000000000ULL) };
    (void)ppoll(&descriptor, 1, &wait, NULL);
}
#endif
