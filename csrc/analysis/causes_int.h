/* Internal to the delay and critical-path analysis (causes.c: the
 * replays; causes_setup.c: before and after them; points.c:
 * synchronization points; intervals.c: synchronization intervals and the
 * cost accounting of one interval; path_walk.c: the critical path walked
 * in one place; path_pieces.c: its pieces). */
#ifndef WS_ANALYSIS_CAUSES_INT_H
#define WS_ANALYSIS_CAUSES_INT_H

#include "analysis_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SP_LS = 1, SP_LR = 2, SP_SITE = 3 };
enum { NCLS = WS_WAIT_CLASS_COUNT };
/* the classes whose waiting the delay analysis handles, 1..NGL (handled()):
 * only they carry long-term costs */
enum { NGL = WS_WAIT_OMPIDLE };

/* A synchronization point (40 bytes).  Its own waiting is in the call
 * path of its call (point_cp); its partner is its message's or, for a
 * site, the delayer (point_partner); a site's communicator, class and
 * root are read from the site; the time of its call after the
 * synchronization from its message or site (points.c); what only a
 * waiting point needs is in its block of gl (point_gl, point_wait_in). */
typedef struct sync_point {
    double time;       /* synchronization time */
    double wait;       /* own handled waiting time here (0 if none) */
    double completion; /* the part of its call that counts when it opens an interval */
    uint32_t call_ev;  /* Enter event of the MPI call holding the point (the point's event: none) */
    uint32_t event;    /* the event where it is exchanged (ws_point_event) */
    uint32_t index;    /* message row or site */
    uint8_t type;
    uint8_t wclass;    /* class of the own waiting (WS_WAIT_*) */
    uint8_t final;     /* waits, and no later charge here can add long-term costs to it (marked only for
                          the delay analysis without the critical path) */
    uint8_t pad;
} sync_point;
_Static_assert(sizeof(sync_point) == 40, "a synchronization point takes 40 bytes");

/* a move of the critical path at a location, in replay order: taken at
 * event `ev` with the path's top `time`, or handed over there, the path
 * then ending here at `time` */
typedef struct path_move {
    uint32_t ev;
    uint32_t take;
    double time;
} path_move;

/* What the delay analysis keeps per site of a location. */
typedef struct cause_site {
    uint32_t sp;      /* the site's point (WS_NONE32: none) */
    /* what passes 4 and 5 read of the wait states found here (copied
     * from ws_site_wait, which is freed once the points are built) */
    uint32_t delayer;     /* the location waited for (WS_NONE32: none) */
    uint8_t anywait;      /* some member of the instance waited */
    uint8_t waited;       /* this location waited here */
    uint8_t pad[2];
} cause_site;

/* the synchronization time of a site where the location waited but that
 * is no point (none in practice: such sites take no part in pass 4) */
typedef struct pointless_wait {
    uint32_t site;
    uint32_t pad;
    double sync_time;
} pointless_wait;

typedef struct cause_loc {
    sync_point *sp;
    uint32_t n_sp;
    uint8_t *msg_pts;   /* message row: MSG_HAS_LS | MSG_HAS_LR, which points it has */
    uint32_t hint;      /* the point last looked up (ws_point_of_message) */
    cause_site *sites;  /* per site */
    pointless_wait *pointless; /* by site, ascending */
    uint32_t n_pointless;
    /* long-term cost carried by a point's waiting, per final class: only
     * points that wait carry one, so only they have a block of gl_block
     * doubles in gl, the j-th waiting point at j * gl_block (point_gl:
     * bit k % 64 of gl_bits[k / 64] says whether point k waits, gl_rank[k
     * / 64] how many points before k / 64 * 64 do): class x at
     * ws_causes.gl_at[x] (only the classes some point of the trace waits
     * in have a place), then, with an analysis window, the part of the
     * waiting inside it */
    double *gl;
    uint64_t *gl_bits;
    uint32_t *gl_rank;
    uint32_t gl_block; /* ws_causes.n_gl, one more with a window */
    int gl_window;     /* the block ends with the part inside the window */
    /* per point: waiting points: the largest share of their waiting that
     * propagated; a message's point on the delayer side (which never
     * waits): the indirect part of the partner's waiting */
    double *share;
    /* collectives (delayer side): indirect part of each waiter's waiting,
     * per site its pairs in coll_ind (site_pairs) */
    struct coll_indirect *coll_ind;
    size_t n_coll_ind, cap_coll_ind;
    /* critical path: the backward replay visits only the synchronization
     * events and keeps who holds the path (owner, top, bottom) and the
     * moves; the pieces of the path are cut from the moves afterwards
     * (ws_causes_path_pieces) */
    int owner;
    double top, bottom;
    uint64_t last;  /* the backward replay's position: events [last, n) replayed */
    path_move *moves;
    size_t n_moves, cap_moves;
    /* with the path walked in one place (path_walk.c): the events below
     * this one are those the location's next walk item looks at */
    uint64_t walk_hi;
    int at_start; /* still owned the path at its first event */
    double floor; /* the path begins no earlier than MPI_Init's Enter */
    double undistributed; /* waiting whose cost found no activity here */
} cause_loc;

/* What pass 4 tells the walk of the critical path (path_walk.c) about
 * one exchange of a location, in the location's replay order: at event
 * ev the location may hand the path over (to `target`) and, on a
 * message's consuming side or at a collective, take it. */
typedef struct walk_item {
    double above;       /* least time of the events after ev that the replay passed since the location's item
                         * before (its last event excluded; INFINITY: none) */
    double hand;        /* hand-over: when, unless the path is lower on the location then (its top) */
    uint64_t key;       /* message id or collective instance */
    uint32_t ev;
    uint32_t loc;
    uint32_t target;    /* hand-over candidate: the location the path would go to (WS_NONE32: none) */
    uint32_t member;    /* message: channel; collective: member index */
    uint32_t n_members; /* collective: members */
    uint32_t kind;      /* WALK_PRODUCE, WALK_CONSUME (messages) or WALK_COLL */
} walk_item;

enum { WALK_PRODUCE = 1, WALK_CONSUME = 2, WALK_COLL = 3 };

typedef struct coll_indirect {
    uint32_t waiter;
    uint32_t site; /* whose pair it is: a site's pairs lie side by side, the sites in descending order (the
                      order in which the backward replay meets them) */
    double value;
} coll_indirect;

typedef struct charge_scratch {
    double *delta, *shortc, *longc, *waits, *prop_s, *prop_l;
    uint32_t *cps, *wait_points;
    size_t cap_n, cap_m;
    /* with a window: the propagated shares of the whole waiting */
    double *whole_prop;
    size_t cap_whole;
} charge_scratch;

/* Room for n call paths and m waiting points in s (intervals.c); -1 when out of memory. */
int ws_charge_reserve(charge_scratch *s, size_t n, size_t m);

struct ws_causes {
    ws_analysis *a;
    cause_loc *locs;
    int model;
    int delay;
    int cp;
    /* the critical path is walked in one place after pass 4 instead of
     * moving with its notes (several processes or threads: path_walk.c) */
    int walk;
    struct walk_item *walk_items; /* of the local locations, each one's in its replay order */
    size_t n_walk, cap_walk;
    /* membership of locations in communicators, as bit sets */
    uint8_t *member;
    size_t member_stride;
    /* scratch for profiles */
    double *acc;
    uint8_t *in_acc;
    uint32_t *touched;
    uint32_t n_touched;
    charge_scratch scratch;
    /* aligned copy of a note's mini-profile */
    struct entry *entry_buf;
    size_t cap_entry_buf;
    /* the path's end */
    uint32_t end_loc;
    double t_end;
    /* the long-term costs' classes that have a place in the points' blocks
     * (cause_loc.gl): class x at gl_at[x] (-1: none of the trace's points
     * waits in it, so no cost of it arises); n_gl of them */
    int8_t gl_at[NGL + 1];
    uint32_t n_gl;
};

typedef struct entry {
    uint32_t callpath;
    uint32_t pad;
    double value;
} entry;

/* what a waiting location tells the location it waited for */
typedef struct wait_note {
    double wait;          /* the waiting time (0: nothing to charge) */
    double gamma;         /* its part inside the analysis window, the short-term cost charged (= wait without one) */
    double token_time;    /* critical path handed over at this time ... */
    uint32_t token_target;/* ... to this location (WS_NONE32: no token) */
    uint32_t wclass;
    uint32_t waiter;
    uint32_t delayer;
    uint32_t n_entries;   /* mini-profile entries that follow */
    uint32_t has_gl;      /* gl travels (else it is all 0 and the payload ends before it) */
    double gl[NCLS];      /* gamma long per final class: last, so that a note without one is 48 bytes, not 120 */
} wait_note;

enum { MSG_HAS_LS = 1, MSG_HAS_LR = 2 };

/* The call path of point p's call at location loc (a site's: the site's,
 * which for an OpenMP site is the construct's). */
static inline uint32_t point_cp(const ws_causes *c, uint32_t loc, const sync_point *p)
{
    const ws_events *e = &c->a->trace->locations[loc].events;
    if (p->type == SP_SITE)
        return ws_site_callpath(e, &c->a->sync->locs[loc].sites[p->index]);
    return e->kind[p->call_ev] == WS_EV_ENTER ? e->ref[p->call_ev] : WS_NONE32;
}

/* The number of bits set in x. */
static inline uint32_t popcount64(uint64_t x)
{
#if defined(__GNUC__)
    return (uint32_t)__builtin_popcountll(x);
#else
    uint32_t n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
#endif
}

/* the long-term costs point k carries, class x at x - 1 (NULL: it does
 * not wait) */
static inline double *point_gl(const cause_loc *cl, uint32_t k)
{
    uint64_t bits = cl->gl_bits[k >> 6], bit = (uint64_t)1 << (k & 63);
    if (!(bits & bit))
        return NULL;
    uint32_t slot = cl->gl_rank[k >> 6] + popcount64(bits & (bit - 1));
    return &cl->gl[(size_t)slot * cl->gl_block];
}

/* The location point p of `loc` synchronizes with: a message's partner,
 * or the site's delayer. */
static inline uint32_t point_partner(const ws_causes *c, uint32_t loc, const sync_point *p)
{
    if (p->type == SP_SITE)
        return c->locs[loc].sites[p->index].delayer;
    return c->a->sync->locs[loc].msgs[p->index].partner;
}

/* the part of point k's waiting inside the analysis window (= its
 * waiting without one) */
static inline double point_wait_in(const cause_loc *cl, uint32_t k)
{
    const double *b = point_gl(cl, k);
    if (!b)
        return 0.0;
    return cl->gl_window ? b[cl->gl_block - 1] : cl->sp[k].wait;
}

/* the synchronization time of site `site`, where the location waited */
static inline double site_sync_time(const cause_loc *cl, uint32_t site)
{
    if (cl->sites[site].sp != WS_NONE32)
        return cl->sp[cl->sites[site].sp].time;
    uint32_t lo = 0, hi = cl->n_pointless;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cl->pointless[mid].site < site)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < cl->n_pointless && cl->pointless[lo].site == site ? cl->pointless[lo].sync_time : NAN;
}

/* collectives whose waiting has delay costs (pass 4 charges them there) */
static inline int delay_site_class(uint8_t cls)
{
    return cls == WS_SITE_BARRIER || cls == WS_SITE_NXN || cls == WS_SITE_1TON || cls == WS_SITE_NTO1 ||
           cls == WS_SITE_OMP_BARRIER;
}

/* the path comes to a location: it holds it from `time` down */
static inline void take_token(cause_loc *cl, double time)
{
    cl->owner = 1;
    cl->top = time;
    cl->bottom = -INFINITY;
}

/* wait states whose cost the delay analysis accounts */
static inline int handled(uint8_t wclass)
{
    return wclass >= WS_WAIT_LATESENDER && wclass <= WS_WAIT_OMPIDLE;
}

static inline void add(ws_causes *c, int metric, uint32_t cp, uint32_t loc, double v)
{
    ws_cube_add(c->a->result, metric, cp, loc, v);
}

static inline int is_member(const ws_causes *c, uint32_t comm, uint32_t loc)
{
    if (comm == WS_NONE32)
        return 1;
    return (c->member[(size_t)comm * c->member_stride + loc / 8] >> (loc % 8)) & 1;
}

/* synchronization points of `loc`, sorted by the calls that hold them */
int ws_points_build(ws_causes *c, uint32_t loc, ws_error *err);
/* marks the waiting points of `loc` whose long-term costs no later charge
 * can change (sync_point.final) */
void ws_points_mark_final(ws_causes *c, uint32_t loc);
/* event where point k of `loc` is exchanged */
uint32_t ws_point_event(const ws_causes *c, uint32_t loc, uint32_t k);
/* point of message `row` of `loc` of the given kind (SP_LS, SP_LR) or WS_NONE32 */
uint32_t ws_point_of_message(ws_causes *c, uint32_t loc, uint32_t row, uint8_t type);
/* the latest point before point k, in an earlier call, shared with q */
uint32_t ws_previous_point(const ws_causes *c, uint32_t loc, uint32_t k, uint32_t q);
/* the delay costs of idle OpenMP worker threads (omp_delay.c), before pass 4 */
int ws_omp_idle_costs(ws_causes *c, ws_error *err);
/* time per call path of `loc` in events [from, to) into the accumulator
 * (intervals.c), less the waiting of its points in between */
void ws_events_profile(ws_causes *c, uint32_t loc, uint64_t from, uint64_t to);
/* the points of `loc` whose calls begin in events [from, to): [*lo, *hi) (they are sorted by call) */
void ws_points_between(const ws_causes *c, uint32_t loc, uint64_t from, uint64_t to, uint32_t *lo, uint32_t *hi);
/* mini-profile of `loc` in the interval of point k opened at point j */
void ws_interval_profile(ws_causes *c, uint32_t loc, uint32_t j, uint32_t k);
/* appends the accumulated profile (positive entries) to out */
uint32_t ws_profile_entries(ws_causes *c, ws_buffer *out);
void ws_profile_reset(ws_causes *c);
/* the delayer `loc` pays for the waiting in `note` at its point k; its
 * points below `floor` receive no share of it (0: all may) */
int ws_charge(ws_causes *c, charge_scratch *s, uint32_t loc, uint32_t k, const wait_note *note,
              const entry *entries, uint32_t floor, double *indirect, ws_error *err);
/* scalasca_compat.c: per waiting member of a collective, the floor of its
 * share as Scalasca 2.6 passes it on */
int ws_compat_propagation_floors(const ws_causes *c, uint32_t loc, uint32_t k, const uint32_t *waiter, uint32_t n,
                                 uint32_t *floor, ws_error *err);

/* pass 4 with `walk`: the location's next item (its `above`, and `hand`
 * bounded by the next event, are filled in here); NULL when out of
 * memory */
walk_item *ws_walk_item(ws_causes *c, uint32_t loc, uint32_t ev);
/* the item's location would hand the path over to `target` at `sync` */
void ws_walk_hand(walk_item *it, uint32_t target, double sync, int overlap);

#endif
