#ifndef SHARE_CPULSE_SHIM_H
#define SHARE_CPULSE_SHIM_H
#include <pulse/simple.h>
#include <pulse/error.h>
#include <pulse/pulseaudio.h>
#endif
