#ifndef SHARE_CXCB_SHIM_H
#define SHARE_CXCB_SHIM_H
#include <poll.h>
#include <stdlib.h>
#include <sys/select.h>
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
/// pass: pselect, whose timeout is in nanoseconds (poll(2) counts whole
/// milliseconds; ppoll would need _GNU_SOURCE, which changes the system
/// headers this module shares with others).
static inline void share_xcb_wait_readable(xcb_connection_t *c, unsigned long long nanoseconds) {
    int fd = xcb_get_file_descriptor(c);
    if (fd >= 0 && fd < FD_SETSIZE) {
        fd_set readable;
        FD_ZERO(&readable);
        FD_SET(fd, &readable);
        struct timespec wait = { .tv_sec = (time_t)(nanoseconds / 1000000000ULL), .tv_nsec = (long)(nanoseconds % 1000000000ULL) };
        (void)pselect(fd + 1, &readable, NULL, NULL, &wait, NULL);
    } else {
        struct pollfd descriptor = { .fd = fd, .events = POLLIN, .revents = 0 };
        (void)poll(&descriptor, 1, (int)((nanoseconds + 999999ULL) / 1000000ULL));
    }
}
#endif
