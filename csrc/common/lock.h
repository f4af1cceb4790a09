/* A mutex with its condition variable, as the threaded load, the threaded
 * analysis and the threaded transport each keep one: set up together
 * (nothing left behind when the second fails) and torn down together. */
#ifndef WS_COMMON_LOCK_H
#define WS_COMMON_LOCK_H

#include <pthread.h>
#include <time.h>

#include "error.h"

/* WS_OK, or an error naming `who` (the mutex is destroyed again when the
 * condition variable cannot be made). */
static inline int ws_lock_init(pthread_mutex_t *lock, pthread_cond_t *cond, const char *who, ws_error *err)
{
    if (pthread_mutex_init(lock, NULL) != 0)
        return ws_error_set(err, WS_ERR_INTERNAL, "%s: cannot create a mutex", who);
    if (pthread_cond_init(cond, NULL) != 0) {
        pthread_mutex_destroy(lock);
        return ws_error_set(err, WS_ERR_INTERNAL, "%s: cannot create a condition variable", who);
    }
    return WS_OK;
}

/* Waits on `cond` (with `lock` held) until signalled or `ms` milliseconds
 * passed. */
static inline void ws_lock_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, lock, &ts);
}

static inline void ws_lock_destroy(pthread_mutex_t *lock, pthread_cond_t *cond)
{
    pthread_cond_destroy(cond);
    pthread_mutex_destroy(lock);
}

#endif
