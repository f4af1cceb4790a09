/* Why the waiting happened: delay costs (seed 000 section IV, seed 004
 * sections 2.3.3 and 3.3) and the critical path (seed 001 sections II and
 * III), computed in one backward replay (pass 4) plus a forward replay
 * that returns the direct/indirect split to the waiting side (pass 5).
 *
 * Synchronization points of a location are the message exchanges where
 * one side waited (Late Sender, Late Receiver), the collective operations
 * where some member waited (barriers, MPI_Init and MPI_Finalize always).
 * Each has a synchronization time: the moment the last party arrived,
 * i.e. when the waiting ended.  The synchronization interval of a pair
 * (delayer D, waiter W) at a point S runs from their previous common
 * synchronization point to S; the mini-profile of a side is the time per
 * call path in that interval minus its own (handled) waiting time.
 */
#include "analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SP_LS = 1, SP_LR = 2, SP_SITE = 3 };
enum { NCLS = WS_WAIT_CLASS_COUNT };

typedef struct sync_point {
    double time;       /* synchronization time */
    double wait;       /* own handled waiting time here (0 if none) */
    uint32_t event;    /* event where the point is exchanged */
    uint32_t index;    /* message row or site */
    uint32_t callpath; /* call path of the own waiting */
    uint32_t partner;  /* p2p: partner; sites: the delayer */
    uint32_t comm;     /* sites: communicator (WS_NONE32: all locations) */
    uint32_t root;     /* 1-to-N / N-to-1 sites: location of the root */
    uint8_t type;
    uint8_t wclass;    /* class of the own waiting (WS_WAIT_*) */
    uint8_t site_class;
    uint8_t pad;
} sync_point;

typedef struct cause_loc {
    sync_point *sp;
    uint32_t n_sp;
    uint32_t *msg_sp;   /* message row -> its Late Sender point (WS_NONE32) */
    uint32_t *msg_lr;   /* message row -> its Late Receiver point (WS_NONE32) */
    uint32_t *site_sp;  /* site -> point (WS_NONE32) */
    double *gl;         /* per point and final class: long-term cost carried by its waiting */
    double *prop_max;   /* per point: largest share of its waiting that propagated */
    double *indirect;   /* per message row (delayer side): indirect part of the partner's waiting */
    /* critical path */
    int owner;
    double top, bottom;
    double reached; /* the backward replay's position: the time of the last event replayed */
    uint32_t cur_cp;
    int at_start; /* still owned the path at its first event */
    double undistributed; /* waiting whose cost found no activity here */
} cause_loc;

typedef struct charge_scratch {
    double *delta, *shortc, *longc, *waits, *prop_s, *prop_l;
    uint32_t *cps, *wait_points;
    size_t cap_n, cap_m;
} charge_scratch;

struct ws_causes {
    ws_analysis *a;
    cause_loc *locs;
    int model;
    int delay;
    int cp;
    /* membership of locations in communicators, as bit sets */
    uint8_t *member;
    size_t member_stride;
    /* scratch for profiles */
    double *acc;
    uint8_t *in_acc;
    uint32_t *touched;
    uint32_t n_touched;
    charge_scratch scratch;
    /* the path's end */
    uint32_t end_loc;
    double t_end;
};

typedef struct entry {
    uint32_t callpath;
    uint32_t pad;
    double value;
} entry;

/* what a waiting location tells the location it waited for */
typedef struct wait_note {
    double wait;          /* gamma short: the waiting time (0: nothing to charge) */
    double gl[NCLS];      /* gamma long per final class */
    double token_time;    /* critical path handed over at this time ... */
    uint32_t token_target;/* ... to this location (WS_NONE32: no token) */
    uint32_t wclass;
    uint32_t waiter;
    uint32_t delayer;
    uint32_t n_entries;   /* mini-profile entries that follow */
    uint32_t pad;
} wait_note;

static const int short_metric[NCLS] = {
    [WS_WAIT_LATESENDER] = M_DELAY_LATESENDER, [WS_WAIT_LATERECEIVER] = M_DELAY_LATERECEIVER,
    [WS_WAIT_BARRIER] = M_DELAY_BARRIER,       [WS_WAIT_NXN] = M_DELAY_N2N,
    [WS_WAIT_12N] = M_DELAY_12N,               [WS_WAIT_N21] = M_DELAY_N21,
};
static const int long_metric[NCLS] = {
    [WS_WAIT_LATESENDER] = M_DELAY_LATESENDER_LONGTERM, [WS_WAIT_LATERECEIVER] = M_DELAY_LATERECEIVER_LONGTERM,
    [WS_WAIT_BARRIER] = M_DELAY_BARRIER_LONGTERM,       [WS_WAIT_NXN] = M_DELAY_N2N_LONGTERM,
    [WS_WAIT_12N] = M_DELAY_12N_LONGTERM,               [WS_WAIT_N21] = M_DELAY_N21_LONGTERM,
};

/* wait states whose cost the delay analysis accounts */
static int handled(uint8_t wclass)
{
    return wclass == WS_WAIT_LATESENDER || wclass == WS_WAIT_LATERECEIVER || wclass == WS_WAIT_BARRIER ||
           wclass == WS_WAIT_NXN || wclass == WS_WAIT_12N || wclass == WS_WAIT_N21;
}

static void add(ws_causes *c, int metric, uint32_t cp, uint32_t loc, double v)
{
    ws_cube_add(c->a->result, metric, cp, loc, v);
}

static int is_member(const ws_causes *c, uint32_t comm, uint32_t loc)
{
    if (comm == WS_NONE32)
        return 1;
    return (c->member[(size_t)comm * c->member_stride + loc / 8] >> (loc % 8)) & 1;
}

/* ---- synchronization points ------------------------------------------- */

typedef struct sp_sort {
    double time;
    uint32_t event;
    uint32_t k;
} sp_sort;

static int cmp_sp(const void *x, const void *y)
{
    const sp_sort *a = x, *b = y;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    if (a->event != b->event)
        return a->event < b->event ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

static int build_points(ws_causes *c, uint32_t loc, ws_error *err)
{
    const ws_analysis *a = c->a;
    const ws_trace *t = a->trace;
    const ws_loc_sync *ls = &a->sync->locs[loc];
    const ws_loc_data *d = &a->locs[loc];
    const ws_events *e = &t->locations[loc].events;
    cause_loc *cl = &c->locs[loc];
    size_t cap = 0, n = 0;
    sync_point *sp = NULL;
    size_t nm = ls->n_messages ? ls->n_messages : 1, ns = ls->n_sites ? ls->n_sites : 1;
    cl->msg_sp = ws_malloc_array(nm, sizeof *cl->msg_sp);
    cl->msg_lr = ws_malloc_array(nm, sizeof *cl->msg_lr);
    cl->site_sp = ws_malloc_array(ns, sizeof *cl->site_sp);
    cl->indirect = ws_calloc(nm, sizeof *cl->indirect);
    if (!cl->msg_sp || !cl->msg_lr || !cl->site_sp || !cl->indirect)
        return ws_error_nomem(err, "synchronization points");
    for (size_t k = 0; k < nm; k++)
        cl->msg_sp[k] = cl->msg_lr[k] = WS_NONE32;
    for (size_t k = 0; k < ns; k++)
        cl->site_sp[k] = WS_NONE32;

#define NEW_POINT()                                                                   \
    do {                                                                              \
        if (ws_grow((void **)&sp, &cap, n + 1, sizeof *sp) != 0) {                    \
            free(sp);                                                                 \
            return ws_error_nomem(err, "synchronization points");                     \
        }                                                                             \
        memset(&sp[n], 0, sizeof sp[n]);                                              \
        sp[n].comm = WS_NONE32;                                                       \
        sp[n].root = WS_NONE32;                                                       \
        sp[n].callpath = WS_NONE32;                                                   \
    } while (0)

    for (uint64_t row = 0; row < ls->n_messages; row++) {
        int is_send = (ls->msg_flags[row] & WS_MSG_SEND) != 0;
        if (d->ls[row] > 0.0) {
            NEW_POINT();
            sync_point *p = &sp[n];
            p->type = SP_LS;
            p->index = (uint32_t)row;
            p->partner = ls->msg_partner[row];
            p->event = e->msg_event[row];
            if (is_send) {
                p->time = ls->msg_enter[row];
            } else {
                p->time = d->send_enter[row];
                p->wait = d->ls[row];
                p->wclass = WS_WAIT_LATESENDER;
                p->callpath = ls->msg_callpath[row];
            }
            n++;
        }
        if (d->lr[row] > 0.0) {
            NEW_POINT();
            sync_point *p = &sp[n];
            p->type = SP_LR;
            p->index = (uint32_t)row;
            p->partner = ls->msg_partner[row];
            p->event = ls->msg_ch1_event[row];
            if (is_send) {
                p->time = d->post_time[row];
                p->wait = d->lr[row];
                p->wclass = WS_WAIT_LATERECEIVER;
                p->callpath = ls->msg_done_callpath[row];
            } else {
                p->time = ls->msg_post[row];
            }
            n++;
        }
    }
    for (uint32_t s = 0; s < ls->n_sites; s++) {
        if (!d->site_sync[s])
            continue;
        uint8_t cls = ls->site_class[s];
        uint32_t comm = WS_NONE32, root = WS_NONE32;
        if (cls != WS_SITE_INIT && cls != WS_SITE_FINALIZE) {
            comm = (uint32_t)(ls->site_instance[s] >> 40);
            if (ls->site_root[s] != WS_NONE32)
                root = ws_comm_location(t, comm, ls->site_root[s], loc);
        }
        /* an N-to-1 operation synchronizes only its root and the latest sender */
        if (cls == WS_SITE_NTO1 && loc != root && loc != d->site_delayer[s])
            continue;
        NEW_POINT();
        sync_point *p = &sp[n];
        p->type = SP_SITE;
        p->index = s;
        p->event = ls->site_event[s];
        p->time = d->site_sync_time[s];
        p->partner = d->site_delayer[s];
        p->comm = comm;
        p->root = root;
        p->site_class = cls;
        p->wclass = d->site_kind[s];
        if (handled(p->wclass) && d->site_wait[s] > 0.0) {
            p->wait = d->site_wait[s];
            p->callpath = ls->site_callpath[s];
        } else {
            p->wclass = WS_WAIT_NONE;
        }
        n++;
    }
#undef NEW_POINT
    /* order by synchronization time */
    sp_sort *order = ws_malloc_array(n ? n : 1, sizeof *order);
    sync_point *sorted = ws_malloc_array(n ? n : 1, sizeof *sorted);
    if (!order || !sorted) {
        free(order);
        free(sorted);
        free(sp);
        return ws_error_nomem(err, "synchronization points");
    }
    for (size_t k = 0; k < n; k++) {
        order[k].time = sp[k].time;
        order[k].event = sp[k].event;
        order[k].k = (uint32_t)k;
    }
    qsort(order, n, sizeof *order, cmp_sp);
    for (size_t k = 0; k < n; k++) {
        sorted[k] = sp[order[k].k];
        if (sorted[k].type == SP_SITE)
            cl->site_sp[sorted[k].index] = (uint32_t)k;
        else
            (sorted[k].type == SP_LS ? cl->msg_sp : cl->msg_lr)[sorted[k].index] = (uint32_t)k;
    }
    free(order);
    free(sp);
    cl->sp = sorted;
    cl->n_sp = (uint32_t)n;
    cl->gl = ws_calloc((n ? n : 1) * NCLS, sizeof *cl->gl);
    cl->prop_max = ws_calloc(n ? n : 1, sizeof *cl->prop_max);
    if (!cl->gl || !cl->prop_max)
        return ws_error_nomem(err, "synchronization points");
    return WS_OK;
}

/* Point of message `row` of the given kind at `loc`. */
static uint32_t point_of_message(const cause_loc *cl, uint32_t row, uint8_t type)
{
    return (type == SP_LS ? cl->msg_sp : cl->msg_lr)[row];
}

/* Does point k of `loc` synchronize it with location q? */
static int involves(const ws_causes *c, uint32_t loc, const sync_point *p, uint32_t q)
{
    switch (p->type) {
    case SP_LS:
    case SP_LR:
        return p->partner == q;
    default:
        switch (p->site_class) {
        case WS_SITE_INIT:
        case WS_SITE_FINALIZE:
            return 1;
        case WS_SITE_1TON:
            return loc == p->root ? is_member(c, p->comm, q) : q == p->root;
        case WS_SITE_NTO1:
            return loc == p->root ? q == p->partner : q == p->root;
        default:
            return is_member(c, p->comm, q);
        }
    }
}

/* Synchronization time of the latest point before point k that
 * synchronized `loc` with q, or -infinity. */
static double previous_sync(const ws_causes *c, uint32_t loc, uint32_t k, uint32_t q)
{
    const cause_loc *cl = &c->locs[loc];
    for (uint32_t j = k; j-- > 0;)
        if (involves(c, loc, &cl->sp[j], q))
            return cl->sp[j].time;
    return -INFINITY;
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

static void acc_reset(ws_causes *c)
{
    for (uint32_t i = 0; i < c->n_touched; i++) {
        c->acc[c->touched[i]] = 0.0;
        c->in_acc[c->touched[i]] = 0;
    }
    c->n_touched = 0;
}

/* call path active right after event i */
static uint32_t callpath_after(const ws_trace *t, const ws_events *e, int64_t i)
{
    for (; i >= 0; i--) {
        if (e->kind[i] == WS_EV_ENTER)
            return e->ref[i];
        if (e->kind[i] == WS_EV_LEAVE)
            return t->callpaths.parent[e->ref[i]];
    }
    return WS_NONE32;
}

/* first event with time > x */
static uint64_t first_after(const ws_events *e, double x)
{
    uint64_t lo = 0, hi = e->n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (e->time[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds to the accumulator the time per call path of `loc` within
 * (from, to], minus its handled waiting inside that interval. */
/* The first synchronization point of cl later than `from` (points are
 * sorted by time). */
static uint32_t first_point_after(const cause_loc *cl, double from)
{
    uint32_t lo = 0, hi = cl->n_sp;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cl->sp[mid].time > from)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void window_profile(ws_causes *c, uint32_t loc, double from, double to)
{
    const ws_trace *t = c->a->trace;
    const ws_events *e = &t->locations[loc].events;
    if (e->n == 0 || !(to > from))
        return;
    uint64_t i = isinf(from) ? 0 : first_after(e, from);
    double start = isinf(from) ? e->time[0] : from;
    uint32_t cp = i == 0 ? WS_NONE32 : callpath_after(t, e, (int64_t)i - 1);
    for (; i < e->n && e->time[i] <= to; i++) {
        double ti = e->time[i];
        if (ti > start)
            acc_add(c, cp, ti - start);
        start = ti > start ? ti : start;
        if (e->kind[i] == WS_EV_ENTER)
            cp = e->ref[i];
        else if (e->kind[i] == WS_EV_LEAVE)
            cp = t->callpaths.parent[e->ref[i]];
    }
    if (i < e->n && to > start)
        acc_add(c, cp, to - start);
    /* own waiting inside the interval is not activity (the points are
     * sorted by time: find the first after `from`) */
    const cause_loc *cl = &c->locs[loc];
    for (uint32_t k = first_point_after(cl, from); k < cl->n_sp && cl->sp[k].time <= to; k++)
        if (cl->sp[k].wait > 0.0)
            acc_add(c, cl->sp[k].callpath, -cl->sp[k].wait);
}

/* Appends the accumulator as entries (value > 0) to out. */
static uint32_t acc_entries(ws_causes *c, ws_buffer *out)
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
        if (!(p = realloc(s->delta, cap * sizeof *s->delta)))
            return -1;
        s->delta = p;
        if (!(p = realloc(s->shortc, cap * sizeof *s->shortc)))
            return -1;
        s->shortc = p;
        if (!(p = realloc(s->longc, cap * sizeof *s->longc)))
            return -1;
        s->longc = p;
        if (!(p = realloc(s->cps, cap * sizeof *s->cps)))
            return -1;
        s->cps = p;
        s->cap_n = cap;
    }
    if (m > s->cap_m) {
        size_t cap = m * 2;
        void *p;
        if (!(p = realloc(s->waits, cap * sizeof *s->waits)))
            return -1;
        s->waits = p;
        if (!(p = realloc(s->prop_s, cap * sizeof *s->prop_s)))
            return -1;
        s->prop_s = p;
        if (!(p = realloc(s->prop_l, cap * sizeof *s->prop_l)))
            return -1;
        s->prop_l = p;
        if (!(p = realloc(s->wait_points, cap * sizeof *s->wait_points)))
            return -1;
        s->wait_points = p;
        s->cap_m = cap;
    }
    return 0;
}

/* Appends the signed delay vector d = t_s - w_s - t_r (seed 000 IV-B:
 * every call path whose entry is not zero, before the difference profile
 * drops the non-positive ones) to the result's record vectors; *offset
 * and *length locate it there. */
static int add_record_vector(ws_causes *c, uint64_t *offset, uint32_t *length, ws_error *err)
{
    ws_result *r = c->a->result;
    size_t need = r->n_entries + c->n_touched;
    size_t cap = r->cap_entries;
    if (ws_grow((void **)&r->record_cp, &cap, need, sizeof *r->record_cp) != 0)
        return ws_error_nomem(err, "delay records");
    cap = r->cap_entries;
    if (ws_grow((void **)&r->record_value, &cap, need, sizeof *r->record_value) != 0)
        return ws_error_nomem(err, "delay records");
    r->cap_entries = cap;
    *offset = r->n_entries;
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
    return WS_OK;
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
    rec->wait = note->wait;
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

/* The delayer `loc` pays for the waiting described by `note`, whose
 * mini-profile entries follow it; `k` is the delayer's point.  Returns
 * in *indirect the part of the waiting explained by the delayer's own
 * waiting. */
static int charge(ws_causes *c, charge_scratch *s, uint32_t loc, uint32_t k, const wait_note *note,
                  const entry *entries, double *indirect, ws_error *err)
{
    *indirect = 0.0;
    if (!(note->wait > 0.0))
        return WS_OK;
    cause_loc *cl = &c->locs[loc];
    const sync_point *p = &cl->sp[k];
    double from = previous_sync(c, loc, k, note->waiter);
    /* difference profile: delta = max(p_local - p_remote, 0) (seed 004 eq. 2.2) */
    window_profile(c, loc, from, p->time);
    for (uint32_t i = 0; i < note->n_entries; i++)
        acc_add(c, entries[i].callpath, -entries[i].value);
    if (reserve(s, c->n_touched + 1, cl->n_sp + 1) != 0) {
        acc_reset(c);
        return ws_error_nomem(err, "delay analysis");
    }
    uint64_t vector_offset = 0;
    uint32_t vector_length = 0;
    if (c->a->options.keep_delay_records && add_record_vector(c, &vector_offset, &vector_length, err) != WS_OK) {
        acc_reset(c);
        return err->code;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < c->n_touched; i++) {
        uint32_t cp = c->touched[i];
        if (c->acc[cp] > 0.0) {
            s->cps[n] = cp;
            s->delta[n++] = c->acc[cp];
        }
    }
    acc_reset(c);
    /* the delayer's own handled waiting within the interval */
    size_t m = 0;
    for (uint32_t j = first_point_after(cl, from); j < k; j++) {
        const sync_point *q = &cl->sp[j];
        if (q->time <= p->time && q->wait > 0.0) {
            s->waits[m] = q->wait;
            s->wait_points[m++] = j;
        }
    }
    double gl = 0.0;
    for (int x = 0; x < NCLS; x++)
        gl += note->gl[x];
    if (ws_delay_kernel(c->model, note->wait, gl, s->delta, n, s->waits, m, s->shortc, s->longc, s->prop_s,
                        s->prop_l) != 0) {
        cl->undistributed += note->wait + gl;
        if (c->a->options.keep_delay_records)
            c->a->result->n_entries = vector_offset; /* no record keeps the vector */
        return WS_OK;
    }
    uint32_t w = note->wclass;
    for (size_t i = 0; i < n; i++) {
        add(c, short_metric[w], s->cps[i], loc, s->shortc[i]);
        if (gl > 0.0)
            for (int x = 0; x < NCLS; x++)
                if (note->gl[x] > 0.0)
                    add(c, long_metric[x], s->cps[i], loc, s->longc[i] * (note->gl[x] / gl));
    }
    for (size_t j = 0; j < m; j++) {
        uint32_t q = s->wait_points[j];
        double *target = &cl->gl[(size_t)q * NCLS];
        target[w] += s->prop_s[j];
        if (gl > 0.0)
            for (int x = 0; x < NCLS; x++)
                target[x] += s->prop_l[j] * (note->gl[x] / gl);
        if (s->prop_s[j] > cl->prop_max[q])
            cl->prop_max[q] = s->prop_s[j];
        *indirect += s->prop_s[j];
    }
    if (c->a->options.keep_delay_records)
        return add_record(c, note, loc, p->event, p->time, s, n, m, vector_offset, vector_length, err);
    return WS_OK;
}

/* ---- critical path ------------------------------------------------------ */

static int add_segment(ws_causes *c, uint32_t loc, uint32_t cp, double start, double end, ws_error *err)
{
    ws_result *r = c->a->result;
    if (!(end > start))
        return WS_OK;
    if (cp != WS_NONE32)
        add(c, M_CRITICAL_PATH, cp, loc, end - start);
    /* merge with the previous piece when contiguous on the same call path */
    if (r->n_path) {
        ws_path_segment *last = &r->path[r->n_path - 1];
        if (last->location == loc && last->callpath == cp && last->start == end) {
            last->start = start;
            return WS_OK;
        }
    }
    if (ws_grow((void **)&r->path, &r->cap_path, r->n_path + 1, sizeof *r->path) != 0)
        return ws_error_nomem(err, "critical path");
    ws_path_segment *seg = &r->path[r->n_path++];
    seg->location = loc;
    seg->callpath = cp;
    seg->start = start;
    seg->end = end;
    return WS_OK;
}

static void take_token(cause_loc *cl, double time)
{
    cl->owner = 1;
    cl->top = time;
    cl->bottom = -INFINITY;
}

/* ---- pass 4: backward --------------------------------------------------- */

static int p4_begin(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    (void)err;
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    const ws_events *e = &env->trace->locations[loc].events;
    cl->owner = 0;
    cl->at_start = 0;
    cl->reached = INFINITY;
    cl->cur_cp = e->n ? callpath_after(env->trace, e, (int64_t)e->n - 1) : WS_NONE32;
    if (c->cp && loc == c->end_loc)
        take_token(cl, c->t_end);
    return WS_OK;
}

static int p4_event(void *state, const ws_replay_env *env, uint32_t loc, uint64_t ev, ws_error *err)
{
    ws_causes *c = state;
    if (!c->cp)
        return WS_OK;
    cause_loc *cl = &c->locs[loc];
    const ws_events *e = &env->trace->locations[loc].events;
    if (cl->owner && ev + 1 < e->n) {
        double lo = e->time[ev], hi = e->time[ev + 1];
        if (lo < cl->bottom)
            lo = cl->bottom;
        if (hi > cl->top)
            hi = cl->top;
        int rc = add_segment(c, loc, cl->cur_cp, lo, hi, err);
        if (rc)
            return rc;
        if (e->time[ev] <= cl->bottom)
            cl->owner = 0;
    }
    if (cl->owner && ev == 0)
        cl->at_start = 1;
    cl->reached = e->time[ev];
    if (e->kind[ev] == WS_EV_LEAVE)
        cl->cur_cp = e->ref[ev];
    else if (e->kind[ev] == WS_EV_ENTER)
        cl->cur_cp = env->trace->callpaths.parent[e->ref[ev]];
    return WS_OK;
}

static int p4_channels(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row)
{
    (void)env;
    ws_causes *c = state;
    const ws_loc_data *d = &c->a->locs[loc];
    return (d->ls[row] > 0.0 ? 1 : 0) | (d->lr[row] > 0.0 ? 2 : 0);
}

/* When the path leaves `cl` for a partner at sync_time: never later than
 * where it is on `cl` (its top, and the time the backward replay has
 * reached), so that no stretch of time is on the path twice even when the
 * clocks violate the clock condition (a receive ending before its send
 * began).  Without violations this is sync_time itself. */
static double handover_time(const cause_loc *cl, double sync_time)
{
    double t = sync_time;
    if (cl->reached < t)
        t = cl->reached;
    if (cl->top < t)
        t = cl->top;
    return t;
}

/* The waiting side tells the delayer about its wait state at point k. */
static int note_for(ws_causes *c, uint32_t loc, uint32_t k, uint32_t delayer, uint32_t token_target, ws_buffer *out,
                    ws_error *err)
{
    cause_loc *cl = &c->locs[loc];
    const sync_point *p = &cl->sp[k];
    wait_note note;
    memset(&note, 0, sizeof note);
    note.wait = c->delay && handled(p->wclass) ? p->wait : 0.0;
    if (c->delay)
        memcpy(note.gl, &cl->gl[(size_t)k * NCLS], sizeof note.gl);
    note.wclass = p->wclass;
    note.waiter = loc;
    note.delayer = delayer;
    note.token_target = WS_NONE32;
    note.token_time = NAN;
    if (c->cp && cl->owner && token_target != WS_NONE32) {
        note.token_target = token_target;
        note.token_time = handover_time(cl, p->time);
        cl->bottom = note.token_time;
    }
    size_t header = out->size;
    if (ws_buffer_append(out, &note, sizeof note) != 0)
        return ws_error_nomem(err, "payload");
    if (note.wait > 0.0) {
        window_profile(c, loc, previous_sync(c, loc, k, delayer), p->time);
        uint32_t n = acc_entries(c, out);
        acc_reset(c);
        if (n == WS_NONE32)
            return ws_error_nomem(err, "payload");
        ((wait_note *)(out->data + header))->n_entries = n;
    }
    return WS_OK;
}

static int p4_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)env;
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    uint32_t k = point_of_message(cl, row, channel == 0 ? SP_LS : SP_LR);
    if (k == WS_NONE32)
        return ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %u is no synchronization point",
                            (unsigned)loc, (unsigned)row);
    return note_for(c, loc, k, cl->sp[k].partner, cl->sp[k].partner, out, err);
}

static int parse_note(const void *data, size_t size, wait_note *note, const entry **entries, ws_error *err)
{
    if (size < sizeof *note)
        return ws_error_set(err, WS_ERR_INTERNAL, "short delay payload");
    memcpy(note, data, sizeof *note);
    if (size < sizeof *note + (size_t)note->n_entries * sizeof(entry))
        return ws_error_set(err, WS_ERR_INTERNAL, "short delay payload");
    *entries = (const entry *)((const unsigned char *)data + sizeof *note);
    return WS_OK;
}

static int p4_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    (void)env;
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    wait_note note;
    const entry *entries;
    int rc = parse_note(data, size, &note, &entries, err);
    if (rc)
        return rc;
    /* entries may be unaligned in the transport's buffer: copy them */
    entry *copy = NULL;
    if (note.n_entries) {
        copy = ws_malloc_array(note.n_entries, sizeof *copy);
        if (!copy)
            return ws_error_nomem(err, "delay payload");
        memcpy(copy, entries, (size_t)note.n_entries * sizeof *copy);
    }
    uint32_t k = point_of_message(cl, row, channel == 0 ? SP_LS : SP_LR);
    if (k == WS_NONE32) {
        free(copy);
        return ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %u is no synchronization point",
                            (unsigned)loc, (unsigned)row);
    }
    if (c->delay) {
        double indirect;
        rc = charge(c, &c->scratch, loc, k, &note, copy, &indirect, err);
        cl->indirect[row] = indirect;
    }
    free(copy);
    if (rc)
        return rc;
    if (note.token_target == loc)
        take_token(cl, note.token_time);
    return WS_OK;
}

/* Sites take part when somebody waited and the class matters here. */
static int p4_coll_active(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site)
{
    ws_causes *c = state;
    const ws_loc_data *d = &c->a->locs[loc];
    if (!d->site_anywait[site])
        return 0;
    uint8_t cls = env->sync->locs[loc].site_class[site];
    if (c->cp && cls != WS_SITE_OTHER)
        return 1;
    return c->delay && (cls == WS_SITE_BARRIER || cls == WS_SITE_NXN || cls == WS_SITE_1TON || cls == WS_SITE_NTO1);
}

static int p4_coll_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                           ws_error *err)
{
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    const ws_loc_data *d = &c->a->locs[loc];
    uint32_t k = cl->site_sp[site];
    uint32_t delayer = d->site_delayer[site];
    int waited = d->site_wait[site] > 0.0;
    if (k == WS_NONE32) {
        /* not an interval boundary here (e.g. a scan): only the path moves */
        wait_note note;
        memset(&note, 0, sizeof note);
        note.waiter = loc;
        note.delayer = delayer;
        note.token_target = WS_NONE32;
        note.token_time = NAN;
        if (c->cp && cl->owner && waited) {
            note.token_target = delayer;
            note.token_time = handover_time(cl, d->site_sync_time[site]);
            cl->bottom = note.token_time;
        }
        (void)env;
        if (ws_buffer_append(out, &note, sizeof note) != 0)
            return ws_error_nomem(err, "payload");
        return WS_OK;
    }
    return note_for(c, loc, k, delayer, waited ? delayer : WS_NONE32, out, err);
}

static int p4_coll_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site,
                           const ws_coll_view *v, ws_error *err)
{
    (void)env;
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    const ws_loc_data *d = &c->a->locs[loc];
    int rc = WS_OK;
    double token = NAN;
    for (uint32_t i = 0; i < v->n_present && rc == WS_OK; i++) {
        uint32_t m = v->present[i];
        wait_note note;
        const entry *entries;
        if ((rc = parse_note(v->data[m], v->size[m], &note, &entries, err)))
            break;
        if (note.token_target == loc)
            token = note.token_time;
        if (!c->delay || note.wait <= 0.0 || d->site_delayer[site] != loc || cl->site_sp[site] == WS_NONE32)
            continue;
        entry *copy = NULL;
        if (note.n_entries) {
            copy = ws_malloc_array(note.n_entries, sizeof *copy);
            if (!copy)
                return ws_error_nomem(err, "delay payload");
            memcpy(copy, entries, (size_t)note.n_entries * sizeof *copy);
        }
        double indirect;
        rc = charge(c, &c->scratch, loc, cl->site_sp[site], &note, copy, &indirect, err);
        free(copy);
    }
    if (rc == WS_OK && !isnan(token))
        take_token(cl, token);
    return rc;
}

/* ---- pass 5: forward (indirect waiting back to the waiting side) ------- */

static int p5_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)env;
    (void)channel;
    ws_causes *c = state;
    if (ws_buffer_append(out, &c->locs[loc].indirect[row], sizeof(double)) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

static int p5_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    ws_causes *c = state;
    if (size != sizeof(double))
        return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
    double v;
    memcpy(&v, data, sizeof v);
    const ws_loc_sync *ls = &env->sync->locs[loc];
    if (channel == 0)
        add(c, M_MPI_WAIT_INDIRECT_LATESENDER, ls->msg_callpath[row], loc, v);
    else
        add(c, M_MPI_WAIT_INDIRECT_LATERECEIVER, ls->msg_done_callpath[row], loc, v);
    return WS_OK;
}

/* ---- setup, finish ------------------------------------------------------ */

int ws_causes_prepare(ws_analysis *a, ws_causes **out, ws_error *err)
{
    *out = NULL;
    const ws_trace *t = a->trace;
    ws_causes *c = calloc(1, sizeof *c);
    if (!c)
        return ws_error_nomem(err, "delay analysis");
    c->a = a;
    c->model = a->options.delay_model;
    c->delay = a->options.delay_model != WS_DELAY_NONE;
    c->cp = a->options.critical_path;
    uint32_t C = t->callpaths.n ? t->callpaths.n : 1;
    c->locs = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *c->locs);
    c->acc = ws_calloc(C, sizeof *c->acc);
    c->in_acc = ws_calloc(C, 1);
    c->touched = ws_malloc_array(C, sizeof *c->touched);
    c->member_stride = ((size_t)t->n_locations + 7) / 8;
    c->member = ws_calloc((t->n_comms ? t->n_comms : 1) * (c->member_stride ? c->member_stride : 1), 1);
    if (!c->locs || !c->acc || !c->in_acc || !c->touched || !c->member) {
        ws_causes_free(c);
        return ws_error_nomem(err, "delay analysis");
    }
    for (uint32_t m = 0; m < t->n_comms; m++) {
        const ws_comm *cm = &t->comms[m];
        if (cm->is_self)
            continue;
        for (uint32_t r = 0; r < cm->size; r++) {
            uint32_t loc = cm->rank_location[r];
            if (loc != WS_NONE32)
                c->member[(size_t)m * c->member_stride + loc / 8] |= (uint8_t)(1u << (loc % 8));
        }
    }
    int rc;
    for (uint32_t i = 0; i < a->n_local; i++)
        if ((rc = build_points(c, a->local[i], err))) {
            ws_causes_free(c);
            return rc;
        }
    /* the path ends where the program ends last (ties: lowest index) */
    double end[2] = {-INFINITY, 0.0};
    for (uint32_t i = 0; i < a->n_local; i++) {
        const ws_events *e = &t->locations[a->local[i]].events;
        if (e->n && e->time[e->n - 1] > end[0])
            end[0] = e->time[e->n - 1];
    }
    if ((rc = a->transport->ops->allreduce_f64(a->transport, end, 1, WS_MAX, err))) {
        ws_causes_free(c);
        return rc;
    }
    uint64_t first = t->n_locations; /* none */
    for (uint32_t i = 0; i < a->n_local; i++) {
        const ws_events *e = &t->locations[a->local[i]].events;
        if (e->n && e->time[e->n - 1] == end[0] && a->local[i] < first)
            first = a->local[i];
    }
    if ((rc = a->transport->ops->allreduce_u64(a->transport, &first, 1, WS_MIN, err))) {
        ws_causes_free(c);
        return rc;
    }
    c->end_loc = (uint32_t)first;
    c->t_end = end[0];
    a->result->path_end = end[0];
    *out = c;
    return WS_OK;
}

void ws_causes_handlers(ws_causes *c, int pass, ws_handler *h)
{
    memset(h, 0, sizeof *h);
    h->state = c;
    h->msg_channels = p4_channels;
    /* the critical path follows every event; the delay costs only need
     * the synchronization events */
    h->sparse = pass != 4 || !c->cp;
    if (pass == 4) {
        h->begin = p4_begin;
        h->event = p4_event;
        h->msg_produce = p4_produce;
        h->msg_consume = p4_consume;
        h->coll_active = p4_coll_active;
        h->coll_produce = p4_coll_produce;
        h->coll_consume = p4_coll_consume;
    } else {
        h->msg_produce = p5_produce;
        h->msg_consume = p5_consume;
    }
}

void ws_causes_free(ws_causes *c)
{
    if (!c)
        return;
    if (c->locs) {
        for (uint32_t i = 0; i < c->a->trace->n_locations; i++) {
            cause_loc *cl = &c->locs[i];
            free(cl->sp);
            free(cl->msg_sp);
            free(cl->msg_lr);
            free(cl->site_sp);
            free(cl->gl);
            free(cl->prop_max);
            free(cl->indirect);
        }
        free(c->locs);
    }
    charge_scratch *s = &c->scratch;
    free(s->delta);
    free(s->shortc);
    free(s->longc);
    free(s->waits);
    free(s->prop_s);
    free(s->prop_l);
    free(s->cps);
    free(s->wait_points);
    free(c->acc);
    free(c->in_acc);
    free(c->touched);
    free(c->member);
    free(c);
}

/* Time at which the path begins on the location that held it at its
 * first event (-infinity if that location lives elsewhere). */
double ws_causes_path_first(const ws_causes *c)
{
    double first = -INFINITY;
    for (uint32_t i = 0; i < c->a->n_local; i++) {
        uint32_t loc = c->a->local[i];
        const ws_events *e = &c->a->trace->locations[loc].events;
        /* where the path begins: the first event, or earlier where the
         * path arrived before it (clocks violating the clock condition) */
        if (c->locs[loc].at_start && e->n)
            first = e->time[0] < c->locs[loc].top ? e->time[0] : c->locs[loc].top;
    }
    return first;
}

void ws_causes_undistributed(const ws_causes *c, double *per_location)
{
    for (uint32_t i = 0; i < c->a->n_local; i++)
        per_location[c->a->local[i]] = c->locs[c->a->local[i]].undistributed;
}

/* Propagating share of the Late Sender / Late Receiver waits. */
int ws_causes_finish(ws_causes *c, ws_error *err)
{
    (void)err;
    ws_analysis *a = c->a;
    if (c->delay) {
        for (uint32_t i = 0; i < a->n_local; i++) {
            uint32_t loc = a->local[i];
            const cause_loc *cl = &c->locs[loc];
            for (uint32_t k = 0; k < cl->n_sp; k++) {
                const sync_point *p = &cl->sp[k];
                double prop = cl->prop_max[k] < p->wait ? cl->prop_max[k] : p->wait;
                if (p->wclass == WS_WAIT_LATESENDER)
                    add(c, M_MPI_WAIT_PROPAGATING_LS, p->callpath, loc, prop);
                else if (p->wclass == WS_WAIT_LATERECEIVER)
                    add(c, M_MPI_WAIT_PROPAGATING_LR, p->callpath, loc, prop);
            }
        }
    }
    return WS_OK;
}
