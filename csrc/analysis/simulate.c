/* What-if simulation: the forward replay that computes the new times.
 *
 * Every location is walked in its recorded order.  Time outside MPI calls
 * keeps its recorded length, multiplied by the factors of the regions
 * around it (scale, balance).  An MPI call (the outermost one, with all
 * events inside) starts when the program reaches it and is released by
 * the latest of its constraints: the start of the matched send for a
 * receive, the posting of the receive for a synchronous send, the
 * arrivals of the members it needs for a collective.  With the recorded
 * network it then keeps its recorded non-waiting time, the time from its
 * recorded release to its recorded leave: new leave = new release +
 * (recorded leave - recorded release).  The recorded release uses the
 * rules of the wait-state analysis (Late Sender, Late Receiver, the
 * collective patterns), so an unchanged trace is reproduced.  With a
 * network model the call ends at the latest constraint plus the transfer
 * (latency + bytes / bandwidth), and costs nothing else.  Events inside a
 * call keep their relative position in it.  See docs/simulate.md. */
#include "simulate_int.h"

#include <otf2/otf2.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* payloads */
typedef struct send_time {
    double enter, new_enter, bytes;
} send_time;
typedef struct post_time {
    double post, new_post;
} post_time;
typedef struct member_time {
    double enter, new_enter;
} member_time;

/* The new time of a recorded time x at the current point of a location
 * (x lies in the open MPI call, or at/after the last event). */
static double new_of(const sim *s, uint32_t loc, double x)
{
    const sim_loc *st = &s->locs[loc];
    if (st->mpi_depth)
        return st->En + (x - st->E);
    if (st->last >= 0)
        return st->time[st->last] + (x - ws_ev_time(&s->t->locations[loc].events, st->last));
    return x;
}

static double transfer(const sim *s, double bytes)
{
    if (s->o.network != WS_NET_MODEL)
        return 0.0;
    return s->o.latency + (isinf(s->o.bandwidth) ? 0.0 : bytes / s->o.bandwidth);
}

/* The open call may not be released before the constraint: recorded at
 * C, new at Cn; L is the recorded leave of the call that holds it (a
 * constraint after it, a clock violation, counts as at L). */
static void constrain(sim_loc *st, double C, double Cn, double L, double T)
{
    if (!st->mpi_depth)
        return;
    double c = C < L ? C : L;
    double cn = Cn + (c - C);
    if (c > st->R)
        st->R = c;
    if (cn > st->Rn)
        st->Rn = cn;
    if (cn + T > st->M)
        st->M = cn + T;
}

static int push_factor(sim_loc *st, double f, double extra)
{
    if (st->depth == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 32;
        double *a = ws_realloc(st->fac, cap * sizeof *a);
        if (!a)
            return -1;
        st->fac = a;
        double *b = ws_realloc(st->extra, cap * sizeof *b);
        if (!b)
            return -1;
        st->extra = b;
        st->cap = cap;
    }
    st->fac[st->depth] = f;
    st->extra[st->depth++] = extra;
    return 0;
}

static int sim_begin(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    (void)env;
    sim_loc *st = &((sim *)state)->locs[loc];
    st->depth = 0;
    st->mpi_depth = 0;
    st->visit_pos = 0;
    st->last = -1;
    if (push_factor(st, 1.0, 0.0) != 0)
        return ws_error_nomem(err, "simulation");
    return WS_OK;
}

static int sim_event(void *state, const ws_replay_env *env, uint32_t loc, uint64_t ev, ws_error *err)
{
    sim *s = state;
    sim_loc *st = &s->locs[loc];
    const ws_trace *t = env->trace;
    const ws_events *e = &t->locations[loc].events;
    double x = ws_ev_time(e, ev);
    double tn = x;
    if (ev > 0) {
        double g = x - ws_ev_time(e, ev - 1);
        tn = st->time[ev - 1] + (st->mpi_depth ? g : g * st->fac[st->depth - 1]);
    }
    uint8_t kind = e->kind[ev];
    if (st->fork_pending) {
        /* a thread of a team starts from the master's fork, with its
         * recorded delay: the events from its ThreadTeamBegin on (its idle
         * time before them is no work) */
        st->fork_pending = 0;
        uint64_t b = ev;
        while (b > 0 && e->kind[b] != WS_EV_THREAD_TEAM_BEGIN)
            b--;
        double floor = b > 0 ? st->time[b - 1] : -INFINITY;
        for (uint64_t k = b; k < ev; k++) {
            double v = st->new_fork + (ws_ev_time(e, k) - st->fork);
            st->time[k] = v > floor ? v : floor;
            floor = st->time[k];
        }
        double v = st->new_fork + (x - st->fork);
        tn = v > floor ? v : floor;
    }
    if (kind == WS_EV_ENTER || kind == WS_EV_LEAVE) {
        uint32_t cp = e->ref[ev];
        int mpi = cp < t->callpaths.n && s->cp_mpi[cp];
        double scale = cp < t->callpaths.n && s->o.scale ? s->o.scale[cp] : 1.0;
        if (kind == WS_EV_ENTER) {
            double f = st->fac[st->depth - 1], extra = 0.0;
            if (!mpi) {
                f *= scale;
                if (s->o.balance && s->o.balance[cp] && st->visit_pos < st->n_visits) {
                    f *= st->visit_factor[st->visit_pos];
                    extra = st->visit_extra[st->visit_pos];
                    st->visit_pos++;
                }
            }
            if (push_factor(st, f, extra) != 0)
                return ws_error_nomem(err, "simulation");
            if (mpi && st->mpi_depth++ == 0) {
                st->call_enter = ev;
                st->E = st->R = x;
                st->En = st->Rn = st->M = tn;
                st->s = scale;
            }
        } else {
            if (st->depth > 1) {
                if (!st->mpi_depth)
                    tn += st->extra[st->depth - 1];
                st->depth--;
            }
            if (mpi && st->mpi_depth && --st->mpi_depth == 0) {
                double L = x, R = st->R < L ? st->R : L;
                double Ln = s->o.network == WS_NET_MODEL ? st->M : st->Rn + (L - R) * st->s;
                if (Ln < st->En)
                    Ln = st->En;
                /* the events inside keep their relative position */
                double span = L - st->E, ratio = span > 0.0 ? (Ln - st->En) / span : 0.0;
                for (uint64_t k = st->call_enter + 1; k < ev; k++) {
                    double v = st->En + (ws_ev_time(e, k) - st->E) * ratio;
                    st->time[k] = v < Ln ? v : Ln; /* never after the Leave (rounding) */
                }
                tn = Ln;
            }
        }
    }
    st->time[ev] = tn;
    st->last = (int64_t)ev;
    return WS_OK;
}

static int sim_channels(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row)
{
    (void)env;
    return 1 | (((sim *)state)->locs[loc].sync[row] ? 2 : 0);
}

static int sim_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                       ws_buffer *out, ws_error *err)
{
    sim *s = state;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const ws_events *e = &env->trace->locations[loc].events;
    int rc;
    if (channel == 0) { /* the sender: when the send started */
        double enter = ws_msg_enter(e, &ls->msgs[row]);
        send_time p = {enter, new_of(s, loc, enter), (double)ws_msg_bytes(e, row)};
        rc = ws_buffer_append(out, &p, sizeof p);
    } else { /* the receiver: when the receive was posted */
        double post = ws_msg_post(e, &ls->msgs[row]);
        post_time p = {post, new_of(s, loc, post)};
        rc = ws_buffer_append(out, &p, sizeof p);
    }
    return rc ? ws_error_nomem(err, "payload") : WS_OK;
}

static int sim_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                       const void *data, size_t size, ws_error *err)
{
    sim *s = state;
    sim_loc *st = &s->locs[loc];
    const ws_loc_sync *ls = &env->sync->locs[loc];
    const ws_events *e = &env->trace->locations[loc].events;
    if (channel == 0) {
        if (size != sizeof(send_time))
            return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
        send_time p;
        memcpy(&p, data, sizeof p);
        /* a receive completed by a call that can wait ends no earlier than
         * the send started (plus the transfer) */
        if (ls->msgs[row].flags & WS_MSG_MAY_BLOCK)
            constrain(st, p.enter, p.new_enter, ws_msg_leave(e, ls, &ls->msgs[row]), transfer(s, p.bytes));
    } else {
        if (size != sizeof(post_time))
            return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", size);
        post_time p;
        memcpy(&p, data, sizeof p);
        /* a synchronous send completes no earlier than the receive was posted */
        constrain(st, p.post, p.new_post, ws_msg_done(e, &ls->msgs[row]),
                  transfer(s, (double)ws_msg_bytes(e, row)));
    }
    return WS_OK;
}

static int sim_coll_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                            ws_error *err)
{
    sim *s = state;
    const ws_site *st = &env->sync->locs[loc].sites[site];
    const ws_events *e = &env->trace->locations[loc].events;
    double enter = ws_site_enter(e, st);
    member_time p = {enter, new_of(s, loc, enter)};
    if (st->cls == WS_SITE_OMP_FORK && ws_site_member(&env->sync->locs[loc], st) == ws_site_root(e, st)) {
        /* the team's master: its ThreadFork (processed already) */
        uint64_t f = st->enter_event;
        while (f > 0 && e->kind[f] != WS_EV_THREAD_FORK)
            f--;
        if (e->kind[f] == WS_EV_THREAD_FORK) {
            p.enter = ws_ev_time(e, f);
            p.new_enter = s->locs[loc].time[f];
        }
    }
    if (ws_buffer_append(out, &p, sizeof p) != 0)
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

/* bytes this member moved in the collective (sent + received) */
static double site_bytes(const ws_trace *t, const ws_loc_sync *ls, uint32_t loc, uint32_t site)
{
    const ws_events *e = &t->locations[loc].events;
    uint32_t ev = ls->sites[site].event;
    if (ev >= e->n || e->kind[ev] != WS_EV_COLL_END || e->ref[ev] >= e->n_collectives)
        return 0.0;
    uint32_t c = e->ref[ev];
    return (double)e->coll_sent[c] + (double)e->coll_received[c];
}

/* the latest arrival of an instance, computed once per instance and
 * process (so that a collective costs O(members), not O(members^2)) */
typedef struct arrival_cache {
    int ready;
    int bad_size;
    double enter, new_enter;
} arrival_cache;

static int member_at(const ws_coll_view *view, uint32_t m, member_time *p, ws_error *err)
{
    if (m >= view->n_members || !view->data[m])
        return 0;
    if (view->size[m] != sizeof(member_time)) {
        ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", view->size[m]);
        return -1;
    }
    memcpy(p, view->data[m], sizeof *p);
    return 1;
}

/* The constraint of this member (recorded C, new Cn); returns 1 if it has
 * one, 0 if not, -1 on error (err set). */
static int coll_constraint(const ws_events *e, const ws_loc_sync *ls, uint32_t site, const ws_coll_view *view,
                           double *C, double *Cn, ws_error *err)
{
    uint8_t cls = ls->sites[site].cls;
    uint32_t me = ws_site_member(ls, &ls->sites[site]), root = ws_site_root(e, &ls->sites[site]);
    member_time p;
    int rc;
    switch (cls) {
    case WS_SITE_1TON: /* the members wait for the root, the root for nobody */
        if (root == WS_NONE32 || me == root)
            return 0;
        if ((rc = member_at(view, root, &p, err)) <= 0)
            return rc;
        *C = p.enter;
        *Cn = p.new_enter;
        return 1;
    case WS_SITE_NTO1: /* the root waits for every member, the members for nobody */
        if (me != root)
            return 0;
        /* fall through */
    case WS_SITE_BARRIER:
    case WS_SITE_NXN:
    case WS_SITE_INIT:
    case WS_SITE_FINALIZE:
    case WS_SITE_OMP_BARRIER: { /* the latest arrival */
        arrival_cache *k = view->cache;
        if (!k->ready) {
            k->ready = 1;
            k->enter = k->new_enter = -INFINITY;
            for (uint32_t m = 0; m < view->n_members; m++) {
                if ((rc = member_at(view, m, &p, err)) < 0) {
                    k->bad_size = 1;
                    break;
                }
                if (rc && p.enter > k->enter)
                    k->enter = p.enter;
                if (rc && p.new_enter > k->new_enter)
                    k->new_enter = p.new_enter;
            }
        }
        if (k->bad_size) {
            ws_error_set(err, WS_ERR_INTERNAL, "unexpected collective payload size");
            return -1;
        }
        *C = k->enter;
        *Cn = k->new_enter;
        return isfinite(*C) ? 1 : 0;
    }
    case WS_SITE_SCAN: { /* a member waits for the members of lower rank */
        int any = 0;
        *C = *Cn = -INFINITY;
        for (uint32_t m = 0; m < view->n_members && m <= me; m++) {
            if ((rc = member_at(view, m, &p, err)) < 0)
                return -1;
            if (!rc)
                continue;
            any = 1;
            if (p.enter > *C)
                *C = p.enter;
            if (p.new_enter > *Cn)
                *Cn = p.new_enter;
        }
        return any;
    }
    default:
        return 0;
    }
}

static int sim_coll_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site,
                            const ws_coll_view *view, ws_error *err)
{
    sim *s = state;
    sim_loc *st = &s->locs[loc];
    const ws_loc_sync *ls = &env->sync->locs[loc];
    double C = 0.0, Cn = 0.0;
    if (ls->sites[site].cls == WS_SITE_OMP_FORK) {
        member_time p;
        uint32_t root = ws_site_root(&env->trace->locations[loc].events, &ls->sites[site]);
        int rc = member_at(view, root, &p, err);
        if (rc < 0)
            return err->code;
        if (rc && ws_site_member(ls, &ls->sites[site]) != root) {
            st->fork_pending = 1;
            st->fork = p.enter;
            st->new_fork = p.new_enter;
        }
        return WS_OK;
    }
    int has = coll_constraint(&env->trace->locations[loc].events, ls, site, view, &C, &Cn, err);
    if (has < 0)
        return err->code;
    double T = transfer(s, site_bytes(env->trace, ls, loc, site));
    if (has)
        constrain(st, C, Cn, ws_site_leave(&env->trace->locations[loc].events, &ls->sites[site]), T);
    else if (st->mpi_depth && st->En + T > st->M)
        st->M = st->En + T;
    return WS_OK;
}

static void sim_handlers(sim *s, ws_handler *h)
{
    memset(h, 0, sizeof *h);
    h->state = s;
    h->begin = sim_begin;
    h->event = sim_event;
    h->msg_channels = sim_channels;
    h->msg_produce = sim_produce;
    h->msg_consume = sim_consume;
    h->coll_produce = sim_coll_produce;
    h->coll_consume = sim_coll_consume;
    h->coll_cache_size = sizeof(arrival_cache);
}

static int region_named(const ws_trace *t, uint32_t cp, const char *a, const char *b)
{
    const char *name = ws_trace_string(t, t->regions[t->callpaths.region[cp]].name);
    return name && (strcmp(name, a) == 0 || strcmp(name, b) == 0);
}

static int run(sim *s, ws_transport *tr, const ws_progress *progress, ws_error *err)
{
    const ws_trace *t = s->t;
    uint32_t C = t->callpaths.n;
    s->cp_mpi = ws_calloc(C ? C : 1, 1);
    s->cp_ssend = ws_calloc(C ? C : 1, 1);
    if (!s->cp_mpi || !s->cp_ssend)
        return ws_error_nomem(err, "simulation");
    for (uint32_t cp = 0; cp < C; cp++) {
        uint32_t r = t->callpaths.region[cp];
        const ws_region *rg = &t->regions[r];
        s->cp_mpi[cp] = (r < s->sync->n_regions && s->sync->region_mpi[r] != WS_MPIFN_NONE) ||
                        (rg->paradigm == OTF2_PARADIGM_OPENMP &&
                         (rg->role == OTF2_REGION_ROLE_BARRIER || rg->role == OTF2_REGION_ROLE_IMPLICIT_BARRIER));
        s->cp_ssend[cp] = s->cp_mpi[cp] && region_named(t, cp, "MPI_Ssend", "MPI_Issend");
    }
    int rc = WS_OK;
    for (uint32_t k = 0; k < s->n_local && rc == WS_OK; k++) {
        uint32_t loc = s->local[k];
        sim_loc *st = &s->locs[loc];
        uint64_t n = t->locations[loc].events.n, m = s->sync->locs[loc].n_messages;
        st->time = ws_malloc_array(n ? n : 1, sizeof *st->time);
        st->sync = ws_calloc(m ? m : 1, 1);
        if (!st->time || !st->sync)
            rc = ws_error_nomem(err, "simulation");
    }
    if ((rc = ws_agree_status(tr, rc, err)))
        return rc;
    if ((rc = ws_sim_balance(s, tr, err)))
        return rc;
    ws_replay_env env;
    memset(&env, 0, sizeof env);
    env.trace = t;
    env.sync = s->sync;
    env.locations = s->local;
    env.n_locations = s->n_local;
    ws_handler h;
    env.name = "simulation: synchronous sends 1/2";
    ws_sim_sync_handlers(s, 1, &h);
    if ((rc = ws_replay_run(&env, tr, &h, 1, progress, err)))
        return rc;
    env.name = "simulation: synchronous sends 2/2";
    env.backward = 1;
    ws_sim_sync_handlers(s, 2, &h);
    if ((rc = ws_replay_run(&env, tr, &h, 1, progress, err)))
        return rc;
    env.name = "simulation";
    env.backward = 0;
    sim_handlers(s, &h);
    rc = ws_replay_run(&env, tr, &h, 1, progress, err);
    if (rc == WS_ERR_MATCH && s->stats.sync_sends) {
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof err->message - len,
                 " (or: the simulation takes %llu sends as synchronous, MPI_Ssend or a recorded Late Receiver of "
                 "more than %u bytes; if the program relied on MPI buffering them, they wait for each other)",
                 (unsigned long long)s->stats.sync_sends, WS_SIM_EAGER_LIMIT);
    }
    return rc;
}

static int check_options(const ws_sim_options *o, ws_error *err)
{
    if (o->network != WS_NET_RECORDED && o->network != WS_NET_MODEL)
        return ws_error_set(err, WS_ERR_ARGUMENT, "simulation: unknown network %d", o->network);
    if (o->network == WS_NET_MODEL &&
        (!(o->latency >= 0.0) || !isfinite(o->latency) || !(o->bandwidth > 0.0)))
        return ws_error_set(err, WS_ERR_ARGUMENT,
                            "simulation: the network needs a finite latency >= 0 and a bandwidth > 0, got %g s and "
                            "%g bytes/s", o->latency, o->bandwidth);
    return WS_OK;
}

int ws_simulate(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_transport *tr, const ws_sim_options *o,
                const ws_progress *progress, double **times, ws_sim_stats *stats, ws_error *err)
{
    for (uint32_t i = 0; i < n; i++)
        times[locations[i]] = NULL;
    memset(stats, 0, sizeof *stats);
    int rc = check_options(o, err);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < n; i++)
        if (locations[i] >= t->n_locations || !t->locations[locations[i]].loaded)
            return ws_error_set(err, WS_ERR_ARGUMENT,
                                "location %u is not loaded: the simulation needs the events of every location it "
                                "replays", (unsigned)locations[i]);
    for (uint32_t cp = 0; o->scale && cp < t->callpaths.n; cp++)
        if (!(o->scale[cp] > 0.0) || !isfinite(o->scale[cp]))
            return ws_error_set(err, WS_ERR_ARGUMENT, "simulation: scale factors must be finite and > 0, got %g",
                                o->scale[cp]);
    sim s;
    memset(&s, 0, sizeof s);
    s.t = t;
    s.o = *o;
    s.local = locations;
    s.n_local = n;
    ws_sync *sync = NULL;
    if ((rc = ws_sync_build(t, locations, n, tr, &sync, err)))
        goto done;
    s.sync = sync;
    s.locs = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *s.locs);
    if (!s.locs) {
        rc = ws_error_nomem(err, "simulation");
        goto done;
    }
    if ((rc = ws_replay_share_layout(tr, t, locations, n, err)))
        goto done;
    rc = run(&s, tr, progress, err);
    if (rc == WS_OK) {
        /* where the run ends, before and after (the clock's length) */
        double ends[2] = {-INFINITY, -INFINITY};
        for (uint32_t i = 0; i < n; i++) {
            const ws_events *e = &t->locations[locations[i]].events;
            for (uint64_t k = 0; k < e->n; k++) {
                if (ws_ev_time(e, k) > ends[0])
                    ends[0] = ws_ev_time(e, k);
                if (s.locs[locations[i]].time[k] > ends[1])
                    ends[1] = s.locs[locations[i]].time[k];
            }
        }
        rc = tr->ops->allreduce_f64(tr, ends, 2, WS_MAX, err);
        s.stats.recorded_end = ends[0];
        s.stats.simulated_end = ends[1];
        /* the counts of the whole trace on every process */
        uint64_t counts[2] = {s.stats.sync_sends, s.stats.balanced_visits};
        if (rc == WS_OK)
            rc = tr->ops->allreduce_u64(tr, counts, 2, WS_SUM, err);
        s.stats.sync_sends = counts[0];
        s.stats.balanced_visits = counts[1];
    }
    *stats = s.stats;
done:
    if (s.locs) {
        for (uint32_t i = 0; i < n; i++) {
            sim_loc *st = &s.locs[locations[i]];
            if (rc == WS_OK)
                times[locations[i]] = st->time;
            else
                free(st->time);
            free(st->sync);
            free(st->visit_factor);
            free(st->visit_extra);
            free(st->fac);
            free(st->extra);
        }
        free(s.locs);
    }
    free(s.cp_mpi);
    free(s.cp_ssend);
    ws_sync_free(sync);
    if (rc == WS_ERR_MATCH || rc == WS_ERR_FORMAT)
        ws_trace_error_in(t, err);
    return rc;
}
