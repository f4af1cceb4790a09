/* The monotonic clock, for measuring how long something took (the
 * analysis's steps, a transport's waits, progress reports). */
#ifndef WS_COMMON_CLOCK_H
#define WS_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t ws_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline double ws_monotonic_seconds(void)
{
    return 1e-9 * (double)ws_monotonic_ns();
}

#endif
