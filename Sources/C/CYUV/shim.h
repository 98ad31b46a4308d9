#ifndef SHARE_CYUV_SHIM_H
#define SHARE_CYUV_SHIM_H
/// libyuv's umbrella header pulls in C++-only headers (mjpeg_decoder.h) when
/// compiled as C++; only the two C headers the sender needs are included.
#include <libyuv/convert.h>
#include <libyuv/convert_from_argb.h>
#include <libyuv/scale.h>
#endif
