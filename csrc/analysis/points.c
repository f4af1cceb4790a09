/* Synchronization points of the delay analysis (seed 000 section IV-B,
 * seed 004 sections 2.3.1-2.3.3), at the granularity of MPI calls as in
 * Scalasca 2.6: building them per location, finding a message's point,
 * the point before another, and which waiting points are final.  The
 * intervals they delimit and the cost accounting are in intervals.c. */
#include "causes_int.h"

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

/* Puts the partners' leaves in row order.  They come in the order the
 * waits were met, mostly the rows' order (a row is out of place when a
 * later call completes an earlier request): an insertion sort puts the
 * few out of place right in O(n) (stable, as the C library's merge sort);
 * only when that takes more than a few moves per entry is the order left
 * to qsort. */
static void sort_leaves(ws_partner_leaves *v, size_t n)
{
    size_t moves = 0, budget = 4 * n;
    for (size_t k = 1; k < n && moves <= budget; k++) {
        ws_partner_leaves x = v[k];
        size_t i = k;
        while (i > 0 && v[i - 1].row > x.row && moves <= budget) {
            v[i] = v[i - 1];
            i--;
            moves++;
        }
        v[i] = x;
    }
    if (moves > budget)
        qsort(v, n, sizeof *v, cmp_leaves);
}

/* The sites' records (cause_site, 16 bytes), made from the wait states'
 * records (ws_site_wait, 24 bytes), which nothing reads after the
 * points.  On a long location they take the wait states' place: converted
 * in order, each read whole before its place is written (record k is
 * written below where record k + 1 begins), and the block then cut to
 * size, so that they reuse pages already touched instead of fresh ones.
 * A short location's go to a block of their own and the wait states'
 * block is freed as before, to serve the next location's points (in
 * place, thousands of cut blocks would scatter the heap).  The sites
 * where the location waited that are no point (the points pt[0..n) tell
 * which are) keep their synchronization time apart (site_sync_time). */
_Static_assert(sizeof(cause_site) <= sizeof(ws_site_wait), "cause_site must fit in the place of ws_site_wait");

#define SITES_IN_PLACE_FROM ((uint32_t)1 << 16)

static int site_records(cause_loc *cl, ws_loc_data *d, uint32_t n_sites, const sync_point *pt, size_t n,
                        ws_error *err)
{
    ws_site_wait *sw = d->site_waits;
    const int in_place = n_sites >= SITES_IN_PLACE_FROM;
    unsigned char *to = in_place ? (unsigned char *)sw : ws_malloc_array(n_sites ? n_sites : 1, sizeof(cause_site));
    if (!to)
        return ws_error_nomem(err, "synchronization points");
    /* the pad byte marks the sites that are a point */
    for (uint32_t s = 0; s < n_sites; s++)
        sw[s].pad = 0;
    for (size_t k = 0; k < n; k++)
        if (pt[k].type == SP_SITE)
            sw[pt[k].index].pad = 1;
    uint32_t n_pointless = 0;
    for (uint32_t s = 0; s < n_sites; s++)
        n_pointless += sw[s].wait > 0.0 && !sw[s].pad;
    if (n_pointless && !(cl->pointless = ws_malloc_array(n_pointless, sizeof *cl->pointless))) {
        if (!in_place)
            free(to);
        return ws_error_nomem(err, "synchronization points");
    }
    const unsigned char *from = (const unsigned char *)sw;
    for (uint32_t s = 0; s < n_sites; s++) {
        ws_site_wait w;
        memcpy(&w, from + (size_t)s * sizeof w, sizeof w);
        if (w.wait > 0.0 && !w.pad)
            cl->pointless[cl->n_pointless++] = (pointless_wait){s, 0, w.sync_time};
        /* (a thread of an OpenMP team other than its master takes the critical path from the fork) */
        cause_site cs = {.sp = WS_NONE32, .delayer = w.delayer, .anywait = w.anywait,
                         .waited = w.wait > 0.0 || w.kind == WS_WAIT_OMPFORK};
        memcpy(to + (size_t)s * sizeof cs, &cs, sizeof cs);
    }
    if (!in_place) {
        cl->sites = (cause_site *)(void *)to;
        return WS_OK;
    }
    d->site_waits = NULL;
    cause_site *fit = ws_realloc(sw, (n_sites ? n_sites : 1) * sizeof *fit);
    cl->sites = fit ? fit : (cause_site *)(void *)sw; /* else the larger block stays */
    return WS_OK;
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
    size_t nm = ls->n_messages ? ls->n_messages : 1;
    cl->msg_pts = ws_calloc_dense(nm, sizeof *cl->msg_pts);
    /* where each message exchanges channel 1: the Late Receiver points' events */
    uint32_t *ch1 = ws_malloc_array(nm, sizeof *ch1);
    if (!cl->msg_pts || !ch1) {
        free(ch1);
        return ws_error_nomem(err, "synchronization points");
    }
    ws_sync_ch1_events(e, ls, ch1);
    /* at most this many points (N-to-1 sites may drop out) */
    size_t cap = 0;
    for (uint64_t row = 0; row < ls->n_messages; row++)
        cap += (ws_md_ls(d, row) > 0.0) + (ws_md_lr(d, row) > 0.0);
    for (uint32_t s = 0; s < ls->n_sites; s++)
        cap += d->site_waits[s].sync != 0;
    /* the points, and (with a window) per point the part of its waiting
     * inside the window */
    const int windowed = a->options.has_window;
    sync_point *pt = ws_malloc_array(cap ? cap : 1, sizeof *pt);
    double *pwin = windowed ? ws_malloc_array(cap ? cap : 1, sizeof *pwin) : NULL;
    sp_sort *order = NULL;
    int rc = WS_OK;
    if (!pt || (windowed && !pwin)) {
        rc = ws_error_nomem(err, "synchronization points");
        goto done;
    }

#define NEW_POINT()                                                                   \
    do {                                                                              \
        memset(&pt[n], 0, sizeof pt[n]);                                              \
        if (windowed)                                                                 \
            pwin[n] = 0.0;                                                            \
    } while (0)

    /* the partners' leaves, by row */
    sort_leaves(d->leaves, d->n_leaves);
    size_t next_leaves = 0, next_waiting = 0;
    for (uint64_t row = 0; row < ls->n_messages; row++) {
        const ws_msg *m = &ls->msgs[row];
        const double ls_wait = ws_md_ls(d, row), lr_wait = ws_md_lr(d, row);
        int is_send = (m->flags & WS_MSG_SEND) != 0;
        const ws_partner_leaves *pl = NULL;
        const int compat = a->options.scalasca_compat != 0;
        /* the rows that wait: their partner's time (waitstates_p2p.c) */
        double partner_time = 0.0;
        if (ws_md_waits(d, m, row)) {
            if (next_waiting == d->n_waiting || d->waiting_row[next_waiting] != row) {
                rc = ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %llu waits but its partner's time "
                                  "is unknown", (unsigned)loc, (unsigned long long)row);
                goto done;
            }
            partner_time = d->waiting_time[next_waiting++];
        }
        if (ls_wait > 0.0 || (lr_wait > 0.0 && (!is_send || compat))) {
            while (next_leaves < d->n_leaves && d->leaves[next_leaves].row < row)
                next_leaves++;
            if (next_leaves == d->n_leaves || d->leaves[next_leaves].row != row) {
                rc = ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %llu waits but its partner's calls "
                                  "are unknown", (unsigned)loc, (unsigned long long)row);
                goto done;
            }
            pl = &d->leaves[next_leaves];
        }
        if (ls_wait > 0.0) {
            NEW_POINT();
            sync_point *p = &pt[n];
            p->type = SP_LS;
            p->index = (uint32_t)row;
            /* its call: the one holding the record; as the start of the
             * next interval only the time after the partner's call ended
             * counts */
            double leave = ws_msg_leave(e, ls, m);
            p->call_ev = m->call;
            p->event = e->msg_event[row];
            p->completion = positive(leave - pl->leave);
            if (is_send) {
                p->time = ws_msg_enter(e, m);
            } else {
                p->time = partner_time;
                p->wait = ls_wait;
                if (windowed)
                    pwin[n] = ws_window_part(&a->options, ws_msg_enter(e, m),
                                             partner_time < leave ? partner_time : leave, p->wait);
                p->wclass = WS_WAIT_LATESENDER;
            }
            n++;
        }
        if (lr_wait > 0.0) {
            NEW_POINT();
            sync_point *p = &pt[n];
            p->type = SP_LR;
            p->index = (uint32_t)row;
            p->event = ch1[row];
            if (is_send) {
                p->call_ev = m->other_call;
                /* a send that waited for a late receiver leaves its call out
                 * of the next interval entirely (Scalasca 2.6); when
                 * reproducing Scalasca 2.6, with the negative difference of
                 * its leave and the posting call's, where it left first */
                p->completion = 0.0;
                double done = ws_msg_done(e, m);
                if (compat && done <= pl->second)
                    p->completion = done - pl->second;
            } else {
                p->call_ev = enter_of_call(e, ch1[row]);
                p->completion = positive(ws_leave_of_enter(e, p->call_ev) - pl->second);
            }
            if (is_send) {
                p->time = partner_time;
                p->wait = lr_wait;
                if (windowed)
                    pwin[n] = ws_window_part(&a->options, ws_msg_done_enter(e, m), partner_time, p->wait);
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
            comm = ls->sites[s].comm;
            uint32_t r = ws_site_root(e, &ls->sites[s]);
            if (r != WS_NONE32)
                root = ws_comm_location(t, comm, r, loc);
        }
        /* an N-to-1 operation synchronizes only its root and the latest sender */
        if (cls == WS_SITE_NTO1 && loc != root && loc != d->site_waits[s].delayer)
            continue;
        NEW_POINT();
        sync_point *p = &pt[n];
        p->type = SP_SITE;
        p->index = s;
        p->time = d->site_waits[s].sync_time;
        p->wclass = d->site_waits[s].kind;
        p->call_ev = ws_site_is_omp(cls) ? ls->sites[s].enter_event : enter_of_call(e, ls->sites[s].event);
        p->event = ls->sites[s].event;
        /* as the start of the next interval, its call counts only its
         * completion (Scalasca 2.6) */
        p->completion = d->site_waits[s].completion;
        if (handled(p->wclass) && d->site_waits[s].wait > 0.0) {
            p->wait = d->site_waits[s].wait;
            if (windowed)
                pwin[n] = ws_window_part(&a->options, ws_site_enter(e, &ls->sites[s]),
                                         ws_site_enter(e, &ls->sites[s]) + p->wait, p->wait);
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
        in_order = pt[k - 1].call_ev < pt[k].call_ev ||
                   (pt[k - 1].call_ev == pt[k].call_ev && pt[k - 1].event <= pt[k].event);
    if (!in_order) {
        order = ws_malloc_array(n, sizeof *order);
        if (!order) {
            rc = ws_error_nomem(err, "synchronization points");
            goto done;
        }
        for (size_t k = 0; k < n; k++) {
            order[k].call = pt[k].call_ev;
            order[k].event = pt[k].event;
            order[k].k = (uint32_t)k;
        }
        if (sort_points(order, n) != 0) {
            rc = ws_error_nomem(err, "synchronization points");
            goto done;
        }
        permute_points(pt, order, n);
    }
    if ((rc = site_records(cl, d, ls->n_sites, pt, n, err)))
        goto done;
    uint32_t n_waiting = 0;
    for (size_t k = 0; k < n; k++)
        n_waiting += pt[k].wait > 0.0;
    /* the part of the waiting inside the window is the waiting itself
     * without one (ws_window_part): then it is not kept */
    cl->gl_window = a->options.has_window != 0;
    cl->gl_block = c->n_gl + (uint32_t)cl->gl_window;
    /* (left unwritten, unlike the other dense arrays: the backward replay
     * fills it, after the peak of building the points) */
    size_t n_gl = (n_waiting ? n_waiting : 1) * (size_t)cl->gl_block;
    cl->gl = ws_calloc(n_gl, sizeof *cl->gl);
    ws_advise_huge(cl->gl, n_gl * sizeof *cl->gl);
    size_t n_words = (n + 63) / 64;
    cl->gl_bits = ws_calloc_dense(n_words ? n_words : 1, sizeof *cl->gl_bits);
    cl->gl_rank = ws_malloc_array(n_words ? n_words : 1, sizeof *cl->gl_rank);
    if (!cl->gl || !cl->gl_bits || !cl->gl_rank) {
        rc = ws_error_nomem(err, "synchronization points");
        goto done;
    }
    n_waiting = 0;
    for (size_t k = 0; k < n; k++) {
        if (k % 64 == 0)
            cl->gl_rank[k / 64] = n_waiting;
        if (pt[k].wait > 0.0) {
            cl->gl_bits[k / 64] |= (uint64_t)1 << (k % 64);
            if (cl->gl_window)
                cl->gl[(size_t)n_waiting * cl->gl_block + cl->gl_block - 1] = pwin[order ? order[k].k : k];
            n_waiting++;
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
    cl->share = ws_calloc_dense(n ? n : 1, sizeof *cl->share);
    if (!cl->share)
        rc = ws_error_nomem(err, "synchronization points");
done:
    free(ch1);
    free(order);
    free(pt);
    free(pwin);
    return rc;
}

static int is_point_of(const sync_point *p, uint32_t row, uint8_t type)
{
    return p->type == type && p->index == row;
}

uint32_t ws_point_event(const ws_causes *c, uint32_t loc, uint32_t k)
{
    return c->locs[loc].sp[k].event;
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
        return point_partner(c, loc, p) == q;
    const ws_loc_sync *ls = &c->a->sync->locs[loc];
    uint8_t cls = ls->sites[p->index].cls;
    if (cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE)
        return 1;
    uint32_t comm = ls->sites[p->index].comm;
    uint32_t r = ws_site_root(&c->a->trace->locations[loc].events, &ls->sites[p->index]);
    uint32_t root = r != WS_NONE32 ? ws_comm_location(c->a->trace, comm, r, loc) : WS_NONE32;
    switch (cls) {
    case WS_SITE_1TON:
        return loc == root ? is_member(c, comm, q) : q == root;
    case WS_SITE_NTO1:
        return loc == root ? q == point_partner(c, loc, p) : q == root;
    default:
        return is_member(c, comm, q);
    }
}

/* The latest point before point k, in an earlier MPI call, that
 * synchronized `loc` with q (WS_NONE32: none). */
uint32_t ws_previous_point(const ws_causes *c, uint32_t loc, uint32_t k, uint32_t q)
{
    const cause_loc *cl = &c->locs[loc];
    const ws_msg *msgs = c->a->sync->locs[loc].msgs;
    const uint32_t call = cl->sp[k].call_ev;
    for (uint32_t j = k; j-- > 0;) {
        const sync_point *p = &cl->sp[j];
        if (p->call_ev < call &&
            (p->type != SP_SITE ? msgs[p->index].partner == q : involves(c, loc, p, q)))
            return j;
    }
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
        return ws_previous_point(c, loc, k, point_partner(c, loc, p));
    const ws_loc_sync *ls = &c->a->sync->locs[loc];
    uint32_t comm = ls->sites[p->index].comm;
    enum { NEARBY = 256 };
    for (uint32_t j = k, seen = 0; j-- > 0 && seen < NEARBY; seen++) {
        const sync_point *q = &cl->sp[j];
        if (q->call_ev >= p->call_ev || q->type != SP_SITE)
            continue;
        /* (a broadcast or reduction synchronizes a member with the root only) */
        uint8_t qc = ls->sites[q->index].cls;
        if (qc == WS_SITE_INIT || qc == WS_SITE_FINALIZE ||
            ((qc == WS_SITE_BARRIER || qc == WS_SITE_NXN || ws_site_is_omp(qc)) &&
             ls->sites[q->index].comm == comm))
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
    const cause_site *cs = &c->locs[loc].sites[p->index];
    return cs->delayer == loc && cs->anywait && delay_site_class(cls);
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
