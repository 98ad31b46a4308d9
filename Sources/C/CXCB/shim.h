#ifndef SHARE_CXCB_SHIM_H
#define SHARE_CXCB_SHIM_H
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
#endif
