/* The least any sender of 20 ms Opus packets can do: wake `hz` times a second
 * (default 50) on a timerfd, encode one 20 ms frame of 48 kHz stereo with
 * the settings `share send` uses for system audio (CELT through the
 * restricted low-delay application, 96 kbit/s, in-band FEC, 10% expected
 * loss, complexity 5) and send the packet to a UDP socket of its own on
 * loopback that never reads, as capture.py's sink does not. No sound server,
 * no encryption, no bookkeeping. Benchmarks/capture.py runs it beside the
 * sender, so what sound costs the sender is read against this floor on the
 * machine at hand, in the same run. The input is a tone with vibrato, two
 * more partials and a little noise: music-like, never silent. */
#include <math.h>
#include <netinet/in.h>
#include <opus/opus.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "ticker.h"

enum { RATE = 48000, FRAME = 960, CHANNELS = 2, SECONDS = 2 };

static opus_int16 pcm[RATE * SECONDS * CHANNELS];

static void synthesize(void) {
    unsigned noise = 1;
    for (int i = 0; i < RATE * SECONDS; i++) {
        double t = (double)i / RATE;
        double v = 0.3 * sin(2 * M_PI * 440 * t + 3 * sin(2 * M_PI * 5 * t)) + 0.15 * sin(2 * M_PI * 1320 * t)
                 + 0.1 * sin(2 * M_PI * 97 * t);
        noise = noise * 1103515245u + 12345u;
        double n = 0.05 * (((noise >> 16) & 0x7fff) / 32768.0 - 0.5);
        pcm[2 * i] = (opus_int16)(26000 * (v + n));
        pcm[2 * i + 1] = (opus_int16)(26000 * (0.7 * v + n));
    }
}

int main(int argc, char **argv) {
    long hz = argc > 1 ? atol(argv[1]) : 50;
    if (hz < 1 || hz > 1000) return 2;
    synthesize();
    int error = 0;
    OpusEncoder *encoder = opus_encoder_create(RATE, CHANNELS, OPUS_APPLICATION_RESTRICTED_LOWDELAY, &error);
    if (!encoder || error != OPUS_OK) return 1;
    opus_encoder_ctl(encoder, OPUS_SET_BITRATE(96000));
    opus_encoder_ctl(encoder, OPUS_SET_INBAND_FEC(1));
    opus_encoder_ctl(encoder, OPUS_SET_PACKET_LOSS_PERC(10));
    opus_encoder_ctl(encoder, OPUS_SET_SIGNAL(OPUS_SIGNAL_MUSIC));
    opus_encoder_ctl(encoder, OPUS_SET_COMPLEXITY(5));

    struct sockaddr_in sink = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t length = sizeof sink;
    int in = socket(AF_INET, SOCK_DGRAM, 0), out = socket(AF_INET, SOCK_DGRAM, 0);
    int small = 1 << 16;
    if (in < 0 || out < 0 || setsockopt(in, SOL_SOCKET, SO_RCVBUF, &small, sizeof small) != 0
        || bind(in, (struct sockaddr *)&sink, sizeof sink) != 0 || getsockname(in, (struct sockaddr *)&sink, &length) != 0
        || connect(out, (struct sockaddr *)&sink, sizeof sink) != 0) return 1;

    int timer = ticker_start(hz);
    if (timer < 0) return 1;
    unsigned char packet[1500];
    for (long frame = 0;; frame = (frame + 1) % (RATE * SECONDS / FRAME)) {
        if (ticker_wait(timer) != 0) return 1;
        opus_int32 bytes = opus_encode(encoder, pcm + frame * FRAME * CHANNELS, FRAME, packet, sizeof packet);
        if (bytes < 0) return 1;
        (void)send(out, packet, (size_t)bytes, 0);
    }
}
