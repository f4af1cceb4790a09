/* Synchronization intervals of the delay analysis (seed 000 section
 * IV-B, seed 004 sections 2.3.1-2.3.3): the mini-profile of an interval
 * and the cost accounting of one interval (the kernel is delay_kernel.c).
 * The points that delimit the intervals are in points.c; the replays
 * that carry the notes between the locations are in causes.c. */
#include "causes_int.h"

static const int short_metric[NCLS] = {
    [WS_WAIT_LATESENDER] = WS_M_DELAY_LATESENDER, [WS_WAIT_LATERECEIVER] = WS_M_DELAY_LATERECEIVER,
    [WS_WAIT_BARRIER] = WS_M_DELAY_BARRIER,       [WS_WAIT_NXN] = WS_M_DELAY_N2N,
    [WS_WAIT_12N] = WS_M_DELAY_12N,               [WS_WAIT_N21] = WS_M_DELAY_N21,
    [WS_WAIT_OMPBARRIER] = WS_M_DELAY_OMPBARRIER, [WS_WAIT_OMPIDLE] = WS_M_DELAY_OMPIDLE,
};
static const int long_metric[NCLS] = {
    [WS_WAIT_LATESENDER] = WS_M_DELAY_LATESENDER_LONGTERM, [WS_WAIT_LATERECEIVER] = WS_M_DELAY_LATERECEIVER_LONGTERM,
    [WS_WAIT_BARRIER] = WS_M_DELAY_BARRIER_LONGTERM,       [WS_WAIT_NXN] = WS_M_DELAY_N2N_LONGTERM,
    [WS_WAIT_12N] = WS_M_DELAY_12N_LONGTERM,               [WS_WAIT_N21] = WS_M_DELAY_N21_LONGTERM,
    [WS_WAIT_OMPBARRIER] = WS_M_DELAY_OMPBARRIER_LONGTERM, [WS_WAIT_OMPIDLE] = WS_M_DELAY_OMPIDLE_LONGTERM,
};

/* ---- mini-profiles ----------------------------------------------------- */

static inline void acc_add(ws_causes *c, uint32_t cp, double v)
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

/* Is point k of `loc` an OpenMP fork? */
static int is_omp_fork(const ws_causes *c, uint32_t loc, uint32_t k)
{
    const sync_point *p = &c->locs[loc].sp[k];
    return p->type == SP_SITE && c->a->sync->locs[loc].sites[p->index].cls == WS_SITE_OMP_FORK;
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
void ws_interval_profile(ws_causes *c, uint32_t loc, uint32_t j, uint32_t k)
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
    if (j != WS_NONE32 && is_omp_fork(c, loc, j)) {
        /* an OpenMP fork opens the interval at the thread's Enter of the
         * parallel region: its time from the fork on counts, less the
         * part before the team's first thread entered (the point's
         * completion; Scalasca 2.6) */
        acc_add(c, point_cp(c, loc, &cl->sp[j]), -cl->sp[j].completion);
    } else if (j != WS_NONE32) {
        /* skip j's call, count its completion part */
        acc_add(c, point_cp(c, loc, &cl->sp[j]), cl->sp[j].completion);
        int depth = 0;
        for (; i < end; i++) {
            if (e->kind[i] == WS_EV_ENTER)
                depth++;
            else if (e->kind[i] == WS_EV_LEAVE && --depth == 0)
                break;
        }
        /* the loop below continues with the Leave of j's call */
    }
    /* acc_add with the accumulator's arrays held in locals: the loop visits
     * about half of all events */
    {
        const uint8_t *kind = e->kind;
        const uint32_t *ref = e->ref, *parent = t->callpaths.parent;
        uint8_t *in_acc = c->in_acc;
        uint32_t *touched = c->touched, n_touched = c->n_touched;
        double *acc = c->acc;
        /* (each event's time read once: it ends one step and begins the next) */
        double now = i < end ? ws_ev_time(e, i) : 0.0;
        for (; i < end; i++) {
            double next = ws_ev_time(e, i + 1);
            if (kind[i] == WS_EV_ENTER)
                cp = ref[i];
            else if (kind[i] == WS_EV_LEAVE)
                cp = parent[ref[i]];
            if (cp != WS_NONE32) {
                if (!in_acc[cp]) {
                    in_acc[cp] = 1;
                    touched[n_touched++] = cp;
                }
                acc[cp] += next - now;
            }
            now = next;
        }
        c->n_touched = n_touched;
    }
    uint32_t lo, hi;
    intermediate_points(cl, j, k, &lo, &hi);
    for (uint32_t q = lo; q < hi; q++)
        if (cl->sp[q].wait > 0.0)
            acc_add(c, point_cp(c, loc, &cl->sp[q]), -cl->sp[q].wait);
    for (uint32_t x = 0; x < c->n_touched; x++)
        if (c->acc[c->touched[x]] < 0.0)
            c->acc[c->touched[x]] = 0.0;
}

void ws_points_between(const ws_causes *c, uint32_t loc, uint64_t from, uint64_t to, uint32_t *lo, uint32_t *hi)
{
    const cause_loc *cl = &c->locs[loc];
    uint32_t a = 0, b = cl->n_sp;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (cl->sp[mid].call_ev < from)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    b = cl->n_sp;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (cl->sp[mid].call_ev < to)
            a = mid + 1;
        else
            b = mid;
    }
    *hi = a;
}

void ws_events_profile(ws_causes *c, uint32_t loc, uint64_t from, uint64_t to)
{
    const ws_trace *t = c->a->trace;
    const ws_events *e = &t->locations[loc].events;
    const cause_loc *cl = &c->locs[loc];
    uint32_t cp = from ? ws_callpath_after(t, e, (int64_t)from - 1) : WS_NONE32;
    for (uint64_t i = from; i < to && i + 1 < e->n; i++) {
        if (e->kind[i] == WS_EV_ENTER)
            cp = e->ref[i];
        else if (e->kind[i] == WS_EV_LEAVE)
            cp = t->callpaths.parent[e->ref[i]];
        acc_add(c, cp, ws_ev_time(e, i + 1) - ws_ev_time(e, i));
    }
    uint32_t lo, hi;
    ws_points_between(c, loc, from, to, &lo, &hi);
    for (uint32_t q = lo; q < hi; q++)
        if (cl->sp[q].wait > 0.0)
            acc_add(c, point_cp(c, loc, &cl->sp[q]), -cl->sp[q].wait);
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


int ws_charge_reserve(charge_scratch *s, size_t n, size_t m)
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
                      const wait_note *note, const entry *entries, size_t *n, uint64_t vector_offset,
                      uint32_t *vector_length)
{
    *n = 0;
    ws_interval_profile(c, loc, from, k);
    for (uint32_t i = 0; i < note->n_entries; i++)
        acc_add(c, entries[i].callpath, -entries[i].value);
    if (ws_charge_reserve(s, c->n_touched + 1, c->locs[loc].n_sp + 1) != 0 ||
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
                  const entry *entries, uint32_t floor, double *indirect, ws_error *err)
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
    if (difference(c, s, loc, from, k, note, entries, &n, vector_offset, &vector_length) != 0)
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
    /* the kernel distributes the whole waiting (as on the whole run);
     * point-to-point waiting with the short-term scale capped at 1 in the
     * proportional model (Scalasca 2.6): what the delayer's excess and
     * waiting in the interval cannot explain stays undistributed */
    int cap = note->wclass == WS_WAIT_LATESENDER || note->wclass == WS_WAIT_LATERECEIVER;
    if (ws_delay_kernel(c->model, cap, note->wait, gl, s->delta, n, s->waits, m, s->shortc, s->longc, s->prop_s,
                        s->prop_l) != 0) {
        /* nothing in the interval explains the waiting (it arose in the
         * call that opened it: a collective, or clocks that disagree): it
         * stays undistributed, as in Scalasca 2.6 */
        cl->undistributed += note->gamma + gl;
        c->a->result->n_entries = vector_offset; /* no record keeps the vector */
        return WS_OK;
    }
    if (cap && c->model == WS_DELAY_PROPORTIONAL) {
        /* the capped part of the waiting: beyond the delayer's excess and waiting */
        double carried = 0.0;
        for (size_t i = 0; i < n; i++)
            carried += s->delta[i];
        for (size_t j = 0; j < m; j++)
            carried += s->waits[j];
        /* (the kernel capped the scale; not for a rounding difference) */
        if (note->wait > carried * (1.0 + 1e-12))
            cl->undistributed += (note->wait - carried) * (note->gamma / note->wait);
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
        if (q < floor) { /* (only when reproducing Scalasca 2.6: scalasca_compat.c) */
            cl->undistributed += s->prop_s[j] + s->prop_l[j];
            continue;
        }
        double *target = point_gl(cl, q); /* q waits: it has a block */
        if (w > NGL || c->gl_at[w] < 0)
            return ws_error_set(err, WS_ERR_INTERNAL, "location %u: waiting of class %u has no long-term cost",
                                (unsigned)loc, (unsigned)w);
        target[c->gl_at[w]] += s->prop_s[j];
        /* (a class without a place carries nothing: adding 0 changes nothing) */
        if (gl > 0.0)
            for (int x = 1; x <= NGL; x++)
                if (c->gl_at[x] >= 0)
                    target[c->gl_at[x]] += s->prop_l[j] * (note->gl[x] / gl);
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
