/* Why the waiting happened: delay costs (seed 000 section IV, seed 004
 * sections 2.3.3 and 3.3) and the critical path (seed 001 sections II and
 * III), computed in one backward replay (pass 4) plus a forward replay
 * that returns the direct/indirect split to the waiting side (pass 5).
 *
 * In pass 4 the waiting side of every synchronization point sends the
 * delayer a note (its waiting, the long-term cost it carries, its
 * mini-profile of the interval, and the critical path when it holds it);
 * the delayer charges the costs (intervals.c).  The critical path ends at
 * the latest Enter of MPI_Finalize and moves, going backwards, to the
 * location waited for at every wait state of its owner (scans and
 * MPI_Init never move it); it begins at MPI_Init's Enter.
 */
#include "causes_int.h"

#include <stddef.h>

/* ---- pass 4: backward --------------------------------------------------- */

/* What the backward replay of every event did at the events [upto, last)
 * of a location, which the replay (visiting only the synchronization
 * events) skipped: an owner whose path ends at `bottom` (it handed it
 * over) stops owning it at the first of them at or before `bottom`. */
static void catch_up(cause_loc *cl, const ws_events *e, uint64_t upto)
{
    if (upto >= cl->last)
        return;
    if (cl->owner && cl->bottom > -INFINITY)
        for (uint64_t ev = cl->last; ev-- > upto;)
            if (ev + 1 < e->n && ws_ev_time(e, ev) <= cl->bottom) {
                cl->owner = 0;
                break;
            }
    cl->last = upto;
}

/* from this many moves' room on, a location's moves are reserved at once (p4_begin) */
#define MOVES_RESERVED_FROM ((size_t)1 << 16)

static int add_move(cause_loc *cl, uint32_t ev, int take, double time, ws_error *err)
{
    if (ws_grow((void **)&cl->moves, &cl->cap_moves, cl->n_moves + 1, sizeof *cl->moves) != 0)
        return ws_error_nomem(err, "critical path");
    path_move mv = {ev, (uint32_t)take, time};
    cl->moves[cl->n_moves++] = mv;
    return WS_OK;
}

/* The path handed over to `loc` at its synchronization event ev. */
static int take_at(ws_causes *c, uint32_t loc, uint32_t ev, double time, ws_error *err)
{
    cause_loc *cl = &c->locs[loc];
    catch_up(cl, &c->a->trace->locations[loc].events, (uint64_t)ev + 1);
    take_token(cl, time);
    return add_move(cl, ev, 1, time, err);
}

static int p4_begin(void *state, const ws_replay_env *env, uint32_t loc, ws_error *err)
{
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    const ws_events *e = &env->trace->locations[loc].events;
    cl->owner = 0;
    cl->at_start = 0;
    cl->last = e->n;
    cl->n_moves = 0;
    cl->walk_hi = e->n;
    cl->floor = -INFINITY;
    const ws_loc_sync *ls = &env->sync->locs[loc];
    size_t room = 2 * ((size_t)cl->n_sp + ls->n_sites);
    if (c->cp && !c->walk && cl->cap_moves == 0 && room >= MOVES_RESERVED_FROM) {
        /* a long location: room for the path given away and taken at
         * every point and site, reserved at once, so that the array is
         * not copied as it grows (more moves would still grow it); its
         * pages are touched only as moves come.  (Not for short ones:
         * thousands of small reservations side by side on the heap do
         * touch their pages, and copying a short array costs nothing.) */
        if (ws_grow((void **)&cl->moves, &cl->cap_moves, room, sizeof *cl->moves) != 0)
            return ws_error_nomem(err, "critical path");
    }
    for (uint32_t s = 0; s < ls->n_sites; s++)
        if (ls->sites[s].cls == WS_SITE_INIT) {
            cl->floor = ws_site_enter(e, &ls->sites[s]);
            break;
        }
    if (c->cp && !c->walk && loc == c->end_loc)
        take_token(cl, c->t_end);
    return WS_OK;
}

/* the synchronization events only (the handler is sparse) */
static int p4_event(void *state, const ws_replay_env *env, uint32_t loc, uint64_t ev, ws_error *err)
{
    (void)err;
    ws_causes *c = state;
    if (c->cp && !c->walk)
        catch_up(&c->locs[loc], &env->trace->locations[loc].events, ev);
    return WS_OK;
}

static int p4_channels(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row)
{
    (void)env;
    /* a message's Late Sender and Late Receiver are points (points.c) */
    uint8_t has = ((ws_causes *)state)->locs[loc].msg_pts[row];
    return ((has & MSG_HAS_LS) ? 1 : 0) | ((has & MSG_HAS_LR) ? 2 : 0);
}

/* When the path leaves `cl` for a partner at sync_time: never later than
 * where it is on `cl` (its top, and the time the backward replay has
 * reached), so that no stretch of time is on the path twice even when the
 * clocks violate the clock condition (a receive ending before its send
 * began).  Without violations this is sync_time itself. */
static double handover_time(const ws_causes *c, const cause_loc *cl, const ws_events *e, double sync_time)
{
    double t = sync_time;
    if (c->a->options.scalasca_compat)
        return t;
    if (cl->last < e->n && ws_ev_time(e, cl->last) < t)
        t = ws_ev_time(e, cl->last);
    if (cl->top < t)
        t = cl->top;
    return t;
}

/* A note as it travels: without long-term costs (has_gl 0: every note of
 * a member that did not wait) it ends before gl. */
static size_t note_bytes(const wait_note *note)
{
    return note->has_gl ? sizeof *note : offsetof(wait_note, gl);
}

static int append_note(ws_buffer *out, const wait_note *note)
{
    return ws_buffer_append(out, note, note_bytes(note));
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
    note.gamma = c->delay && handled(p->wclass) ? point_wait_in(cl, k) : 0.0;
    /* read only with a wait (ws_charge); left 0 otherwise, so that a note
     * without one is the same whenever it is made (p4_coll_ahead_at) */
    const double *gl = c->delay && note.wait > 0.0 ? point_gl(cl, k) : NULL;
    if (gl) {
        for (int x = 1; x <= NGL; x++)
            if (c->gl_at[x] >= 0)
                note.gl[x] = gl[c->gl_at[x]];
        note.has_gl = 1;
    }
    note.wclass = p->wclass;
    note.waiter = loc;
    note.delayer = delayer;
    note.token_target = WS_NONE32;
    note.token_time = NAN;
    if (c->cp && !c->walk && token_target != WS_NONE32) {
        uint32_t ev = ws_point_event(c, loc, k);
        catch_up(cl, &c->a->trace->locations[loc].events, (uint64_t)ev + 1);
        if (cl->owner) {
            note.token_target = token_target;
            note.token_time = handover_time(c, cl, &c->a->trace->locations[loc].events, p->time);
            cl->bottom = note.token_time;
            if (add_move(cl, ev, 0, note.token_time, err) != WS_OK)
                return err->code;
        }
    }
    size_t header = out->size;
    if (append_note(out, &note) != 0)
        return ws_error_nomem(err, "payload");
    if (note.wait > 0.0) {
        ws_interval_profile(c, loc, ws_previous_point(c, loc, k, delayer), k);
        uint32_t n = ws_profile_entries(c, out);
        ws_profile_reset(c);
        if (n == WS_NONE32)
            return ws_error_nomem(err, "payload");
        memcpy(out->data + header + offsetof(wait_note, n_entries), &n, sizeof n);
    }
    return WS_OK;
}

/* With the path walked in one place: this exchange of a message, for the
 * walk (its producing side would hand the path over to the partner at the
 * point's time, if it held it). */
static int walk_message(ws_causes *c, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, uint32_t k,
                        int produce, ws_error *err)
{
    const cause_loc *cl = &c->locs[loc];
    walk_item *it = ws_walk_item(c, loc, ws_point_event(c, loc, k));
    if (!it)
        return ws_error_nomem(err, "critical path");
    const ws_msg *m = &env->sync->locs[loc].msgs[row];
    it->key = ws_msg_id(loc, row, m);
    it->member = (uint32_t)channel;
    it->kind = produce ? WALK_PRODUCE : WALK_CONSUME;
    if (produce)
        ws_walk_hand(it, point_partner(c, loc, &cl->sp[k]), cl->sp[k].time, c->a->options.scalasca_compat);
    return WS_OK;
}

static int p4_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    uint32_t k = ws_point_of_message(c, loc, row, channel == 0 ? SP_LS : SP_LR);
    if (k == WS_NONE32)
        return ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %u is no synchronization point",
                            (unsigned)loc, (unsigned)row);
    if (c->walk && walk_message(c, env, loc, row, channel, k, 1, err) != WS_OK)
        return err->code;
    uint32_t partner = point_partner(c, loc, &cl->sp[k]);
    return note_for(c, loc, k, partner, partner, out, err);
}

/* The entries of a note, copied to aligned scratch memory (they may be
 * unaligned in the transport's buffer). */
static const entry *aligned_entries(ws_causes *c, const wait_note *note, const entry *entries, ws_error *err)
{
    if (!note->n_entries)
        return NULL;
    if (ws_grow((void **)&c->entry_buf, &c->cap_entry_buf, note->n_entries, sizeof *c->entry_buf) != 0) {
        ws_error_nomem(err, "delay payload");
        return NULL;
    }
    memcpy(c->entry_buf, entries, (size_t)note->n_entries * sizeof *c->entry_buf);
    return c->entry_buf;
}

static int parse_note(const void *data, size_t size, wait_note *note, const entry **entries, ws_error *err)
{
    const size_t head = offsetof(wait_note, gl);
    if (size < head)
        return ws_error_set(err, WS_ERR_INTERNAL, "short delay payload");
    memcpy(note, data, head);
    size_t bytes = note_bytes(note);
    if (size < bytes + (size_t)note->n_entries * sizeof(entry))
        return ws_error_set(err, WS_ERR_INTERNAL, "short delay payload");
    if (note->has_gl)
        memcpy(note->gl, (const unsigned char *)data + head, sizeof note->gl);
    else
        memset(note->gl, 0, sizeof note->gl);
    *entries = (const entry *)((const unsigned char *)data + bytes);
    return WS_OK;
}

static int p4_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel,
                      const void *data, size_t size, ws_error *err)
{
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    wait_note note;
    const entry *entries;
    int rc = parse_note(data, size, &note, &entries, err);
    if (rc)
        return rc;
    uint32_t k = ws_point_of_message(c, loc, row, channel == 0 ? SP_LS : SP_LR);
    if (k == WS_NONE32) {
        return ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %u is no synchronization point",
                            (unsigned)loc, (unsigned)row);
    }
    if (c->delay) {
        const entry *copy = aligned_entries(c, &note, entries, err);
        if (note.n_entries && !copy)
            return err->code;
        double indirect;
        rc = ws_charge(c, &c->scratch, loc, k, &note, copy, 0, &indirect, err);
        cl->share[k] = indirect;
    }
    if (rc)
        return rc;
    if (c->walk)
        return walk_message(c, env, loc, row, channel, k, 0, err);
    if (note.token_target == loc)
        return take_at(c, loc, ws_point_event(c, loc, k), note.token_time, err);
    return WS_OK;
}

/* Sites take part when somebody waited and the class matters here. */
static int p4_coll_active(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site)
{
    ws_causes *c = state;
    if (!c->locs[loc].sites[site].anywait)
        return 0;
    uint8_t cls = env->sync->locs[loc].sites[site].cls;
    /* the path stays where it is at scans (Scalasca 2.6) and MPI_Init (it
     * begins at MPI_Init's Enter, all of MPI_Init on it) */
    if (c->cp && cls != WS_SITE_OTHER && cls != WS_SITE_SCAN && cls != WS_SITE_INIT)
        return 1;
    return c->delay && delay_site_class(cls);
}

static int p4_coll_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                           ws_error *err)
{
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    uint32_t k = cl->sites[site].sp;
    uint32_t delayer = cl->sites[site].delayer;
    int waited = cl->sites[site].waited;
    if (k == WS_NONE32) {
        /* not an interval boundary here (e.g. a scan): only the path moves */
        wait_note note;
        memset(&note, 0, sizeof note);
        note.waiter = loc;
        note.delayer = delayer;
        note.token_target = WS_NONE32;
        note.token_time = NAN;
        if (c->cp && !c->walk && waited) {
            uint32_t ev = env->sync->locs[loc].sites[site].event;
            catch_up(cl, &env->trace->locations[loc].events, (uint64_t)ev + 1);
            if (cl->owner) {
                note.token_target = delayer;
                note.token_time = handover_time(c, cl, &env->trace->locations[loc].events, site_sync_time(cl, site));
                cl->bottom = note.token_time;
                if (add_move(cl, ev, 0, note.token_time, err) != WS_OK)
                    return err->code;
            }
        }
        if (append_note(out, &note) != 0)
            return ws_error_nomem(err, "payload");
        return WS_OK;
    }
    return note_for(c, loc, k, delayer, waited ? delayer : WS_NONE32, out, err);
}

/* A member that did not wait at a site hands no path over and is charged
 * nothing there: its note (who it is, no wait, no token) is the same
 * whatever the replay did before, so the engine may make it ahead, and the
 * members that did wait never wait for it.  A member that waited may hand
 * the path over (which depends on the replay); without the path, its note
 * depends on the replay only through long-term costs that a later charge
 * here may still add (not when its point is final: points.c). */
static int p4_coll_ahead_at(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site)
{
    (void)env;
    ws_causes *c = state;
    const cause_loc *cl = &c->locs[loc];
    if (c->cp && !c->walk && cl->sites[site].waited)
        return 0;
    uint32_t k = cl->sites[site].sp;
    return k == WS_NONE32 || !(c->delay && handled(cl->sp[k].wclass) && cl->sp[k].wait > 0.0) || cl->sp[k].final;
}

/* What pass 4 shares between the members of an instance: the notes that
 * hand the critical path over (normally none or one; more are kept, in
 * member order, as view->shared). */
typedef struct p4_coll_cache {
    uint32_t n_tokens;
    uint32_t target;
    double time;
} p4_coll_cache;

typedef struct p4_token {
    uint32_t target;
    uint32_t pad;
    double time;
} p4_token;

static int p4_coll_combine(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_coll_view *v,
                           ws_error *err)
{
    (void)state;
    (void)env;
    (void)loc;
    (void)site;
    p4_coll_cache *k = v->cache;
    p4_token *tokens = NULL;
    k->n_tokens = 0;
    for (uint32_t m = 0; m < v->n_members; m++) {
        wait_note note;
        const entry *entries;
        int rc = parse_note(v->data[m], v->size[m], &note, &entries, err);
        if (rc)
            return rc;
        if (note.token_target == WS_NONE32)
            continue;
        if (k->n_tokens == 1) {
            tokens = ws_malloc_array(v->n_members, sizeof *tokens);
            if (!tokens)
                return ws_error_nomem(err, "collective instance");
            v->shared = tokens;
            tokens[0].target = k->target;
            tokens[0].time = k->time;
        }
        if (tokens) {
            tokens[k->n_tokens].target = note.token_target;
            tokens[k->n_tokens].time = note.token_time;
        }
        k->target = note.token_target;
        k->time = note.token_time;
        k->n_tokens++;
    }
    return WS_OK;
}

static int p4_coll_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site,
                           const ws_coll_view *v, ws_error *err)
{
    ws_causes *c = state;
    cause_loc *cl = &c->locs[loc];
    int rc = WS_OK;
    double token = NAN;
    /* the path handed over to this location (the last such note) */
    const p4_coll_cache *k = v->cache;
    if (k->n_tokens == 1 && k->target == loc)
        token = k->time;
    for (uint32_t i = 0; k->n_tokens > 1 && i < k->n_tokens; i++) {
        const p4_token *tk = &((const p4_token *)v->shared)[i];
        if (tk->target == loc)
            token = tk->time;
    }
    /* the delayer charges every waiting member: O(members) once per instance */
    uint32_t *floor = NULL;
    if (c->delay && cl->sites[site].delayer == loc && cl->sites[site].sp != WS_NONE32 &&
        c->a->options.scalasca_compat) {
        floor = ws_malloc_array(2 * (size_t)v->n_members, sizeof *floor);
        if (!floor)
            return ws_error_nomem(err, "delay analysis");
        uint32_t *waiter = floor + v->n_members;
        for (uint32_t m = 0; m < v->n_members && rc == WS_OK; m++) {
            wait_note note;
            const entry *entries;
            rc = parse_note(v->data[m], v->size[m], &note, &entries, err);
            waiter[m] = note.waiter;
        }
        if (rc == WS_OK)
            rc = ws_compat_propagation_floors(c, loc, cl->sites[site].sp, waiter, v->n_members, floor, err);
    }
    if (rc == WS_OK && c->delay && cl->sites[site].delayer == loc && cl->sites[site].sp != WS_NONE32)
        for (uint32_t m = 0; m < v->n_members && rc == WS_OK; m++) {
            wait_note note;
            const entry *entries;
            if ((rc = parse_note(v->data[m], v->size[m], &note, &entries, err)))
                break;
            if (note.wait <= 0.0)
                continue;
            const entry *copy = aligned_entries(c, &note, entries, err);
            if (note.n_entries && !copy) {
                rc = err->code;
                break;
            }
            double indirect;
            rc = ws_charge(c, &c->scratch, loc, cl->sites[site].sp, &note, copy, floor ? floor[m] : 0, &indirect,
                           err);
            if (rc == WS_OK && indirect > 0.0) {
                if (ws_grow((void **)&cl->coll_ind, &cl->cap_coll_ind, cl->n_coll_ind + 1, sizeof *cl->coll_ind) != 0) {
                    rc = ws_error_nomem(err, "delay analysis");
                    break;
                }
                if (cl->n_coll_ind && cl->coll_ind[cl->n_coll_ind - 1].site < site) {
                    rc = ws_error_set(err, WS_ERR_INTERNAL, "location %u: the backward replay met site %u after "
                                      "site %u", (unsigned)loc, (unsigned)site,
                                      (unsigned)cl->coll_ind[cl->n_coll_ind - 1].site);
                    break;
                }
                coll_indirect ci = {note.waiter, site, indirect};
                cl->coll_ind[cl->n_coll_ind++] = ci;
            }
        }
    free(floor);
    if (rc == WS_OK && c->walk) {
        /* for the walk: the path would come from the members that waited
         * (to their delayer), and go from here if this one waited */
        const ws_site *st = &env->sync->locs[loc].sites[site];
        walk_item *it = ws_walk_item(c, loc, st->event);
        if (!it)
            return ws_error_nomem(err, "critical path");
        it->key = ws_site_instance(st);
        it->member = ws_site_member(&env->sync->locs[loc], st);
        it->n_members = ws_site_members(env->sync, st);
        it->kind = WALK_COLL;
        if (cl->sites[site].waited)
            ws_walk_hand(it, cl->sites[site].delayer, site_sync_time(cl, site), c->a->options.scalasca_compat);
    }
    if (rc == WS_OK && !isnan(token))
        rc = take_at(c, loc, env->sync->locs[loc].sites[site].event, token, err);
    return rc;
}

/* ---- pass 5: forward (indirect waiting back to the waiting side) ------- */

static int p5_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t row, int channel, ws_buffer *out,
                      ws_error *err)
{
    (void)env;
    (void)channel;
    ws_causes *c = state;
    uint32_t k = ws_point_of_message(c, loc, row, channel == 0 ? SP_LS : SP_LR);
    if (k == WS_NONE32)
        return ws_error_set(err, WS_ERR_INTERNAL, "location %u: message %u is no synchronization point",
                            (unsigned)loc, (unsigned)row);
    if (ws_buffer_append(out, &c->locs[loc].share[k], sizeof(double)) != 0)
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
    const ws_msg *m = &env->sync->locs[loc].msgs[row];
    const ws_events *e = &env->trace->locations[loc].events;
    if (channel == 0)
        add(c, WS_M_MPI_WAIT_INDIRECT_LATESENDER, ws_msg_callpath(e, m), loc, v);
    else
        add(c, WS_M_MPI_WAIT_INDIRECT_LATERECEIVER, ws_msg_done_callpath(e, m), loc, v);
    return WS_OK;
}

/* the delayer tells the waiting members the indirect part of their waiting */
static int p5_coll_active(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site)
{
    ws_causes *c = state;
    uint8_t cls = env->sync->locs[loc].sites[site].cls;
    /* (no indirect OpenMP waiting is reported, as in Scalasca 2.6) */
    return c->locs[loc].sites[site].anywait && delay_site_class(cls) && !ws_site_is_omp(cls);
}

/* The pairs of site `site` of cl (*n of them): the sites of coll_ind
 * descend, so a binary search finds the first. */
static const coll_indirect *site_pairs(const cause_loc *cl, uint32_t site, size_t *n)
{
    size_t lo = 0, hi = cl->n_coll_ind;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cl->coll_ind[mid].site > site)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < cl->n_coll_ind && cl->coll_ind[end].site == site)
        end++;
    *n = end - lo;
    return cl->coll_ind + lo;
}

static int p5_coll_produce(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_buffer *out,
                           ws_error *err)
{
    (void)env;
    ws_causes *c = state;
    size_t n;
    const coll_indirect *pairs = site_pairs(&c->locs[loc], site, &n);
    uint64_t header = n;
    if (ws_buffer_append(out, &header, sizeof header) != 0 ||
        (n && ws_buffer_append(out, pairs, n * sizeof *pairs) != 0))
        return ws_error_nomem(err, "payload");
    return WS_OK;
}

/* The delayers' indirect waiting of an instance, sorted by waiter (and
 * within a waiter in member order), as view->shared. */
typedef struct p5_shared {
    uint64_t n;
    coll_indirect e[];
} p5_shared;

typedef struct p5_sortable {
    coll_indirect ci;
    uint64_t seq;
} p5_sortable;

static int p5_order(const void *x, const void *y)
{
    const p5_sortable *a = x, *b = y;
    if (a->ci.waiter != b->ci.waiter)
        return a->ci.waiter < b->ci.waiter ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int p5_coll_combine(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site, ws_coll_view *v,
                           ws_error *err)
{
    (void)state;
    (void)env;
    (void)loc;
    (void)site;
    uint64_t total = 0;
    for (uint32_t m = 0; m < v->n_members; m++) {
        uint64_t n;
        if (v->size[m] < sizeof n)
            return ws_error_set(err, WS_ERR_INTERNAL, "short delay payload");
        memcpy(&n, v->data[m], sizeof n);
        if (n > (v->size[m] - sizeof n) / sizeof(coll_indirect) || v->size[m] != sizeof n + n * sizeof(coll_indirect))
            return ws_error_set(err, WS_ERR_INTERNAL, "unexpected payload size %zu", v->size[m]);
        total += n;
    }
    if (!total)
        return WS_OK;
    p5_shared *sh = ws_malloc(sizeof *sh + total * sizeof(coll_indirect));
    if (!sh)
        return ws_error_nomem(err, "collective instance");
    sh->n = total;
    uint64_t j = 0;
    int sorted = 1;
    for (uint32_t m = 0; m < v->n_members; m++) {
        uint64_t n;
        memcpy(&n, v->data[m], sizeof n);
        memcpy(sh->e + j, v->data[m] + sizeof n, n * sizeof(coll_indirect));
        for (uint64_t q = j ? j : 1; q < j + n; q++)
            if (sh->e[q].waiter < sh->e[q - 1].waiter)
                sorted = 0;
        j += n;
    }
    /* usually in order already (an instance's delayer charges its waiters
     * in member order): else a stable sort by waiter */
    if (!sorted) {
        p5_sortable *tmp = ws_malloc_array(total, sizeof *tmp);
        if (!tmp) {
            free(sh);
            return ws_error_nomem(err, "collective instance");
        }
        for (j = 0; j < total; j++) {
            tmp[j].ci = sh->e[j];
            tmp[j].seq = j;
        }
        qsort(tmp, total, sizeof *tmp, p5_order);
        for (j = 0; j < total; j++)
            sh->e[j] = tmp[j].ci;
        free(tmp);
    }
    v->shared = sh;
    return WS_OK;
}

static int p5_coll_consume(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site,
                           const ws_coll_view *v, ws_error *err)
{
    (void)err;
    ws_causes *c = state;
    const p5_shared *sh = v->shared;
    if (!c->locs[loc].sites[site].waited || !sh)
        return WS_OK;
    /* the first entry of this waiter */
    uint64_t lo = 0, hi = sh->n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sh->e[mid].waiter < loc)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < sh->n && sh->e[lo].waiter == loc; lo++)
        add(c, WS_M_MPI_WAIT_INDIRECT_COLLECTIVE,
            ws_site_callpath(&env->trace->locations[loc].events, &env->sync->locs[loc].sites[site]), loc,
            sh->e[lo].value);
    return WS_OK;
}

/* What passes 4 and 5 touch first of a location and at a collective site
 * (see ws_handler.prefetch). */
static void p45_prefetch(void *state, const ws_replay_env *env, uint32_t loc, int64_t site)
{
    (void)env;
    const ws_causes *c = state;
    const cause_loc *cl = &c->locs[loc];
    const ws_loc_data *d = &c->a->locs[loc];
    if (site < 0) {
        WS_PREFETCH(cl);
        WS_PREFETCH((const char *)cl + 64);
        WS_PREFETCH((const char *)cl + 128);
        WS_PREFETCH(d);
        WS_PREFETCH((const char *)d + 64);
        return;
    }
    WS_PREFETCH_RECORD(&cl->sites[site]);
}

/* A run later: the site's point and the events of the interval it
 * closes (pass 4), the indirect waiting a delayer reports (pass 5). */
static void p45_prefetch_deep(void *state, const ws_replay_env *env, uint32_t loc, uint32_t site)
{
    const ws_causes *c = state;
    const cause_loc *cl = &c->locs[loc];
    const cause_site *cs = &cl->sites[site];
    if (cs->sp == WS_NONE32)
        return;
    WS_PREFETCH_RECORD(&cl->sp[cs->sp]);
    if (cs->sp > 0)
        WS_PREFETCH_RECORD(&cl->sp[cs->sp - 1]);
    const ws_events *e = &env->trace->locations[loc].events;
    uint32_t ev = env->sync->locs[loc].sites[site].event;
    uint32_t from = ev > 8 ? ev - 8 : 0;
    WS_PREFETCH(&e->kind[from]);
    WS_PREFETCH(&e->ref[from]);
    WS_PREFETCH(ws_ev_time_addr(e, from));
    WS_PREFETCH(ws_ev_time_addr(e, ev));
    if (c->cp && cl->moves)
        WS_PREFETCH(&cl->moves[cl->n_moves]);
}

void ws_causes_handlers(ws_causes *c, int pass, ws_handler *h)
{
    memset(h, 0, sizeof *h);
    h->state = c;
    h->msg_channels = p4_channels;
    /* both replays visit only the synchronization events (the pieces of
     * the critical path between them are cut afterwards) */
    h->sparse = 1;
    h->prefetch = p45_prefetch;
    h->prefetch_deep = p45_prefetch_deep;
    if (pass == 4) {
        h->begin = p4_begin;
        h->event = p4_event;
        h->msg_produce = p4_produce;
        h->msg_consume = p4_consume;
        h->coll_active = p4_coll_active;
        h->coll_produce = p4_coll_produce;
        h->coll_consume = p4_coll_consume;
        h->coll_combine = p4_coll_combine;
        h->coll_cache_size = sizeof(p4_coll_cache);
        h->coll_ahead_at = p4_coll_ahead_at;
    } else {
        h->msg_produce = p5_produce;
        h->msg_consume = p5_consume;
        h->coll_active = p5_coll_active;
        h->coll_produce = p5_coll_produce;
        h->coll_consume = p5_coll_consume;
        h->coll_combine = p5_coll_combine;
        /* payloads and contributions come from pass 4, the channels and
         * the active sites from the wait states */
        h->unordered = 1;
        /* msg_pure: a double per waiting point, which the consumer takes
         * from its partner's point where both are the join's, instead of
         * the join storing every one until it is consumed (about 1 byte per
         * event at the analysis's peak on the stencil); the partner's
         * point is then looked up out of its order (ws_point_of_message) */
        h->msg_pure = 1;
    }
}
