/* Synchronization points and synchronization intervals of the delay
 * analysis (seed 000 section IV-B, seed 004 sections 2.3.1-2.3.3), at the
 * granularity of MPI calls as in Scalasca 2.6, and the cost accounting of
 * one interval (the kernel is delay_kernel.c).  The replays that carry
 * the notes between the locations are in causes.c. */
#include "causes_int.h"

static const int short_metric[NCLS] = {
    [WS_WAIT_LATESENDER] = WS_M_DELAY_LATESENDER, [WS_WAIT_LATERECEIVER] = WS_M_DELAY_LATERECEIVER,
    [WS_WAIT_BARRIER] = WS_M_DELAY_BARRIER,       [WS_WAIT_NXN] = WS_M_DELAY_N2N,
    [WS_WAIT_12N] = WS_M_DELAY_12N,               [WS_WAIT_N21] = WS_M_DELAY_N21,
};
static const int long_metric[NCLS] = {
    [WS_WAIT_LATESENDER] = WS_M_DELAY_LATESENDER_LONGTERM, [WS_WAIT_LATERECEIVER] = WS_M_DELAY_LATERECEIVER_LONGTERM,
    [WS_WAIT_BARRIER] = WS_M_DELAY_BARRIER_LONGTERM,       [WS_WAIT_NXN] = WS_M_DELAY_N2N_LONGTERM,
    [WS_WAIT_12N] = WS_M_DELAY_12N_LONGTERM,               [WS_WAIT_N21] = WS_M_DELAY_N21_LONGTERM,
};

/* ---- synchronization points ------------------------------------------- */

typedef struct sp_sort {
    uint32_t call;
    uint32_t event;
    uint32_t k;
} sp_sort;

static int cmp_sp(const void *x, const void *y)
{
    const sp_sort *a = x, *b = y;
    if (a->call != b->call)
        return a->call < b->call ? -1 : 1;
    if (a->event != b->event)
        return a->event < b->event ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

/* Sorts by cmp_sp (a total order: any algorithm gives the same result).
 * The points arrive as ascending runs (the messages' in row order, then
 * the sites'): one run needs nothing, two are merged in O(n), more go to
 * qsort.  Returns -1 when out of memory. */
static int sort_points(sp_sort *order, size_t n)
{
    size_t runs = 1, second = 0;
    for (size_t i = 1; i < n; i++)
        if (cmp_sp(&order[i - 1], &order[i]) > 0 && runs++ == 1)
            second = i;
    if (runs == 1)
        return 0;
    if (runs > 2) {
        qsort(order, n, sizeof *order, cmp_sp);
        return 0;
    }
    sp_sort *first = ws_malloc_array(second, sizeof *first);
    if (!first)
        return -1;
    memcpy(first, order, second * sizeof *first);
    size_t a = 0, b = second, out = 0;
    while (a < second && b < n)
        order[out++] = cmp_sp(&first[a], &order[b]) <= 0 ? first[a++] : order[b++];
    while (a < second)
        order[out++] = first[a++];
    free(first);
    return 0;
}

/* Enter event of the call that holds event `ev` (for a Leave: the call it
 * ends); `ev` itself when there is none. */
static uint32_t enter_of_call(const ws_events *e, uint32_t ev)
{
    int depth = 0;
    for (uint64_t i = ev; i-- > 0;) {
        if (e->kind[i] == WS_EV_LEAVE)
            depth++;
        else if (e->kind[i] == WS_EV_ENTER && depth-- == 0)
            return (uint32_t)i;
    }
    return ev;
}

/* Leave time of the call whose Enter is event `enter` */
static double leave_of_enter(const ws_events *e, uint32_t enter)
{
    int depth = 0;
    for (uint64_t i = (uint64_t)enter + 1; i < e->n; i++) {
        if (e->kind[i] == WS_EV_ENTER)
            depth++;
        else if (e->kind[i] == WS_EV_LEAVE && depth-- == 0)
            return e->time[i];
    }
    return e->time[enter];
}

static double positive(double v)
{
    return v > 0.0 ? v : 0.0;
}

/* Puts the points in the order of `order` in place (pt[k] becomes the
 * point that was at order[k].k), following the permutation's cycles;
 * order[].call marks the places done. */
static void permute_points(sync_point *pt, sp_sort *order, size_t n)
{
    for (size_t k = 0; k < n; k++)
        order[k].call = 0;
    for (size_t i = 0; i < n; i++) {
        if (order[i].call)
            continue;
        sync_point first = pt[i];
        size_t j = i;
        for (;;) {
            order[j].call = 1;
            size_t from = order[j].k;
            if (from == i) {
                pt[j] = first;
                break;
            }
            pt[j] = pt[from];
            j = from;
        }
    }
}

static int cmp_leaves(const void *x, const void *y)
{
    const ws_partner_leaves *a = x, *b = y;
    return (a->row > b->row) - (a->row < b->row);
}

int ws_points_build(ws_causes *c, uint32_t loc, ws_error *err)
{
    const ws_analysis *a = c->a;
    const ws_trace *t = a->trace;
    const ws_loc_sync *ls = &a->sync->locs[loc];
    ws_loc_data *d = &a->locs[loc];
    const ws_events *e = &t->locations[loc].events;
    cause_loc *cl = &c->locs[loc];
    size_t n = 0;
    size_t nm = ls->n_messages ? ls->n_messages : 1, ns = ls->n_sites ? ls->n_sites : 1;
    cl->msg_pts = ws_calloc(nm, sizeof *cl->msg_pts);
    cl->sites = ws_malloc_array(ns, sizeof *cl->sites);
    if (!cl->msg_pts || !cl->sites)
        return ws_error_nomem(err, "synchronization points");
    for (size_t k = 0; k < ns; k++)
        cl->sites[k] = (cause_site){WS_NONE32, WS_NONE32, 0, 0};
    /* at most this many points (N-to-1 sites may drop out) */
    size_t cap = 0;
    for (uint64_t row = 0; row < ls->n_messages; row++)
        cap += (d->msg[row].ls > 0.0) + (d->msg[row].lr > 0.0);
    for (uint32_t s = 0; s < ls->n_sites; s++)
        cap += d->site_waits[s].sync != 0;
    /* the points, and per point its event (the sort's second key) and the
     * part of its waiting inside the window */
    sync_point *pt = ws_malloc_array(cap ? cap : 1, sizeof *pt);
    uint32_t *pev = ws_malloc_array(cap ? cap : 1, sizeof *pev);
    double *pwin = ws_malloc_array(cap ? cap : 1, sizeof *pwin);
    sp_sort *order = NULL;
    int rc = WS_OK;
    if (!pt || !pev || !pwin) {
        rc = ws_error_nomem(err, "synchronization points");
        goto done;
    }

#define NEW_POINT()                                                                   \
    do {                                                                              \
        memset(&pt[n], 0, sizeof pt[n]);                                              \
        pt[n].gl_slot = WS_NONE32;                                                    \
        pwin[n] = 0.0;                                                                \
    } while (0)

    /* the partners' leaves, by row */
    int sorted_leaves = 1;
    for (size_t j = 1; j < d->n_leaves && sorted_leaves; j++)
        sorted_leaves = d->leaves[j - 1].row < d->leaves[j].row;
    if (!sorted_leaves)
        qsort(d->leaves, d->n_leaves, sizeof *d->leaves, cmp_leaves);
    size_t next_leaves = 0;
    for (uint64_t row = 0; row < ls->n_messages; row++) {
        const ws_msg *m = &ls->msgs[row];
        const ws_msg_data *md = &d->msg[row];
        int is_send = (m->flags & WS_MSG_SEND) != 0;
        const ws_partner_leaves *pl = NULL;
        if (md->ls > 0.0 || (md->lr > 0.0 && !is_send)) {
            while (next_leaves < d->n_leaves && d->leaves[next_leaves].row < row)
                next_leaves++;
            if (next_leaves == d->n_leaves || d->leaves[next_leaves].row != row) {
                rc = ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %llu waits but its partner's calls "
                                  "are unknown", (unsigned)loc, (unsigned long long)row);
                goto done;
            }
            pl = &d->leaves[next_leaves];
        }
        if (md->ls > 0.0) {
            NEW_POINT();
            sync_point *p = &pt[n];
            p->type = SP_LS;
            p->index = (uint32_t)row;
            p->partner = m->partner;
            pev[n] = e->msg_event[row];
            /* its call: the one holding the record; as the start of the
             * next interval only the time after the partner's call ended
             * counts */
            double leave = ws_msg_leave(e, m);
            p->call_ev = m->call;
            p->call_cp = ws_msg_callpath(e, m);
            p->completion = positive(leave - pl->leave);
            if (is_send) {
                p->time = ws_msg_enter(e, m);
            } else {
                p->time = md->partner_time;
                p->wait = md->ls;
                pwin[n] = ws_window_part(&a->options, ws_msg_enter(e, m),
                                               md->partner_time < leave ? md->partner_time : leave, p->wait);
                p->wclass = WS_WAIT_LATESENDER;
            }
            n++;
        }
        if (md->lr > 0.0) {
            NEW_POINT();
            sync_point *p = &pt[n];
            p->type = SP_LR;
            p->index = (uint32_t)row;
            p->partner = m->partner;
            pev[n] = m->ch1_event;
            if (is_send) {
                p->call_ev = m->other_call;
                p->call_cp = ws_msg_done_callpath(e, m);
                /* a send that waited for a late receiver leaves its call out
                 * of the next interval entirely (Scalasca 2.6) */
                p->completion = 0.0;
            } else {
                p->call_ev = enter_of_call(e, m->ch1_event);
                p->call_cp = e->kind[p->call_ev] == WS_EV_ENTER ? e->ref[p->call_ev] : WS_NONE32;
                p->completion = positive(leave_of_enter(e, p->call_ev) - pl->done_leave);
            }
            if (is_send) {
                p->time = md->partner_time;
                p->wait = md->lr;
                pwin[n] = ws_window_part(&a->options, ws_msg_done_enter(e, m), md->partner_time, p->wait);
                p->wclass = WS_WAIT_LATERECEIVER;
            } else {
                p->time = ws_msg_post(e, m);
            }
            n++;
        }
    }
    for (uint32_t s = 0; s < ls->n_sites; s++) {
        if (!d->site_waits[s].sync)
            continue;
        uint8_t cls = ls->sites[s].cls;
        uint32_t comm = WS_NONE32, root = WS_NONE32;
        if (cls != WS_SITE_INIT && cls != WS_SITE_FINALIZE) {
            comm = (uint32_t)(ls->sites[s].instance >> 40);
            if (ls->sites[s].root != WS_NONE32)
                root = ws_comm_location(t, comm, ls->sites[s].root, loc);
        }
        /* an N-to-1 operation synchronizes only its root and the latest sender */
        if (cls == WS_SITE_NTO1 && loc != root && loc != d->site_waits[s].delayer)
            continue;
        NEW_POINT();
        sync_point *p = &pt[n];
        p->type = SP_SITE;
        p->index = s;
        pev[n] = ls->sites[s].event;
        p->time = d->site_waits[s].sync_time;
        p->partner = d->site_waits[s].delayer;
        cl->sites[s].root = root;
        p->wclass = d->site_waits[s].kind;
        p->call_ev = enter_of_call(e, ls->sites[s].event);
        p->call_cp = ls->sites[s].callpath;
        /* MPI_Init: its completion only; other collectives: the time after
         * the last member arrived */
        p->completion = cls == WS_SITE_INIT ? d->site_waits[s].completion : 0.0;
        if (handled(p->wclass) && d->site_waits[s].wait > 0.0) {
            p->wait = d->site_waits[s].wait;
            pwin[n] = ws_window_part(&a->options, ls->sites[s].enter, ls->sites[s].enter + p->wait, p->wait);
        } else {
            p->wclass = WS_WAIT_NONE;
        }
        n++;
    }
#undef NEW_POINT
    /* order by the calls that hold them (then by event; ties keep their
     * order): mostly they come in that order already */
    int in_order = 1;
    for (size_t k = 1; k < n && in_order; k++)
        in_order = pt[k - 1].call_ev < pt[k].call_ev || (pt[k - 1].call_ev == pt[k].call_ev && pev[k - 1] <= pev[k]);
    if (!in_order) {
        order = ws_malloc_array(n, sizeof *order);
        if (!order) {
            rc = ws_error_nomem(err, "synchronization points");
            goto done;
        }
        for (size_t k = 0; k < n; k++) {
            order[k].call = pt[k].call_ev;
            order[k].event = pev[k];
            order[k].k = (uint32_t)k;
        }
        if (sort_points(order, n) != 0) {
            rc = ws_error_nomem(err, "synchronization points");
            goto done;
        }
        permute_points(pt, order, n);
    }
    free(pev);
    pev = NULL;
    uint32_t n_waiting = 0;
    for (size_t k = 0; k < n; k++)
        n_waiting += pt[k].wait > 0.0;
    cl->gl = ws_calloc((n_waiting ? n_waiting : 1) * (size_t)GL_BLOCK, sizeof *cl->gl);
    if (!cl->gl) {
        rc = ws_error_nomem(err, "synchronization points");
        goto done;
    }
    n_waiting = 0;
    for (size_t k = 0; k < n; k++) {
        if (pt[k].wait > 0.0) {
            pt[k].gl_slot = n_waiting++;
            cl->gl[(size_t)pt[k].gl_slot * GL_BLOCK + NGL] = pwin[order ? order[k].k : k];
        }
        if (pt[k].type == SP_SITE)
            cl->sites[pt[k].index].sp = (uint32_t)k;
        else
            cl->msg_pts[pt[k].index] |= pt[k].type == SP_LS ? MSG_HAS_LS : MSG_HAS_LR;
    }
    if (n < cap) { /* N-to-1 sites that dropped out */
        sync_point *fit = ws_realloc(pt, (n ? n : 1) * sizeof *pt);
        if (fit) /* else the larger block stays */
            pt = fit;
    }
    cl->sp = pt;
    pt = NULL;
    cl->n_sp = (uint32_t)n;
    cl->share = ws_calloc(n ? n : 1, sizeof *cl->share);
    if (!cl->share)
        rc = ws_error_nomem(err, "synchronization points");
done:
    free(order);
    free(pt);
    free(pev);
    free(pwin);
    return rc;
}

static int is_point_of(const sync_point *p, uint32_t row, uint8_t type)
{
    return p->type == type && p->index == row;
}

/* The time of point k's call after its synchronization: what the interval
 * it opens counts of it when its completion part leaves nothing to charge. */
static double completion_full(const ws_causes *c, uint32_t loc, uint32_t k)
{
    const sync_point *p = &c->locs[loc].sp[k];
    const ws_loc_sync *ls = &c->a->sync->locs[loc];
    const ws_events *e = &c->a->trace->locations[loc].events;
    double leave;
    if (p->type == SP_SITE)
        return positive(ls->sites[p->index].leave - c->a->locs[loc].site_waits[p->index].sync_time);
    const ws_msg *m = &ls->msgs[p->index];
    if (p->type == SP_LS)
        leave = ws_msg_leave(e, m);
    else if (m->flags & WS_MSG_SEND)
        leave = ws_msg_done(e, m);
    else
        leave = leave_of_enter(e, p->call_ev);
    return positive(leave - p->time);
}

uint32_t ws_point_event(const ws_causes *c, uint32_t loc, uint32_t k)
{
    const sync_point *p = &c->locs[loc].sp[k];
    const ws_loc_sync *ls = &c->a->sync->locs[loc];
    switch (p->type) {
    case SP_LS:
        return c->a->trace->locations[loc].events.msg_event[p->index];
    case SP_LR:
        return ls->msgs[p->index].ch1_event;
    default:
        return ls->sites[p->index].event;
    }
}

/* Point of message `row` of the given kind at `loc`.  The points are
 * sorted by their calls: the message's call says where it is.  The
 * replays visit a location's points in order, so the points next to the
 * one last looked up are tried first. */
uint32_t ws_point_of_message(ws_causes *c, uint32_t loc, uint32_t row, uint8_t type)
{
    cause_loc *cl = &c->locs[loc];
    if (!(cl->msg_pts[row] & (type == SP_LS ? MSG_HAS_LS : MSG_HAS_LR)))
        return WS_NONE32;
    const sync_point *sp = cl->sp;
    uint32_t h = cl->hint;
    for (uint32_t k = h > 0 ? h - 1 : 0; k < cl->n_sp && k <= h + 1; k++)
        if (is_point_of(&sp[k], row, type))
            return cl->hint = k;
    const ws_msg *m = &c->a->sync->locs[loc].msgs[row];
    uint32_t call = type == SP_LS ? m->call : m->other_call;
    uint32_t lo = 0, hi = cl->n_sp;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sp[mid].call_ev < call)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t k = lo; k < cl->n_sp && sp[k].call_ev == call; k++)
        if (is_point_of(&sp[k], row, type))
            return cl->hint = k;
    return WS_NONE32;
}

/* Does point k of `loc` synchronize it with location q? */
static int involves(const ws_causes *c, uint32_t loc, const sync_point *p, uint32_t q)
{
    if (p->type != SP_SITE)
        return p->partner == q;
    const ws_loc_sync *ls = &c->a->sync->locs[loc];
    uint8_t cls = ls->sites[p->index].cls;
    if (cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE)
        return 1;
    uint32_t comm = (uint32_t)(ls->sites[p->index].instance >> 40);
    uint32_t root = c->locs[loc].sites[p->index].root;
    switch (cls) {
    case WS_SITE_1TON:
        return loc == root ? is_member(c, comm, q) : q == root;
    case WS_SITE_NTO1:
        return loc == root ? q == p->partner : q == root;
    default:
        return is_member(c, comm, q);
    }
}

/* The latest point before point k, in an earlier MPI call, that
 * synchronized `loc` with q (WS_NONE32: none). */
uint32_t ws_previous_point(const ws_causes *c, uint32_t loc, uint32_t k, uint32_t q)
{
    const cause_loc *cl = &c->locs[loc];
    for (uint32_t j = k; j-- > 0;)
        if (cl->sp[j].call_ev < cl->sp[k].call_ev && involves(c, loc, &cl->sp[j], q))
            return j;
    return WS_NONE32;
}

/* A point before point k (in an earlier call) that synchronizes `loc`
 * with every location that can wait at k, so that the interval of any
 * charge at k opens at it or later (WS_NONE32: none found nearby).  For
 * a message, exactly the one before k with its partner; for a collective
 * with delay costs (never MPI_Init or MPI_Finalize), an earlier barrier or
 * all-to-all on the same communicator, or MPI_Init. */
static uint32_t interval_floor(const ws_causes *c, uint32_t loc, uint32_t k)
{
    const cause_loc *cl = &c->locs[loc];
    const sync_point *p = &cl->sp[k];
    if (p->type != SP_SITE)
        return ws_previous_point(c, loc, k, p->partner);
    const ws_loc_sync *ls = &c->a->sync->locs[loc];
    uint64_t comm = ls->sites[p->index].instance >> 40;
    enum { NEARBY = 256 };
    for (uint32_t j = k, seen = 0; j-- > 0 && seen < NEARBY; seen++) {
        const sync_point *q = &cl->sp[j];
        if (q->call_ev >= p->call_ev || q->type != SP_SITE)
            continue;
        /* (a broadcast or reduction synchronizes a member with the root only) */
        uint8_t qc = ls->sites[q->index].cls;
        if (qc == WS_SITE_INIT || qc == WS_SITE_FINALIZE ||
            ((qc == WS_SITE_BARRIER || qc == WS_SITE_NXN) && ls->sites[q->index].instance >> 40 == comm))
            return j;
    }
    return WS_NONE32;
}

/* Point k is where `loc` may be charged for somebody else's waiting: the
 * non-waiting side of a message, or a collective with delay costs that it
 * was the last to reach (or a broadcast's root). */
static int charges_here(const ws_causes *c, uint32_t loc, uint32_t k)
{
    const sync_point *p = &c->locs[loc].sp[k];
    if (p->type != SP_SITE)
        return !(p->wait > 0.0);
    /* the collectives whose waiting has delay costs (pass 4's sites) */
    uint8_t cls = c->a->sync->locs[loc].sites[p->index].cls;
    return c->a->locs[loc].site_waits[p->index].delayer == loc && c->a->locs[loc].site_waits[p->index].anywait &&
           delay_site_class(cls);
}

void ws_points_mark_final(ws_causes *c, uint32_t loc)
{
    cause_loc *cl = &c->locs[loc];
    sync_point *sp = cl->sp;
    /* the earliest call that opens the interval of a charge in a later
     * call than the group's (-1: the start) */
    int64_t opens = INT64_MAX;
    for (uint32_t hi = cl->n_sp; hi > 0;) {
        uint32_t lo = hi - 1;
        while (lo > 0 && sp[lo - 1].call_ev == sp[hi - 1].call_ev)
            lo--;
        for (uint32_t q = lo; q < hi; q++)
            sp[q].final = sp[q].wait > 0.0 && opens >= (int64_t)sp[q].call_ev;
        for (uint32_t k = lo; k < hi; k++)
            if (charges_here(c, loc, k)) {
                uint32_t f = interval_floor(c, loc, k);
                int64_t call = f == WS_NONE32 ? -1 : (int64_t)sp[f].call_ev;
                if (call < opens)
                    opens = call;
            }
        hi = lo;
    }
}

/* ---- mini-profiles ----------------------------------------------------- */

static void acc_add(ws_causes *c, uint32_t cp, double v)
{
    if (cp == WS_NONE32)
        return;
    if (!c->in_acc[cp]) {
        c->in_acc[cp] = 1;
        c->touched[c->n_touched++] = cp;
    }
    c->acc[cp] += v;
}

void ws_profile_reset(ws_causes *c)
{
    for (uint32_t i = 0; i < c->n_touched; i++) {
        c->acc[c->touched[i]] = 0.0;
        c->in_acc[c->touched[i]] = 0;
    }
    c->n_touched = 0;
}

/* call path active right after event i */
uint32_t ws_callpath_after(const ws_trace *t, const ws_events *e, int64_t i)
{
    for (; i >= 0; i--) {
        if (e->kind[i] == WS_EV_ENTER)
            return e->ref[i];
        if (e->kind[i] == WS_EV_LEAVE)
            return t->callpaths.parent[e->ref[i]];
    }
    return WS_NONE32;
}

/* The points of `loc` strictly between the calls of points j (WS_NONE32:
 * the start) and k: [*lo, *hi). */
static void intermediate_points(const cause_loc *cl, uint32_t j, uint32_t k, uint32_t *lo, uint32_t *hi)
{
    uint32_t a = j == WS_NONE32 ? 0 : j;
    if (j != WS_NONE32)
        while (a < k && cl->sp[a].call_ev == cl->sp[j].call_ev)
            a++;
    uint32_t b = k;
    while (b > a && cl->sp[b - 1].call_ev == cl->sp[k].call_ev)
        b--;
    *lo = a;
    *hi = b;
}

/* Adds to the accumulator the time per call path of `loc` in the interval
 * of point k that opens at point j (WS_NONE32: at the first event), at the
 * granularity of Enter and Leave events (as Scalasca 2.6): from the Enter
 * of j's call to the Enter of k's call, k's call excluded; j's call counts
 * only its completion part; the waiting of every point in between is
 * subtracted from its call path, and call paths left non-positive are
 * dropped. */
void ws_interval_profile(ws_causes *c, uint32_t loc, uint32_t j, uint32_t k, int full)
{
    const ws_trace *t = c->a->trace;
    const ws_events *e = &t->locations[loc].events;
    const cause_loc *cl = &c->locs[loc];
    uint64_t start = j == WS_NONE32 ? 0 : cl->sp[j].call_ev, end = cl->sp[k].call_ev;
    if (e->n == 0 || end <= start)
        return;
    uint64_t i = start;
    /* the call path set by the events walked: from the first event (no j)
     * nothing is open before it, and after j's call the loop below starts
     * at its Leave */
    uint32_t cp = WS_NONE32;
    if (j != WS_NONE32) {
        /* skip j's call, count its completion part */
        acc_add(c, cl->sp[j].call_cp, full ? completion_full(c, loc, j) : cl->sp[j].completion);
        int depth = 0;
        for (; i < end; i++) {
            if (e->kind[i] == WS_EV_ENTER)
                depth++;
            else if (e->kind[i] == WS_EV_LEAVE && --depth == 0)
                break;
        }
        /* the loop below continues with the Leave of j's call */
    }
    for (; i < end; i++) {
        if (e->kind[i] == WS_EV_ENTER)
            cp = e->ref[i];
        else if (e->kind[i] == WS_EV_LEAVE)
            cp = t->callpaths.parent[e->ref[i]];
        acc_add(c, cp, e->time[i + 1] - e->time[i]);
    }
    uint32_t lo, hi;
    intermediate_points(cl, j, k, &lo, &hi);
    for (uint32_t q = lo; q < hi; q++)
        if (cl->sp[q].wait > 0.0)
            acc_add(c, cl->sp[q].call_cp, -cl->sp[q].wait);
    for (uint32_t x = 0; x < c->n_touched; x++)
        if (c->acc[c->touched[x]] < 0.0)
            c->acc[c->touched[x]] = 0.0;
}

/* Appends the accumulator as entries (value > 0) to out. */
uint32_t ws_profile_entries(ws_causes *c, ws_buffer *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->n_touched; i++) {
        uint32_t cp = c->touched[i];
        if (c->acc[cp] > 0.0) {
            entry en = {cp, 0, c->acc[cp]};
            if (ws_buffer_append(out, &en, sizeof en) != 0)
                return WS_NONE32;
            n++;
        }
    }
    return n;
}

/* ---- cost accounting --------------------------------------------------- */


static int reserve(charge_scratch *s, size_t n, size_t m)
{
    if (n > s->cap_n) {
        size_t cap = n * 2;
        void *p;
        if (!(p = ws_realloc(s->delta, cap * sizeof *s->delta)))
            return -1;
        s->delta = p;
        if (!(p = ws_realloc(s->shortc, cap * sizeof *s->shortc)))
            return -1;
        s->shortc = p;
        if (!(p = ws_realloc(s->longc, cap * sizeof *s->longc)))
            return -1;
        s->longc = p;
        if (!(p = ws_realloc(s->cps, cap * sizeof *s->cps)))
            return -1;
        s->cps = p;
        s->cap_n = cap;
    }
    if (m > s->cap_m) {
        size_t cap = m * 2;
        void *p;
        if (!(p = ws_realloc(s->waits, cap * sizeof *s->waits)))
            return -1;
        s->waits = p;
        if (!(p = ws_realloc(s->prop_s, cap * sizeof *s->prop_s)))
            return -1;
        s->prop_s = p;
        if (!(p = ws_realloc(s->prop_l, cap * sizeof *s->prop_l)))
            return -1;
        s->prop_l = p;
        if (!(p = ws_realloc(s->wait_points, cap * sizeof *s->wait_points)))
            return -1;
        s->wait_points = p;
        s->cap_m = cap;
    }
    return 0;
}

/* room for the propagated shares of the whole waiting of m wait states */
static int reserve_whole(charge_scratch *s, size_t m)
{
    if (m + 1 > s->cap_whole) {
        size_t cap = (m + 1) * 2;
        void *p = ws_realloc(s->whole_prop, cap * sizeof *s->whole_prop);
        if (!p)
            return -1;
        s->whole_prop = p;
        s->cap_whole = cap;
    }
    return 0;
}

/* Writes the signed delay vector d = t_s - w_s - t_r (seed 000 IV-B:
 * every call path whose entry is not zero, before the difference profile
 * drops the non-positive ones) into the result's record vectors from
 * `offset` on (replacing what an earlier attempt wrote there); *length
 * entries.  Returns -1 when out of memory. */
static int record_vector(ws_causes *c, uint64_t offset, uint32_t *length)
{
    ws_result *r = c->a->result;
    r->n_entries = offset;
    size_t need = r->n_entries + c->n_touched;
    size_t cap = r->cap_entries;
    if (ws_grow((void **)&r->record_cp, &cap, need, sizeof *r->record_cp) != 0)
        return -1;
    cap = r->cap_entries;
    if (ws_grow((void **)&r->record_value, &cap, need, sizeof *r->record_value) != 0)
        return -1;
    r->cap_entries = cap;
    *length = 0;
    for (uint32_t i = 0; i < c->n_touched; i++) {
        uint32_t cp = c->touched[i];
        if (c->acc[cp] != 0.0) {
            r->record_cp[r->n_entries] = cp;
            r->record_value[r->n_entries] = c->acc[cp];
            r->n_entries++;
            (*length)++;
        }
    }
    return 0;
}

static int add_record(ws_causes *c, const wait_note *note, uint32_t delayer, uint32_t event, double sync_time,
                      const charge_scratch *s, size_t n, size_t m, uint64_t vector_offset, uint32_t vector_length,
                      ws_error *err)
{
    ws_result *r = c->a->result;
    if (ws_grow((void **)&r->records, &r->cap_records, r->n_records + 1, sizeof *r->records) != 0)
        return ws_error_nomem(err, "delay records");
    ws_delay_record *rec = &r->records[r->n_records++];
    memset(rec, 0, sizeof *rec);
    rec->delayer = delayer;
    rec->waiter = note->waiter;
    rec->kind = note->wclass;
    rec->sync_event = event;
    rec->sync_time = sync_time;
    rec->wait = note->gamma;
    for (int x = 0; x < NCLS; x++)
        rec->longterm_in += note->gl[x];
    rec->vector_offset = vector_offset;
    rec->vector_length = vector_length;
    for (size_t i = 0; i < n; i++) {
        rec->short_cost += s->shortc[i];
        rec->long_cost += s->longc[i];
    }
    for (size_t w = 0; w < m; w++)
        rec->propagated += s->prop_s[w] + s->prop_l[w];
    return WS_OK;
}

/* Difference profile of the delayer `loc` against the waiter's entries in
 * the interval of point k opened at point `from`: delta = max(p_local -
 * p_remote, 0) (seed 004 eq. 2.2), into s->cps / s->delta, *n of them.
 * With delay records kept, the signed vector goes to the records from
 * `vector_offset` on, *vector_length entries. */
static int difference(ws_causes *c, charge_scratch *s, uint32_t loc, uint32_t from, uint32_t k,
                      const wait_note *note, const entry *entries, int full, size_t *n, uint64_t vector_offset,
                      uint32_t *vector_length)
{
    *n = 0;
    ws_interval_profile(c, loc, from, k, full);
    for (uint32_t i = 0; i < note->n_entries; i++)
        acc_add(c, entries[i].callpath, -entries[i].value);
    if (reserve(s, c->n_touched + 1, c->locs[loc].n_sp + 1) != 0 ||
        (c->a->options.keep_delay_records && record_vector(c, vector_offset, vector_length) != 0)) {
        ws_profile_reset(c);
        return -1;
    }
    for (uint32_t i = 0; i < c->n_touched; i++) {
        uint32_t cp = c->touched[i];
        if (c->acc[cp] > 0.0) {
            s->cps[*n] = cp;
            s->delta[(*n)++] = c->acc[cp];
        }
    }
    ws_profile_reset(c);
    return 0;
}

/* The delayer `loc` pays for the waiting described by `note`, whose
 * mini-profile entries follow it; `k` is the delayer's point.  Returns
 * in *indirect the part of the waiting explained by the delayer's own
 * waiting. */
int ws_charge(ws_causes *c, charge_scratch *s, uint32_t loc, uint32_t k, const wait_note *note,
                  const entry *entries, double *indirect, ws_error *err)
{
    *indirect = 0.0;
    if (!(note->wait > 0.0))
        return WS_OK;
    cause_loc *cl = &c->locs[loc];
    const sync_point *p = &cl->sp[k];
    uint32_t from = ws_previous_point(c, loc, k, note->waiter);
    size_t n;
    uint64_t vector_offset = c->a->result->n_entries;
    uint32_t vector_length = 0;
    if (difference(c, s, loc, from, k, note, entries, 0, &n, vector_offset, &vector_length) != 0)
        return ws_error_nomem(err, "delay analysis");
    /* the delayer's own handled waiting within the interval */
    size_t m = 0;
    uint32_t lo, hi;
    intermediate_points(cl, from, k, &lo, &hi);
    for (uint32_t j = lo; j < hi; j++) {
        const sync_point *q = &cl->sp[j];
        if (q->wait > 0.0) {
            s->waits[m] = q->wait;
            s->wait_points[m++] = j;
        }
    }
    double gl = 0.0;
    for (int x = 0; x < NCLS; x++)
        gl += note->gl[x];
    /* the kernel distributes the whole waiting (as on the whole run) */
    if (ws_delay_kernel(c->model, note->wait, gl, s->delta, n, s->waits, m, s->shortc, s->longc, s->prop_s,
                        s->prop_l) != 0) {
        /* nothing in the interval explains the waiting: it arose in the
         * call that opened it (a collective, or clocks that disagree);
         * count that call's whole time after its synchronization (Scalasca
         * 2.6 leaves such waiting uncharged) */
        if (difference(c, s, loc, from, k, note, entries, 1, &n, vector_offset, &vector_length) != 0)
            return ws_error_nomem(err, "delay analysis");
        if (ws_delay_kernel(c->model, note->wait, gl, s->delta, n, s->waits, m, s->shortc, s->longc, s->prop_s,
                            s->prop_l) != 0) {
            cl->undistributed += note->gamma + gl;
            c->a->result->n_entries = vector_offset; /* no record keeps the vector */
            return WS_OK;
        }
    }
    uint32_t w = note->wclass;
    /* In a window only the part `gamma` of the waiting inside it is
     * charged: the short-term costs and propagated shares of the whole
     * waiting, scaled by gamma / wait (both models are linear in the
     * long-term cost, which is already that of the waiting inside the
     * window).  Whether a wait state propagates is decided on the whole
     * run: from the shares of the whole waiting. */
    const double *prop_whole = s->prop_s;
    if (note->gamma != note->wait) {
        if (reserve_whole(s, m) != 0)
            return ws_error_nomem(err, "delay analysis");
        double ratio = note->gamma / note->wait;
        for (size_t j = 0; j < m; j++) {
            s->whole_prop[j] = s->prop_s[j];
            s->prop_s[j] *= ratio;
        }
        for (size_t i = 0; i < n; i++)
            s->shortc[i] *= ratio;
        prop_whole = s->whole_prop;
    }
    for (size_t i = 0; i < n; i++) {
        add(c, short_metric[w], s->cps[i], loc, s->shortc[i]);
        if (gl > 0.0)
            for (int x = 0; x < NCLS; x++)
                if (note->gl[x] > 0.0)
                    add(c, long_metric[x], s->cps[i], loc, s->longc[i] * (note->gl[x] / gl));
    }
    for (size_t j = 0; j < m; j++) {
        uint32_t q = s->wait_points[j];
        double *target = point_gl(cl, q); /* q waits: it has a block */
        target[w - 1] += s->prop_s[j];
        if (gl > 0.0)
            for (int x = 1; x <= NGL; x++)
                target[x - 1] += s->prop_l[j] * (note->gl[x] / gl);
        /* a point-to-point wait state propagates when it delays a
         * point-to-point wait (Scalasca 2.6), a collective one when it
         * delays any handled wait (seed 002); the largest such share, not
         * their sum */
        int counts = w == WS_WAIT_LATESENDER || w == WS_WAIT_LATERECEIVER || cl->sp[q].type == SP_SITE;
        if (counts && prop_whole[j] > cl->share[q])
            cl->share[q] = prop_whole[j];
        *indirect += s->prop_s[j];
    }
    if (c->a->options.keep_delay_records)
        return add_record(c, note, loc, ws_point_event(c, loc, k), p->time, s, n, m, vector_offset, vector_length,
                          err);
    return WS_OK;
}
