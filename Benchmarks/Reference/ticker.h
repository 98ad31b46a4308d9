/* The wake-up both reference floors share, so that opus.c wakes exactly as
 * wakeup.c does and the two differ only by the work between wake-ups: a
 * timerfd ticking `hz` times a second, waited on with poll, then read. */
#include <poll.h>
#include <stdint.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* A timerfd ticking `hz` times a second, or -1. */
static int ticker_start(long hz) {
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    if (fd < 0) return -1;
    long nanoseconds = 1000000000L / hz;
    struct timespec period = { nanoseconds / 1000000000L, nanoseconds % 1000000000L };
    struct itimerspec every = { period, period };
    if (timerfd_settime(fd, 0, &every, NULL) != 0) { close(fd); return -1; }
    return fd;
}

/* Sleeps in poll until the next tick and takes it; 0, or -1 on failure. */
static int ticker_wait(int fd) {
    struct pollfd wait = { fd, POLLIN, 0 };
    uint64_t ticks;
    if (poll(&wait, 1, -1) < 0 || read(fd, &ticks, sizeof ticks) != (ssize_t)sizeof ticks) return -1;
    return 0;
}
