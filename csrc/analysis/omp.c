/* OpenMP thread teams as the analyses see them: the forks of every
 * master, every thread's visits of parallel regions and the view of the
 * store with the fork and join times (omp.h). */
#include "omp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

int ws_trace_has_openmp(const ws_trace *t)
{
    for (uint32_t r = 0; r < t->n_regions; r++)
        if (t->regions[r].paradigm == OTF2_PARADIGM_OPENMP)
            return 1;
    return 0;
}

double ws_omp_tail(const ws_omp *o, uint32_t loc, uint32_t cp)
{
    if (!o)
        return 0.0;
    const ws_omp_loc *ol = &o->locs[loc];
    for (uint32_t k = 0; k < ol->n_tail; k++)
        if (ol->tail_cp[k] == cp)
            return ol->tail_time[k];
    return 0.0;
}

void ws_omp_free(ws_omp *o)
{
    if (!o)
        return;
    if (o->locs) {
        for (uint32_t l = 0; l < o->store->n_locations; l++) {
            free(o->locs[l].forks);
            free(o->locs[l].visits);
            free(o->locs[l].time);
            free(o->locs[l].tail_cp);
            free(o->locs[l].tail_time);
        }
        free(o->locs);
    }
    free(o->view_locations);
    free(o->group_threads);
    free(o->group_master);
    free(o->group_first);
    free(o->next_in_group);
    free(o);
}

static int has_teams(const ws_events *e)
{
    for (uint64_t k = 0; k < e->n_threads; k++) {
        uint8_t kind = e->kind[e->thr_event[k]];
        if (kind == WS_EV_THREAD_FORK || kind == WS_EV_THREAD_TEAM_BEGIN)
            return 1;
    }
    return 0;
}

/* The forks of location loc (pass A): each with its join and the team
 * its own ThreadTeamBegin names. */
static int find_forks(const ws_trace *t, uint32_t loc, ws_omp_loc *ol, ws_error *err)
{
    const ws_events *e = &t->locations[loc].events;
    size_t cap = 0;
    uint32_t *open = NULL;
    size_t n_open = 0, cap_open = 0;
    int rc = WS_OK;
    for (uint64_t k = 0; k < e->n_threads && rc == WS_OK; k++) {
        uint32_t i = e->thr_event[k];
        uint8_t kind = e->kind[i];
        if (kind == WS_EV_THREAD_FORK) {
            if (ws_grow((void **)&ol->forks, &cap, (size_t)ol->n_forks + 1, sizeof *ol->forks) != 0 ||
                ws_grow((void **)&open, &cap_open, n_open + 1, sizeof *open) != 0) {
                rc = ws_error_nomem(err, "OpenMP teams");
                break;
            }
            ws_omp_fork *f = &ol->forks[ol->n_forks];
            memset(f, 0, sizeof *f);
            f->fork_ev = i;
            f->join_ev = WS_NONE32;
            f->team = WS_NONE32;
            f->depth = (uint32_t)n_open;
            f->fork = ws_ev_time(e, i);
            f->join = ws_ev_time(e, i);
            f->earliest_enter = INFINITY;
            open[n_open++] = ol->n_forks++;
        } else if (kind == WS_EV_THREAD_TEAM_BEGIN) {
            uint32_t c = e->thr_comm[k];
            const ws_comm *cm = c < t->n_comms ? &t->comms[c] : NULL;
            if (n_open && cm && cm->size && cm->rank_location && cm->rank_location[0] == loc &&
                ol->forks[open[n_open - 1]].team == WS_NONE32)
                ol->forks[open[n_open - 1]].team = c;
        } else if (kind == WS_EV_THREAD_JOIN) {
            if (!n_open) {
                rc = ws_error_set(err, WS_ERR_FORMAT, "location %u: ThreadJoin at event %u without a fork",
                                  (unsigned)loc, (unsigned)i);
                break;
            }
            ws_omp_fork *f = &ol->forks[open[--n_open]];
            f->join_ev = i;
            f->join = ws_ev_time(e, i);
        }
    }
    free(open);
    return rc;
}

/* The fork of master m whose team `team` begins the k-th time (k >= 1). */
static uint32_t fork_of(const ws_omp_loc *ml, uint32_t team, uint64_t k)
{
    uint64_t seen = 0;
    for (uint32_t f = 0; f < ml->n_forks; f++)
        if (ml->forks[f].team == team && ++seen == k)
            return f;
    return WS_NONE32;
}

/* The visits of location loc (pass B). */
static int find_visits(const ws_trace *t, ws_omp *o, const unsigned char *local, uint32_t loc, ws_error *err)
{
    const ws_events *e = &t->locations[loc].events;
    ws_omp_loc *ol = &o->locs[loc];
    ws_map64 count;
    ws_map64_init(&count);
    size_t cap = 0;
    int rc = WS_OK;
    int depth = 0, base = 0;
    ws_omp_visit *v = NULL; /* the open visit */
    for (uint64_t i = 0; i < e->n && rc == WS_OK; i++) {
        uint8_t kind = e->kind[i];
        if (kind == WS_EV_ENTER) {
            if (v && v->enter_ev == WS_NONE32 && depth == base) {
                v->enter_ev = (uint32_t)i;
                v->enter = ws_ev_time(e, i);
            }
            depth++;
        } else if (kind == WS_EV_LEAVE) {
            depth--;
            if (v && v->enter_ev != WS_NONE32 && v->leave_ev == WS_NONE32 && depth == base) {
                v->leave_ev = (uint32_t)i;
                v->leave = ws_ev_time(e, i);
            }
        } else if (kind == WS_EV_THREAD_TEAM_BEGIN) {
            uint32_t c = e->thr_comm[e->ref[i]];
            const ws_comm *cm = c < t->n_comms ? &t->comms[c] : NULL;
            uint32_t m = cm && cm->size && cm->rank_location ? cm->rank_location[0] : WS_NONE32;
            if (m == WS_NONE32) {
                rc = ws_error_set(err, WS_ERR_FORMAT, "location %u: event %llu begins a thread team without members",
                                  (unsigned)loc, (unsigned long long)i);
                break;
            }
            if (!local[m]) {
                rc = ws_error_set(err, WS_ERR_ARGUMENT,
                                  "location %u belongs to a thread team forked by location %u, which this analysis "
                                  "does not hold: the threads of a process are analysed together",
                                  (unsigned)loc, (unsigned)m);
                break;
            }
            uint64_t k = 0;
            ws_map64_get(&count, c, &k);
            k++;
            uint32_t f = fork_of(&o->locs[m], c, k);
            if (ws_map64_put(&count, c, k) != 0) {
                rc = ws_error_nomem(err, "OpenMP teams");
                break;
            }
            if (f == WS_NONE32) {
                rc = ws_error_set(err, WS_ERR_FORMAT,
                                  "location %u: thread team begins at event %llu (the %llu-th time) but its master, "
                                  "location %u, forked it fewer times: the trace is inconsistent",
                                  (unsigned)loc, (unsigned long long)i, (unsigned long long)k, (unsigned)m);
                break;
            }
            if (ws_grow((void **)&ol->visits, &cap, (size_t)ol->n_visits + 1, sizeof *ol->visits) != 0) {
                rc = ws_error_nomem(err, "OpenMP teams");
                break;
            }
            v = &ol->visits[ol->n_visits++];
            memset(v, 0, sizeof *v);
            v->begin_ev = (uint32_t)i;
            v->end_ev = v->enter_ev = v->leave_ev = WS_NONE32;
            v->master = m;
            v->fork = f;
            base = depth;
        } else if (kind == WS_EV_THREAD_TEAM_END && v) {
            v->end_ev = (uint32_t)i;
            v = NULL;
        }
    }
    ws_map64_free(&count);
    return rc;
}

/* The view's times of location loc: from the fork to the thread's Enter
 * of the parallel region the fork's time, from its Leave to the join the
 * join's (never against the order of the events). */
static int view_times(const ws_trace *t, ws_omp *o, uint32_t loc, ws_error *err)
{
    const ws_events *e = &t->locations[loc].events;
    ws_omp_loc *ol = &o->locs[loc];
    if (!ol->n_visits)
        return WS_OK;
    double *tm = ws_malloc_array(e->n ? e->n : 1, sizeof *tm);
    if (!tm)
        return ws_error_nomem(err, "OpenMP view");
    ws_events_times(e, tm);
    for (uint32_t k = 0; k < ol->n_visits; k++) {
        const ws_omp_visit *v = &ol->visits[k];
        if (v->enter_ev == WS_NONE32)
            continue;
        const ws_omp_fork *f = &o->locs[v->master].forks[v->fork];
        int master = v->master == loc;
        uint32_t from = master ? f->fork_ev + 1 : v->begin_ev;
        if (f->fork <= ws_ev_time(e, from))
            for (uint32_t i = from; i <= v->enter_ev; i++)
                tm[i] = f->fork;
        if (v->leave_ev == WS_NONE32 || f->join_ev == WS_NONE32)
            continue;
        uint32_t to = master ? f->join_ev - 1 : (v->end_ev != WS_NONE32 ? v->end_ev : v->leave_ev);
        if (f->join >= ws_ev_time(e, to))
            for (uint32_t i = v->leave_ev; i <= to; i++)
                tm[i] = f->join;
    }
    ol->time = tm;
    return WS_OK;
}

int ws_omp_build(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_omp **out, ws_error *err)
{
    *out = NULL;
    /* (threads of an OpenMP program that never forked a team are idle all the time) */
    int any = ws_trace_has_threads(t) && ws_trace_has_openmp(t);
    for (uint32_t i = 0; i < n && !any; i++)
        any = has_teams(&t->locations[locations[i]].events);
    if (!any)
        return WS_OK;
    ws_omp *o = ws_calloc(1, sizeof *o);
    unsigned char *local = ws_calloc(t->n_locations ? t->n_locations : 1, 1);
    int rc = WS_OK;
    if (!o || !local) {
        free(o);
        free(local);
        return ws_error_nomem(err, "OpenMP teams");
    }
    o->store = t;
    uint32_t ng = t->n_location_groups;
    o->locs = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *o->locs);
    o->group_threads = ws_calloc(ng ? ng : 1, sizeof *o->group_threads);
    o->group_master = ws_malloc_array(ng ? ng : 1, sizeof *o->group_master);
    o->view_locations = ws_malloc_array(t->n_locations ? t->n_locations : 1, sizeof *o->view_locations);
    o->group_first = ws_malloc_array(ng ? ng : 1, sizeof *o->group_first);
    o->next_in_group = ws_malloc_array(t->n_locations ? t->n_locations : 1, sizeof *o->next_in_group);
    if (!o->locs || !o->group_threads || !o->group_master || !o->view_locations || !o->group_first ||
        !o->next_in_group) {
        rc = ws_error_nomem(err, "OpenMP teams");
        goto done;
    }
    for (uint32_t g = 0; g < ng; g++)
        o->group_master[g] = o->group_first[g] = WS_NONE32;
    for (uint32_t i = 0; i < n; i++)
        local[locations[i]] = 1;
    /* the local locations of each group, in location order */
    for (uint32_t l = t->n_locations; l-- > 0;) {
        o->next_in_group[l] = WS_NONE32;
        uint32_t g = t->locations[l].group;
        if (local[l] && g < ng) {
            o->next_in_group[l] = o->group_first[g];
            o->group_first[g] = l;
        }
    }
    for (uint32_t l = 0; l < t->n_locations; l++) {
        const ws_location *x = &t->locations[l];
        if (x->group >= ng)
            continue;
        o->group_threads[x->group]++;
        /* the master thread: the MPI location, else the first */
        uint32_t *m = &o->group_master[x->group];
        if (*m == WS_NONE32 || (x->rank != WS_NONE32 && t->locations[*m].rank == WS_NONE32))
            *m = l;
    }
    for (uint32_t i = 0; i < n && rc == WS_OK; i++)
        rc = find_forks(t, locations[i], &o->locs[locations[i]], err);
    for (uint32_t i = 0; i < n && rc == WS_OK; i++)
        rc = find_visits(t, o, local, locations[i], err);
    /* per fork: its team's members and earliest Enter */
    for (uint32_t i = 0; i < n && rc == WS_OK; i++) {
        const ws_omp_loc *ol = &o->locs[locations[i]];
        for (uint32_t k = 0; k < ol->n_visits; k++) {
            const ws_omp_visit *v = &ol->visits[k];
            ws_omp_fork *f = &o->locs[v->master].forks[v->fork];
            f->n_members++;
            if (v->enter_ev != WS_NONE32 && v->enter < f->earliest_enter)
                f->earliest_enter = v->enter;
        }
    }
    for (uint32_t i = 0; i < n && rc == WS_OK; i++)
        rc = view_times(t, o, locations[i], err);
    if (rc == WS_OK) {
        o->view = *t;
        memcpy(o->view_locations, t->locations, t->n_locations * sizeof *o->view_locations);
        for (uint32_t l = 0; l < t->n_locations; l++)
            if (o->locs[l].time)
                o->view_locations[l].events.time = o->locs[l].time;
        o->view.locations = o->view_locations;
    }
done:
    free(local);
    if (rc != WS_OK) {
        ws_omp_free(o);
        return rc;
    }
    *out = o;
    return WS_OK;
}
