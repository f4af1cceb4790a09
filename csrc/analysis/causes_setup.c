/* The delay and critical-path analysis before and after its replays
 * (causes.c): the synchronization points of every local location, where
 * the path ends, whether it is walked in one place (path_walk.c); after
 * the replays, the propagating share of the waiting, and releasing it
 * all. */
#include "causes_int.h"

/* Whether the critical path is walked in one place (path_walk.c) rather
 * than moved with the notes of pass 4.  With the notes, a member that
 * waited at a collective instance cannot write its note before it knows
 * whether it holds the path: where the instance spans processes (or
 * threads), that is a round trip (2-8 us here) per such member.  Messages
 * cost nothing more: their notes wait for the replay anyway.  The walk
 * costs 40-200 ns per exchange, on one process while the others wait.  So
 * the path is walked when those members are at least a tenth of the
 * exchanges (the 2-rank barrier trace: about a quarter; the 1024-rank
 * stencil on two threads: none).  The exchanges bound the items (one per
 * point and per collective site). */
static int choose_walk(ws_causes *c, ws_error *err)
{
    const ws_analysis *a = c->a;
    c->walk = 0;
    if (!c->cp || a->options.path_walk == WS_PATH_WALK_NEVER)
        return WS_OK;
    if (a->options.path_walk == WS_PATH_WALK_ALWAYS) {
        c->walk = 1;
        return WS_OK;
    }
    if (a->transport->n_processes < 2)
        return WS_OK;
    uint64_t count[2] = {0, 0}; /* members waiting across processes, exchanges */
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        const ws_loc_sync *ls = &a->sync->locs[loc];
        const cause_site *cs = c->locs[loc].sites;
        count[1] += c->locs[loc].n_sp;
        for (uint32_t s = 0; s < ls->n_sites; s++) {
            const ws_site *st = &ls->sites[s];
            if (!cs[s].anywait || st->cls == WS_SITE_OTHER || st->cls == WS_SITE_SCAN || st->cls == WS_SITE_INIT)
                continue;
            count[1]++;
            if (cs[s].waited && ws_site_expected_local(a->sync, st) < ws_site_members(a->sync, st))
                count[0]++;
        }
    }
    uint64_t local_items = count[1];
    int rc = a->transport->ops->allreduce_u64(a->transport, count, 2, WS_SUM, err);
    /* process 0 receives every item (between processes in one MPI
     * message, which holds less than 2 GiB): beyond 1 GiB of them the
     * path stays in the notes */
    if (rc == WS_OK)
        c->walk = count[0] > 0 && count[0] * 10 >= count[1] && count[1] <= ((uint64_t)1 << 30) / sizeof(walk_item);
    /* the local items, bounded by the local exchanges, reserved at once
     * (not copied as they double; ws_walk_item would still grow them) */
    if (rc == WS_OK && c->walk &&
        ws_grow((void **)&c->walk_items, &c->cap_walk, local_items ? (size_t)local_items : 1, sizeof *c->walk_items) != 0)
        rc = ws_error_nomem(err, "critical path");
    return rc;
}

/* The classes in which some point of the trace waits (present[x] = 1),
 * over all processes: only they have a place in the points' blocks of
 * long-term costs (cause_loc.gl), since a long-term cost of class x
 * arises only from a waiting of class x.  Collective; first in
 * ws_causes_prepare, before anything there can fail on one process only. */
static int waiting_classes(const ws_analysis *a, uint64_t present[NGL + 1], ws_error *err)
{
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        const ws_loc_sync *ls = &a->sync->locs[loc];
        const ws_loc_data *d = &a->locs[loc];
        for (uint64_t row = 0; row < ls->n_messages; row++) {
            if (ls->msgs[row].flags & WS_MSG_SEND)
                present[WS_WAIT_LATERECEIVER] |= ws_md_lr(d, row) > 0.0;
            else
                present[WS_WAIT_LATESENDER] |= ws_md_ls(d, row) > 0.0;
        }
        for (uint32_t s = 0; s < ls->n_sites; s++) {
            uint8_t kind = d->site_waits[s].kind;
            if (handled(kind) && d->site_waits[s].wait > 0.0)
                present[kind] = 1;
        }
    }
    /* (the OpenMP idle costs go to the points' blocks too: omp_delay.c) */
    if (a->omp)
        present[WS_WAIT_OMPIDLE] = 1;
    return a->transport->ops->allreduce_u64(a->transport, present, NGL + 1, WS_MAX, err);
}

/* messages and sites whose wait-state memory is given back at once (about
 * 24 MB): each return walks every free block of the C library, so that
 * returning more often costs time growing with the square of the trace
 * (a quarter of this size: 8.1 s instead of 2.9 s on 5 x 10^8 events,
 * for 0.03 bytes per event less at the peak) */
enum { RELEASE_ROWS = 1 << 20 };

int ws_causes_prepare(ws_analysis *a, ws_causes **out, ws_error *err)
{
    *out = NULL;
    const ws_trace *t = a->trace;
    uint64_t present[NGL + 1] = {0};
    int rc = waiting_classes(a, present, err);
    if (rc)
        return rc;
    ws_causes *c = ws_calloc(1, sizeof *c);
    if (!c)
        return ws_error_nomem(err, "delay analysis");
    for (int x = 0; x <= NGL; x++) {
        c->gl_at[x] = -1;
        if (x > 0 && present[x])
            c->gl_at[x] = (int8_t)c->n_gl++;
    }
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
    uint64_t released = 0;
    for (uint32_t i = 0; i < a->n_local; i++) {
        if ((rc = ws_points_build(c, a->local[i], err))) {
            ws_causes_free(c);
            return rc;
        }
        /* what the wait-state passes learnt of the messages and the sites
         * went into the points and the sites' records (cause_site): its
         * memory serves the next location's points, and what of it they
         * do not take goes back to the system now and then, so that it
         * does not add to the peak (blocks of a few hundred kilobytes
         * between live ones, which the C library would keep: 1.5 bytes
         * per event on the 2,048-rank stencil of bench_large.py) */
        const ws_loc_sync *ls = &a->sync->locs[a->local[i]];
        released += ls->n_messages + ls->n_sites;
        ws_waitstates_release(&a->locs[a->local[i]]);
        if (released >= RELEASE_ROWS || i + 1 == a->n_local) {
            ws_return_free_pages();
            released = 0;
        }
    }
    if (c->delay && (rc = ws_omp_idle_costs(c, err))) {
        ws_causes_free(c);
        return rc;
    }
    if ((rc = choose_walk(c, err))) {
        ws_causes_free(c);
        return rc;
    }
    /* only notes of the delay analysis alone may go ahead (with the
     * critical path moving with the notes a waiting member may hand it
     * over) */
    if (c->delay && (!c->cp || c->walk))
        for (uint32_t i = 0; i < a->n_local; i++)
            ws_points_mark_final(c, a->local[i]);
    /* the path ends at the latest Enter of MPI_Finalize (ties: lowest
     * index); MPI_Finalize is never on it.  Without MPI_Finalize a
     * location ends at its last event. */
    double *fin = ws_malloc_array(a->n_local ? a->n_local : 1, sizeof *fin);
    if (!fin) {
        ws_causes_free(c);
        return ws_error_nomem(err, "critical path");
    }
    double end[2] = {-INFINITY, 0.0};
    for (uint32_t i = 0; i < a->n_local; i++) {
        uint32_t loc = a->local[i];
        const ws_events *e = &t->locations[loc].events;
        const ws_loc_sync *ls = &a->sync->locs[loc];
        /* (a thread that is no MPI location ends before its process's MPI location) */
        fin[i] = e->n && t->locations[loc].rank != WS_NONE32 ? ws_ev_time(e, e->n - 1) : -INFINITY;
        for (uint32_t s = 0; s < ls->n_sites; s++)
            if (ls->sites[s].cls == WS_SITE_FINALIZE) {
                fin[i] = ws_site_enter(e, &ls->sites[s]);
                break;
            }
        if (fin[i] > end[0])
            end[0] = fin[i];
    }
    if ((rc = a->transport->ops->allreduce_f64(a->transport, end, 1, WS_MAX, err))) {
        free(fin);
        ws_causes_free(c);
        return rc;
    }
    uint64_t first = t->n_locations; /* none */
    for (uint32_t i = 0; i < a->n_local; i++)
        if (fin[i] == end[0] && a->local[i] < first)
            first = a->local[i];
    free(fin);
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


void ws_causes_release_points(ws_causes *c)
{
    if (!c || !c->locs)
        return;
    for (uint32_t i = 0; i < c->a->trace->n_locations; i++) {
        cause_loc *cl = &c->locs[i];
        free(cl->sp);
        free(cl->msg_pts);
        free(cl->sites);
        free(cl->pointless);
        free(cl->gl);
        free(cl->gl_bits);
        free(cl->gl_rank);
        free(cl->share);
        free(cl->coll_ind);
        cl->sp = NULL;
        cl->n_sp = 0;
        cl->msg_pts = NULL;
        cl->sites = NULL;
        cl->pointless = NULL;
        cl->n_pointless = 0;
        cl->gl = NULL;
        cl->gl_bits = NULL;
        cl->gl_rank = NULL;
        cl->share = NULL;
        cl->coll_ind = NULL;
        cl->n_coll_ind = cl->cap_coll_ind = 0;
    }
    free(c->walk_items);
    c->walk_items = NULL;
    c->n_walk = c->cap_walk = 0;
}

void ws_causes_free(ws_causes *c)
{
    if (!c)
        return;
    ws_causes_release_points(c);
    if (c->locs) {
        for (uint32_t i = 0; i < c->a->trace->n_locations; i++)
            free(c->locs[i].moves);
        free(c->locs);
    }
    free(c->entry_buf);
    charge_scratch *s = &c->scratch;
    free(s->delta);
    free(s->shortc);
    free(s->longc);
    free(s->waits);
    free(s->prop_s);
    free(s->prop_l);
    free(s->cps);
    free(s->wait_points);
    free(s->whole_prop);
    free(c->acc);
    free(c->in_acc);
    free(c->touched);
    free(c->member);
    free(c);
}

/* Time at which the path begins on the location that held it at its
 * first event: MPI_Init's Enter, or the first event without MPI_Init
 * (-infinity if that location lives elsewhere). */
double ws_causes_path_first(const ws_causes *c)
{
    double first = -INFINITY;
    for (uint32_t i = 0; i < c->a->n_local; i++) {
        uint32_t loc = c->a->local[i];
        const ws_events *e = &c->a->trace->locations[loc].events;
        /* where the path begins: MPI_Init's Enter (or the first event), or
         * earlier where the path arrived before it (clocks violating the
         * clock condition) */
        if (c->locs[loc].at_start && e->n) {
            first = isinf(c->locs[loc].floor) ? ws_ev_time(e, 0) : c->locs[loc].floor;
            if (c->locs[loc].top < first)
                first = c->locs[loc].top;
        }
    }
    return first;
}

void ws_causes_undistributed(const ws_causes *c, double *per_location)
{
    for (uint32_t i = 0; i < c->a->n_local; i++)
        per_location[c->a->local[i]] = c->locs[c->a->local[i]].undistributed;
}

/* What pass 5 would carry: the indirect part of a partner's waiting that
 * a delayer found, at a message's point on its side (share) and at a
 * collective site (coll_ind, only parts > 0).  Every message point's
 * share is looked at (a waiting point's, which pass 5 does not carry,
 * too: the test errs on the side of running it).  When every one is 0 on
 * every process, pass 5 would add +0 to cube cells that are never -0: it
 * would change no bit, and is not run (the 2-rank barrier trace: 0.13 s
 * on one thread). */
int ws_causes_indirect_found(ws_causes *c, int *found, ws_error *err)
{
    const ws_analysis *a = c->a;
    uint64_t any = 0;
    for (uint32_t i = 0; i < a->n_local && !any; i++) {
        const cause_loc *cl = &c->locs[a->local[i]];
        if (cl->n_coll_ind)
            any = 1;
        for (uint32_t k = 0; k < cl->n_sp && !any; k++)
            if (cl->sp[k].type != SP_SITE && cl->share[k] != 0.0)
                any = 1;
    }
    int rc = a->transport->ops->allreduce_u64(a->transport, &any, 1, WS_MAX, err);
    *found = any != 0;
    return rc;
}

/* Propagating share of the handled waits. */
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
                /* share: the largest propagated share of a waiting point */
                double prop = cl->share[k] < p->wait ? cl->share[k] : p->wait;
                /* in a window: the propagating share of the part inside it */
                double wait_in = point_wait_in(cl, k);
                if (wait_in != p->wait)
                    prop = p->wait > 0.0 ? prop * (wait_in / p->wait) : 0.0;
                if (p->wclass == WS_WAIT_LATESENDER)
                    add(c, WS_M_MPI_WAIT_PROPAGATING_LS, point_cp(c, loc, p), loc, prop);
                else if (p->wclass == WS_WAIT_LATERECEIVER)
                    add(c, WS_M_MPI_WAIT_PROPAGATING_LR, point_cp(c, loc, p), loc, prop);
                else if (p->type == SP_SITE && handled(p->wclass) && p->wclass != WS_WAIT_OMPBARRIER &&
                         p->wait > 0.0)
                    add(c, WS_M_MPI_WAIT_PROPAGATING_COLLECTIVE, point_cp(c, loc, p), loc, prop);
            }
        }
    }
    return WS_OK;
}
