#ifndef SHARE_COPUS_SHIM_H
#define SHARE_COPUS_SHIM_H
#include <opus/opus.h>

/// opus_encoder_ctl and opus_decoder_ctl are variadic and their requests are
/// macros that also type-check arguments; Swift imports neither, so each
/// request the project uses gets a fixed-signature wrapper.
static inline int share_opus_set_bitrate(OpusEncoder *enc, opus_int32 bps) {
    return opus_encoder_ctl(enc, OPUS_SET_BITRATE(bps));
}
static inline int share_opus_set_inband_fec(OpusEncoder *enc, opus_int32 on) {
    return opus_encoder_ctl(enc, OPUS_SET_INBAND_FEC(on));
}
static inline int share_opus_set_packet_loss_perc(OpusEncoder *enc, opus_int32 pct) {
    return opus_encoder_ctl(enc, OPUS_SET_PACKET_LOSS_PERC(pct));
}
static inline int share_opus_set_complexity(OpusEncoder *enc, opus_int32 c) {
    return opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY(c));
}
static inline int share_opus_set_signal_voice(OpusEncoder *enc, int voice) {
    return opus_encoder_ctl(enc, OPUS_SET_SIGNAL(voice ? OPUS_SIGNAL_VOICE : OPUS_SIGNAL_MUSIC));
}
#endif
