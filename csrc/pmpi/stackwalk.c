/* The call stack at an MPI call, cheaply: unwinding with a cache keyed by
 * return addresses.
 *
 * Unwinding every frame with libgcc's unwinder (.eh_frame) costs about
 * 0.1 us per frame, paid at every MPI call.  But consecutive MPI calls
 * mostly come from the same place: the frames outside the innermost few
 * are the same.  So the frames of the last walk are kept: each frame's
 * return address (ip) and the CFA the unwinder gives with it (that of the
 * function it called, whose frame holds the return address: on x86-64 at
 * CFA - 8), so whether the cached frames i > j are still on the stack is
 * a matter of reading those slots and comparing them with the cached ips.
 *
 * Fast path: the exported wrapper notes where it was called from
 * (WS_HINT in pmpi.h: its return address and its own CFA).  If a cached
 * frame has both, and the slots of all frames outside it still hold
 * theirs, the cached frames are the stack: no unwinding at all.  Otherwise the unwinder walks from the
 * top and stops at the first frame (same CFA, same ip) whose outer frames
 * are all in place, and the cache is updated.  A function that returned
 * and was called again from the same place at the same depth looks the
 * same as one that stayed: which is all a call path can tell anyway.
 * Other architectures: a full walk every time. */
#include "pmpi.h"

#include <string.h>
#include <unwind.h>

/* Index of the cached frame with this CFA (CFAs increase outwards), -1 if none. */
static int index_of_cfa(const ws_stack_cache *k, uintptr_t cfa)
{
    int lo = 0, hi = k->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (k->cfa[mid] == cfa)
            return mid;
        if (k->cfa[mid] < cfa)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Whether the cached frames outside frame j are all still on the stack. */
static int outer_in_place(const ws_stack_cache *k, int j)
{
#if defined(__x86_64__)
    for (int i = j + 1; i < k->n; i++) {
        uintptr_t ra;
        memcpy(&ra, (const void *)(k->cfa[i] - sizeof ra), sizeof ra);
        if (ra != k->ip[i])
            return 0;
    }
    return 1;
#else
    (void)k;
    (void)j;
    return 0;
#endif
}

typedef struct walk {
    const ws_stack_cache *cache;
    uintptr_t ip[WS_STACK_MAX], cfa[WS_STACK_MAX];
    int n;
    int matched; /* cached frame the walk stopped at, -1 if none */
} walk;

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
    walk *w = arg;
    uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx), cfa = (uintptr_t)_Unwind_GetCFA(ctx);
    if (ip == 0 || w->n == WS_STACK_MAX)
        return _URC_END_OF_STACK;
    w->ip[w->n] = ip;
    w->cfa[w->n] = cfa;
    w->n++;
    int j = index_of_cfa(w->cache, cfa);
    if (j >= 0 && w->cache->ip[j] == ip && outer_in_place(w->cache, j)) {
        w->matched = j;
        return _URC_NORMAL_STOP;
    }
    return _URC_NO_REASON;
}

int ws_stack_regions(ws_callpaths_rt *c, const uint32_t **regions)
{
    ws_pmpi *g = &ws_pmpi_g;
    ws_stack_cache *k = &c->stack;
    const void *ra = g->hint_ra;
    uintptr_t hint_cfa = g->hint_cfa;
    g->hint_ra = NULL;
    if (ra && k->n) {
        /* the program's frame that called the wrapper: its return address, the wrapper's CFA */
        int j = index_of_cfa(k, hint_cfa);
        if (j >= 0 && k->ip[j] == (uintptr_t)ra && outer_in_place(k, j)) {
            k->hits++;
            *regions = k->region + j;
            return k->n - j;
        }
    }
    k->misses++;
    walk w;
    w.cache = k;
    w.n = 0;
    w.matched = -1;
    _Unwind_Backtrace(step, &w);
    /* the walked frames, then the cached ones outside the one it stopped at */
    uint32_t matched_region = w.matched >= 0 ? k->region[w.matched] : 0;
    int keep = w.matched >= 0 ? k->n - w.matched - 1 : 0;
    if (w.n + keep > WS_STACK_MAX)
        keep = WS_STACK_MAX - w.n;
    if (keep > 0) {
        memmove(k->ip + w.n, k->ip + w.matched + 1, (size_t)keep * sizeof k->ip[0]);
        memmove(k->cfa + w.n, k->cfa + w.matched + 1, (size_t)keep * sizeof k->cfa[0]);
        memmove(k->region + w.n, k->region + w.matched + 1, (size_t)keep * sizeof k->region[0]);
    }
    memcpy(k->ip, w.ip, (size_t)w.n * sizeof k->ip[0]);
    memcpy(k->cfa, w.cfa, (size_t)w.n * sizeof k->cfa[0]);
    /* the walked frames' regions; the matched frame's is cached already */
    int named = w.matched >= 0 ? w.n - 1 : w.n;
    for (int i = 0; i < named; i++)
        k->region[i] = ws_callpath_region_of(c, (const void *)(k->ip[i] - 1)); /* the call, not after it */
    if (w.matched >= 0)
        k->region[w.n - 1] = matched_region;
    k->n = w.n + keep;
    *regions = k->region;
    return k->n;
}
