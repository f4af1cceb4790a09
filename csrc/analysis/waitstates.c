/* Wait-state analysis: the time hierarchy, counts, and every MPI
 * wait-state pattern, accumulated per (metric, call path, location) where
 * the waiting happens.  Definitions: docs/metrics.md; the terminology of
 * wait states is that of seed 000 (section IV-A) and seed 002.  This file:
 * region categories, wait-state records, the handlers of the three passes
 * and the time hierarchy; the patterns are in waitstates_p2p.c and
 * waitstates_coll.c. */
#include "waitstates_int.h"

#include <otf2/otf2.h>

/* ---- region categories -------------------------------------------------- */

#define CATEGORY_OVERHEAD (-2)
#define CATEGORY_COMP (-1)

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int is_one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* The metric whose time a region's time belongs to (leaf category),
 * following Scalasca's classification by name and role. */
static int region_category(const ws_trace *t, const ws_region *r)
{
    const char *name = ws_trace_string(t, r->name);
    if (r->paradigm == OTF2_PARADIGM_MEASUREMENT_SYSTEM &&
        (strcmp(name, "TRACE BUFFER FLUSH") == 0 || strcmp(name, "TRACING") == 0))
        return CATEGORY_OVERHEAD;
    if (r->paradigm == OTF2_PARADIGM_OPENMP) {
        /* (Scalasca's classification of OpenMP regions, by role and name) */
        switch (r->role) {
        case OTF2_REGION_ROLE_BARRIER:
            return WS_M_OMP_EBARRIER;
        case OTF2_REGION_ROLE_IMPLICIT_BARRIER:
            return WS_M_OMP_IBARRIER;
        case OTF2_REGION_ROLE_CRITICAL:
        case OTF2_REGION_ROLE_ATOMIC:
            return WS_M_OMP_CRITICAL;
        case OTF2_REGION_ROLE_ORDERED:
            return WS_M_OMP_ORDERED;
        case OTF2_REGION_ROLE_TASK_WAIT:
            return WS_M_OMP_TASKWAIT;
        case OTF2_REGION_ROLE_FLUSH:
            return WS_M_OMP_FLUSH;
        default:
            break;
        }
        static const char *const locks[] = {"omp_destroy_lock", "omp_init_lock", "omp_set_lock", "omp_test_lock",
                                            "omp_unset_lock", "omp_destroy_nest_lock", "omp_init_nest_lock",
                                            "omp_set_nest_lock", "omp_test_nest_lock", "omp_unset_nest_lock", NULL};
        return is_one_of(name, locks) ? WS_M_OMP_LOCK_API : CATEGORY_COMP;
    }
    if (r->paradigm != OTF2_PARADIGM_MPI)
        return CATEGORY_COMP;
    static const char *const init_exit[] = {"MPI_Init", "MPI_Init_thread", "MPI_Initialized", "MPI_Finalize",
                                            "MPI_Finalized", NULL};
    if (is_one_of(name, init_exit))
        return WS_M_MPI_INIT_EXIT;
    static const char *const comm_prefixes[] = {"MPI_Cart_", "MPI_Cartdim_", "MPI_Comm_", "MPI_Graph_",
                                                "MPI_Graphdims_", "MPI_Dist_graph_", "MPI_Intercomm_", NULL};
    for (const char *const *p = comm_prefixes; *p; p++)
        if (starts_with(name, *p))
            return WS_M_MPI_MGMT_COMM;
    static const char *const comm_names[] = {"MPI_Topo_test", "MPI_Dims_create", "MPI_Open_port", "MPI_Close_port",
                                             "MPI_Publish_name", "MPI_Unpublish_name", "MPI_Lookup_name", NULL};
    if (is_one_of(name, comm_names))
        return WS_M_MPI_MGMT_COMM;
    if (starts_with(name, "MPI_File_")) {
        const char *op = name + 9;
        static const char *const individual[] = {"read", "write", "read_at", "write_at", "read_shared",
                                                 "write_shared", "iread", "iwrite", "iread_at", "iwrite_at",
                                                 "iread_shared", "iwrite_shared", NULL};
        if (is_one_of(op, individual))
            return WS_M_MPI_IO_INDIVIDUAL;
        if (starts_with(op, "read_all") || starts_with(op, "write_all") || starts_with(op, "read_at_all") ||
            starts_with(op, "write_at_all") || starts_with(op, "read_ordered") || starts_with(op, "write_ordered") ||
            starts_with(op, "iread_all") || starts_with(op, "iwrite_all") || starts_with(op, "iread_at_all") ||
            starts_with(op, "iwrite_at_all"))
            return WS_M_MPI_IO_COLLECTIVE;
        return WS_M_MPI_MGMT_FILE;
    }
    if (starts_with(name, "MPI_Win_")) {
        static const char *const win[] = {"MPI_Win_allocate", "MPI_Win_allocate_shared", "MPI_Win_attach",
                                          "MPI_Win_create", "MPI_Win_create_dynamic", "MPI_Win_detach",
                                          "MPI_Win_free", "MPI_Win_shared_query", NULL};
        if (is_one_of(name, win) || starts_with(name, "MPI_Win_get_") || starts_with(name, "MPI_Win_set_"))
            return WS_M_MPI_MGMT_WIN;
    }
    if (r->role == OTF2_REGION_ROLE_BARRIER)
        return WS_M_MPI_SYNC_COLLECTIVE;
    if (r->role == OTF2_REGION_ROLE_POINT2POINT)
        return WS_M_MPI_POINT2POINT;
    static const char *const completion[] = {"MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Wait",
                                             "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", NULL};
    if (is_one_of(name, completion))
        return WS_M_MPI_POINT2POINT;
    if (r->role == OTF2_REGION_ROLE_COLL_ONE2ALL || r->role == OTF2_REGION_ROLE_COLL_ALL2ONE ||
        r->role == OTF2_REGION_ROLE_COLL_ALL2ALL || r->role == OTF2_REGION_ROLE_COLL_OTHER)
        return WS_M_MPI_COLLECTIVE;
    return WS_M_MPI; /* MPI time outside the named classes stays on "mpi" */
}

/* ---- wait-state records ------------------------------------------------- */

static const int pattern_metric[WS_WP_COUNT] = {
    [WS_WP_LATESENDER] = WS_M_MPI_LATESENDER,
    [WS_WP_LATERECEIVER] = WS_M_MPI_LATERECEIVER,
    [WS_WP_BARRIER] = WS_M_MPI_BARRIER_WAIT,
    [WS_WP_BARRIER_COMPLETION] = WS_M_MPI_BARRIER_COMPLETION,
    [WS_WP_NXN] = WS_M_MPI_WAIT_NXN,
    [WS_WP_NXN_COMPLETION] = WS_M_MPI_NXN_COMPLETION,
    [WS_WP_LATEBROADCAST] = WS_M_MPI_LATEBROADCAST,
    [WS_WP_EARLYREDUCE] = WS_M_MPI_EARLYREDUCE,
    [WS_WP_EARLYSCAN] = WS_M_MPI_EARLYSCAN,
    [WS_WP_FINALIZE] = WS_M_MPI_FINALIZE_WAIT,
    [WS_WP_INIT_COMPLETION] = WS_M_MPI_INIT_COMPLETION,
    [WS_WP_OMP_EBARRIER] = WS_M_OMP_EBARRIER_WAIT,
    [WS_WP_OMP_IBARRIER] = WS_M_OMP_IBARRIER_WAIT,
    [WS_WP_OMP_CRITICAL] = WS_M_OMP_LOCK_CONTENTION_CRITICAL,
    [WS_WP_OMP_LOCK_API] = WS_M_OMP_LOCK_CONTENTION_API,
};

int ws_wait_pattern_metric(int pattern)
{
    return pattern >= 0 && pattern < WS_WP_COUNT ? pattern_metric[pattern] : -1;
}

/* Adds the waiting time `wait` of a pattern to the cube at (its metric,
 * callpath, loc) and, with the option wait_records, records the instance
 * when it is one: a positive value that the cube received. */
int ws_add_wait(ws_analysis *a, int pattern, uint32_t callpath, uint32_t loc, double wait, const wait_instance *w,
                ws_error *err)
{
    ws_result *r = a->result;
    int metric = pattern_metric[pattern];
    const ws_analysis_options *o = &a->options;
    double start = w->start, end = w->end;
    if (o->has_window && wait > 0.0) {
        /* the part of the waiting inside the window (the record's interval
         * clipped with it) */
        wait = ws_window_part(o, start, end, wait);
        if (start < o->window_start)
            start = o->window_start;
        if (end > o->window_end)
            end = o->window_end;
    }
    add(a, metric, callpath, loc, wait);
    if (!a->options.wait_records || !(wait > 0.0) || r->slot[metric] < 0 || callpath >= r->n_callpaths)
        return WS_OK;
    if (ws_grow((void **)&r->wait_records, &r->cap_wait_records, r->n_wait_records + 1, sizeof *r->wait_records))
        return ws_error_nomem(err, "wait-state records");
    ws_wait_record *rec = &r->wait_records[r->n_wait_records++];
    memset(rec, 0, sizeof *rec);
    rec->start = start;
    rec->end = end;
    rec->wait = wait;
    rec->location = loc;
    rec->callpath = callpath;
    rec->event = w->event;
    rec->partner = w->partner;
    rec->pattern = (uint8_t)pattern;
    rec->wrong_order = w->wrong_order;
    return WS_OK;
}

static int cmp_wait_record(const void *x, const void *y)
{
    const ws_wait_record *p = x, *q = y;
    if (p->location != q->location)
        return p->location < q->location ? -1 : 1;
    if (p->event != q->event)
        return p->event < q->event ? -1 : 1;
    return (p->pattern > q->pattern) - (p->pattern < q->pattern);
}

void ws_wait_records_sort(ws_wait_record *records, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (cmp_wait_record(&records[i - 1], &records[i]) > 0) {
            qsort(records, n, sizeof *records, cmp_wait_record);
            return;
        }
}

int ws_waitstates_prepare(ws_analysis *a, ws_error *err)
{
    const ws_trace *t = a->trace;
    a->region_category = ws_malloc_array(t->n_regions ? t->n_regions : 1, sizeof *a->region_category);
    if (!a->region_category)
        return ws_error_nomem(err, "region categories");
    for (uint32_t r = 0; r < t->n_regions; r++)
        a->region_category[r] = region_category(t, &t->regions[r]);
    uint32_t C = t->callpaths.n ? t->callpaths.n : 1;
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        const ws_loc_sync *ls = &a->sync->locs[loc];
        ws_loc_data *d = data_of(a, loc);
        size_t nm = ls->n_messages ? (size_t)ls->n_messages : 1, ns = ls->n_sites ? ls->n_sites : 1;
        d->wait = ws_calloc_dense(nm, sizeof *d->wait);
        d->partner_time = ws_calloc_dense(nm, sizeof *d->partner_time);
        d->msg_bits = ws_calloc_dense(nm, sizeof *d->msg_bits);
        d->site_waits = ws_calloc_dense(ns, sizeof *d->site_waits);
        d->time = ws_calloc(C, sizeof *d->time);
        d->visits = ws_calloc(C, sizeof *d->visits);
        if (!d->wait || !d->partner_time || !d->msg_bits || !d->site_waits || !d->time || !d->visits)
            return ws_error_nomem(err, "wait-state annotations");
        for (size_t k = 0; k < ns; k++)
            d->site_waits[k].delayer = WS_NONE32;
    }
    return WS_OK;
}

void ws_waitstates_release(ws_loc_data *d)
{
    free(d->wait);
    free(d->lr);
    free(d->partner_time);
    free(d->waiting_row);
    free(d->waiting_time);
    d->wait = d->lr = d->partner_time = d->waiting_time = NULL;
    d->waiting_row = NULL;
    d->n_waiting = 0;
    free(d->msg_bits);
    free(d->leaves);
    free(d->site_waits);
    d->msg_bits = NULL;
    d->leaves = NULL;
    d->n_leaves = d->cap_leaves = 0;
    d->site_waits = NULL;
}

/* What pass 1 touches first of a location and at a collective site (see
 * ws_handler.prefetch). */
static void p1_prefetch(void *state, const ws_replay_env *env, uint32_t loc, int64_t site)
{
    (void)env;
    const ws_loc_data *d = data_of(state, loc);
    if (site < 0) {
        WS_PREFETCH(d);
        WS_PREFETCH((const char *)d + 64);
        return;
    }
    WS_PREFETCH_RECORD(&d->site_waits[site]);
}

/* A run later: the site's event, whose kind and reference say what the
 * collective sent and received. */
static void p1_prefetch_deep(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site)
{
    (void)state;
    const ws_events *e = &env->trace->locations[loc].events;
    uint32_t ev = env->sync->locs[loc].sites[site].event;
    WS_PREFETCH(&e->kind[ev]);
    WS_PREFETCH(&e->ref[ev]);
}

void ws_waitstates_handlers(ws_analysis *a, int pass, ws_handler *h)
{
    memset(h, 0, sizeof *h);
    h->state = a;
    if (pass < 1 || pass > 3)
        return;
    h->sparse = 1;
    /* Every pass produces from the trace and the earlier passes only:
     * pass 1 sends the message and site records of the trace; pass 2 the
     * receive's Late Sender and Late Receiver of pass 1 (its consumes and
     * end write the send rows); pass 3 the final waits of pass 2, on the
     * channels that pass 2's Late Sender selects (its consume on channel 1
     * zeroes a cancelled one at the send row, at the message's last
     * exchange point, after both sides chose the channels). */
    h->unordered = 1;
    /* passes 2 and 3 produce from rows their consumes and ends never
     * write (a receive's waits for the send row in pass 2; in pass 3 the
     * send's Late Receiver and the receive's Late Sender, consumed into
     * the other side's rows, and a cancelled Late Sender sent as 0
     * before pass 3's end zeroes it) */
    h->msg_pure = pass >= 2;
    ws_waitstates_p2p_handlers(pass, h);
    if (pass == 1) {
        ws_waitstates_coll_handlers(h);
        h->prefetch = p1_prefetch;
        h->prefetch_deep = p1_prefetch_deep;
    }
}

/* ---- finishing: time hierarchy and sums ------------------------------- */

/* Exclusive time and visits per call path: the time between two events
 * belongs to the innermost open region; none outside every region (a
 * thread of an OpenMP team between its parallel regions, whose outermost
 * region has the master's call path as its parent). */
static void time_profile(const ws_trace *t, const ws_analysis_options *o, uint32_t loc, ws_loc_data *d)
{
    const ws_events *e = &t->locations[loc].events;
    const uint32_t *parent = t->callpaths.parent;
    uint32_t cur = WS_NONE32;
    uint64_t depth = 0;
    double last = 0.0;
    for (uint64_t i = 0; i < e->n; i++) {
        double now = ws_ev_time(e, i);
        if (cur != WS_NONE32)
            d->time[cur] += ws_window_part(o, last, now, now - last);
        last = now;
        uint8_t kind = e->kind[i];
        if (kind == WS_EV_ENTER) {
            cur = e->ref[i];
            depth++;
            if (ws_window_has(o, now))
                d->visits[cur] += 1.0;
        } else if (kind == WS_EV_LEAVE) {
            cur = depth > 1 ? parent[e->ref[i]] : WS_NONE32;
            if (depth)
                depth--;
        }
    }
}

static void add_chain(ws_analysis *a, int metric, uint32_t cp, uint32_t loc, double v, int stop)
{
    for (int m = metric; m >= 0 && m != stop; m = ws_metric_parent(m))
        add(a, m, cp, loc, v);
}

int ws_waitstates_finish(ws_analysis *a, ws_error *err)
{
    const ws_trace *t = a->trace;
    ws_result *r = a->result;
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        ws_loc_data *d = data_of(a, loc);
        time_profile(t, &a->options, loc, d);
        for (uint32_t cp = 0; cp < t->callpaths.n; cp++) {
            double v = d->time[cp];
            /* (a count is never -0: adding +0 would change nothing, and
             * not adding it leaves the rows of call paths a location
             * never visits untouched pages) */
            if (d->visits[cp] != 0.0)
                add(a, WS_M_VISITS, cp, loc, d->visits[cp]);
            if (v == 0.0)
                continue;
            add(a, WS_M_TIME, cp, loc, v);
            int cat = a->region_category[t->callpaths.region[cp]];
            if (cat == CATEGORY_OVERHEAD) {
                add(a, WS_M_OVERHEAD, cp, loc, v);
            } else if (cat == CATEGORY_COMP) {
                add(a, WS_M_EXECUTION, cp, loc, v);
                add(a, WS_M_COMP, cp, loc, v);
            } else {
                /* the leaf category and every ancestor up to execution */
                add_chain(a, cat, cp, loc, v, WS_M_TIME);
            }
        }
    }
    int rc = ws_omp_metrics(a, err);
    if (rc)
        return rc;
    /* count parents are sums of their children, a row (call path) at a
     * time; a zero child adds nothing (counts are never -0) */
    static const int sums[][3] = {
        {WS_M_SYNCS_P2P, WS_M_SYNCS_SEND, WS_M_SYNCS_RECV}, {WS_M_SYNCS, WS_M_SYNCS_P2P, WS_M_SYNCS_COLL},
        {WS_M_COMMS_P2P, WS_M_COMMS_SEND, WS_M_COMMS_RECV}, {WS_M_COMMS_COLL, WS_M_COMMS_CXCH, WS_M_COMMS_CSRC},
        {WS_M_COMMS_COLL, WS_M_COMMS_CDST, -1},          {WS_M_COMMS, WS_M_COMMS_P2P, WS_M_COMMS_COLL},
        {WS_M_BYTES_P2P, WS_M_BYTES_SENT, WS_M_BYTES_RCVD}, {WS_M_BYTES_COLL, WS_M_BYTES_COUT, WS_M_BYTES_CIN},
        {WS_M_BYTES, WS_M_BYTES_P2P, WS_M_BYTES_COLL},
    };
    for (size_t s = 0; s < sizeof sums / sizeof sums[0]; s++) {
        int parent = sums[s][0];
        for (int c = 1; c < 3; c++) {
            int child = sums[s][c];
            if (child < 0 || r->slot[parent] < 0 || r->slot[child] < 0)
                continue;
            for (uint32_t cp = 0; cp < r->n_callpaths; cp++) {
                if (!ws_cube_row_live(r, child, cp))
                    continue;
                ws_cube_mark(r, parent, cp);
                double *out = ws_cube_cell(r, parent, cp, 0);
                const double *in = ws_cube_cell(r, child, cp, 0);
                for (uint32_t i = 0; i < a->n_local; i++) {
                    uint32_t loc = a->local[i];
                    if (in[loc] != 0.0)
                        out[loc] += in[loc];
                }
            }
        }
    }
    return WS_OK;
}
