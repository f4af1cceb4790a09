/* The spin policy of csrc/replay/spin.h, fed with made-up waits (built and
 * run by tests/test_threads_transport.py).  Prints "ok" or the first
 * expectation that failed and exits nonzero. */
#include <stdio.h>

#include "replay/spin.h"

static int failed;

static void expect(int cond, const char *what, int64_t budget)
{
    if (!cond && !failed) {
        printf("FAILED: %s (budget %lld ns)\n", what, (long long)budget);
        failed = 1;
    }
}

static void feed(ws_spin_policy *p, int64_t waited, int times)
{
    for (int i = 0; i < times; i++)
        ws_spin_after_wait(p, waited);
}

int main(void)
{
    ws_spin_policy p;
    ws_spin_init(&p);
    expect(p.budget == WS_SPIN_MAX_NS, "a fresh policy spins the longest", p.budget);

    /* partners on cores of their own: waits of 1-3 us, a spin of twice
     * the longest */
    for (int w = 0; w < 4; w++) {
        feed(&p, 1000, WS_SPIN_WINDOW / 2);
        feed(&p, 3000, WS_SPIN_WINDOW / 2);
    }
    expect(p.budget == 6000, "twice the longest short wait", p.budget);

    /* a longer short wait raises the budget at once */
    feed(&p, 4500, 1);
    expect(p.budget == 9000, "kept up with a longer wait", p.budget);
    feed(&p, 8000, 1);
    expect(p.budget == WS_SPIN_MAX_NS, "never beyond the maximum", p.budget);

    /* other programs on the cores: half the waits last milliseconds */
    ws_spin_init(&p);
    for (int w = 0; w < 4; w++) {
        feed(&p, 2000, WS_SPIN_WINDOW / 2);
        feed(&p, 3000000, WS_SPIN_WINDOW / 2);
    }
    expect(p.budget == WS_SPIN_MIN_NS, "mostly long waits: the shortest spin", p.budget);
    /* short waits do not raise it within a window ... */
    feed(&p, 2000, WS_SPIN_WINDOW - 1);
    expect(p.budget == WS_SPIN_MIN_NS, "no raise before the window ends", p.budget);
    /* ... but a window of them does */
    feed(&p, 2000, 1);
    expect(p.budget == 4000, "short waits again: twice the longest", p.budget);

    /* exactly 3/4 short waits still spin; fewer do not */
    ws_spin_init(&p);
    feed(&p, 2500, 3 * WS_SPIN_WINDOW / 4);
    feed(&p, 500000, WS_SPIN_WINDOW / 4);
    expect(p.budget == 5000, "3/4 short waits spin", p.budget);
    feed(&p, 2500, 3 * WS_SPIN_WINDOW / 4 - 1);
    feed(&p, 500000, WS_SPIN_WINDOW / 4 + 1);
    expect(p.budget == WS_SPIN_MIN_NS, "fewer than 3/4 short waits do not", p.budget);

    /* a wait measured as negative (clocks read on two threads) counts as
     * short; very short waits never spin below the minimum */
    ws_spin_init(&p);
    feed(&p, -5, 3 * WS_SPIN_WINDOW / 4);
    feed(&p, 2000, WS_SPIN_WINDOW / 4);
    expect(p.budget == 4000, "negative waits are short ones", p.budget);
    feed(&p, 100, WS_SPIN_WINDOW);
    expect(p.budget == WS_SPIN_MIN_NS, "tiny waits: the minimum", p.budget);

    if (!failed)
        printf("ok\n");
    return failed;
}
