/* Wait-state analysis, collective patterns (pass 1): Wait at Barrier and
 * N x N, their completions, Late Broadcast, Early Reduce, Early Scan, Wait
 * at Finalize and MPI_Init's completion; also the collective counts and
 * bytes, and the annotations of every collective site for the later
 * passes.  Definitions: docs/metrics.md. */
#include "waitstates_int.h"

#include <otf2/otf2.h>

typedef struct coll_info {
    double begin; /* MpiCollectiveBegin (the call's Enter without one) */
    double end;   /* MpiCollectiveEnd (the call's Leave without one) */
    uint64_t sent;
    uint64_t received;
    uint32_t op;
    uint32_t location;
    uint32_t root; /* the root this member recorded (member index; WS_NONE32: none) */
    uint32_t pad;
    double tasks;  /* OpenMP barriers: time the thread ran tasks inside the barrier (no waiting) */
} coll_info;

/* What the members of an instance make of it together (Scalasca 2.6's
 * rules): who synchronizes, whom the others wait for, from when on the
 * operation completes. */
typedef struct coll_cache {
    int ready;
    int mismatch;
    int ignored;          /* no wait states here (see p1_coll_combine) */
    double latest;        /* the begin everybody that synchronizes waits for */
    uint32_t latest_member;
    double first_end;     /* the earliest end among the members that synchronize */
    double earliest;      /* the earliest begin (OpenMP forks: of the parallel region, as recorded) */
    int full;             /* N x N: every member synchronizes */
    int any_wait;
} coll_cache;
/* Scans: the latest begin among the sending members up to each member
 * (ties: the earliest), indexed by member; attached to the instance as
 * view->shared. */
typedef struct scan_prefix {
    double latest;
    uint32_t member; /* WS_NONE32: no begin above -inf */
} scan_prefix;

/* The collective's own Begin record within the call (Score-P writes it
 * right after the Enter), or the Enter. */
static double site_begin(const ws_events *e, const ws_site *st)
{
    for (uint64_t i = (uint64_t)st->enter_event + 1; i < st->event && i < e->n; i++)
        if (e->kind[i] == WS_EV_COLL_BEGIN)
            return ws_ev_time(e, i);
    return ws_site_enter(e, st);
}

/* Time an OpenMP thread ran tasks inside a barrier (the task regions
 * entered directly in it): no waiting (Scalasca 2.6 subtracts it too). */
static double barrier_tasks(const ws_trace *t, const ws_events *e, const ws_site *st)
{
    double sum = 0.0, since = 0.0;
    int depth = 0;
    for (uint64_t i = (uint64_t)st->enter_event + 1; i < st->leave_event && i < e->n; i++) {
        if (e->kind[i] == WS_EV_ENTER) {
            if (depth++ == 0 && t->regions[t->callpaths.region[e->ref[i]]].role == OTF2_REGION_ROLE_TASK)
                since = ws_ev_time(e, i);
            else if (depth == 1)
                since = NAN;
        } else if (e->kind[i] == WS_EV_LEAVE && depth > 0 && --depth == 0 && !isnan(since)) {
            sum += ws_ev_time(e, i) - since;
        }
    }
    return sum;
}

static int p1_coll_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                           ws_error *err)
{
    const ws_analysis *a = state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const ws_site *st = &ls->sites[site];
    coll_info c;
    memset(&c, 0, sizeof c);
    const ws_events *e = &env->trace->locations[loc].events;
    c.op = st->op;
    c.location = loc;
    c.root = ws_site_root(e, st);
    uint32_t ev = st->event;
    if (e->kind[ev] == WS_EV_COLL_END) {
        c.begin = site_begin(e, st);
        c.end = ws_ev_time(e, ev);
        c.sent = e->coll_sent[e->ref[ev]];
        c.received = e->coll_received[e->ref[ev]];
    } else if (st->cls == WS_SITE_OMP_FORK) {
        /* the recorded Enter of the parallel region, and the fork's time (omp.h) */
        c.begin = ws_ev_time(&a->store->locations[loc].events, ev);
        c.end = ws_ev_time(e, ev);
    } else { /* MPI_Init, MPI_Finalize, OpenMP barriers */
        c.begin = ws_site_enter(e, st);
        c.end = ws_site_leave(e, st);
        if (st->cls == WS_SITE_OMP_BARRIER)
            c.tasks = barrier_tasks(env->trace, e, st);
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

/* Whether a member synchronizes at the instance (Scalasca 2.6): every
 * member of a barrier, of MPI_Init and MPI_Finalize and of an N x N
 * operation that all members overlap; otherwise in an N x N operation
 * the members that receive and began before the latest sender, and that
 * sender; in a 1-to-N operation the members that receive and began before
 * the root, and the root if there are any; in an N-to-1 operation the
 * root and the latest sender if the root began first.  Scans never. */
static int member_syncs(uint8_t cls, const coll_cache *k, uint32_t member, uint32_t root, const coll_info *c)
{
    if (k->ignored)
        return 0;
    switch (cls) {
    case WS_SITE_BARRIER:
    case WS_SITE_INIT:
    case WS_SITE_FINALIZE:
    case WS_SITE_OMP_FORK:
    case WS_SITE_OMP_BARRIER:
        return 1;
    case WS_SITE_NXN:
        return k->full || (c->received > 0 && c->begin < k->latest) || (c->sent > 0 && member == k->latest_member);
    case WS_SITE_1TON:
        if (member == root)
            return k->first_end < INFINITY;
        return c->received > 0 && c->begin < k->latest;
    case WS_SITE_NTO1:
        return k->latest_member != WS_NONE32 && (member == root || member == k->latest_member);
    default:
        return 0;
    }
}

/* The wait of one member, given the instance's reductions: from its begin
 * to the latest begin it waits for (the root's for 1-to-N operations),
 * within its call; *until (if given) receives the end of the waiting
 * interval. */
static double member_wait(uint8_t cls, const coll_cache *k, uint32_t member, uint32_t root, const coll_info *c,
                          double *until_out)
{
    if (cls == WS_SITE_SCAN || cls == WS_SITE_OMP_FORK || !member_syncs(cls, k, member, root, c))
        return 0.0;
    double until = k->latest < c->end ? k->latest : c->end;
    double w = until - c->begin;
    if (until_out)
        *until_out = until;
    return w > 0.0 ? w : 0.0;
}

/* The completion of a member that synchronizes: the time from the
 * earliest end of the members that synchronize (not before the latest
 * begin) to its own end. */
static double member_completion(uint8_t cls, const coll_cache *k, uint32_t member, uint32_t root,
                                const coll_info *c, double *from_out)
{
    double latest = k->latest < c->end ? k->latest : c->end;
    double from = k->first_end > latest ? k->first_end : latest;
    if (from_out)
        *from_out = from;
    if (!member_syncs(cls, k, member, root, c))
        return 0.0;
    return c->end > from ? c->end - from : 0.0;
}

/* The clock condition of a collective (see replay/clock_correction.h): a
 * member cannot end before the members whose data it needs have begun:
 * every member of a barrier or N x N operation needs all (MPI_Init and
 * MPI_Finalize included, which the analysis treats as N x N over all
 * ranks), the non-roots of a 1-to-N operation the root, the root of an
 * N-to-1 operation all, a scan member those up to itself. */
static int coll_clock_violation(uint8_t cls, const coll_cache *k, const ws_coll_view *v, uint32_t me, uint32_t root,
                                double end)
{
    if (k->ignored)
        return 0;
    double needed = -INFINITY;
    if (cls == WS_SITE_BARRIER || cls == WS_SITE_NXN || cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE ||
        cls == WS_SITE_OMP_BARRIER || (cls == WS_SITE_NTO1 && me == root) || (cls == WS_SITE_1TON && me != root))
        needed = k->latest;
    else if (cls == WS_SITE_SCAN)
        needed = ((const scan_prefix *)v->shared)[me].latest;
    return end < needed;
}

/* Everything of an instance that needs all contributions, once per
 * instance and process, in O(members).  As in Scalasca 2.6, an operation
 * on a communicator of one process, MPI_Alltoallv and MPI_Alltoallw (whose
 * pattern the trace does not tell) and an operation that moves no data
 * (a 1-to-N operation whose root sends nothing, an N-to-1 operation whose
 * root receives nothing, an N x N operation or scan without bytes) have no
 * wait states. */
static int p1_coll_combine(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_coll_view *v,
                           ws_error *err)
{
    (void)state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    uint8_t cls = ls->sites[site].cls;
    uint32_t root = ws_site_root(&env->trace->locations[loc].events, &ls->sites[site]);
    coll_cache *k = v->cache;
    for (uint32_t m = 0; m < v->n_members; m++)
        if (v->size[m] != sizeof(coll_info))
            return ws_error_set(err, WS_ERR_INTERNAL, "unexpected collective payload size");
    k->ready = 1;
    k->latest = -INFINITY;
    k->first_end = INFINITY;
    k->latest_member = WS_NONE32;
    k->full = 0;
    uint32_t op0 = member_info(v, 0).op;
    double root_begin = NAN;
    uint64_t root_sent = 0, root_received = 0, bytes = 0;
    for (uint32_t m = 0; m < v->n_members; m++) {
        coll_info c = member_info(v, m);
        if (c.op != op0)
            k->mismatch = 1;
        else if (c.root != root)
            k->mismatch = 3;
        if (m == root) {
            root_begin = c.begin;
            root_sent = c.sent;
            root_received = c.received;
        }
        bytes += c.sent + c.received;
    }
    if ((cls == WS_SITE_1TON || cls == WS_SITE_NTO1) && (root == WS_NONE32 || isnan(root_begin)))
        k->mismatch = 2;
    if (k->mismatch)
        return WS_OK;
    if (cls != WS_SITE_INIT && cls != WS_SITE_FINALIZE &&
        (v->n_members < 2 || op0 == OTF2_COLLECTIVE_OP_ALLTOALLV || op0 == OTF2_COLLECTIVE_OP_ALLTOALLW ||
         (cls == WS_SITE_1TON && root_sent == 0) || (cls == WS_SITE_NTO1 && root_received == 0) ||
         ((cls == WS_SITE_NXN || cls == WS_SITE_SCAN) && bytes == 0))) {
        k->ignored = 1;
        return WS_OK;
    }
    /* the begin that the members wait for */
    double first_end_all = INFINITY;
    k->earliest = INFINITY;
    for (uint32_t m = 0; m < v->n_members; m++) {
        coll_info c = member_info(v, m);
        if (c.end < first_end_all)
            first_end_all = c.end;
        if (c.begin < k->earliest)
            k->earliest = c.begin;
        int candidate = cls == WS_SITE_NTO1 ? c.sent > 0 : 1;
        if (candidate && c.begin > k->latest) {
            k->latest = c.begin;
            k->latest_member = m;
        }
    }
    switch (cls) {
    case WS_SITE_NXN:
        k->full = first_end_all > k->latest;
        if (!k->full) {
            /* members that left before the last one began (clocks that
             * disagree): only the latest sender and those receiving
             * before it synchronize */
            k->latest = -INFINITY;
            k->latest_member = WS_NONE32;
            for (uint32_t m = 0; m < v->n_members; m++) {
                coll_info c = member_info(v, m);
                if (c.sent > 0 && c.begin > k->latest) {
                    k->latest = c.begin;
                    k->latest_member = m;
                }
            }
        }
        break;
    case WS_SITE_1TON:
        k->latest = root_begin;
        k->latest_member = root;
        break;
    case WS_SITE_NTO1:
        /* only the root and the latest sender synchronize, if the root began first */
        if (!(root_begin < k->latest))
            k->latest_member = WS_NONE32;
        break;
    case WS_SITE_OMP_FORK:
        /* the team's threads start from the master's fork */
        k->latest = member_info(v, root).end;
        k->latest_member = root;
        k->any_wait = 1;
        return WS_OK;
    default:
        break;
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
            if (c.sent > 0 && c.begin > prefix) {
                prefix = c.begin;
                prefix_member = m;
            }
            pre[m].latest = prefix;
            pre[m].member = prefix_member;
            if ((prefix < c.end ? prefix : c.end) > c.begin)
                k->any_wait = 1;
        }
        return WS_OK;
    }
    /* the earliest end among the members that synchronize */
    if (cls == WS_SITE_BARRIER || cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE || cls == WS_SITE_OMP_BARRIER ||
        (cls == WS_SITE_NXN && k->full)) {
        k->first_end = first_end_all;
    } else {
        double first = INFINITY;
        for (uint32_t m = 0; m < v->n_members; m++) {
            coll_info c = member_info(v, m);
            int syncs = cls == WS_SITE_1TON ? (m != root && c.received > 0 && c.begin < k->latest)
                                            : member_syncs(cls, k, m, root, &c);
            if (syncs && c.end < first)
                first = c.end;
        }
        k->first_end = first;
    }
    for (uint32_t m = 0; m < v->n_members; m++) {
        coll_info c = member_info(v, m);
        if (member_wait(cls, k, m, root, &c, NULL) > 0.0)
            k->any_wait = 1;
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
    uint32_t root = ws_site_root(&env->trace->locations[loc].events, &ls->sites[site]);
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
    if (k->mismatch == 3) {
        ws_error_set(err, WS_ERR_MATCH,
                     "location %u: the members of a collective operation at t=%.9f s recorded different roots; the "
                     "trace is inconsistent",
                     (unsigned)loc, ws_site_enter(&env->trace->locations[loc].events, &ls->sites[site]));
        return ws_trace_error_at(env->trace, loc, err);
    }
    if (k->mismatch == 2) {
        ws_error_set(err, WS_ERR_MATCH, "location %u: collective at t=%.9f s has no valid root", (unsigned)loc,
                     ws_site_enter(&env->trace->locations[loc].events, &ls->sites[site]));
        return ws_trace_error_at(env->trace, loc, err);
    }

    uint32_t me = ws_site_member(ls, &ls->sites[site]);
    coll_info own = member_info(v, me);
    if (coll_clock_violation(cls, k, v, me, root, own.end))
        a->result->clock_violations[loc]++;
    uint32_t cp = ws_site_callpath(&env->trace->locations[loc].events, &ls->sites[site]);
    double until = own.begin;
    double wait = member_wait(cls, k, me, root, &own, &until);
    double completion_from;
    double completion = member_completion(cls, k, me, root, &own, &completion_from);
    double b = own.begin, e = own.end;
    /* the instances: waiting [begin, until] for the member waited for,
     * completion [completion_from, end] */
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
        if (k->ignored) {
            wait = 0.0;
            break;
        }
        /* the latest begin among the sending members up to and including me */
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
        /* waiting for the last process to enter MPI_Init is no metric (no
         * delay cost may land on MPI_Init) and, as in Scalasca 2.6, the
         * imbalance indicators count it as activity */
        if ((rc = ws_add_wait(a, WS_WP_INIT_COMPLETION, cp, loc, completion, &ci, err)))
            return rc;
        wait = 0.0;
        break;
    case WS_SITE_FINALIZE:
        if ((rc = ws_add_wait(a, WS_WP_FINALIZE, cp, loc, wait, &wi, err)))
            return rc;
        kind = WS_WAIT_FINALIZE;
        break;
    case WS_SITE_OMP_BARRIER:
        /* less the tasks the thread ran meanwhile (as an opening point the
         * barrier counts nothing of its call) */
        wait = wait > own.tasks ? wait - own.tasks : 0.0;
        wi.end = wi.start + wait;
        if ((rc = ws_add_wait(a, own.op == WS_SITE_OP_OMP_EBARRIER ? WS_WP_OMP_EBARRIER : WS_WP_OMP_IBARRIER, cp, loc,
                              wait, &wi, err)))
            return rc;
        kind = WS_WAIT_OMPBARRIER;
        completion = 0.0;
        break;
    case WS_SITE_OMP_FORK:
        /* no waiting; a thread other than the master takes the critical
         * path from the master's fork.  As the point that opens the
         * intervals after it, the fork counts the thread's time in the
         * parallel region from the fork on, less the time until the
         * team's first thread entered it (Scalasca 2.6; the completion
         * records that part, points.c) */
        wait = 0.0;
        kind = me != root ? WS_WAIT_OMPFORK : WS_WAIT_NONE;
        completion = k->earliest > own.end ? k->earliest - own.end : 0.0;
        break;
    default:
        wait = 0.0;
        break;
    }
    /* counted on every collective record, single-member communicators
     * included (as Scalasca does; only the waiting skips them) */
    if (own.op != 0xff && !ws_site_is_omp(cls) &&
        ws_window_has(&a->options, ws_ev_time(&env->trace->locations[loc].events, ev))) {
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
    d->site_waits[site].completion = completion;
    if (cls != WS_SITE_SCAN) {
        d->site_waits[site].sync_time = k->latest;
        if (k->latest_member != WS_NONE32)
            d->site_waits[site].delayer = member_info(v, k->latest_member).location;
    }
    d->site_waits[site].anywait = (uint8_t)(k->any_wait != 0 || (cls == WS_SITE_SCAN && wait > 0.0));
    /* synchronization points (Scalasca 2.6): member_syncs; scans never */
    d->site_waits[site].sync = (uint8_t)member_syncs(cls, k, me, root, &own);
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
