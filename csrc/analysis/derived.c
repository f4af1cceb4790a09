/* Metrics derived from the replays' results: the parents of the delay and
 * wait-state classification trees, and the critical-path indicators of
 * seed 001 (001_3fb61d0ccb171fe6.txt, sections II-C and II-D). */
#include "analysis_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A cell's value: +0 in a row nothing was written to (row_live), which
 * is not read. */
static double cell(ws_result *r, int m, uint32_t cp, uint32_t loc)
{
    return ws_cube_row_live(r, m, cp) ? *ws_cube_cell(r, m, cp, loc) : 0.0;
}

/* Stores a derived value into a cell that holds +0 (the cube starts
 * zeroed, and only this file writes the derived metrics, once): a +0 is
 * not written, so that the rows of call paths that have none of a metric
 * stay untouched pages (at 262,144 locations a row is 2 MB). */
static int put(double *cell, double v)
{
    if (v != 0.0 || signbit(v)) {
        *cell = v;
        return 1;
    }
    return 0;
}

static void set_cell(ws_result *r, int m, uint32_t cp, uint32_t loc, double v)
{
    if (r->slot[m] >= 0 && put(ws_cube_cell(r, m, cp, loc), v))
        ws_cube_mark(r, m, cp);
}

/* The cube's row of metric m at call path cp (a value per location) to
 * write, or NULL when m is not in the cube. */
static double *row_of(ws_result *r, int m, uint32_t cp)
{
    return r->slot[m] >= 0 ? ws_cube_cell(r, m, cp, 0) : NULL;
}

/* The row to read, or NULL (read as 0) when m is not in the cube or
 * nothing was written to the row. */
static const double *live_row(ws_result *r, int m, uint32_t cp)
{
    return ws_cube_row_live(r, m, cp) ? ws_cube_cell(r, m, cp, 0) : NULL;
}

static double at(const double *row, uint32_t loc)
{
    return row ? row[loc] : 0.0;
}

/* parent = sum of the listed children, for every local location, added
 * in the listed order (a child not in the cube, or whose row holds +0
 * only, adds nothing: a sum that starts at +0 is never -0, so skipping its
 * +0 changes no bit) */
static void sum_rows(const ws_analysis *a, int parent, const int *children, uint32_t cp)
{
    ws_result *r = a->result;
    double *out = row_of(r, parent, cp);
    if (!out)
        return;
    const double *in[8];
    size_t n = 0;
    for (const int *c = children; *c >= 0 && n < sizeof in / sizeof in[0]; c++)
        if ((in[n] = live_row(r, *c, cp)) != NULL)
            n++;
    if (n == 0)
        return; /* +0 everywhere, as the row already holds */
    ws_cube_mark(r, parent, cp);
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        double v = 0.0;
        for (size_t k = 0; k < n; k++)
            v += in[k][loc];
        put(&out[loc], v);
    }
}

/* dst = max(minuend - subtrahend, 0) for every local location */
static void excess_rows(const ws_analysis *a, int dst, int minuend, int subtrahend, uint32_t cp)
{
    ws_result *r = a->result;
    double *out = row_of(r, dst, cp);
    const double *x = live_row(r, minuend, cp), *y = live_row(r, subtrahend, cp);
    if (!out || (!x && !y)) /* (0 - 0 is +0, as the row already holds) */
        return;
    ws_cube_mark(r, dst, cp);
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        double v = at(x, loc) - at(y, loc);
        put(&out[loc], v > 0.0 ? v : 0.0);
    }
}

/* The cube holds a metric's values of one call path for all locations
 * side by side: the derived values are computed a row at a time (a
 * location at a time touched a cache line per metric and location). */
void ws_derive_delay(ws_analysis *a)
{
    ws_result *r = a->result;
    static const int ls_agg[] = {WS_M_DELAY_LATESENDER, WS_M_DELAY_LATESENDER_LONGTERM, -1};
    static const int lr_agg[] = {WS_M_DELAY_LATERECEIVER, WS_M_DELAY_LATERECEIVER_LONGTERM, -1};
    static const int bar_agg[] = {WS_M_DELAY_BARRIER, WS_M_DELAY_BARRIER_LONGTERM, -1};
    static const int n2n_agg[] = {WS_M_DELAY_N2N, WS_M_DELAY_N2N_LONGTERM, -1};
    static const int o2n_agg[] = {WS_M_DELAY_12N, WS_M_DELAY_12N_LONGTERM, -1};
    static const int n21_agg[] = {WS_M_DELAY_N21, WS_M_DELAY_N21_LONGTERM, -1};
    static const int p2p[] = {WS_M_DELAY_LATESENDER_AGGREGATE, WS_M_DELAY_LATERECEIVER_AGGREGATE, -1};
    static const int coll[] = {WS_M_DELAY_BARRIER_AGGREGATE, WS_M_DELAY_N2N_AGGREGATE, WS_M_DELAY_12N_AGGREGATE,
                               WS_M_DELAY_N21_AGGREGATE, -1};
    static const int mpi[] = {WS_M_DELAY_P2P, WS_M_DELAY_COLLECTIVE, -1};
    static const int ompbar_agg[] = {WS_M_DELAY_OMPBARRIER, WS_M_DELAY_OMPBARRIER_LONGTERM, -1};
    static const int ompidle_agg[] = {WS_M_DELAY_OMPIDLE, WS_M_DELAY_OMPIDLE_LONGTERM, -1};
    static const int omp[] = {WS_M_DELAY_OMPBARRIER_AGGREGATE, WS_M_DELAY_OMPIDLE_AGGREGATE, -1};
    static const int all[] = {WS_M_DELAY_MPI, WS_M_DELAY_OMP, -1};
    static const int direct[] = {WS_M_MPI_WAIT_DIRECT_LATESENDER, WS_M_MPI_WAIT_DIRECT_LATERECEIVER,
                                 WS_M_MPI_WAIT_DIRECT_COLLECTIVE, -1};
    static const int indirect[] = {WS_M_MPI_WAIT_INDIRECT_LATESENDER, WS_M_MPI_WAIT_INDIRECT_LATERECEIVER,
                                   WS_M_MPI_WAIT_INDIRECT_COLLECTIVE, -1};
    static const int dvi[] = {WS_M_MPI_WAIT_DIRECT, WS_M_MPI_WAIT_INDIRECT, -1};
    static const int prop[] = {WS_M_MPI_WAIT_PROPAGATING_LS, WS_M_MPI_WAIT_PROPAGATING_LR,
                               WS_M_MPI_WAIT_PROPAGATING_COLLECTIVE, -1};
    static const int term[] = {WS_M_MPI_WAIT_TERMINAL_LS, WS_M_MPI_WAIT_TERMINAL_LR, WS_M_MPI_WAIT_TERMINAL_COLLECTIVE, -1};
    static const int pvt[] = {WS_M_MPI_WAIT_PROPAGATING, WS_M_MPI_WAIT_TERMINAL, -1};
    /* the handled collective wait states of one call path */
    static const int coll_waits[] = {WS_M_MPI_BARRIER_WAIT, WS_M_MPI_WAIT_NXN, WS_M_MPI_LATEBROADCAST,
                                     WS_M_MPI_EARLYREDUCE, -1};
    /* parents in the order they are summed: children before parents */
    static const struct {
        int parent;
        const int *children;
    } delay_tree[] = {{WS_M_DELAY_LATESENDER_AGGREGATE, ls_agg}, {WS_M_DELAY_LATERECEIVER_AGGREGATE, lr_agg},
                      {WS_M_DELAY_BARRIER_AGGREGATE, bar_agg},    {WS_M_DELAY_N2N_AGGREGATE, n2n_agg},
                      {WS_M_DELAY_12N_AGGREGATE, o2n_agg},        {WS_M_DELAY_N21_AGGREGATE, n21_agg},
                      {WS_M_DELAY_P2P, p2p},                      {WS_M_DELAY_COLLECTIVE, coll},
                      {WS_M_DELAY_MPI, mpi},                      {WS_M_DELAY_OMPBARRIER_AGGREGATE, ompbar_agg},
                      {WS_M_DELAY_OMPIDLE_AGGREGATE, ompidle_agg}, {WS_M_DELAY_OMP, omp},
                      {WS_M_DELAY, all}},
      wait_tree[] = {{WS_M_MPI_WAIT_DIRECT, direct},
                     {WS_M_MPI_WAIT_INDIRECT, indirect},
                     {WS_M_WAITSTATES_DIRECT_VS_INDIRECT, dvi},
                     {WS_M_MPI_WAIT_PROPAGATING, prop},
                     {WS_M_MPI_WAIT_TERMINAL, term},
                     {WS_M_WAITSTATES_PROPAGATING_VS_TERMINAL, pvt}};
    for (uint32_t cp = 0; cp < r->n_callpaths; cp++) {
        for (size_t k = 0; k < sizeof delay_tree / sizeof delay_tree[0]; k++)
            sum_rows(a, delay_tree[k].parent, delay_tree[k].children, cp);
        /* direct = total - indirect; terminal = total - propagating (seed 002) */
        excess_rows(a, WS_M_MPI_WAIT_DIRECT_LATESENDER, WS_M_MPI_LATESENDER, WS_M_MPI_WAIT_INDIRECT_LATESENDER, cp);
        excess_rows(a, WS_M_MPI_WAIT_DIRECT_LATERECEIVER, WS_M_MPI_LATERECEIVER, WS_M_MPI_WAIT_INDIRECT_LATERECEIVER,
                    cp);
        excess_rows(a, WS_M_MPI_WAIT_TERMINAL_LS, WS_M_MPI_LATESENDER, WS_M_MPI_WAIT_PROPAGATING_LS, cp);
        excess_rows(a, WS_M_MPI_WAIT_TERMINAL_LR, WS_M_MPI_LATERECEIVER, WS_M_MPI_WAIT_PROPAGATING_LR, cp);
        /* the handled collective wait states */
        const double *cw[4];
        int any = 0;
        for (size_t k = 0; k < 4; k++)
            any |= (cw[k] = live_row(r, coll_waits[k], cp)) != NULL;
        const double *ind = live_row(r, WS_M_MPI_WAIT_INDIRECT_COLLECTIVE, cp);
        const double *pro = live_row(r, WS_M_MPI_WAIT_PROPAGATING_COLLECTIVE, cp);
        double *dir = row_of(r, WS_M_MPI_WAIT_DIRECT_COLLECTIVE, cp), *ter = row_of(r, WS_M_MPI_WAIT_TERMINAL_COLLECTIVE, cp);
        /* (with every input +0 both are +0, as the rows already hold) */
        if (!any && !ind && !pro)
            dir = ter = NULL;
        if (dir)
            ws_cube_mark(r, WS_M_MPI_WAIT_DIRECT_COLLECTIVE, cp);
        if (ter)
            ws_cube_mark(r, WS_M_MPI_WAIT_TERMINAL_COLLECTIVE, cp);
        for (uint32_t i = 0; (dir || ter) && i < a->n_local; i++) {
            uint32_t loc = a->local[i];
            double c = at(cw[0], loc) + at(cw[1], loc) + at(cw[2], loc) + at(cw[3], loc), v;
            if (dir) {
                v = c - at(ind, loc);
                put(&dir[loc], v > 0.0 ? v : 0.0);
            }
            if (ter) {
                v = c - at(pro, loc);
                put(&ter[loc], v > 0.0 ? v : 0.0);
            }
        }
        for (size_t k = 0; k < sizeof wait_tree / sizeof wait_tree[0]; k++)
            sum_rows(a, wait_tree[k].parent, wait_tree[k].children, cp);
    }
}

/* Time of call path cp on loc that is activity, i.e. not waiting
 * (d_p(i) of seed 001 section II-C), as Scalasca 2.6 counts it: the time
 * minus the waiting of its synchronization points.  Waiting at a scan is
 * activity here (scans never move the critical path), and so is all of
 * MPI_Init (no wait state is charged there). */
static double activity(const ws_analysis *a, uint32_t cp, uint32_t loc)
{
    static const int waits[] = {WS_M_MPI_LATESENDER,    WS_M_MPI_LATERECEIVER,  WS_M_MPI_BARRIER_WAIT,
                                WS_M_MPI_WAIT_NXN,      WS_M_MPI_LATEBROADCAST, WS_M_MPI_EARLYREDUCE,
                                WS_M_MPI_FINALIZE_WAIT, WS_M_OMP_EBARRIER_WAIT, WS_M_OMP_IBARRIER_WAIT,
                                WS_M_OMP_IDLE_THREADS};
    ws_result *r = a->result;
    double v = cell(r, WS_M_TIME, cp, loc) - ws_omp_tail(a->omp, loc, cp);
    for (size_t k = 0; k < sizeof waits / sizeof waits[0]; k++)
        v -= cell(r, waits[k], cp, loc);
    return v > 0.0 ? v : 0.0;
}

static int cmp_segment(const void *x, const void *y)
{
    const ws_path_segment *a = x, *b = y;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

static void reverse_segments(ws_path_segment *p, size_t n)
{
    for (size_t lo = 0, hi = n; lo + 1 < hi; lo++, hi--) {
        ws_path_segment tmp = p[lo];
        p[lo] = p[hi - 1];
        p[hi - 1] = tmp;
    }
}

/* Sorts the path by cmp_segment as qsort did (the C library's merge sort,
 * stable).  The backward replay appends the path from its end, so it
 * arrives almost in descending order: reversed, an insertion sort puts
 * the few pieces out of place right in O(n) (qsort after n moves); then
 * reversing every run of equal pieces restores the order a stable sort
 * of the path as appended gives them. */
static void sort_segments(ws_path_segment *path, size_t n)
{
    size_t descending = 0;
    for (size_t i = 1; i < n; i++)
        descending += cmp_segment(&path[i - 1], &path[i]) > 0;
    if (descending * 2 < n) {
        qsort(path, n, sizeof *path, cmp_segment);
        return;
    }
    reverse_segments(path, n);
    size_t moves = 0;
    for (size_t i = 1; i < n && moves <= n; i++) {
        ws_path_segment x = path[i];
        size_t j = i;
        while (j > 0 && cmp_segment(&path[j - 1], &x) > 0 && moves++ <= n) {
            path[j] = path[j - 1];
            j--;
        }
        path[j] = x;
    }
    if (moves > n) /* far from sorted; the insertion steps kept equal pieces in order */
        qsort(path, n, sizeof *path, cmp_segment);
    for (size_t i = 0; i < n;) {
        size_t k = i + 1;
        while (k < n && cmp_segment(&path[i], &path[k]) == 0)
            k++;
        reverse_segments(path + i, k - i);
        i = k;
    }
}

/* The path begins where the location that owns it at its first event
 * entered MPI_Init (seed 001 section III-B; time before MPI_Init is not
 * on the path).  Without MPI_Init, at that location's first event. */
static int close_path_start(ws_analysis *a, double path_first, ws_error *err)
{
    const ws_trace *t = a->trace;
    double v[2] = {-INFINITY, path_first};
    for (uint32_t i = 0; i < a->n_local; i++) {
        const ws_events *e = &t->locations[a->local[i]].events;
        if (e->n && -ws_ev_time(e, 0) > v[0])
            v[0] = -ws_ev_time(e, 0);
    }
    int rc = a->transport->ops->allreduce_f64(a->transport, v, 2, WS_MAX, err);
    if (rc)
        return rc;
    ws_result *r = a->result;
    r->path_start = isinf(v[1]) ? -v[0] : v[1];
    const ws_analysis_options *o = &a->options;
    if (o->has_window) {
        /* the path inside the window: from its start or the window's to
         * its end or the window's (empty if they do not overlap) */
        if (r->path_start < o->window_start)
            r->path_start = o->window_start;
        if (r->path_end > o->window_end)
            r->path_end = o->window_end;
        if (r->path_end < r->path_start)
            r->path_end = r->path_start;
    }
    return WS_OK;
}

/* Partitions: processes executing the same set of call paths (seed 001
 * section II-D), unless the caller gave them. */
static int derive_partitions(ws_analysis *a, ws_error *err)
{
    const ws_trace *t = a->trace;
    ws_result *r = a->result;
    uint32_t L = t->n_locations, C = r->n_callpaths;
    r->partition = ws_malloc_array(L ? L : 1, sizeof *r->partition);
    if (!r->partition)
        return ws_error_nomem(err, "partitions");
    if (a->options.partition) {
        memcpy(r->partition, a->options.partition, (size_t)L * sizeof *r->partition);
        return WS_OK;
    }
    /* a signature per location: the set of visited call paths, as a hash
     * computed where the location lives and shared with everybody (by a
     * sum: the other processes contribute 0) */
    uint64_t *sig = ws_calloc(L ? L : 1, sizeof *sig);
    if (!sig)
        return ws_error_nomem(err, "partitions");
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        uint64_t h = 0x9e3779b97f4a7c15ULL;
        for (uint32_t cp = 0; cp < C; cp++)
            if (cell(r, WS_M_VISITS, cp, loc) > 0.0)
                h = ws_hash64(h ^ (cp + 0x51ed27b1ULL));
        sig[loc] = h;
    }
    int rc = a->transport->ops->allreduce_u64(a->transport, sig, L, WS_SUM, err);
    if (rc) {
        free(sig);
        return rc;
    }
    /* a location's partition is the first location with its signature
     * (the map's key UINT64_MAX is reserved: that signature has its own) */
    ws_map64 first;
    ws_map64_init(&first);
    int32_t first_max = -1;
    for (uint32_t l = 0; l < L && rc == WS_OK; l++) {
        uint64_t k;
        if (sig[l] == UINT64_MAX) {
            if (first_max < 0)
                first_max = (int32_t)l;
            r->partition[l] = first_max;
        } else if (ws_map64_get(&first, sig[l], &k))
            r->partition[l] = (int32_t)k;
        else if (ws_map64_put(&first, sig[l], l))
            rc = ws_error_nomem(err, "partitions");
        else
            r->partition[l] = (int32_t)l;
    }
    ws_map64_free(&first);
    free(sig);
    return rc;
}

/* The reduction over processes adds only zeros to each value (exact);
 * then every process adds the rows in location order. */
int ws_ordered_sum(ws_analysis *a, double *rows, size_t width, double *out, ws_error *err)
{
    uint32_t L = a->trace->n_locations;
    int rc = a->transport->ops->allreduce_f64(a->transport, rows, (size_t)L * width, WS_SUM, err);
    if (rc)
        return rc;
    for (size_t j = 0; j < width; j++)
        out[j] = 0.0;
    for (uint32_t l = 0; l < L; l++)
        for (size_t j = 0; j < width; j++)
            out[j] += rows[(size_t)l * width + j];
    return WS_OK;
}

int ws_derive_critical_path(ws_analysis *a, double path_first, ws_error *err)
{
    const ws_trace *t = a->trace;
    ws_result *r = a->result;
    uint32_t C = r->n_callpaths, L = t->n_locations;
    int rc = close_path_start(a, path_first, err);
    if (rc)
        return rc;
    if (r->n_path)
        sort_segments(r->path, r->n_path);
    /* merge contiguous pieces of one call path on one location; add_segment
     * merges only pieces appended one after the other, which depends on the
     * order in which the replay visits the locations */
    size_t kept = 0;
    for (size_t i = 0; i < r->n_path; i++) {
        ws_path_segment *last = kept ? &r->path[kept - 1] : NULL;
        if (last && last->location == r->path[i].location && last->callpath == r->path[i].callpath &&
            last->end == r->path[i].start)
            last->end = r->path[i].end;
        else
            r->path[kept++] = r->path[i];
    }
    r->n_path = kept;
    if ((rc = derive_partitions(a, err)))
        return rc;

    /* global critical-path profile gcp(c) and average activity A(c) */
    int32_t max_part = 0;
    for (uint32_t l = 0; l < L; l++)
        if (r->partition[l] > max_part)
            max_part = r->partition[l];
    size_t P = (size_t)max_part + 1;
    /* per location: critical path per call path, activity per call
     * path, 1 if it ran; later the imbalance costs (intra, inter) */
    size_t W = 2 * (size_t)C + 1;
    double *sums = ws_calloc(W, sizeof *sums);
    double *rows = ws_calloc((L ? L : 1) * W, sizeof *rows);
    uint64_t *occurs = ws_calloc(P * (C ? C : 1), sizeof *occurs);
    double *delta = ws_calloc(C ? C : 1, sizeof *delta);
    double *costs = ws_calloc(2 * (size_t)C + 1, sizeof *costs); /* intra, inter per call path */
    /* activity per call path and location (row cp of L), read three times below */
    double *act = ws_malloc_array((C ? C : 1) * (size_t)(L ? L : 1), sizeof *act);
    if (!sums || !rows || !occurs || !delta || !costs || !act) {
        rc = ws_error_nomem(err, "critical-path indicators");
        goto done;
    }
    /* call path by call path: the cube holds a metric's values of one call
     * path for all locations side by side */
    for (uint32_t cp = 0; cp < C; cp++)
        for (uint32_t i = 0; i < a->n_local; i++) {
            uint32_t loc = a->local[i];
            double *row = rows + (size_t)loc * W;
            row[cp] = cell(r, WS_M_CRITICAL_PATH, cp, loc);
            row[C + cp] = act[(size_t)cp * L + loc] = activity(a, cp, loc);
            if (cell(r, WS_M_VISITS, cp, loc) > 0.0 && r->partition[loc] >= 0)
                occurs[(size_t)r->partition[loc] * C + cp] = 1;
        }
    for (uint32_t i = 0; i < a->n_local; i++)
        rows[(size_t)a->local[i] * W + 2 * C] = t->locations[a->local[i]].events.n ? 1.0 : 0.0;
    if ((rc = ws_ordered_sum(a, rows, W, sums, err)) ||
        (rc = a->transport->ops->allreduce_u64(a->transport, occurs, P * C, WS_MAX, err)))
        goto done;
    /* gcp(c): time on the path; avg(c): average activity per process */
    double *gcp = sums, *avg = sums + C;
    double procs = sums[2 * C] > 0.0 ? sums[2 * C] : 1.0;
    for (uint32_t cp = 0; cp < C; cp++)
        avg[cp] /= procs;

    /* imbalance costs per location: the headroom h_p (waiting time on p)
     * spread over the critical activities p runs shorter than the path,
     * in proportion to the excess delta(i) (seed 001 section II-D.3) */
    double length = r->path_end - r->path_start;
    if (a->options.scalasca_compat) {
        /* Scalasca 2.6's length: the profile's sum, with the stretches
         * counted twice (waitscope.h) */
        length = 0.0;
        for (uint32_t cp = 0; cp < C; cp++)
            length += gcp[cp];
    }
    memset(rows, 0, (size_t)L * W * sizeof *rows);
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        if (!t->locations[loc].events.n)
            continue;
        double busy = 0.0, sum_delta = 0.0;
        for (uint32_t cp = 0; cp < C; cp++) {
            double d = act[(size_t)cp * L + loc];
            busy += d;
            delta[cp] = gcp[cp] > d ? gcp[cp] - d : 0.0;
            sum_delta += delta[cp];
        }
        double headroom = length - busy;
        if (!(headroom > 0.0) || !(sum_delta > 0.0))
            continue;
        double alpha = headroom / sum_delta;
        int32_t part = r->partition[loc];
        double *row = rows + (size_t)loc * 2 * C; /* intra, inter */
        for (uint32_t cp = 0; cp < C; cp++) {
            if (delta[cp] <= 0.0)
                continue;
            int occurs_here = part >= 0 && occurs[(size_t)part * C + cp];
            row[(occurs_here ? 0 : C) + cp] = alpha * delta[cp];
        }
    }
    if ((rc = ws_ordered_sum(a, rows, 2 * (size_t)C, costs, err)))
        goto done;
    const double *s_intra = costs, *s_inter = costs + C;

    for (uint32_t cp = 0; cp < C; cp++) {
        for (uint32_t i = 0; i < a->n_local; i++) {
            uint32_t loc = a->local[i];
            double own = cell(r, WS_M_CRITICAL_PATH, cp, loc);
            double d = act[(size_t)cp * L + loc];
            if (gcp[cp] > 0.0) {
                double share = own / gcp[cp];
                double excess = gcp[cp] - avg[cp];
                /* critical-path imbalance: the path's time in cp above the
                 * average activity per process, on the path's locations */
                set_cell(r, WS_M_CRITICAL_PATH_IMBALANCE, cp, loc, excess > 0.0 ? excess / gcp[cp] * own : 0.0);
                set_cell(r, WS_M_INTRA_PARTITION_IMBALANCE, cp, loc, share * s_intra[cp]);
                set_cell(r, WS_M_INTER_PARTITION_IMBALANCE, cp, loc, share * s_inter[cp]);
            }
            /* a location's activity counts as critical up to the path's
             * time in the call path, the rest is non-critical */
            double crit = d < gcp[cp] ? d : gcp[cp];
            set_cell(r, WS_M_CRITICAL_PATH_ACTIVITIES, cp, loc, crit);
            set_cell(r, WS_M_NON_CRITICAL_PATH_ACTIVITIES, cp, loc, d - crit);
            double intra = cell(r, WS_M_INTRA_PARTITION_IMBALANCE, cp, loc);
            double inter = cell(r, WS_M_INTER_PARTITION_IMBALANCE, cp, loc);
            set_cell(r, WS_M_CRITICAL_IMBALANCE_IMPACT, cp, loc, intra + inter);
            set_cell(r, WS_M_PERFORMANCE_IMPACT_CRITICALPATH, cp, loc,
                     cell(r, WS_M_CRITICAL_PATH_ACTIVITIES, cp, loc) + intra + inter);
            set_cell(r, WS_M_PERFORMANCE_IMPACT, cp, loc,
                     cell(r, WS_M_PERFORMANCE_IMPACT_CRITICALPATH, cp, loc) +
                         cell(r, WS_M_NON_CRITICAL_PATH_ACTIVITIES, cp, loc));
        }
    }
done:
    free(sums);
    free(rows);
    free(occurs);
    free(delta);
    free(costs);
    free(act);
    return rc;
}
