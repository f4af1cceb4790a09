/* Timestamp correction with the controlled logical clock (see
 * clock_correction.h for the method and its guarantees). */
#include "clock_correction.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sync.h"
#include "transport.h"

void ws_clc_options_default(ws_clc_options *o)
{
    o->gamma = 0.99;
    o->min_latency = 0.0;
}

/* A constraint end point on a location, at `event`: kind MSG (a, b) is the
 * partner event (location a, event b); kind COLL is (instance a, entry b). */
enum { LINK_MSG = 0, LINK_COLL = 1 };

typedef struct link {
    uint32_t event;
    uint32_t kind;
    uint32_t a;
    uint32_t b;
} link;

typedef struct link_list {
    link *v;
    size_t n, cap;
} link_list;

/* one member of a collective instance */
typedef struct entry {
    uint32_t loc;
    uint32_t member; /* rank in the communicator */
    uint32_t enter;  /* event of the call's Enter */
    uint32_t leave;  /* event of the call's Leave */
    double enter_lc; /* corrected Enter, once visited */
    int done;
} entry;

typedef struct instance {
    uint8_t cls;      /* WS_SITE_* */
    uint32_t root;    /* member index of the root or WS_NONE32 */
    uint32_t first;   /* into the entries */
    uint32_t n;
    uint32_t n_done;
    uint32_t root_entry; /* entry of the root or WS_NONE32 */
    double max_enter;
    double cap;       /* after the forward pass: earliest dependent Leave */
} instance;

typedef struct loc_state {
    link_list deps; /* Leave events and what they need */
    link_list srcs; /* Enter events and who needs them */
    uint32_t *pair; /* Enter <-> Leave; other events: the innermost open Enter */
    double *lc;     /* corrected times */
    uint64_t cursor;
    size_t dep_pos, src_pos;
    /* jumps of the forward pass */
    uint32_t *jump_event;
    double *jump_delta;
    size_t n_jumps, cap_jumps;
} loc_state;

typedef struct clc {
    const ws_trace *t;
    const ws_sync *sync;
    ws_clc_options o;
    loc_state *locs;
    instance *inst;
    uint32_t n_inst;
    entry *entries;
    uint32_t n_entries;
} clc;

static int push_link(link_list *l, uint32_t event, uint32_t kind, uint32_t a, uint32_t b)
{
    if (ws_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) != 0)
        return -1;
    link *x = &l->v[l->n++];
    x->event = event;
    x->kind = kind;
    x->a = a;
    x->b = b;
    return 0;
}

static int cmp_link(const void *x, const void *y)
{
    const link *p = x, *q = y;
    if (p->event != q->event)
        return p->event < q->event ? -1 : 1;
    return 0;
}

/* Enter <-> Leave of every call; any other event gets the innermost open
 * Enter (WS_NONE32 outside every call or for a call never left). */
static int pair_calls(const ws_events *e, uint32_t *pair)
{
    uint32_t *stack = ws_malloc_array(e->n ? e->n : 1, sizeof *stack);
    if (!stack)
        return -1;
    size_t depth = 0;
    for (uint64_t i = 0; i < e->n; i++) {
        pair[i] = WS_NONE32;
        if (e->kind[i] == WS_EV_ENTER) {
            stack[depth++] = (uint32_t)i;
        } else if (e->kind[i] == WS_EV_LEAVE) {
            if (depth) {
                uint32_t enter = stack[--depth];
                pair[enter] = (uint32_t)i;
                pair[i] = enter;
            }
        } else if (depth) {
            pair[i] = stack[depth - 1];
        }
    }
    free(stack);
    return 0;
}

static int is_constrained_site(uint8_t cls)
{
    return cls == WS_SITE_BARRIER || cls == WS_SITE_NXN || cls == WS_SITE_1TON || cls == WS_SITE_NTO1 ||
           cls == WS_SITE_SCAN || cls == WS_SITE_INIT || cls == WS_SITE_FINALIZE;
}

/* Does the Leave of entry `x` depend on the other members at all? */
static int needs_members(const instance *in, const entry *x)
{
    switch (in->cls) {
    case WS_SITE_1TON:
        return x->member != in->root;
    case WS_SITE_NTO1:
        return x->member == in->root;
    default:
        return 1;
    }
}

static int build(clc *c, ws_error *err)
{
    const ws_trace *t = c->t;
    const ws_sync *s = c->sync;
    for (uint32_t loc = 0; loc < t->n_locations; loc++) {
        const ws_events *e = &t->locations[loc].events;
        loc_state *st = &c->locs[loc];
        st->pair = ws_malloc_array(e->n ? e->n : 1, sizeof *st->pair);
        st->lc = ws_malloc_array(e->n ? e->n : 1, sizeof *st->lc);
        if (!st->pair || !st->lc || pair_calls(e, st->pair) != 0)
            return ws_error_nomem(err, "clock correction");
        ws_events_times(e, st->lc);
    }
    /* messages: the receive's Leave needs the send's Enter */
    for (uint32_t b = 0; b < t->n_locations; b++) {
        const ws_loc_sync *ls = &s->locs[b];
        for (uint64_t r = 0; r < ls->n_messages; r++) {
            if ((ls->msgs[r].flags & (WS_MSG_SEND | WS_MSG_CANCELLED)) || ls->msgs[r].match_row == WS_NONE32)
                continue;
            uint32_t a = ls->msgs[r].partner;
            uint32_t srow = ls->msgs[r].match_row;
            if (a >= t->n_locations || srow >= s->locs[a].n_messages)
                continue;
            uint32_t send_enter = s->locs[a].msgs[srow].call;
            uint32_t recv_call = ls->msgs[r].call;
            if (send_enter == WS_NONE32 || recv_call == WS_NONE32)
                continue;
            uint32_t recv_leave = c->locs[b].pair[recv_call];
            if (recv_leave == WS_NONE32)
                continue;
            if (push_link(&c->locs[b].deps, recv_leave, LINK_MSG, a, send_enter) != 0 ||
                push_link(&c->locs[a].srcs, send_enter, LINK_MSG, b, recv_leave) != 0)
                return ws_error_nomem(err, "clock correction");
        }
    }
    /* collectives: group the sites by instance */
    ws_map64 index;
    ws_map64_init(&index);
    size_t cap_inst = 0;
    int rc = WS_OK;
    for (uint32_t loc = 0; loc < t->n_locations && rc == WS_OK; loc++) {
        const ws_loc_sync *ls = &s->locs[loc];
        for (uint32_t k = 0; k < ls->n_sites; k++) {
            if (!is_constrained_site(ls->sites[k].cls))
                continue;
            uint64_t id;
            if (!ws_map64_get(&index, ws_site_instance(&ls->sites[k]), &id)) {
                id = c->n_inst;
                if (ws_map64_put(&index, ws_site_instance(&ls->sites[k]), id) != 0 ||
                    ws_grow((void **)&c->inst, &cap_inst, c->n_inst + 1, sizeof *c->inst) != 0) {
                    rc = ws_error_nomem(err, "clock correction");
                    break;
                }
                instance *in = &c->inst[c->n_inst++];
                memset(in, 0, sizeof *in);
                in->cls = ls->sites[k].cls;
                in->root = ws_site_root(&t->locations[loc].events, &ls->sites[k]);
                in->root_entry = WS_NONE32;
                in->max_enter = -INFINITY;
                in->cap = INFINITY;
            }
            c->inst[id].n++;
            c->n_entries++;
        }
    }
    if (rc == WS_OK) {
        c->entries = ws_calloc(c->n_entries ? c->n_entries : 1, sizeof *c->entries);
        if (!c->entries)
            rc = ws_error_nomem(err, "clock correction");
    }
    if (rc == WS_OK) {
        uint32_t next = 0;
        for (uint32_t i = 0; i < c->n_inst; i++) {
            c->inst[i].first = next;
            next += c->inst[i].n;
            c->inst[i].n = 0;
        }
        for (uint32_t loc = 0; loc < t->n_locations && rc == WS_OK; loc++) {
            const ws_loc_sync *ls = &s->locs[loc];
            const ws_events *e = &t->locations[loc].events;
            loc_state *st = &c->locs[loc];
            for (uint32_t k = 0; k < ls->n_sites; k++) {
                if (!is_constrained_site(ls->sites[k].cls))
                    continue;
                uint64_t id;
                ws_map64_get(&index, ws_site_instance(&ls->sites[k]), &id);
                instance *in = &c->inst[id];
                uint32_t x = in->first + in->n++;
                entry *en = &c->entries[x];
                en->loc = loc;
                en->member = ws_site_member(ls, &ls->sites[k]);
                en->enter = WS_NONE32;
                en->leave = WS_NONE32;
                uint32_t ev = ls->sites[k].event;
                if (ev < e->n && e->kind[ev] == WS_EV_COLL_END && st->pair[ev] != WS_NONE32) {
                    /* the operation's own begin and end records, as the
                     * analysis times collectives (the call's Enter without a
                     * begin record) */
                    en->enter = st->pair[ev];
                    for (uint32_t i = en->enter + 1; i < ev; i++)
                        if (e->kind[i] == WS_EV_COLL_BEGIN) {
                            en->enter = i;
                            break;
                        }
                    en->leave = ev;
                } else if (ev < e->n && e->kind[ev] == WS_EV_LEAVE) { /* MPI_Init, MPI_Finalize */
                    en->enter = st->pair[ev];
                    en->leave = en->enter != WS_NONE32 ? ev : WS_NONE32;
                }
                if (en->member == in->root)
                    in->root_entry = x;
                if (en->enter == WS_NONE32 || en->leave == WS_NONE32) {
                    /* not constrained; counts as visited */
                    en->done = 1;
                    en->enter_lc = -INFINITY;
                    in->n_done++;
                    continue;
                }
                if (push_link(&st->srcs, en->enter, LINK_COLL, (uint32_t)id, x) != 0 ||
                    (needs_members(in, en) && push_link(&st->deps, en->leave, LINK_COLL, (uint32_t)id, x) != 0))
                    rc = ws_error_nomem(err, "clock correction");
            }
        }
    }
    ws_map64_free(&index);
    if (rc != WS_OK)
        return rc;
    for (uint32_t loc = 0; loc < t->n_locations; loc++) {
        loc_state *st = &c->locs[loc];
        if (st->deps.n > 1)
            qsort(st->deps.v, st->deps.n, sizeof *st->deps.v, cmp_link);
        if (st->srcs.n > 1)
            qsort(st->srcs.v, st->srcs.n, sizeof *st->srcs.v, cmp_link);
    }
    return WS_OK;
}

/* The earliest time the collective lets entry x leave, or NAN while
 * members it needs have not been visited. */
static double coll_need(const clc *c, const instance *in, const entry *x)
{
    switch (in->cls) {
    case WS_SITE_1TON:
        if (in->root_entry == WS_NONE32)
            return -INFINITY;
        return c->entries[in->root_entry].done ? c->entries[in->root_entry].enter_lc : NAN;
    case WS_SITE_SCAN: {
        double need = -INFINITY;
        for (uint32_t j = in->first; j < in->first + in->n; j++) {
            const entry *y = &c->entries[j];
            if (y->member > x->member)
                continue;
            if (!y->done)
                return NAN;
            if (y->enter_lc > need)
                need = y->enter_lc;
        }
        return need;
    }
    default:
        return in->n_done == in->n ? in->max_enter : NAN;
    }
}

static int add_jump(loc_state *st, uint32_t event, double delta)
{
    if (st->n_jumps == st->cap_jumps) {
        size_t cap = st->cap_jumps ? st->cap_jumps * 2 : 16;
        uint32_t *ev = ws_realloc(st->jump_event, cap * sizeof *ev);
        if (!ev)
            return -1;
        st->jump_event = ev;
        double *d = ws_realloc(st->jump_delta, cap * sizeof *d);
        if (!d)
            return -1;
        st->jump_delta = d;
        st->cap_jumps = cap;
    }
    st->jump_event[st->n_jumps] = event;
    st->jump_delta[st->n_jumps++] = delta;
    return 0;
}

/* Advances location `loc` as far as its constraints allow; *moved is set
 * when at least one event was visited. */
static int forward_location(clc *c, uint32_t loc, int *moved, ws_error *err)
{
    const ws_events *e = &c->t->locations[loc].events;
    loc_state *st = &c->locs[loc];
    double decay = 1.0 - c->o.gamma;
    while (st->cursor < e->n) {
        uint64_t i = st->cursor;
        double need = -INFINITY;
        for (size_t j = st->dep_pos; j < st->deps.n && st->deps.v[j].event == i; j++) {
            const link *d = &st->deps.v[j];
            double n;
            if (d->kind == LINK_MSG) {
                if (c->locs[d->a].cursor <= d->b)
                    return WS_OK; /* the send is not visited yet */
                n = c->locs[d->a].lc[d->b] + c->o.min_latency;
            } else {
                n = coll_need(c, &c->inst[d->a], &c->entries[d->b]);
                if (isnan(n))
                    return WS_OK;
            }
            if (n > need)
                need = n;
        }
        /* the shift carried from the previous event, decaying */
        double time = ws_ev_time(e, i);
        double carried = 0.0, prev = -INFINITY;
        if (i > 0) {
            prev = st->lc[i - 1];
            carried = prev - ws_ev_time(e, i - 1);
            if (carried > 0.0) {
                carried -= decay * (time - ws_ev_time(e, i - 1));
                if (carried < 0.0)
                    carried = 0.0;
            } else {
                carried = 0.0;
            }
        }
        double value = carried > 0.0 ? time + carried : time;
        if (value < prev)
            value = prev;
        if (need > value) {
            if (add_jump(st, (uint32_t)i, need - value) != 0)
                return ws_error_nomem(err, "clock correction");
            value = need;
        }
        st->lc[i] = value;
        while (st->dep_pos < st->deps.n && st->deps.v[st->dep_pos].event == i)
            st->dep_pos++;
        for (; st->src_pos < st->srcs.n && st->srcs.v[st->src_pos].event == i; st->src_pos++) {
            const link *x = &st->srcs.v[st->src_pos];
            if (x->kind != LINK_COLL)
                continue;
            instance *in = &c->inst[x->a];
            entry *en = &c->entries[x->b];
            en->enter_lc = value;
            en->done = 1;
            in->n_done++;
            if (value > in->max_enter)
                in->max_enter = value;
        }
        st->cursor++;
        *moved = 1;
    }
    return WS_OK;
}

/* After the forward pass: the earliest Leave that an Enter of each
 * instance must not pass (scans are computed per entry). */
static void instance_caps(clc *c)
{
    for (uint32_t i = 0; i < c->n_inst; i++) {
        instance *in = &c->inst[i];
        double cap = INFINITY;
        for (uint32_t j = in->first; j < in->first + in->n; j++) {
            const entry *y = &c->entries[j];
            if (y->leave == WS_NONE32 || !needs_members(in, y))
                continue;
            double leave = c->locs[y->loc].lc[y->leave];
            if (leave < cap)
                cap = leave;
        }
        in->cap = cap;
    }
}

/* How far event `k` of a location may move: its sends must not pass
 * their receives' completion, its collective entries not the Leave of a
 * member that needs them.  Caps computed once per instance only get
 * more conservative as Leaves move forward. */
static double event_cap(const clc *c, const loc_state *st, size_t *pos, uint32_t k)
{
    /* *pos: first source link with event >= k, moving downwards */
    while (*pos > 0 && st->srcs.v[*pos - 1].event >= k)
        (*pos)--;
    double cap = INFINITY;
    for (size_t j = *pos; j < st->srcs.n && st->srcs.v[j].event == k; j++) {
        const link *x = &st->srcs.v[j];
        double v;
        if (x->kind == LINK_MSG) {
            v = c->locs[x->a].lc[x->b] - c->o.min_latency;
        } else {
            const instance *in = &c->inst[x->a];
            if (in->cls == WS_SITE_SCAN) {
                v = INFINITY;
                const entry *me = &c->entries[x->b];
                for (uint32_t y = in->first; y < in->first + in->n; y++) {
                    const entry *o = &c->entries[y];
                    if (o->member >= me->member && o->leave != WS_NONE32 && c->locs[o->loc].lc[o->leave] < v)
                        v = c->locs[o->loc].lc[o->leave];
                }
            } else if (in->cls == WS_SITE_1TON && c->entries[x->b].member != in->root) {
                v = INFINITY; /* nobody needs a non-root's entry */
            } else {
                v = in->cap;
            }
        }
        if (v < cap)
            cap = v;
    }
    return cap;
}

static void backward_location(clc *c, uint32_t loc)
{
    const ws_events *e = &c->t->locations[loc].events;
    loc_state *st = &c->locs[loc];
    double decay = 1.0 - c->o.gamma;
    for (size_t j = 0; j < st->n_jumps; j++) {
        uint32_t b = st->jump_event[j];
        double delta = st->jump_delta[j];
        double window = delta / decay;
        double from = ws_ev_time(e, b) - window;
        double bound = st->lc[b];
        /* the source links before b */
        size_t lo = 0, hi = st->srcs.n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (st->srcs.v[mid].event < b)
                lo = mid + 1;
            else
                hi = mid;
        }
        size_t pos = lo;
        for (uint32_t k = b; k-- > 0;) {
            double time = ws_ev_time(e, k);
            if (!(time > from))
                break;
            double v = st->lc[k] + delta * ((time - from) / window);
            if (v > bound)
                v = bound;
            double cap = event_cap(c, st, &pos, k);
            if (v > cap)
                v = cap;
            if (v < st->lc[k])
                v = st->lc[k];
            st->lc[k] = v;
            bound = v;
        }
    }
}

static void clc_free(clc *c)
{
    if (c->locs) {
        for (uint32_t loc = 0; loc < c->t->n_locations; loc++) {
            loc_state *st = &c->locs[loc];
            free(st->deps.v);
            free(st->srcs.v);
            free(st->pair);
            free(st->lc);
            free(st->jump_event);
            free(st->jump_delta);
        }
        free(c->locs);
    }
    free(c->inst);
    free(c->entries);
}

int ws_clock_correct_clc(const ws_trace *t, const ws_clc_options *o, double **times, ws_clc_stats *stats,
                         ws_error *err)
{
    memset(stats, 0, sizeof *stats);
    for (uint32_t loc = 0; loc < t->n_locations; loc++) {
        times[loc] = NULL;
        if (!t->locations[loc].loaded)
            return ws_error_set(err, WS_ERR_ARGUMENT,
                                "location %u is not loaded: the clock correction needs the events of every location",
                                (unsigned)loc);
    }
    ws_clc_options opt;
    ws_clc_options_default(&opt);
    if (o)
        opt = *o;
    if (!(opt.gamma > 0.0 && opt.gamma < 1.0))
        return ws_error_set(err, WS_ERR_ARGUMENT, "the clock correction needs 0 < gamma < 1, got %g", opt.gamma);
    if (!(opt.min_latency >= 0.0 && isfinite(opt.min_latency)))
        return ws_error_set(err, WS_ERR_ARGUMENT, "the minimum latency must be finite and >= 0, got %g",
                            opt.min_latency);
    uint32_t *all = ws_malloc_array(t->n_locations ? t->n_locations : 1, sizeof *all);
    ws_transport *tr = ws_transport_local_new(t->n_locations);
    if (!all || !tr) {
        free(all);
        if (tr)
            tr->ops->destroy(tr);
        return ws_error_nomem(err, "clock correction");
    }
    for (uint32_t loc = 0; loc < t->n_locations; loc++)
        all[loc] = loc;
    ws_sync *sync = NULL;
    int rc = ws_sync_build(t, all, t->n_locations, tr, &sync, err);
    tr->ops->destroy(tr);
    free(all);
    if (rc)
        return rc;
    clc c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.sync = sync;
    c.o = opt;
    c.locs = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *c.locs);
    if (!c.locs)
        rc = ws_error_nomem(err, "clock correction");
    if (rc == WS_OK)
        rc = build(&c, err);
    /* forward amortization, visiting the locations round-robin */
    while (rc == WS_OK) {
        int moved = 0, done = 1;
        for (uint32_t loc = 0; loc < t->n_locations && rc == WS_OK; loc++) {
            rc = forward_location(&c, loc, &moved, err);
            if (c.locs[loc].cursor < t->locations[loc].events.n)
                done = 0;
        }
        if (rc != WS_OK || done)
            break;
        if (!moved) {
            uint32_t loc = 0;
            while (c.locs[loc].cursor >= t->locations[loc].events.n)
                loc++;
            rc = ws_error_set(err, WS_ERR_MATCH,
                              "the messages and collectives of the trace wait for each other in a cycle (location "
                              "%u stops at event %llu): its timestamps cannot be corrected",
                              (unsigned)loc, (unsigned long long)c.locs[loc].cursor);
        }
    }
    if (rc == WS_OK) {
        instance_caps(&c);
        for (uint32_t loc = 0; loc < t->n_locations; loc++)
            backward_location(&c, loc);
        for (uint32_t loc = 0; loc < t->n_locations; loc++) {
            const ws_events *e = &t->locations[loc].events;
            loc_state *st = &c.locs[loc];
            stats->n_jumps += st->n_jumps;
            for (uint64_t i = 0; i < e->n; i++) {
                double shift = st->lc[i] - ws_ev_time(e, i);
                if (shift != 0.0)
                    stats->n_moved++;
                if (shift > stats->max_shift)
                    stats->max_shift = shift;
            }
            times[loc] = st->lc;
            st->lc = NULL;
        }
    }
    clc_free(&c);
    ws_sync_free(sync);
    return rc;
}
