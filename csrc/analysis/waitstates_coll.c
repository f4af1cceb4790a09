/* Wait-state analysis, collective patterns (pass 1): Wait at Barrier and
 * N x N, their completions, Late Broadcast, Early Reduce, Early Scan, Wait
 * at Finalize and MPI_Init's completion; also the collective counts and
 * bytes, and the annotations of every collective site for the later
 * passes.  Definitions: docs/metrics.md. */
#include "waitstates_int.h"

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
/* Scans: the latest enter among the members up to each member (ties: the
 * earliest), indexed by member; attached to the instance as view->shared. */
typedef struct scan_prefix {
    double latest;
    uint32_t member; /* WS_NONE32: no enter above -inf */
} scan_prefix;

static int p1_coll_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                           ws_error *err)
{
    (void)state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    coll_info c;
    memset(&c, 0, sizeof c);
    const ws_events *e = &env->trace->locations[loc].events;
    c.enter = ws_site_enter(e, &ls->sites[site]);
    c.leave = ws_site_leave(e, &ls->sites[site]);
    c.op = ls->sites[site].op;
    c.location = loc;
    uint32_t ev = ls->sites[site].event;
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
        needed = ((const scan_prefix *)v->shared)[me].latest;
    return leave < needed;
}

/* Everything of an instance that needs all contributions, once per
 * instance and process, in O(members). */
static int p1_coll_combine(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_coll_view *v,
                           ws_error *err)
{
    (void)state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    uint8_t cls = ls->sites[site].cls;
    uint32_t root = ls->sites[site].root;
    coll_cache *k = v->cache;
    for (uint32_t m = 0; m < v->n_members; m++)
        if (v->size[m] != sizeof(coll_info))
            return ws_error_set(err, WS_ERR_INTERNAL, "unexpected collective payload size");
    k->ready = 1;
    k->latest = -INFINITY;
    k->first_leave = INFINITY;
    k->latest_member = WS_NONE32;
    k->root_enter = NAN;
    uint32_t op0 = member_info(v, 0).op;
    for (uint32_t m = 0; m < v->n_members; m++) {
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
    for (uint32_t m = 0; m < v->n_members && !k->mismatch; m++) {
        coll_info c = member_info(v, m);
        if (member_wait(cls, k, m, root, &c, NULL) > 0.0)
            k->any_wait = 1;
    }
    if (cls == WS_SITE_SCAN) {
        scan_prefix *pre = ws_malloc_array(v->n_members ? v->n_members : 1, sizeof *pre);
        if (!pre)
            return ws_error_nomem(err, "collective instance");
        v->shared = pre;
        double prefix = -INFINITY;
        uint32_t prefix_member = WS_NONE32;
        for (uint32_t m = 0; m < v->n_members; m++) {
            coll_info c = member_info(v, m);
            if (c.enter > prefix) {
                prefix = c.enter;
                prefix_member = m;
            }
            pre[m].latest = prefix;
            pre[m].member = prefix_member;
            if ((prefix < c.leave ? prefix : c.leave) > c.enter)
                k->any_wait = 1;
        }
    }
    return WS_OK;
}

static int p1_coll_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site,
                           const ws_coll_view *v, ws_error *err)
{
    ws_analysis *a = state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    ws_loc_data *d = data_of(a, loc);
    uint8_t cls = ls->sites[site].cls;
    uint32_t root = ls->sites[site].root;
    const coll_cache *k = v->cache;
    if (!k->ready)
        return ws_error_set(err, WS_ERR_INTERNAL, "collective instance consumed before it was combined");
    if (k->mismatch == 1) {
        ws_error_set(err, WS_ERR_MATCH,
                     "location %u: the members of a collective operation at t=%.9f s recorded different operations; "
                     "the trace is inconsistent",
                     (unsigned)loc, ws_site_enter(&env->trace->locations[loc].events, &ls->sites[site]));
        return ws_trace_error_at(env->trace, loc, err);
    }
    if (k->mismatch == 2) {
        ws_error_set(err, WS_ERR_MATCH, "location %u: collective at t=%.9f s has no valid root", (unsigned)loc,
                     ws_site_enter(&env->trace->locations[loc].events, &ls->sites[site]));
        return ws_trace_error_at(env->trace, loc, err);
    }

    uint32_t me = ls->sites[site].member;
    coll_info own = member_info(v, me);
    if (coll_clock_violation(cls, k, v, me, root, own.leave))
        a->result->clock_violations[loc]++;
    uint32_t cp = ls->sites[site].callpath;
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
    uint32_t ev = ls->sites[site].event;
    uint32_t last = k->latest_member != WS_NONE32 ? member_info(v, k->latest_member).location : WS_NONE32;
    wait_instance wi = {b, until, ev, last, WS_WO_NONE};
    wait_instance ci = {completion_from, e, ev, WS_NONE32, WS_WO_NONE};
    int rc = WS_OK;

    uint8_t kind = WS_WAIT_NONE;
    switch (cls) {
    case WS_SITE_BARRIER:
        if ((rc = ws_add_wait(a, WS_WP_BARRIER, cp, loc, wait, &wi, err)) ||
            (rc = ws_add_wait(a, WS_WP_BARRIER_COMPLETION, cp, loc, completion, &ci, err)))
            return rc;
        kind = WS_WAIT_BARRIER;
        break;
    case WS_SITE_NXN:
        if ((rc = ws_add_wait(a, WS_WP_NXN, cp, loc, wait, &wi, err)) ||
            (rc = ws_add_wait(a, WS_WP_NXN_COMPLETION, cp, loc, completion, &ci, err)))
            return rc;
        kind = WS_WAIT_NXN;
        break;
    case WS_SITE_1TON:
        wi.partner = member_info(v, root).location;
        if ((rc = ws_add_wait(a, WS_WP_LATEBROADCAST, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_12N;
        break;
    case WS_SITE_NTO1:
        if ((rc = ws_add_wait(a, WS_WP_EARLYREDUCE, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_N21;
        break;
    case WS_SITE_SCAN: {
        /* the latest enter among the members up to and including me */
        const scan_prefix *pre = &((const scan_prefix *)v->shared)[me];
        double latest = pre->latest;
        uint32_t latest_member = pre->member != WS_NONE32 ? pre->member : me;
        until = latest < e ? latest : e;
        wait = until - b > 0.0 ? until - b : 0.0;
        wi.end = until;
        wi.partner = member_info(v, latest_member).location;
        if ((rc = ws_add_wait(a, WS_WP_EARLYSCAN, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_SCAN;
        d->site_waits[site].sync_time = until;
        d->site_waits[site].delayer = wi.partner;
        break;
    }
    case WS_SITE_INIT:
        if ((rc = ws_add_wait(a, WS_WP_INIT_COMPLETION, cp, loc, completion, &ci, err)))
            return rc;
        /* waiting for the last process to enter MPI_Init is no metric (no
         * delay cost may land on MPI_Init), but the critical path and the
         * imbalance indicators must not count it as activity */
        d->init_wait[cp] += ws_window_part(&a->options, b, b + wait, wait);
        break;
    case WS_SITE_FINALIZE:
        if ((rc = ws_add_wait(a, WS_WP_FINALIZE, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_FINALIZE;
        break;
    default:
        wait = 0.0;
        break;
    }
    /* counted on every collective record, single-member communicators
     * included (as Scalasca does; only the waiting skips them) */
    if (own.op != 0xff && ws_window_has(&a->options, env->trace->locations[loc].events.time[ev])) {
        if (own.sent == 0 && own.received == 0)
            add(a, WS_M_SYNCS_COLL, cp, loc, 1.0);
        else if (own.sent && own.received)
            add(a, WS_M_COMMS_CXCH, cp, loc, 1.0);
        else if (own.sent)
            add(a, WS_M_COMMS_CSRC, cp, loc, 1.0);
        else
            add(a, WS_M_COMMS_CDST, cp, loc, 1.0);
        add(a, WS_M_BYTES_COUT, cp, loc, (double)own.sent);
        add(a, WS_M_BYTES_CIN, cp, loc, (double)own.received);
    }

    /* annotations for the later passes */
    d->site_waits[site].wait = wait;
    d->site_waits[site].kind = kind;
    if (cls == WS_SITE_INIT) {
        ws_init_completion *ic = ws_realloc(d->init_completions, ((size_t)d->n_init_completions + 1) * sizeof *ic);
        if (!ic)
            return ws_error_nomem(err, "wait states");
        ic[d->n_init_completions++] = (ws_init_completion){site, 0, completion};
        d->init_completions = ic;
    }
    uint32_t delayer_member = WS_NONE32;
    switch (cls) {
    case WS_SITE_BARRIER:
    case WS_SITE_NXN:
    case WS_SITE_NTO1:
    case WS_SITE_FINALIZE:
    case WS_SITE_INIT:
        delayer_member = k->latest_member;
        d->site_waits[site].sync_time = k->latest;
        break;
    case WS_SITE_1TON:
        delayer_member = root;
        d->site_waits[site].sync_time = k->root_enter;
        break;
    case WS_SITE_SCAN:
        break;
    default:
        d->site_waits[site].sync_time = b;
        break;
    }
    if (delayer_member != WS_NONE32)
        d->site_waits[site].delayer = member_info(v, delayer_member).location;
    d->site_waits[site].anywait = (uint8_t)(k->any_wait != 0 || (cls == WS_SITE_SCAN && wait > 0.0));
    /* synchronization points: barriers, Init and Finalize always; the
     * other classes when somebody waited.  Scans never (as in Scalasca). */
    d->site_waits[site].sync = (cls == WS_SITE_BARRIER || cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE ||
                          ((cls == WS_SITE_NXN || cls == WS_SITE_1TON || cls == WS_SITE_NTO1) && k->any_wait));
    return WS_OK;
}

void ws_waitstates_coll_handlers(ws_handler *h)
{
    h->coll_cache_size = sizeof(coll_cache);
    h->coll_produce = p1_coll_produce;
    h->coll_consume = p1_coll_consume;
    h->coll_combine = p1_coll_combine;
    h->coll_ahead = 1; /* contributions come from the trace alone */
}
