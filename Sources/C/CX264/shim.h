#ifndef SHARE_CX264_SHIM_H
#define SHARE_CX264_SHIM_H
#include <stdint.h>
#include <x264.h>

/// x264_encoder_open is a macro that pastes the build number into the real
/// symbol name (x264_encoder_open_164); Swift cannot call a function-like macro.
static inline x264_t *share_x264_encoder_open(x264_param_t *param) {
    return x264_encoder_open(param);
}
#endif
