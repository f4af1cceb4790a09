/* How long a transport that runs out of work polls for data before it
 * gives its core away (sleeps on a condition variable, or yields it), for
 * the threaded and the MPI transport.
 *
 * A backward replay over a chain of tiny collectives hands off between
 * threads or processes hundreds of thousands of times; with both on a
 * core of their own the data comes after 1-3 us, and a sleep and wake-up
 * (~8 us between threads, more in a virtual machine) or a yield per
 * hand-off costs more than the work.  When other programs hold the cores
 * the partner is often not running: then a spin only takes CPU time from
 * it (measured on 2 cores with 3 other busy programs: 2 threads spinning
 * up to 50 us at every wait used 15 s of CPU for nothing).  So the
 * policy watches its waits in windows of WS_SPIN_WINDOW: if at least 3/4
 * of them ended within WS_SPIN_MAX_NS it spins for twice the longest of
 * those (at most WS_SPIN_MAX_NS), else only WS_SPIN_MIN_NS. */
#ifndef WS_REPLAY_SPIN_H
#define WS_REPLAY_SPIN_H

#include <stdint.h>

#include "../common/clock.h"

enum { WS_SPIN_MAX_NS = 10 * 1000, WS_SPIN_MIN_NS = 1000, WS_SPIN_WINDOW = 32 };

typedef struct ws_spin_policy {
    int64_t budget;  /* ns to poll before giving the core away */
    int64_t longest; /* longest short wait of this window */
    unsigned waits, short_waits;
} ws_spin_policy;

static inline void ws_spin_init(ws_spin_policy *p)
{
    p->budget = WS_SPIN_MAX_NS;
    p->longest = 0;
    p->waits = p->short_waits = 0;
}

/* A wait that began with a spin lasted `waited` ns until its data came. */
static inline void ws_spin_after_wait(ws_spin_policy *p, int64_t waited)
{
    if (waited < 0) /* clocks read on two threads */
        waited = 0;
    if (waited <= WS_SPIN_MAX_NS) {
        p->short_waits++;
        if (waited > p->longest)
            p->longest = waited;
        if (2 * waited > p->budget && p->budget > WS_SPIN_MIN_NS) /* spinning: keep up with the waits */
            p->budget = 2 * waited < WS_SPIN_MAX_NS ? 2 * waited : WS_SPIN_MAX_NS;
    }
    if (++p->waits < WS_SPIN_WINDOW)
        return;
    if (4 * p->short_waits >= 3 * p->waits) {
        int64_t b = 2 * p->longest;
        p->budget = b < WS_SPIN_MIN_NS ? WS_SPIN_MIN_NS : b > WS_SPIN_MAX_NS ? WS_SPIN_MAX_NS : b;
    } else {
        p->budget = WS_SPIN_MIN_NS;
    }
    p->longest = 0;
    p->waits = p->short_waits = 0;
}

static inline void ws_spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
