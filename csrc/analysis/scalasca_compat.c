/* Scalasca 2.6's defects, reproduced for the comparison with its reports
 * only (ws_analysis_options.scalasca_compat; docs/metrics.md, "Where
 * waitscope differs from Scalasca 2.6").  Nothing here runs by default. */
#include "causes_int.h"

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* A collective's delayer `loc` at its point k, where the members at
 * `waiter[0..n)` (the delayer itself among them) meet it: Scalasca 2.6
 * (MpiDelayOps.cpp, CalculateScales) passes the long-term share of a
 * member that synchronized with the delayer after the group's common
 * point only to the delayer's wait states from the next such point of
 * another member on (or to none, after the last).  floor[m]: the
 * delayer's points below it receive nothing of member m's share (0: no
 * restriction). */
int ws_compat_propagation_floors(const ws_causes *c, uint32_t loc, uint32_t k, const uint32_t *waiter, uint32_t n,
                                 uint32_t *floor, ws_error *err)
{
    int64_t *from = ws_malloc_array(n ? n : 1, sizeof *from);
    int64_t *sorted = ws_malloc_array(n ? n : 1, sizeof *sorted);
    if (!from || !sorted) {
        free(from);
        free(sorted);
        return ws_error_nomem(err, "delay analysis");
    }
    /* each member's previous point with the delayer (-1: the start); the
     * group's common point is the earliest of them */
    int64_t group = INT64_MAX;
    size_t n_sorted = 0;
    for (uint32_t m = 0; m < n; m++) {
        floor[m] = 0;
        if (waiter[m] == loc) {
            from[m] = INT64_MIN;
            continue;
        }
        uint32_t j = ws_previous_point(c, loc, k, waiter[m]);
        from[m] = j == WS_NONE32 ? -1 : (int64_t)j;
        if (from[m] < group)
            group = from[m];
        sorted[n_sorted++] = from[m];
    }
    qsort(sorted, n_sorted, sizeof *sorted, cmp_i64);
    for (uint32_t m = 0; m < n; m++) {
        if (from[m] == INT64_MIN || from[m] <= group)
            continue;
        /* the next later point of another member, by binary search */
        size_t lo = 0, hi = n_sorted;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sorted[mid] <= from[m])
                lo = mid + 1;
            else
                hi = mid;
        }
        floor[m] = lo < n_sorted ? (uint32_t)sorted[lo] : k;
    }
    free(from);
    free(sorted);
    return WS_OK;
}
