/* Does nothing but wake `hz` times a second (default 50: every 20 ms, as
 * the sender's audio thread does for each Opus frame) until it is stopped:
 * poll on a timerfd, then read it. Benchmarks/capture.py runs it beside the
 * sender as the floor under any thread woken that often on the machine at
 * hand: the cost of the wake-ups alone, with no work between them. */
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long hz = argc > 1 ? atol(argv[1]) : 50;
    if (hz < 1 || hz > 10000) return 2;
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    if (fd < 0) return 1;
    long nanoseconds = 1000000000L / hz;
    struct timespec period = { nanoseconds / 1000000000L, nanoseconds % 1000000000L };
    struct itimerspec every = { period, period };
    if (timerfd_settime(fd, 0, &every, NULL) != 0) return 1;
    for (;;) {
        struct pollfd wait = { fd, POLLIN, 0 };
        uint64_t ticks;
        if (poll(&wait, 1, -1) < 0 || read(fd, &ticks, sizeof ticks) != (ssize_t)sizeof ticks) return 1;
    }
}
