/* The critical path walked in one place (seed 001 section III).
 *
 * In pass 4 the path moves with the notes of the wait states: a member
 * that waited can write its note only once it knows whether it holds the
 * path, which it learns from the instance after (backwards) -- on the
 * 2-rank barrier trace every change of the late rank then waits for a
 * round trip between the two processes or threads.  With several
 * processes or threads, pass 4 therefore leaves the path out of its notes
 * (they may then go ahead as without the path) and records instead, per
 * location and in its replay order, every exchange where the path could
 * move (walk_item: a hand-over candidate, a message's consuming side, a
 * collective).  Process 0 gathers these items and walks them in causal
 * order with exactly the rules of pass 4's handlers (causes.c: who holds
 * the path, where it ends on a location, which note takes it), then sends
 * each location its moves.  The moves, and so the path's pieces cut from
 * them (path_pieces.c), are bit for bit those of the replay that carries
 * the path in its notes.
 *
 * The replay's catch_up, which ends a location's hold on the path at the
 * first event at or before where it handed it over, needs the events'
 * times; each item carries the least time of the events the replay passed
 * since the item before (`above`), which decides the same: nothing else
 * changes the location's state in between. */
#include "causes_int.h"

walk_item *ws_walk_item(ws_causes *c, uint32_t loc, uint32_t ev)
{
    cause_loc *cl = &c->locs[loc];
    if (ws_grow((void **)&c->walk_items, &c->cap_walk, c->n_walk + 1, sizeof *c->walk_items) != 0)
        return NULL;
    const ws_events *e = &c->a->trace->locations[loc].events;
    /* the events (ev, walk_hi) that catch_up would look at, the last
     * event of the location excepted */
    uint64_t stop = cl->walk_hi < e->n ? cl->walk_hi : (e->n ? e->n - 1 : 0);
    double least = INFINITY;
    for (uint64_t i = (uint64_t)ev + 1; i < stop; i++)
        if (ws_ev_time(e, i) < least)
            least = ws_ev_time(e, i);
    if ((uint64_t)ev + 1 < cl->walk_hi)
        cl->walk_hi = (uint64_t)ev + 1;
    walk_item *it = &c->walk_items[c->n_walk++];
    memset(it, 0, sizeof *it);
    it->above = least;
    /* handover_time's bound by the replay's position: the next event */
    it->hand = (uint64_t)ev + 1 < e->n ? ws_ev_time(e, ev + 1) : INFINITY;
    it->ev = ev;
    it->loc = loc;
    it->target = WS_NONE32;
    return it;
}

void ws_walk_hand(walk_item *it, uint32_t target, double sync, int overlap)
{
    it->target = target;
    /* handover_time: the synchronization time, unless the next event is
     * earlier (clocks violating the clock condition; not with `overlap`) */
    double bound = it->hand;
    it->hand = sync;
    if (!overlap && bound < it->hand)
        it->hand = bound;
}

/* a move as it travels back to the location's process */
typedef struct move_record {
    uint32_t loc;
    uint32_t ev;
    uint32_t take;
    uint32_t pad;
    double time;
} move_record;

/* the path handed over at an exchange (ws_coll_view order: member) */
typedef struct token {
    uint32_t member;
    uint32_t target;
    double time;
    uint32_t next; /* the exchange's token before, + 1 (0: none) */
    uint32_t pad;
} token;

/* an exchange: a message's channel or a collective instance */
typedef struct slot {
    uint32_t seen;     /* producers that passed it */
    uint32_t waiters;  /* first location waiting for it + 1 (0: none; then walker_loc.wait_next) */
    uint32_t tokens;   /* its last token + 1 (0: none) */
    uint32_t consumed; /* consumers that passed it (then its tokens serve again) */
} slot;

typedef struct walker_loc {
    const walk_item *items; /* its items, in replay order: these in a row, or at ptrs */
    const walk_item *const *ptrs;
    size_t n, cursor;
    double top, bottom;
    uint32_t wait_next;
    uint8_t owner;
    uint8_t produced; /* the current collective's hand-over is done */
    uint8_t queued;
    uint8_t pad;
} walker_loc;

typedef struct walker {
    walker_loc *locs;
    uint32_t n_locs;
    /* the exchanges, dense: a message's two channels at 2 * (msg_base[sender] + row) + channel, an
     * instance at coll_base[communicator] + sequence */
    slot *slots;
    size_t *msg_base, *coll_base;
    const walk_item **order;
    token *tokens;
    size_t n_tokens, cap_tokens;
    uint32_t free_tokens; /* first unused token + 1 (0: none) */
    uint32_t *queue;
    size_t q_head, q_tail, q_cap;
    move_record *moves;
    uint32_t *dest;
    size_t n_moves, cap_moves, cap_dest;
} walker;

static inline slot *slot_of(walker *w, const walk_item *it)
{
    if (it->kind != WALK_COLL)
        return &w->slots[2 * (w->msg_base[it->key >> 32] + (uint32_t)it->key) + it->member];
    return &w->slots[w->coll_base[it->key >> 40] + (it->key & ((1ULL << 40) - 1))];
}

static inline const walk_item *item_at(const walker_loc *l, size_t k)
{
    return l->ptrs ? l->ptrs[k] : &l->items[k];
}

/* Notes the exchange of `it` for the slots' layout (lay_out): the extent
 * of its sender's rows or of its communicator's instances, in
 * w->msg_base and w->coll_base (*n_comms of them so far).  0 or an
 * error. */
static int note_extent(walker *w, const walk_item *it, size_t *n_comms, size_t *cap_comms, ws_error *err)
{
    if (it->kind != WALK_COLL) {
        if ((it->key >> 32) >= w->n_locs)
            return ws_error_set(err, WS_ERR_INTERNAL, "critical path: message of unknown location %llu",
                                (unsigned long long)(it->key >> 32));
        size_t *b = &w->msg_base[it->key >> 32];
        if ((uint32_t)it->key + (size_t)1 > *b)
            *b = (uint32_t)it->key + (size_t)1;
    } else if (it->n_members > 1) {
        uint64_t comm = it->key >> 40, seq = it->key & ((1ULL << 40) - 1);
        if (comm >= *n_comms) {
            if (ws_grow((void **)&w->coll_base, cap_comms, (size_t)comm + 1, sizeof *w->coll_base) != 0)
                return ws_error_nomem(err, "critical path");
            memset(w->coll_base + *n_comms, 0, ((size_t)comm + 1 - *n_comms) * sizeof *w->coll_base);
            *n_comms = (size_t)comm + 1;
        }
        if (seq + 1 > w->coll_base[comm])
            w->coll_base[comm] = (size_t)seq + 1;
    }
    return WS_OK;
}

/* Where each exchange's slot lies (see walker), from the extents
 * note_extent found: 0 or an error. */
static int lay_out(walker *w, size_t n_comms, ws_error *err)
{
    size_t total = 0;
    for (uint32_t l = 0; l < w->n_locs; l++) {
        size_t extent = w->msg_base[l];
        w->msg_base[l] = total;
        total += extent;
    }
    total *= 2;
    for (size_t m = 0; m < n_comms; m++) {
        size_t extent = w->coll_base[m];
        w->coll_base[m] = total;
        total += extent;
    }
    w->slots = ws_calloc_dense(total ? total : 1, sizeof *w->slots);
    return w->slots ? WS_OK : ws_error_nomem(err, "critical path");
}

static void enqueue(walker *w, uint32_t loc)
{
    if (w->locs[loc].queued)
        return;
    w->locs[loc].queued = 1;
    w->queue[w->q_tail] = loc;
    w->q_tail = (w->q_tail + 1) % w->q_cap;
}

static int add_move(walker *w, uint32_t loc, uint32_t ev, int take, double time)
{
    if (ws_grow((void **)&w->moves, &w->cap_moves, w->n_moves + 1, sizeof *w->moves) != 0 ||
        ws_grow((void **)&w->dest, &w->cap_dest, w->n_moves + 1, sizeof *w->dest) != 0)
        return WS_ERR_NOMEM;
    move_record m = {loc, ev, (uint32_t)take, 0, time};
    w->moves[w->n_moves] = m;
    w->dest[w->n_moves++] = loc;
    return WS_OK;
}

/* The holder hands the path over at `it` (causes.c: note_for and
 * handover_time): no later than where it is on the location. */
static int hand_over_held(walker *w, uint32_t loc, const walk_item *it, slot *s);

static inline int hand_over(walker *w, uint32_t loc, const walk_item *it, slot *s)
{
    /* mostly the location does not hold the path */
    if (!w->locs[loc].owner || it->target == WS_NONE32)
        return WS_OK;
    return hand_over_held(w, loc, it, s);
}

static int hand_over_held(walker *w, uint32_t loc, const walk_item *it, slot *s)
{
    walker_loc *l = &w->locs[loc];
    double t = it->hand;
    if (l->top < t)
        t = l->top;
    l->bottom = t;
    uint32_t i = w->free_tokens;
    if (i) {
        w->free_tokens = w->tokens[i - 1].next;
    } else {
        if (ws_grow((void **)&w->tokens, &w->cap_tokens, w->n_tokens + 1, sizeof *w->tokens) != 0)
            return WS_ERR_NOMEM;
        i = (uint32_t)++w->n_tokens;
    }
    token tk = {it->kind == WALK_COLL ? it->member : 0, it->target, t, s->tokens, 0};
    w->tokens[i - 1] = tk;
    s->tokens = i;
    return add_move(w, loc, it->ev, 0, t);
}

/* The path comes to `loc` at `it` if a token of the exchange names it:
 * the last such one in member order (p4_coll_consume). */
static int take_token_of(walker *w, uint32_t loc, const walk_item *it, slot *s, uint32_t consumers);

static inline int take(walker *w, uint32_t loc, const walk_item *it, slot *s, uint32_t consumers)
{
    if (!s->tokens) { /* mostly nobody handed the path over here */
        s->consumed++;
        return WS_OK;
    }
    return take_token_of(w, loc, it, s, consumers);
}

static int take_token_of(walker *w, uint32_t loc, const walk_item *it, slot *s, uint32_t consumers)
{
    const token *best = NULL;
    for (uint32_t i = s->tokens; i; i = w->tokens[i - 1].next)
        if (w->tokens[i - 1].target == loc && (!best || w->tokens[i - 1].member >= best->member))
            best = &w->tokens[i - 1];
    double time = best ? best->time : 0.0;
    if (++s->consumed == consumers)
        /* the last consumer: the exchange's tokens are free again */
        while (s->tokens) {
            uint32_t i = s->tokens;
            s->tokens = w->tokens[i - 1].next;
            w->tokens[i - 1].next = w->free_tokens;
            w->free_tokens = i;
        }
    if (!best)
        return WS_OK;
    walker_loc *l = &w->locs[loc];
    l->owner = 1;
    l->top = time;
    l->bottom = -INFINITY;
    return add_move(w, loc, it->ev, 1, time);
}

static inline void wake_all(walker *w, slot *s)
{
    while (s->waiters) {
        uint32_t loc = s->waiters - 1;
        s->waiters = w->locs[loc].wait_next;
        enqueue(w, loc);
    }
}

static void wait_for(walker *w, uint32_t loc, slot *s)
{
    w->locs[loc].wait_next = s->waiters;
    s->waiters = loc + 1;
}

/* Walks `loc` until it waits for an exchange another location has not
 * passed yet, or ends. */
static int run(walker *w, uint32_t loc)
{
    walker_loc *l = &w->locs[loc];
    int rc;
    while (l->cursor < l->n) {
        const walk_item *it = item_at(l, l->cursor);
        /* catch_up: the hold on the path ends at an event at or before
         * where it was handed over */
        if (l->owner && l->bottom > -INFINITY && it->above <= l->bottom)
            l->owner = 0;
        if (it->kind == WALK_COLL && it->n_members <= 1) {
            /* an instance of one member (its key repeats on every
             * location): only this location may hand over or take */
            slot own = {0, 0, 0, 0};
            if ((rc = hand_over(w, loc, it, &own)) || (rc = take(w, loc, it, &own, 1)))
                return rc;
        } else if (it->kind == WALK_COLL) {
            slot *s = slot_of(w, it);
            if (!l->produced) {
                if ((rc = hand_over(w, loc, it, s)))
                    return rc;
                l->produced = 1;
                if (++s->seen >= it->n_members)
                    wake_all(w, s);
            }
            if (s->seen < it->n_members) {
                wait_for(w, loc, s);
                return WS_OK;
            }
            if ((rc = take(w, loc, it, s, it->n_members)))
                return rc;
            l->produced = 0;
        } else if (it->kind == WALK_PRODUCE) {
            slot *s = slot_of(w, it);
            if ((rc = hand_over(w, loc, it, s)))
                return rc;
            s->seen++;
            wake_all(w, s);
        } else {
            slot *s = slot_of(w, it);
            if (!s->seen) {
                wait_for(w, loc, s);
                return WS_OK;
            }
            if ((rc = take(w, loc, it, s, 1)))
                return rc;
        }
        l->cursor++;
    }
    return WS_OK;
}

static int walk_all(walker *w, const void *const *pieces, const size_t *sizes, uint32_t n_pieces, uint32_t end_loc,
                    double t_end, ws_error *err)
{
    /* each location's items in its replay order: in a row already when
     * every process holds one location, else found by a counting sort */
    w->q_cap = (size_t)w->n_locs + 1;
    w->queue = ws_malloc_array(w->q_cap, sizeof *w->queue);
    if (!w->queue)
        return ws_error_nomem(err, "critical path");
    /* one scan over the items: their locations (in a row?) and the
     * extents of the exchanges */
    size_t n_items = 0, n_comms = 0, cap_comms = 0;
    int together = 1;
    w->msg_base = ws_calloc((size_t)w->n_locs + 1, sizeof *w->msg_base);
    if (!w->msg_base)
        return ws_error_nomem(err, "critical path");
    for (uint32_t p = 0; p < n_pieces; p++) {
        const walk_item *items = pieces[p];
        size_t n = sizes[p] / sizeof *items;
        n_items += n;
        walker_loc *run_of = NULL; /* the location of the run items[i] is in, while together */
        for (size_t i = 0; i < n; i++) {
            const walk_item *it = &items[i];
            if (it->loc >= w->n_locs)
                return ws_error_set(err, WS_ERR_INTERNAL, "critical path: item of unknown location %u",
                                    (unsigned)it->loc);
            if (together && (!run_of || it->loc != run_of->items->loc)) {
                run_of = &w->locs[it->loc];
                if (run_of->items)
                    together = 0;
                else
                    run_of->items = it;
            }
            if (together)
                run_of->n++;
            int rc = note_extent(w, it, &n_comms, &cap_comms, err);
            if (rc)
                return rc;
        }
    }
    if (!w->coll_base && !(w->coll_base = ws_calloc(1, sizeof *w->coll_base)))
        return ws_error_nomem(err, "critical path");
    if (!together) {
        size_t *count = ws_calloc((size_t)w->n_locs + 1, sizeof *count);
        w->order = ws_malloc_array(n_items ? n_items : 1, sizeof *w->order);
        if (!count || !w->order) {
            free(count);
            return ws_error_nomem(err, "critical path");
        }
        for (uint32_t p = 0; p < n_pieces; p++) {
            const walk_item *items = pieces[p];
            for (size_t i = 0; i < sizes[p] / sizeof *items; i++)
                count[items[i].loc + 1]++;
        }
        for (uint32_t l = 0; l < w->n_locs; l++) {
            count[l + 1] += count[l];
            w->locs[l].ptrs = &w->order[count[l]];
            w->locs[l].n = count[l + 1] - count[l];
        }
        for (uint32_t p = 0; p < n_pieces; p++) {
            const walk_item *items = pieces[p];
            for (size_t i = 0; i < sizes[p] / sizeof *items; i++)
                w->order[count[items[i].loc]++] = &items[i];
        }
        free(count);
    }
    int rc = lay_out(w, n_comms, err);
    if (rc)
        return rc;
    /* an item hands the path over at most once and takes it at most once:
     * the moves reserved at once, not copied as they double */
    if (ws_grow((void **)&w->moves, &w->cap_moves, 2 * n_items + 1, sizeof *w->moves) != 0 ||
        ws_grow((void **)&w->dest, &w->cap_dest, 2 * n_items + 1, sizeof *w->dest) != 0)
        return ws_error_nomem(err, "critical path");
    for (uint32_t loc = 0; loc < w->n_locs; loc++) {
        w->locs[loc].bottom = -INFINITY;
        if (w->locs[loc].n)
            enqueue(w, loc);
    }
    if (end_loc < w->n_locs) {
        w->locs[end_loc].owner = 1;
        w->locs[end_loc].top = t_end;
    }
    while (w->q_head != w->q_tail) {
        uint32_t loc = w->queue[w->q_head];
        w->q_head = (w->q_head + 1) % w->q_cap;
        w->locs[loc].queued = 0;
        if (run(w, loc) != WS_OK)
            return ws_error_nomem(err, "critical path");
    }
    for (uint32_t loc = 0; loc < w->n_locs; loc++)
        if (w->locs[loc].cursor < w->locs[loc].n)
            return ws_error_set(err, WS_ERR_INTERNAL, "critical path: the walk stalled at location %u, event %u",
                                (unsigned)loc, (unsigned)item_at(&w->locs[loc], w->locs[loc].cursor)->ev);
    return WS_OK;
}

static void walker_free(walker *w)
{
    free(w->locs);
    free(w->slots);
    free(w->msg_base);
    free(w->coll_base);
    free(w->order);
    free(w->tokens);
    free(w->queue);
    free(w->moves);
    free(w->dest);
}

/* The moves received for the local locations, in order: their only ones
 * (with `walk`, pass 4 records none). */
static int keep_moves(ws_causes *c, const move_record *m, size_t n, ws_error *err)
{
    /* each location's room reserved at once (counted in n_moves first),
     * not copied as it doubles */
    const ws_analysis *a = c->a;
    for (uint32_t i = 0; i < a->n_local; i++)
        c->locs[a->local[i]].n_moves = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].loc >= a->trace->n_locations)
            return ws_error_set(err, WS_ERR_INTERNAL, "critical path: move of unknown location %u",
                                (unsigned)m[i].loc);
        c->locs[m[i].loc].n_moves++;
    }
    for (uint32_t i = 0; i < a->n_local; i++) {
        cause_loc *cl = &c->locs[a->local[i]];
        if (ws_grow((void **)&cl->moves, &cl->cap_moves, cl->n_moves, sizeof *cl->moves) != 0)
            return ws_error_nomem(err, "critical path");
        cl->n_moves = 0;
    }
    for (size_t i = 0; i < n; i++) {
        cause_loc *cl = &c->locs[m[i].loc];
        if (cl->n_moves >= cl->cap_moves) /* a location not of this process */
            return ws_error_set(err, WS_ERR_INTERNAL, "critical path: move for location %u, not analysed here",
                                (unsigned)m[i].loc);
        path_move mv = {m[i].ev, m[i].take, m[i].time};
        cl->moves[cl->n_moves++] = mv;
    }
    return WS_OK;
}

/* gather_apply's work on process 0: the walk over every process's items */
typedef struct walk_ctx {
    walker *w;
    uint32_t n_pieces; /* one per process */
    uint32_t end_loc;
    double t_end;
} walk_ctx;

static int walk_pieces(void *ctx, const void *const *pieces, const size_t *sizes, ws_error *err)
{
    walk_ctx *x = ctx;
    return walk_all(x->w, pieces, sizes, x->n_pieces, x->end_loc, x->t_end, err);
}

int ws_causes_path_walk(ws_causes *c, ws_error *err)
{
    if (!c->walk)
        return WS_OK;
    const ws_analysis *a = c->a;
    ws_transport *tr = a->transport;
    walker w;
    memset(&w, 0, sizeof w);
    w.n_locs = a->trace->n_locations;
    int rc = WS_OK;
    if (tr->process == 0 && !(w.locs = ws_calloc(w.n_locs ? w.n_locs : 1, sizeof *w.locs)))
        rc = ws_error_nomem(err, "critical path");
    /* every process learns of a failure anywhere before the collective */
    rc = ws_agree_status(tr, rc, err);
    if (rc == WS_OK) {
        walk_ctx x = {&w, tr->n_processes, c->end_loc, c->t_end};
        rc = tr->ops->gather_apply(tr, c->walk_items, c->n_walk * sizeof *c->walk_items, walk_pieces, &x, err);
    }
    free(c->walk_items);
    c->walk_items = NULL;
    c->n_walk = c->cap_walk = 0;
    rc = ws_agree_status(tr, rc, err);
    if (rc == WS_OK) {
        void *got = NULL;
        size_t n_got = 0;
        rc = tr->ops->exchange(tr, w.moves, sizeof *w.moves, w.dest, w.n_moves, &got, &n_got, err);
        if (rc == WS_OK)
            rc = keep_moves(c, got, n_got, err);
        free(got);
    }
    walker_free(&w);
    return rc;
}
