/* Wait-state analysis: the time hierarchy, counts, and every MPI
 * wait-state pattern, accumulated per (metric, call path, location) where
 * the waiting happens.  Definitions: docs/metrics.md; the terminology of
 * wait states is that of seed 000 (section IV-A) and seed 002. */
#include "analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ROLE_BARRIER = 15, ROLE_COLL_ONE2ALL = 23, ROLE_COLL_ALL2ONE = 24, ROLE_COLL_ALL2ALL = 25,
       ROLE_COLL_OTHER = 26, ROLE_POINT2POINT = 28, PARADIGM_MPI = 4, PARADIGM_MEASUREMENT = 6 };

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
    if (r->paradigm == PARADIGM_MEASUREMENT &&
        (strcmp(name, "TRACE BUFFER FLUSH") == 0 || strcmp(name, "TRACING") == 0))
        return CATEGORY_OVERHEAD;
    if (r->paradigm != PARADIGM_MPI)
        return CATEGORY_COMP;
    static const char *const init_exit[] = {"MPI_Init", "MPI_Init_thread", "MPI_Initialized", "MPI_Finalize",
                                            "MPI_Finalized", NULL};
    if (is_one_of(name, init_exit))
        return M_MPI_INIT_EXIT;
    static const char *const comm_prefixes[] = {"MPI_Cart_", "MPI_Cartdim_", "MPI_Comm_", "MPI_Graph_",
                                                "MPI_Graphdims_", "MPI_Dist_graph_", "MPI_Intercomm_", NULL};
    for (const char *const *p = comm_prefixes; *p; p++)
        if (starts_with(name, *p))
            return M_MPI_MGMT_COMM;
    static const char *const comm_names[] = {"MPI_Topo_test", "MPI_Dims_create", "MPI_Open_port", "MPI_Close_port",
                                             "MPI_Publish_name", "MPI_Unpublish_name", "MPI_Lookup_name", NULL};
    if (is_one_of(name, comm_names))
        return M_MPI_MGMT_COMM;
    if (starts_with(name, "MPI_File_")) {
        const char *op = name + 9;
        static const char *const individual[] = {"read", "write", "read_at", "write_at", "read_shared",
                                                 "write_shared", "iread", "iwrite", "iread_at", "iwrite_at",
                                                 "iread_shared", "iwrite_shared", NULL};
        if (is_one_of(op, individual))
            return M_MPI_IO_INDIVIDUAL;
        if (starts_with(op, "read_all") || starts_with(op, "write_all") || starts_with(op, "read_at_all") ||
            starts_with(op, "write_at_all") || starts_with(op, "read_ordered") || starts_with(op, "write_ordered") ||
            starts_with(op, "iread_all") || starts_with(op, "iwrite_all") || starts_with(op, "iread_at_all") ||
            starts_with(op, "iwrite_at_all"))
            return M_MPI_IO_COLLECTIVE;
        return M_MPI_MGMT_FILE;
    }
    if (starts_with(name, "MPI_Win_")) {
        static const char *const win[] = {"MPI_Win_allocate", "MPI_Win_allocate_shared", "MPI_Win_attach",
                                          "MPI_Win_create", "MPI_Win_create_dynamic", "MPI_Win_detach",
                                          "MPI_Win_free", "MPI_Win_shared_query", NULL};
        if (is_one_of(name, win) || starts_with(name, "MPI_Win_get_") || starts_with(name, "MPI_Win_set_"))
            return M_MPI_MGMT_WIN;
    }
    if (r->role == ROLE_BARRIER)
        return M_MPI_SYNC_COLLECTIVE;
    if (r->role == ROLE_POINT2POINT)
        return M_MPI_POINT2POINT;
    static const char *const completion[] = {"MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Wait",
                                             "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", NULL};
    if (is_one_of(name, completion))
        return M_MPI_POINT2POINT;
    if (r->role == ROLE_COLL_ONE2ALL || r->role == ROLE_COLL_ALL2ONE || r->role == ROLE_COLL_ALL2ALL ||
        r->role == ROLE_COLL_OTHER)
        return M_MPI_COLLECTIVE;
    return M_MPI; /* MPI time outside the named classes stays on "mpi" */
}

/* ---- shared helpers ----------------------------------------------------- */

static ws_loc_data *data_of(ws_analysis *a, uint32_t loc)
{
    return &a->locs[loc];
}

static void add(ws_analysis *a, int metric, uint32_t callpath, uint32_t loc, double v)
{
    ws_cube_add(a->result, metric, callpath, loc, v);
}

/* ---- wait-state records ------------------------------------------------- */

static const int pattern_metric[WS_WP_COUNT] = {
    [WS_WP_LATESENDER] = M_MPI_LATESENDER,
    [WS_WP_LATERECEIVER] = M_MPI_LATERECEIVER,
    [WS_WP_BARRIER] = M_MPI_BARRIER_WAIT,
    [WS_WP_BARRIER_COMPLETION] = M_MPI_BARRIER_COMPLETION,
    [WS_WP_NXN] = M_MPI_WAIT_NXN,
    [WS_WP_NXN_COMPLETION] = M_MPI_NXN_COMPLETION,
    [WS_WP_LATEBROADCAST] = M_MPI_LATEBROADCAST,
    [WS_WP_EARLYREDUCE] = M_MPI_EARLYREDUCE,
    [WS_WP_EARLYSCAN] = M_MPI_EARLYSCAN,
    [WS_WP_FINALIZE] = M_MPI_FINALIZE_WAIT,
    [WS_WP_INIT_COMPLETION] = M_MPI_INIT_COMPLETION,
};

int ws_wait_pattern_metric(int pattern)
{
    return pattern >= 0 && pattern < WS_WP_COUNT ? pattern_metric[pattern] : -1;
}

/* What a wait record holds besides its pattern, location, call path and value. */
typedef struct wait_instance {
    double start;        /* the waiting interval */
    double end;
    uint32_t event;      /* see ws_wait_record */
    uint32_t partner;
    uint8_t wrong_order;
} wait_instance;

/* Adds the waiting time `wait` of a pattern to the cube at (its metric,
 * callpath, loc) and, with the option wait_records, records the instance
 * when it is one: a positive value that the cube received. */
static int add_wait(ws_analysis *a, int pattern, uint32_t callpath, uint32_t loc, double wait,
                    const wait_instance *w, ws_error *err)
{
    ws_result *r = a->result;
    int metric = pattern_metric[pattern];
    add(a, metric, callpath, loc, wait);
    if (!a->options.wait_records || !(wait > 0.0) || r->slot[metric] < 0 || callpath >= r->n_callpaths)
        return WS_OK;
    if (ws_grow((void **)&r->wait_records, &r->cap_wait_records, r->n_wait_records + 1, sizeof *r->wait_records))
        return ws_error_nomem(err, "wait-state records");
    ws_wait_record *rec = &r->wait_records[r->n_wait_records++];
    memset(rec, 0, sizeof *rec);
    rec->start = w->start;
    rec->end = w->end;
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
        d->ls = ws_calloc(nm, sizeof *d->ls);
        d->ls_cancelled = ws_calloc(nm, sizeof *d->ls_cancelled);
        d->lr = ws_calloc(nm, sizeof *d->lr);
        d->send_enter = ws_calloc(nm, sizeof *d->send_enter);
        d->send_bytes = ws_calloc(nm, sizeof *d->send_bytes);
        d->post_time = ws_calloc(nm, sizeof *d->post_time);
        d->partner_leave = ws_calloc(nm, sizeof *d->partner_leave);
        d->partner_done_leave = ws_calloc(nm, sizeof *d->partner_done_leave);
        d->site_completion = ws_calloc(ns, sizeof *d->site_completion);
        d->site_wait = ws_calloc(ns, sizeof *d->site_wait);
        d->site_sync_time = ws_calloc(ns, sizeof *d->site_sync_time);
        d->site_delayer = ws_malloc_array(ns, sizeof *d->site_delayer);
        d->site_sync = ws_calloc(ns, sizeof *d->site_sync);
        d->site_kind = ws_calloc(ns, sizeof *d->site_kind);
        d->site_anywait = ws_calloc(ns, sizeof *d->site_anywait);
        d->init_wait = ws_calloc(C, sizeof *d->init_wait);
        d->time = ws_calloc(C, sizeof *d->time);
        d->visits = ws_calloc(C, sizeof *d->visits);
        if (!d->ls || !d->ls_cancelled || !d->lr || !d->send_enter || !d->send_bytes || !d->post_time ||
            !d->partner_leave || !d->partner_done_leave || !d->site_completion || !d->site_wait || !d->site_sync_time ||
            !d->site_delayer || !d->site_sync || !d->site_kind || !d->site_anywait || !d->init_wait || !d->time || !d->visits)
            return ws_error_nomem(err, "wait-state annotations");
        for (size_t k = 0; k < ns; k++)
            d->site_delayer[k] = WS_NONE32;
    }
    return WS_OK;
}

/* ---- pass 1: forward ---------------------------------------------------- */

typedef struct send_info {
    double enter;      /* enter of the send call */
    double leave;      /* leave of the send call */
    double done_enter; /* enter of the call that completed the send */
    double done_leave; /* leave of that call */
    uint64_t bytes;
    uint32_t flags;
    uint32_t pad;
} send_info;

typedef struct coll_info {
    double enter;
    double leave;
    uint64_t sent;
    uint64_t received;
    uint32_t op;
    uint32_t location;
} coll_info;

typedef struct coll_cache {
    int ready;
    int mismatch;
    double latest;       /* latest enter (max) */
    uint32_t latest_member;
    double first_leave;  /* earliest leave (min) */
    double root_enter;
    int any_wait;
} coll_cache;

static int p1_begin(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    (void)env;
    (void)err;
    ws_loc_data *d = data_of(state, loc);
    d->cur_callpath = WS_NONE32;
    d->last_time = NAN;
    d->multi_call = WS_NONE32;
    d->multi_row = WS_NONE32;
    d->multi_max = 0.0;
    return WS_OK;
}

/* Pass 1 only records a Late Sender; it is counted at the end of pass 2,
 * when a larger Late Receiver in the same Waitall may have replaced it. */
static void count_late_sender(ws_analysis *a, uint32_t loc, uint32_t row, double wait)
{
    data_of(a, loc)->ls[row] = wait;
}

/* Waitall/Waitsome: only the largest Late Sender of the call counts. */
static void flush_multi(ws_analysis *a, uint32_t loc)
{
    ws_loc_data *d = data_of(a, loc);
    if (d->multi_call != WS_NONE32 && d->multi_max > 0.0)
        count_late_sender(a, loc, d->multi_row, d->multi_max);
    d->multi_call = WS_NONE32;
    d->multi_row = WS_NONE32;
    d->multi_max = 0.0;
}

/* Exclusive time and visits per call path: the time between two events
 * belongs to the innermost open region. */
static void time_profile(const ws_trace *t, uint32_t loc, ws_loc_data *d)
{
    const ws_events *e = &t->locations[loc].events;
    const uint32_t *parent = t->callpaths.parent;
    uint32_t cur = WS_NONE32;
    double last = 0.0;
    for (uint64_t i = 0; i < e->n; i++) {
        double now = e->time[i];
        if (cur != WS_NONE32)
            d->time[cur] += now - last;
        last = now;
        uint8_t kind = e->kind[i];
        if (kind == WS_EV_ENTER) {
            cur = e->ref[i];
            d->visits[cur] += 1.0;
        } else if (kind == WS_EV_LEAVE) {
            cur = parent[e->ref[i]];
        }
    }
}

static int p1_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)channel;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    send_info p;
    memset(&p, 0, sizeof p);
    p.enter = ls->msg_enter[row];
    p.leave = ls->msg_leave[row];
    p.done_enter = ls->msg_done_enter[row];
    p.done_leave = ls->msg_done[row];
    p.bytes = env->trace->locations[loc].events.msg_bytes[row];
    p.flags = ls->msg_flags[row];
    if (ws_buffer_append(out, &p, sizeof p) != 0)
        return ws_error_nomem(err, "payload");
    /* the send is counted where it happens */
    add(state, p.bytes == 0 ? M_SYNCS_SEND : M_COMMS_SEND, ls->msg_callpath[row], loc, 1.0);
    add(state, M_BYTES_SENT, ls->msg_callpath[row], loc, (double)p.bytes);
    return WS_OK;
}

static int p1_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)channel;
    ws_analysis *a = state;
    if (size != sizeof(send_info))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    send_info p;
    memcpy(&p, data, sizeof p);
    const ws_loc_sync *ls = &env->sync->locs[loc];
    ws_loc_data *d = data_of(a, loc);
    uint8_t flags = ls->msg_flags[row];
    double enter = ls->msg_enter[row], leave = ls->msg_leave[row];
    d->send_enter[row] = p.enter;
    d->send_bytes[row] = p.bytes;
    d->partner_leave[row] = p.leave;
    d->partner_done_leave[row] = p.done_leave;
    if (leave < p.enter)
        a->result->clock_violations[loc]++;
    uint32_t cp = ls->msg_callpath[row];
    add(a, p.bytes == 0 ? M_SYNCS_RECV : M_COMMS_RECV, cp, loc, 1.0);
    add(a, M_BYTES_RCVD, cp, loc, (double)p.bytes);

    /* Late Receiver, decided here and charged at the sender in pass 2:
     * the send's completing call had to wait until this receive was
     * posted (a rendezvous send of zero latency leaves exactly then). */
    if ((p.flags & WS_MSG_MAY_BLOCK) && p.done_leave >= ls->msg_post[row]) {
        double lr = ls->msg_post[row] - p.done_enter;
        if (lr > 0.0)
            d->lr[row] = lr;
    }

    /* Late Sender: the receive (or the wait completing it) was entered
     * before the send started; capped by the receive's duration. */
    double wait = 0.0;
    if (flags & WS_MSG_MAY_BLOCK) {
        double until = p.enter < leave ? p.enter : leave;
        wait = until - enter;
        if (wait < 0.0)
            wait = 0.0;
    }
    if (flags & WS_MSG_MULTI) {
        if (d->multi_call != ls->msg_call[row])
            flush_multi(a, loc);
        d->multi_call = ls->msg_call[row];
        if (d->multi_row == WS_NONE32 || wait > d->multi_max) {
            d->multi_row = row;
            d->multi_max = wait;
        }
    } else if (wait > 0.0) {
        count_late_sender(a, loc, row, wait);
    }
    return WS_OK;
}

static int p1_coll_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                           ws_error *err)
{
    (void)state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    coll_info c;
    memset(&c, 0, sizeof c);
    c.enter = ls->site_enter[site];
    c.leave = ls->site_leave[site];
    c.op = ls->site_op[site];
    c.location = loc;
    uint32_t ev = ls->site_event[site];
    const ws_events *e = &env->trace->locations[loc].events;
    if (e->kind[ev] == WS_EV_COLL_END) {
        c.sent = e->coll_sent[e->ref[ev]];
        c.received = e->coll_received[e->ref[ev]];
    }
    if (ws_buffer_append(out, &c, sizeof c) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

static coll_info member_info(const ws_coll_view *v, uint32_t member)
{
    coll_info c;
    memcpy(&c, v->data[member], sizeof c);
    return c;
}

/* The wait of one member, given the instance's reductions; *until (if
 * given) receives the end of the waiting interval when there is one. */
static double member_wait(uint8_t cls, const coll_cache *k, uint32_t member, uint32_t root, const coll_info *c,
                          double *until_out)
{
    double ref;
    switch (cls) {
    case WS_SITE_BARRIER:
    case WS_SITE_NXN:
    case WS_SITE_FINALIZE:
    case WS_SITE_INIT:
        ref = k->latest;
        break;
    case WS_SITE_1TON:
        if (member == root)
            return 0.0;
        ref = k->root_enter;
        break;
    case WS_SITE_NTO1:
        if (member != root)
            return 0.0;
        ref = k->latest;
        break;
    default:
        return 0.0;
    }
    double until = ref < c->leave ? ref : c->leave;
    double w = until - c->enter;
    if (until_out)
        *until_out = until;
    return w > 0.0 ? w : 0.0;
}

/* The clock condition of a collective (see replay/clock_correction.h): a
 * member cannot leave before the members whose data it needs have entered:
 * every member of a barrier or N x N operation needs all (MPI_Init and
 * MPI_Finalize included, which the analysis treats as N x N over all
 * ranks), the non-roots of a 1-to-N operation the root, the root of an
 * N-to-1 operation all, a scan member those up to itself. */
static int coll_clock_violation(uint8_t cls, const coll_cache *k, const ws_coll_view *v, uint32_t me, uint32_t root,
                                double leave)
{
    double needed = -INFINITY;
    if (cls == WS_SITE_BARRIER || cls == WS_SITE_NXN || cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE ||
        (cls == WS_SITE_NTO1 && me == root))
        needed = k->latest;
    else if (cls == WS_SITE_1TON && me != root)
        needed = k->root_enter;
    else if (cls == WS_SITE_SCAN)
        for (uint32_t i = 0; i < v->n_present && v->present[i] <= me; i++) {
            double enter = member_info(v, v->present[i]).enter;
            if (enter > needed)
                needed = enter;
        }
    return leave < needed;
}

static int p1_coll_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site,
                           const ws_coll_view *v, ws_error *err)
{
    ws_analysis *a = state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    ws_loc_data *d = data_of(a, loc);
    uint8_t cls = ls->site_class[site];
    uint32_t root = ls->site_root[site];
    coll_cache *k = v->cache;
    for (uint32_t i = 0; i < v->n_present; i++)
        if (v->size[v->present[i]] != sizeof(coll_info))
            return ws_error_set(err, WS_ERR_INTERNAL, "unexpected collective payload size");
    if (!k->ready) {
        k->ready = 1;
        k->latest = -INFINITY;
        k->first_leave = INFINITY;
        k->latest_member = WS_NONE32;
        k->root_enter = NAN;
        uint32_t op0 = member_info(v, v->present[0]).op;
        for (uint32_t i = 0; i < v->n_present; i++) {
            uint32_t m = v->present[i];
            coll_info c = member_info(v, m);
            if (c.op != op0)
                k->mismatch = 1;
            if (c.enter > k->latest) {
                k->latest = c.enter;
                k->latest_member = m;
            }
            if (c.leave < k->first_leave)
                k->first_leave = c.leave;
            if (m == root)
                k->root_enter = c.enter;
        }
        if (cls == WS_SITE_1TON && isnan(k->root_enter))
            k->mismatch = 2;
        for (uint32_t i = 0; i < v->n_present && !k->mismatch; i++) {
            uint32_t m = v->present[i];
            coll_info c = member_info(v, m);
            if (member_wait(cls, k, m, root, &c, NULL) > 0.0)
                k->any_wait = 1;
        }
        if (cls == WS_SITE_SCAN) {
            double prefix = -INFINITY;
            for (uint32_t i = 0; i < v->n_present; i++) {
                coll_info c = member_info(v, v->present[i]);
                if (c.enter > prefix)
                    prefix = c.enter;
                if ((prefix < c.leave ? prefix : c.leave) > c.enter)
                    k->any_wait = 1;
            }
        }
    }
    if (k->mismatch == 1) {
        ws_error_set(err, WS_ERR_MATCH,
                     "location %u: the members of a collective operation at t=%.9f s recorded different operations; "
                     "the trace is inconsistent",
                     (unsigned)loc, ls->site_enter[site]);
        return ws_trace_error_at(env->trace, loc, err);
    }
    if (k->mismatch == 2) {
        ws_error_set(err, WS_ERR_MATCH, "location %u: collective at t=%.9f s has no valid root", (unsigned)loc,
                     ls->site_enter[site]);
        return ws_trace_error_at(env->trace, loc, err);
    }

    uint32_t me = ls->site_member[site];
    coll_info own = member_info(v, me);
    if (coll_clock_violation(cls, k, v, me, root, own.leave))
        a->result->clock_violations[loc]++;
    uint32_t cp = ls->site_callpath[site];
    double until = own.enter;
    double wait = member_wait(cls, k, me, root, &own, &until);
    double b = own.enter, e = own.leave;
    double latest_clamped = k->latest < e ? k->latest : e;
    double completion_from = k->first_leave > latest_clamped ? k->first_leave : latest_clamped;
    double completion = e - completion_from;
    if (completion < 0.0)
        completion = 0.0;
    /* the instances: waiting [enter, until] for the last to enter (or the
     * root), completion [completion_from, leave] */
    uint32_t ev = ls->site_event[site];
    uint32_t last = k->latest_member != WS_NONE32 ? member_info(v, k->latest_member).location : WS_NONE32;
    wait_instance wi = {b, until, ev, last, WS_WO_NONE};
    wait_instance ci = {completion_from, e, ev, WS_NONE32, WS_WO_NONE};
    int rc = WS_OK;

    uint8_t kind = WS_WAIT_NONE;
    switch (cls) {
    case WS_SITE_BARRIER:
        if ((rc = add_wait(a, WS_WP_BARRIER, cp, loc, wait, &wi, err)) ||
            (rc = add_wait(a, WS_WP_BARRIER_COMPLETION, cp, loc, completion, &ci, err)))
            return rc;
        kind = WS_WAIT_BARRIER;
        break;
    case WS_SITE_NXN:
        if ((rc = add_wait(a, WS_WP_NXN, cp, loc, wait, &wi, err)) ||
            (rc = add_wait(a, WS_WP_NXN_COMPLETION, cp, loc, completion, &ci, err)))
            return rc;
        kind = WS_WAIT_NXN;
        break;
    case WS_SITE_1TON:
        wi.partner = member_info(v, root).location;
        if ((rc = add_wait(a, WS_WP_LATEBROADCAST, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_12N;
        break;
    case WS_SITE_NTO1:
        if ((rc = add_wait(a, WS_WP_EARLYREDUCE, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_N21;
        break;
    case WS_SITE_SCAN: {
        /* the latest enter among the members up to and including me */
        double latest = -INFINITY;
        uint32_t latest_member = me;
        for (uint32_t i = 0; i < v->n_present && v->present[i] <= me; i++) {
            coll_info c = member_info(v, v->present[i]);
            if (c.enter > latest) {
                latest = c.enter;
                latest_member = v->present[i];
            }
        }
        until = latest < e ? latest : e;
        wait = until - b > 0.0 ? until - b : 0.0;
        wi.end = until;
        wi.partner = member_info(v, latest_member).location;
        if ((rc = add_wait(a, WS_WP_EARLYSCAN, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_SCAN;
        d->site_sync_time[site] = until;
        d->site_delayer[site] = wi.partner;
        break;
    }
    case WS_SITE_INIT:
        if ((rc = add_wait(a, WS_WP_INIT_COMPLETION, cp, loc, completion, &ci, err)))
            return rc;
        /* waiting for the last process to enter MPI_Init is no metric (no
         * delay cost may land on MPI_Init), but the critical path and the
         * imbalance indicators must not count it as activity */
        d->init_wait[cp] += wait;
        break;
    case WS_SITE_FINALIZE:
        if ((rc = add_wait(a, WS_WP_FINALIZE, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_FINALIZE;
        break;
    default:
        wait = 0.0;
        break;
    }
    /* counted on every collective record, single-member communicators
     * included (as Scalasca does; only the waiting skips them) */
    if (own.op != 0xff) {
        if (own.sent == 0 && own.received == 0)
            add(a, M_SYNCS_COLL, cp, loc, 1.0);
        else if (own.sent && own.received)
            add(a, M_COMMS_CXCH, cp, loc, 1.0);
        else if (own.sent)
            add(a, M_COMMS_CSRC, cp, loc, 1.0);
        else
            add(a, M_COMMS_CDST, cp, loc, 1.0);
        add(a, M_BYTES_COUT, cp, loc, (double)own.sent);
        add(a, M_BYTES_CIN, cp, loc, (double)own.received);
    }

    /* annotations for the later passes */
    d->site_wait[site] = wait;
    d->site_kind[site] = kind;
    d->site_completion[site] = completion;
    uint32_t delayer_member = WS_NONE32;
    switch (cls) {
    case WS_SITE_BARRIER:
    case WS_SITE_NXN:
    case WS_SITE_NTO1:
    case WS_SITE_FINALIZE:
    case WS_SITE_INIT:
        delayer_member = k->latest_member;
        d->site_sync_time[site] = k->latest;
        break;
    case WS_SITE_1TON:
        delayer_member = root;
        d->site_sync_time[site] = k->root_enter;
        break;
    case WS_SITE_SCAN:
        break;
    default:
        d->site_sync_time[site] = b;
        break;
    }
    if (delayer_member != WS_NONE32)
        d->site_delayer[site] = member_info(v, delayer_member).location;
    d->site_anywait[site] = (uint8_t)(k->any_wait != 0 || (cls == WS_SITE_SCAN && wait > 0.0));
    /* synchronization points: barriers, Init and Finalize always; the
     * other classes when somebody waited.  Scans never (as in Scalasca). */
    d->site_sync[site] = (cls == WS_SITE_BARRIER || cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE ||
                          ((cls == WS_SITE_NXN || cls == WS_SITE_1TON || cls == WS_SITE_NTO1) && k->any_wait));
    return WS_OK;
}

/* Wrong-order Late Senders: a Late Sender instance is in wrong order
 * when the location later receives (in another MPI call) a message whose
 * send started before the send of the message it waited for.  The nearest such later receive
 * decides between "same" and "different" source.  With `wo`, the class of
 * every receive row (WS_WO_*) is stored there for its wait record. */
static int wrong_order(ws_analysis *a, uint32_t loc, uint8_t *wo, ws_error *err)
{
    const ws_loc_sync *ls = &a->sync->locs[loc];
    ws_loc_data *d = data_of(a, loc);
    uint64_t n = ls->n_messages;
    /* stack: later receives, send enters strictly increasing towards the
     * top (a receive hides the later ones whose send started no earlier);
     * group: the receives of the current call, pushed once the call is
     * done, so that receives completed by one call (MPI_Waitall,
     * MPI_Waitsome) are never in wrong order among themselves (Scalasca
     * 2.6 records such a call's Late Sender at its Leave, after all of
     * them) */
    uint32_t *stack = ws_malloc_array(n ? n : 1, sizeof *stack);
    uint32_t *group = ws_malloc_array(n ? n : 1, sizeof *group);
    if (!stack || !group) {
        free(stack);
        free(group);
        return ws_error_nomem(err, "wrong-order analysis");
    }
    uint64_t depth = 0, n_group = 0;
    for (uint64_t k = n + 1; k-- > 0;) {
        int is_recv = k < n && !(ls->msg_flags[k] & WS_MSG_SEND) && ls->msg_match[k] != WS_NONE64;
        if (k < n && !is_recv)
            continue;
        if (n_group && (k == n || ls->msg_call[k] != ls->msg_call[group[0]])) {
            for (uint64_t g = 0; g < n_group; g++) {
                double tg = d->send_enter[group[g]];
                while (depth && d->send_enter[stack[depth - 1]] >= tg)
                    depth--;
                stack[depth++] = group[g];
            }
            n_group = 0;
        }
        if (k == n)
            continue;
        group[n_group++] = (uint32_t)k;
        if (!(d->ls[k] > 0.0) || d->ls_cancelled[k])
            continue;
        /* the nearest later receive whose send started earlier: the
         * topmost stack entry with a send enter below ts */
        double ts = d->send_enter[k];
        uint64_t lo = 0, hi = depth;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (d->send_enter[stack[mid]] < ts)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0)
            continue;
        uint32_t j = stack[lo - 1];
        uint32_t cp = ls->msg_callpath[k];
        int same = ls->msg_partner[j] == ls->msg_partner[k];
        add(a, M_MPI_LATESENDER_WO, cp, loc, d->ls[k]);
        add(a, same ? M_MPI_LSWO_SAME : M_MPI_LSWO_DIFFERENT, cp, loc, d->ls[k]);
        if (wo)
            wo[k] = same ? WS_WO_SAME : WS_WO_DIFFERENT;
        add(a, d->send_bytes[k] == 0 ? M_MPI_SLSWO_COUNT : M_MPI_CLSWO_COUNT, cp, loc, 1.0);
    }
    free(stack);
    free(group);
    return WS_OK;
}

static int p1_end(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    (void)env;
    (void)err;
    flush_multi(state, loc);
    return WS_OK;
}

/* ---- pass 2: backward (Late Receiver at the sender) -------------------- */

typedef struct recv_info {
    double ls;   /* Late Sender wait counted at the receive */
    double lr;   /* Late Receiver wait of the send */
    double post; /* when the receive was posted */
    double leave;      /* leave of the call holding the receive record */
    double post_leave; /* leave of the call that posted the receive */
} recv_info;

/* Leave time of the call that holds event `ev` of `loc` (the innermost
 * region around it; the event's own time when there is none). */
static double leave_of_call(const ws_trace *t, uint32_t loc, uint32_t ev)
{
    const ws_events *e = &t->locations[loc].events;
    int depth = 0;
    for (uint64_t i = (uint64_t)ev + 1; i < e->n; i++) {
        if (e->kind[i] == WS_EV_ENTER)
            depth++;
        else if (e->kind[i] == WS_EV_LEAVE && depth-- == 0)
            return e->time[i];
    }
    return e->time[ev];
}

static int p2_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)channel;
    ws_loc_data *d = data_of(state, loc);
    const ws_loc_sync *ls = &env->sync->locs[loc];
    double post_leave = (ls->msg_flags[row] & WS_MSG_NONBLOCKING)
                            ? leave_of_call(env->trace, loc, ls->msg_ch1_event[row])
                            : ls->msg_leave[row];
    recv_info p = {d->ls[row], d->lr[row], ls->msg_post[row], ls->msg_leave[row], post_leave};
    if (ws_buffer_append(out, &p, sizeof p) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

static int p2_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)env;
    (void)channel;
    if (size != sizeof(recv_info))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    ws_loc_data *d = data_of(state, loc);
    recv_info p;
    memcpy(&p, data, sizeof p);
    d->ls[row] = p.ls;
    d->lr[row] = p.lr;
    d->post_time[row] = p.post;
    d->partner_leave[row] = p.leave;
    d->partner_done_leave[row] = p.post_leave;
    return WS_OK;
}

/* A Waitall/Waitsome waits once: only the largest Late Receiver of the
 * sends it completes counts, and when it also completes a late-sent
 * receive, only the larger of the two waits counts.  Then the Late Sender
 * and Late Receiver metrics of the location are added. */
static int p2_end(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    ws_analysis *a = state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    ws_loc_data *d = data_of(a, loc);
    const ws_events *e = &env->trace->locations[loc].events;
    ws_map64 best_lr, late_sender; /* completion call -> row */
    ws_map64_init(&best_lr);
    ws_map64_init(&late_sender);
    for (uint64_t k = 0; k < ls->n_messages; k++)
        if (!(ls->msg_flags[k] & WS_MSG_SEND) && (ls->msg_flags[k] & WS_MSG_MULTI) && d->ls[k] > 0.0 &&
            ws_map64_put(&late_sender, ls->msg_call[k], k) != 0)
            goto nomem;
    for (uint64_t k = 0; k < ls->n_messages; k++) {
        if (!(ls->msg_flags[k] & WS_MSG_SEND) || !(ls->msg_flags[k] & WS_MSG_MULTI) || d->lr[k] <= 0.0)
            continue;
        uint64_t other;
        if (ws_map64_get(&best_lr, ls->msg_done_call[k], &other)) {
            if (d->lr[k] > d->lr[other]) {
                d->lr[other] = 0.0;
                if (ws_map64_put(&best_lr, ls->msg_done_call[k], k) != 0)
                    goto nomem;
            } else {
                d->lr[k] = 0.0;
            }
        } else if (ws_map64_put(&best_lr, ls->msg_done_call[k], k) != 0) {
            goto nomem;
        }
    }
    for (size_t i = 0; i < best_lr.capacity; i++) {
        if (best_lr.keys[i] == UINT64_MAX)
            continue;
        uint64_t send = best_lr.values[i], recv;
        if (!ws_map64_get(&late_sender, best_lr.keys[i], &recv))
            continue;
        if (d->lr[send] > d->ls[recv])
            d->ls_cancelled[recv] = 1;
        else
            d->lr[send] = 0.0;
    }
    ws_map64_free(&best_lr);
    ws_map64_free(&late_sender);
    /* the wrong-order class of each Late Sender, for its record */
    uint8_t *wo = NULL;
    if (a->options.wait_records && !(wo = ws_calloc(ls->n_messages ? ls->n_messages : 1, sizeof *wo)))
        return ws_error_nomem(err, "wait-state records");
    int rc = wrong_order(a, loc, wo, err);
    for (uint64_t k = 0; k < ls->n_messages && rc == WS_OK; k++) {
        if (ls->msg_flags[k] & WS_MSG_SEND) {
            if (d->lr[k] <= 0.0)
                continue;
            /* from the enter of the call completing the send to the post */
            uint32_t cp = ls->msg_done_callpath[k];
            wait_instance w = {ls->msg_done_enter[k], d->post_time[k], ls->msg_ch1_event[k], ls->msg_partner[k],
                               WS_WO_NONE};
            rc = add_wait(a, WS_WP_LATERECEIVER, cp, loc, d->lr[k], &w, err);
            add(a, e->msg_bytes[k] == 0 ? M_MPI_SLR_COUNT : M_MPI_CLR_COUNT, cp, loc, 1.0);
        } else if (d->ls[k] > 0.0 && !d->ls_cancelled[k]) {
            /* from the enter of the receiving call to min(send's enter, leave) (as pass 1) */
            uint32_t cp = ls->msg_callpath[k];
            double leave = ls->msg_leave[k], until = d->send_enter[k] < leave ? d->send_enter[k] : leave;
            wait_instance w = {ls->msg_enter[k], until, e->msg_event[k], ls->msg_partner[k],
                               wo ? wo[k] : WS_WO_NONE};
            rc = add_wait(a, WS_WP_LATESENDER, cp, loc, d->ls[k], &w, err);
            add(a, d->send_bytes[k] == 0 ? M_MPI_SLS_COUNT : M_MPI_CLS_COUNT, cp, loc, 1.0);
        }
    }
    free(wo);
    return rc;
nomem:
    ws_map64_free(&best_lr);
    ws_map64_free(&late_sender);
    return ws_error_nomem(err, "Late Receiver selection");
}

/* ---- pass 3: forward (both sides learn which waits count) ------------- */

/* channel 0 carries the final Late Receiver to the receiver; channel 1,
 * for messages that had a Late Sender, its final value to the sender */
static int p3_channels(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row)
{
    (void)env;
    return 1 | (data_of(state, loc)->ls[row] > 0.0 ? 2 : 0);
}

static int p3_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)env;
    ws_loc_data *d = data_of(state, loc);
    double v = channel == 0 ? d->lr[row] : (d->ls_cancelled[row] ? 0.0 : d->ls[row]);
    if (ws_buffer_append(out, &v, sizeof v) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

static int p3_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)env;
    if (size != sizeof(double))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    ws_loc_data *d = data_of(state, loc);
    memcpy(channel == 0 ? &d->lr[row] : &d->ls[row], data, sizeof(double));
    return WS_OK;
}

/* after pass 3: cancelled Late Senders are no synchronization points */
static int p3_end(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    (void)err;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    ws_loc_data *d = data_of(state, loc);
    for (uint64_t k = 0; k < ls->n_messages; k++)
        if (d->ls_cancelled[k])
            d->ls[k] = 0.0;
    return WS_OK;
}

void ws_waitstates_handlers(ws_analysis *a, int pass, ws_handler *h)
{
    memset(h, 0, sizeof *h);
    h->state = a;
    switch (pass) {
    case 1:
        h->sparse = 1;
        h->coll_cache_size = sizeof(coll_cache);
        h->begin = p1_begin;
        h->end = p1_end;
        h->msg_produce = p1_produce;
        h->msg_consume = p1_consume;
        h->coll_produce = p1_coll_produce;
        h->coll_consume = p1_coll_consume;
        break;
    case 2:
        h->sparse = 1;
        h->msg_produce = p2_produce;
        h->msg_consume = p2_consume;
        h->end = p2_end;
        break;
    case 3:
        h->sparse = 1;
        h->msg_channels = p3_channels;
        h->msg_produce = p3_produce;
        h->msg_consume = p3_consume;
        h->end = p3_end;
        break;
    default:
        break;
    }
}

/* ---- finishing: time hierarchy and sums ------------------------------- */

static void add_chain(ws_analysis *a, int metric, uint32_t cp, uint32_t loc, double v, int stop)
{
    for (int m = metric; m >= 0 && m != stop; m = ws_metric_parent(m))
        add(a, m, cp, loc, v);
}

int ws_waitstates_finish(ws_analysis *a, ws_error *err)
{
    (void)err;
    const ws_trace *t = a->trace;
    ws_result *r = a->result;
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        ws_loc_data *d = data_of(a, loc);
        time_profile(t, loc, d);
        for (uint32_t cp = 0; cp < t->callpaths.n; cp++) {
            double v = d->time[cp];
            add(a, M_VISITS, cp, loc, d->visits[cp]);
            if (v == 0.0)
                continue;
            add(a, M_TIME, cp, loc, v);
            int cat = a->region_category[t->callpaths.region[cp]];
            if (cat == CATEGORY_OVERHEAD) {
                add(a, M_OVERHEAD, cp, loc, v);
            } else if (cat == CATEGORY_COMP) {
                add(a, M_EXECUTION, cp, loc, v);
                add(a, M_COMP, cp, loc, v);
            } else {
                /* the leaf category and every ancestor up to execution */
                add_chain(a, cat, cp, loc, v, M_TIME);
            }
        }
    }
    /* count parents are sums of their children */
    static const int sums[][3] = {
        {M_SYNCS_P2P, M_SYNCS_SEND, M_SYNCS_RECV}, {M_SYNCS, M_SYNCS_P2P, M_SYNCS_COLL},
        {M_COMMS_P2P, M_COMMS_SEND, M_COMMS_RECV}, {M_COMMS_COLL, M_COMMS_CXCH, M_COMMS_CSRC},
        {M_COMMS_COLL, M_COMMS_CDST, -1},          {M_COMMS, M_COMMS_P2P, M_COMMS_COLL},
        {M_BYTES_P2P, M_BYTES_SENT, M_BYTES_RCVD}, {M_BYTES_COLL, M_BYTES_COUT, M_BYTES_CIN},
        {M_BYTES, M_BYTES_P2P, M_BYTES_COLL},
    };
    for (size_t s = 0; s < sizeof sums / sizeof sums[0]; s++) {
        int parent = sums[s][0];
        for (int c = 1; c < 3; c++) {
            int child = sums[s][c];
            if (child < 0 || r->slot[parent] < 0 || r->slot[child] < 0)
                continue;
            for (uint32_t i = 0; i < a->n_local; i++) {
                uint32_t loc = a->local[i];
                for (uint32_t cp = 0; cp < r->n_callpaths; cp++)
                    *ws_cube_cell(r, parent, cp, loc) += *ws_cube_cell(r, child, cp, loc);
            }
        }
    }
    return WS_OK;
}
