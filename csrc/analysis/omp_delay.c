/* The delay costs of idle OpenMP worker threads (Scalasca 2.6's OpenMP
 * idleness delay costs): while the master thread of a process runs
 * outside parallel regions, its n - 1 worker threads idle.  Each stretch
 * from a join (or the start) to the next fork (or the end) is an interval
 * whose idle time, (n - 1) times its length, the delay kernel charges to
 * what the master did there: its work as short-term cost
 * (delay_ompidle), its own waiting as a wait state that passes the cost
 * on as long-term cost (delay_ompidle_longterm, charged where pass 4
 * finds what caused that waiting).  Computed before pass 4, from the
 * master's events alone: it only adds long-term costs to the master's
 * waiting points, which pass 4 then carries. */
#include "causes_int.h"

/* Waiting at MPI_Finalize of loc (its site `fin`, WS_NONE32: none) if
 * its call begins in [from, to), taken out of the accumulated profile: no
 * wait state with delay costs, but the master's waiting all the same (it
 * is no work). */
static double finalize_wait(ws_causes *c, uint32_t loc, uint32_t fin, uint64_t from, uint64_t to)
{
    const ws_analysis *a = c->a;
    ws_result *r = a->result;
    if (fin == WS_NONE32 || r->slot[WS_M_MPI_FINALIZE_WAIT] < 0)
        return 0.0;
    const ws_site *st = &a->sync->locs[loc].sites[fin];
    if (st->enter_event < from || st->enter_event >= to)
        return 0.0;
    uint32_t cp = ws_site_callpath(&a->trace->locations[loc].events, st);
    if (cp >= a->trace->callpaths.n || !c->in_acc[cp])
        return 0.0;
    double v = *ws_cube_cell(r, WS_M_MPI_FINALIZE_WAIT, cp, loc);
    if (v > c->acc[cp])
        v = c->acc[cp];
    c->acc[cp] -= v;
    return v;
}

/* The idle interval [from, to) of master loc with `idle` worker threads. */
static int charge(ws_causes *c, charge_scratch *s, uint32_t loc, uint32_t fin, uint64_t from, uint64_t to, double idle,
                  ws_error *err)
{
    const ws_analysis *a = c->a;
    const ws_events *e = &a->trace->locations[loc].events;
    cause_loc *cl = &c->locs[loc];
    if (to > e->n)
        to = e->n;
    if (from >= to)
        return WS_OK;
    ws_events_profile(c, loc, from, to);
    double fin_wait = finalize_wait(c, loc, fin, from, to);
    uint32_t lo, hi;
    ws_points_between(c, loc, from, to, &lo, &hi);
    size_t m = 0;
    for (uint32_t q = lo; q < hi; q++)
        m += cl->sp[q].wait > 0.0;
    if (ws_charge_reserve(s, c->n_touched + 1, m + 1) != 0) {
        ws_profile_reset(c);
        return ws_error_nomem(err, "idle threads");
    }
    size_t n = 0;
    double sum = 0.0;
    for (uint32_t i = 0; i < c->n_touched; i++) {
        uint32_t cp = c->touched[i];
        if (c->acc[cp] > 0.0) {
            s->cps[n] = cp;
            s->delta[n++] = c->acc[cp];
            sum += c->acc[cp];
        }
    }
    ws_profile_reset(c);
    m = 0;
    for (uint32_t q = lo; q < hi; q++)
        if (cl->sp[q].wait > 0.0) {
            s->wait_points[m] = q;
            s->waits[m++] = cl->sp[q].wait;
            sum += cl->sp[q].wait;
        }
    /* in an analysis window: only the part of the interval inside it */
    double t0 = ws_ev_time(e, from), t1 = ws_ev_time(e, to < e->n ? to : e->n - 1);
    double ratio = ws_window_part(&a->options, t0, t1, 1.0);
    if (t1 <= t0)
        ratio = ws_window_has(&a->options, t0) ? 1.0 : 0.0;
    cl->undistributed += idle * fin_wait * ratio;
    double wait = idle * sum;
    if (!(wait > 0.0) || ratio == 0.0)
        return WS_OK;
    /* the idle threads' time is thread-time: the master's work and waiting
     * in the interval as the threads' idle time during them, so that the
     * wait-first model lets the master's waiting take what idled then */
    for (size_t i = 0; i < n; i++)
        s->delta[i] *= idle;
    for (size_t j = 0; j < m; j++)
        s->waits[j] *= idle;
    if (ws_delay_kernel(c->model, 0, wait, 0.0, s->delta, n, s->waits, m, s->shortc, s->longc, s->prop_s,
                        s->prop_l) != 0) {
        cl->undistributed += wait * ratio;
        return WS_OK;
    }
    for (size_t i = 0; i < n; i++)
        add(c, WS_M_DELAY_OMPIDLE, s->cps[i], loc, s->shortc[i] * ratio);
    for (size_t j = 0; j < m; j++) {
        double *gl = point_gl(cl, s->wait_points[j]);
        gl[c->gl_at[WS_WAIT_OMPIDLE]] += s->prop_s[j] * ratio;
    }
    return WS_OK;
}

int ws_omp_idle_costs(ws_causes *c, ws_error *err)
{
    const ws_analysis *a = c->a;
    const ws_omp *o = a->omp;
    if (!o)
        return WS_OK;
    const ws_trace *t = a->trace;
    charge_scratch *s = &c->scratch; /* free between the passes that use it */
    int rc = WS_OK;
    for (uint32_t i = 0; i < a->n_local && rc == WS_OK; i++) {
        uint32_t loc = a->local[i];
        uint32_t g = t->locations[loc].group;
        if (g >= t->n_location_groups || o->group_master[g] != loc || o->group_threads[g] < 2)
            continue;
        double idle = (double)(o->group_threads[g] - 1);
        const ws_omp_loc *ml = &o->locs[loc];
        const ws_loc_sync *ls = &a->sync->locs[loc];
        uint32_t fin = WS_NONE32;
        for (uint32_t k = ls->n_sites; k-- > 0 && fin == WS_NONE32;)
            if (ls->sites[k].cls == WS_SITE_FINALIZE)
                fin = k;
        uint64_t from = 0, n = t->locations[loc].events.n;
        for (uint32_t f = 0; f < ml->n_forks && rc == WS_OK && from < n; f++) {
            const ws_omp_fork *fk = &ml->forks[f];
            if (fk->depth)
                continue;
            rc = charge(c, s, loc, fin, from, fk->fork_ev, idle, err);
            from = fk->join_ev != WS_NONE32 ? fk->join_ev : n;
        }
        if (rc == WS_OK)
            rc = charge(c, s, loc, fin, from, n, idle, err);
    }
    return rc;
}
