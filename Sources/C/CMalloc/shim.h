#ifndef SHARE_CMALLOC_SHIM_H
#define SHARE_CMALLOC_SHIM_H
#include <malloc.h>

/// <malloc.h> is not part of Swift's Glibc module; the sender caps glibc's
/// per-thread malloc arenas (M_ARENA_MAX) to keep its dirty memory small.
static inline int share_limit_malloc_arenas(int arenas) { return mallopt(M_ARENA_MAX, arenas); }
#endif
