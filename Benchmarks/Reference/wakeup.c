/* Does nothing but wake `hz` times a second (default 50: every 20 ms, as
 * the sender's audio thread does for each Opus frame) until it is stopped:
 * poll on a timerfd, then read it. Benchmarks/capture.py runs it beside the
 * sender as the floor under any thread woken that often on the machine at
 * hand: the cost of the wake-ups alone, with no work between them. */
#include <stdlib.h>

#include "ticker.h"

int main(int argc, char **argv) {
    long hz = argc > 1 ? atol(argv[1]) : 50;
    if (hz < 1 || hz > 10000) return 2;
    int timer = ticker_start(hz);
    if (timer < 0) return 1;
    for (;;) {
        if (ticker_wait(timer) != 0) return 1;
    }
}
