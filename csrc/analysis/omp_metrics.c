/* The OpenMP metrics that need no replay (after the time profile, per
 * process; all threads of a process are local): thread management (fork
 * and join time), idle threads and limited parallelism, and the
 * contention of critical sections and locks.  Definitions:
 * docs/metrics.md; the teams and the view of the store: omp.h. */
#include "waitstates_int.h"

#include <otf2/otf2.h>

/* Adds `part` of call path cp on loc to `metric` and its parents up to
 * (without) `stop`. */
static void add_up(ws_analysis *a, int metric, int stop, uint32_t cp, uint32_t loc, double part)
{
    for (int m = metric; m >= 0 && m != stop; m = ws_metric_parent(m))
        add(a, m, cp, loc, part);
}

/* Fork and join time: the view counts a team thread's time in the
 * parallel region from the master's fork to its join (omp.h); what lies
 * before the thread's own Enter and after its Leave is OpenMP management,
 * not computation. */
static void management(ws_analysis *a, uint32_t loc)
{
    const ws_omp_loc *ol = &a->omp->locs[loc];
    const ws_events *view = &a->trace->locations[loc].events, *rec = &a->store->locations[loc].events;
    const ws_analysis_options *o = &a->options;
    for (uint32_t k = 0; k < ol->n_visits; k++) {
        const ws_omp_visit *v = &ol->visits[k];
        if (v->enter_ev == WS_NONE32)
            continue;
        uint32_t cp = rec->ref[v->enter_ev];
        double t0 = ws_ev_time(view, v->enter_ev), t1 = ws_ev_time(rec, v->enter_ev);
        double fork = ws_window_part(o, t0, t1, t1 - t0);
        double join = 0.0;
        if (v->leave_ev != WS_NONE32) {
            t0 = ws_ev_time(rec, v->leave_ev);
            t1 = ws_ev_time(view, v->leave_ev);
            join = ws_window_part(o, t0, t1, t1 - t0);
        }
        if (fork > 0.0) {
            add_up(a, WS_M_OMP_FORK, WS_M_EXECUTION, cp, loc, fork);
            add(a, WS_M_COMP, cp, loc, -fork);
        }
        if (join > 0.0) {
            add_up(a, WS_M_OMP_MANAGEMENT, WS_M_EXECUTION, cp, loc, join);
            add(a, WS_M_COMP, cp, loc, -join);
        }
    }
}

/* The tail of each parallel region on a thread other than its team's
 * master (omp.h: ws_omp_loc.tail_cp): from the Enter of its last OpenMP
 * barrier (or from the fork, without one) to its team's end. */
static int tails(ws_analysis *a, uint32_t loc, ws_error *err)
{
    const ws_trace *t = a->trace;
    const ws_events *e = &t->locations[loc].events;
    ws_omp_loc *ol = &a->omp->locs[loc];
    size_t cap = 0;
    for (uint32_t k = 0; k < ol->n_visits; k++) {
        const ws_omp_visit *v = &ol->visits[k];
        if (v->master == loc || v->enter_ev == WS_NONE32)
            continue;
        uint32_t end = v->end_ev != WS_NONE32 ? v->end_ev : (v->leave_ev != WS_NONE32 ? v->leave_ev : WS_NONE32);
        if (end == WS_NONE32)
            continue;
        uint32_t from = v->enter_ev;
        for (uint32_t i = v->enter_ev + 1; i < end; i++)
            if (e->kind[i] == WS_EV_ENTER) {
                const ws_region *r = &t->regions[t->callpaths.region[e->ref[i]]];
                if (r->paradigm == OTF2_PARADIGM_OPENMP &&
                    (r->role == OTF2_REGION_ROLE_BARRIER || r->role == OTF2_REGION_ROLE_IMPLICIT_BARRIER))
                    from = i;
            }
        uint32_t cp = e->ref[from];
        for (uint32_t i = from; i < end; i++) {
            if (i > from) {
                if (e->kind[i] == WS_EV_ENTER)
                    cp = e->ref[i];
                else if (e->kind[i] == WS_EV_LEAVE)
                    cp = t->callpaths.parent[e->ref[i]];
            }
            double t0 = ws_ev_time(e, i), t1 = ws_ev_time(e, i + 1), d = t1 - t0;
            if (!(d > 0.0))
                continue;
            uint32_t j = 0;
            while (j < ol->n_tail && ol->tail_cp[j] != cp)
                j++;
            if (j == ol->n_tail) {
                size_t c2 = cap;
                if (ws_grow((void **)&ol->tail_cp, &cap, (size_t)j + 1, sizeof *ol->tail_cp) != 0 ||
                    ws_grow((void **)&ol->tail_time, &c2, (size_t)j + 1, sizeof *ol->tail_time) != 0)
                    return ws_error_nomem(err, "OpenMP activity");
                ol->tail_cp[j] = cp;
                ol->tail_time[j] = 0.0;
                ol->n_tail++;
            }
            ol->tail_time[j] += ws_window_part(&a->options, t0, t1, d);
        }
    }
    return WS_OK;
}

/* Time of master m per call path in [from_ev, to_ev) of its events (view
 * times), into acc (entries touched listed in cps). */
static void profile(const ws_analysis *a, uint32_t m, uint64_t from_ev, uint64_t to_ev, double *acc, uint8_t *in,
                    uint32_t *cps, uint32_t *n_cps)
{
    const ws_trace *t = a->trace;
    const ws_events *e = &t->locations[m].events;
    uint32_t cur = from_ev ? ws_callpath_after(t, e, (int64_t)from_ev - 1) : WS_NONE32;
    for (uint64_t i = from_ev; i < to_ev && i + 1 < e->n; i++) {
        if (e->kind[i] == WS_EV_ENTER)
            cur = e->ref[i];
        else if (e->kind[i] == WS_EV_LEAVE)
            cur = t->callpaths.parent[e->ref[i]];
        if (cur == WS_NONE32)
            continue;
        double t0 = ws_ev_time(e, i), t1 = ws_ev_time(e, i + 1);
        double v = ws_window_part(&a->options, t0, t1, t1 - t0);
        if (v == 0.0)
            continue;
        if (!in[cur]) {
            in[cur] = 1;
            cps[(*n_cps)++] = cur;
        }
        acc[cur] += v;
    }
}

/* Idle threads: every worker thread of a process is idle while its master
 * runs outside parallel regions (at the master's call paths), and a
 * worker that a team leaves out also during that team's parallel region
 * (limited parallelism).  Scalasca's Time includes it (its definition of
 * Time); Execution does not. */
static int idle_threads(ws_analysis *a, uint32_t m, ws_error *err)
{
    const ws_trace *t = a->trace;
    const ws_omp *o = a->omp;
    const ws_omp_loc *ml = &o->locs[m];
    uint32_t g = t->locations[m].group;
    uint32_t C = t->callpaths.n ? t->callpaths.n : 1;
    double *acc = ws_calloc(C, sizeof *acc);
    uint8_t *in = ws_calloc(C, 1);
    uint32_t *cps = ws_malloc_array(C, sizeof *cps);
    int rc = WS_OK;
    if (!acc || !in || !cps) {
        rc = ws_error_nomem(err, "idle threads");
        goto done;
    }
    const ws_events *e = &t->locations[m].events;
    /* the master alone: outside its top-level forks */
    uint32_t n_cps = 0;
    uint64_t from = 0;
    for (uint32_t f = 0; f < ml->n_forks; f++) {
        const ws_omp_fork *fk = &ml->forks[f];
        if (fk->depth)
            continue;
        profile(a, m, from, fk->fork_ev, acc, in, cps, &n_cps);
        from = fk->join_ev != WS_NONE32 ? fk->join_ev : e->n;
    }
    profile(a, m, from, e->n, acc, in, cps, &n_cps);
    for (uint32_t l = o->group_first[g]; l != WS_NONE32; l = o->next_in_group[l]) {
        if (l == m)
            continue;
        for (uint32_t i = 0; i < n_cps; i++) {
            add(a, WS_M_TIME, cps[i], l, acc[cps[i]]);
            add(a, WS_M_OMP_IDLE_THREADS, cps[i], l, acc[cps[i]]);
        }
    }
    for (uint32_t i = 0; i < n_cps; i++) {
        acc[cps[i]] = 0.0;
        in[cps[i]] = 0;
    }
    /* teams without some of the process's threads */
    uint32_t threads = o->group_threads[g];
    for (uint32_t f = 0; f < ml->n_forks; f++) {
        const ws_omp_fork *fk = &ml->forks[f];
        if (fk->depth || fk->n_members >= threads || fk->join_ev == WS_NONE32)
            continue;
        n_cps = 0;
        profile(a, m, fk->fork_ev, fk->join_ev, acc, in, cps, &n_cps);
        for (uint32_t l = o->group_first[g]; l != WS_NONE32; l = o->next_in_group[l]) {
            if (l == m)
                continue;
            /* did l take part in this team? */
            const ws_omp_loc *ol = &o->locs[l];
            int member = 0;
            for (uint32_t k = 0; k < ol->n_visits && !member; k++)
                member = ol->visits[k].master == m && ol->visits[k].fork == f;
            if (member)
                continue;
            for (uint32_t i = 0; i < n_cps; i++) {
                double v = acc[cps[i]];
                add(a, WS_M_TIME, cps[i], l, v);
                add(a, WS_M_OMP_IDLE_THREADS, cps[i], l, v);
                add(a, WS_M_OMP_LIMITED_PARALLELISM, cps[i], l, v);
            }
        }
        for (uint32_t i = 0; i < n_cps; i++) {
            acc[cps[i]] = 0.0;
            in[cps[i]] = 0;
        }
    }
done:
    free(acc);
    free(in);
    free(cps);
    return rc;
}

/* ---- lock contention ------------------------------------------------------ */

typedef struct release {
    double time;
    uint32_t loc;
} release;

/* The region an event happens in: its Enter event (WS_NONE32: none). */
typedef struct open_region {
    uint32_t enter;
} open_region;

/* Critical sections and OpenMP locks of the threads of process g (its
 * local locations): an acquisition waits from the Enter of the region it
 * happens in (the critical construct or omp_set_lock) until the previous
 * holder released the lock (the release of the acquisition order before
 * it), as Scalasca 2.6 computes it. */
static int lock_contention(ws_analysis *a, uint32_t g, ws_error *err)
{
    const ws_trace *t = a->trace;
    ws_map64 index;
    ws_map64_init(&index);
    release *rel = NULL;
    size_t n_rel = 0, cap_rel = 0;
    uint32_t *stack = NULL;
    size_t cap_stack = 0;
    int rc = WS_OK;
    const ws_omp *o = a->omp;
    for (uint32_t l = o->group_first[g]; l != WS_NONE32 && rc == WS_OK; l = o->next_in_group[l]) {
        const ws_events *e = &t->locations[l].events;
        for (uint64_t k = 0; k < e->n_threads; k++) {
            uint32_t i = e->thr_event[k];
            if (e->kind[i] != WS_EV_THREAD_RELEASE_LOCK || e->thr_model[k] != OTF2_PARADIGM_OPENMP)
                continue;
            uint64_t key = e->thr_a[k] << 32 | (e->thr_b[k] & 0xffffffffu);
            if (ws_grow((void **)&rel, &cap_rel, n_rel + 1, sizeof *rel) != 0 || ws_map64_put(&index, key, n_rel) != 0) {
                rc = ws_error_nomem(err, "lock contention");
                break;
            }
            rel[n_rel++] = (release){ws_ev_time(e, i), l};
        }
    }
    for (uint32_t l = o->group_first[g]; l != WS_NONE32 && rc == WS_OK && n_rel; l = o->next_in_group[l]) {
        const ws_events *e = &t->locations[l].events;
        size_t depth = 0;
        uint64_t k = 0;
        for (uint64_t i = 0; i < e->n && rc == WS_OK; i++) {
            uint8_t kind = e->kind[i];
            if (kind == WS_EV_ENTER) {
                if (ws_grow((void **)&stack, &cap_stack, depth + 1, sizeof *stack) != 0) {
                    rc = ws_error_nomem(err, "lock contention");
                    break;
                }
                stack[depth++] = (uint32_t)i;
            } else if (kind == WS_EV_LEAVE) {
                if (depth)
                    depth--;
            } else if (kind == WS_EV_THREAD_ACQUIRE_LOCK) {
                while (k < e->n_threads && e->thr_event[k] < i)
                    k++;
                if (k >= e->n_threads || e->thr_model[k] != OTF2_PARADIGM_OPENMP || !depth || e->thr_b[k] == 0)
                    continue;
                uint64_t key = e->thr_a[k] << 32 | ((e->thr_b[k] - 1) & 0xffffffffu), at;
                if (!ws_map64_get(&index, key, &at))
                    continue;
                uint32_t enter = stack[depth - 1];
                double wait = rel[at].time - ws_ev_time(e, enter);
                if (!(wait > 0.0))
                    continue;
                uint32_t cp = e->ref[enter];
                const ws_region *r = &t->regions[t->callpaths.region[cp]];
                int critical = r->role == OTF2_REGION_ROLE_CRITICAL || r->role == OTF2_REGION_ROLE_ATOMIC;
                wait_instance wi = {ws_ev_time(e, enter), rel[at].time, (uint32_t)i, rel[at].loc, WS_WO_NONE};
                rc = ws_add_wait(a, critical ? WS_WP_OMP_CRITICAL : WS_WP_OMP_LOCK_API, cp, l, wait, &wi, err);
            }
        }
    }
    ws_map64_free(&index);
    free(rel);
    free(stack);
    return rc;
}

int ws_omp_metrics(ws_analysis *a, ws_error *err)
{
    if (!a->omp)
        return WS_OK;
    const ws_trace *t = a->trace;
    int rc = WS_OK;
    for (uint32_t i = 0; i < a->n_local && rc == WS_OK; i++) {
        uint32_t loc = a->local[i];
        management(a, loc);
        if ((rc = tails(a, loc, err)))
            break;
        uint32_t g = t->locations[loc].group;
        if (g < t->n_location_groups && a->omp->group_master[g] == loc) {
            if ((rc = idle_threads(a, loc, err)) == WS_OK)
                rc = lock_contention(a, g, err);
        }
    }
    return rc;
}
