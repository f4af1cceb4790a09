/* The pieces of the critical path (seed 001 section III), cut after the
 * backward replay of pass 4 (causes.c).  That replay visits only the
 * synchronization events and records, per location, where the path was
 * taken over and handed on (path_move).  Here each location walks its
 * events once more from its end, only while it holds the path, exactly
 * as a replay of every event would have: a piece per event, clipped to
 * where the path is on the location (its top, where it was handed on,
 * MPI_Init's Enter) and to the analysis window.  The locations' walks are
 * merged latest piece first, so the path is appended in the order the
 * replay of every event appended it. */
#include "causes_int.h"

/* one location's walk, resumable piece by piece */
typedef struct cutter {
    uint32_t loc;
    uint32_t cp;  /* call path active right after event ev */
    int64_t ev;   /* the next event to walk */
    size_t m;     /* the next move */
    ws_path_segment piece; /* the piece cut and not yet appended */
} cutter;

static void cutter_begin(ws_causes *c, cutter *k, uint32_t loc)
{
    const ws_events *e = &c->a->trace->locations[loc].events;
    cause_loc *cl = &c->locs[loc];
    k->loc = loc;
    k->m = 0;
    k->ev = (int64_t)e->n - 1;
    k->cp = e->n ? ws_callpath_after(c->a->trace, e, k->ev) : WS_NONE32;
    cl->owner = 0;
    cl->at_start = 0;
    if (loc == c->end_loc)
        take_token(cl, c->t_end);
}

/* Cuts the location's next piece into k->piece: 1 if there is one, 0 at
 * its end, -1 if the moves are out of order (an internal error). */
static int cutter_next(ws_causes *c, cutter *k)
{
    const ws_trace *t = c->a->trace;
    const ws_events *e = &t->locations[k->loc].events;
    cause_loc *cl = &c->locs[k->loc];
    const ws_analysis_options *o = &c->a->options;
    while (k->ev >= 0) {
        int64_t ev = k->ev;
        if (!cl->owner) {
            /* nothing to cut until the path comes here again */
            if (k->m == cl->n_moves)
                break;
            if ((int64_t)cl->moves[k->m].ev > ev)
                return -1;
            ev = k->ev = cl->moves[k->m].ev;
            k->cp = ws_callpath_after(t, e, ev);
        }
        /* the moves at this event, in the order the replay made them */
        for (; k->m < cl->n_moves && cl->moves[k->m].ev == (uint64_t)ev; k->m++) {
            if (cl->moves[k->m].take)
                take_token(cl, cl->moves[k->m].time);
            else
                cl->bottom = cl->moves[k->m].time;
        }
        int cut = 0;
        uint32_t cp = k->cp;
        double lo = 0.0, hi = 0.0;
        if (cl->owner && (uint64_t)ev + 1 < e->n) {
            lo = ws_ev_time(e, ev);
            hi = ws_ev_time(e, ev + 1);
            if (lo < cl->bottom)
                lo = cl->bottom;
            if (lo < cl->floor)
                lo = cl->floor;
            if (hi > cl->top)
                hi = cl->top;
            if (o->has_window) {
                /* the path inside the window only */
                if (lo < o->window_start)
                    lo = o->window_start;
                if (hi > o->window_end)
                    hi = o->window_end;
            }
            cut = hi > lo;
            if (ws_ev_time(e, ev) <= cl->bottom)
                cl->owner = 0;
        }
        if (cl->owner && ev == 0)
            cl->at_start = 1;
        if (e->kind[ev] == WS_EV_LEAVE)
            k->cp = e->ref[ev];
        else if (e->kind[ev] == WS_EV_ENTER)
            k->cp = t->callpaths.parent[e->ref[ev]];
        k->ev--;
        if (cut) {
            k->piece.location = k->loc;
            k->piece.callpath = cp;
            k->piece.start = lo;
            k->piece.end = hi;
            return 1;
        }
    }
    return k->m == cl->n_moves ? 0 : -1;
}

/* Appends a piece: merged with the previous one when contiguous on the
 * same call path of the same location. */
static int append(ws_causes *c, const ws_path_segment *p, ws_error *err)
{
    ws_result *r = c->a->result;
    if (p->callpath != WS_NONE32)
        add(c, WS_M_CRITICAL_PATH, p->callpath, p->location, p->end - p->start);
    if (r->n_path) {
        ws_path_segment *last = &r->path[r->n_path - 1];
        if (last->location == p->location && last->callpath == p->callpath && last->start == p->end) {
            last->start = p->start;
            return WS_OK;
        }
    }
    if (ws_grow((void **)&r->path, &r->cap_path, r->n_path + 1, sizeof *r->path) != 0)
        return ws_error_nomem(err, "critical path");
    r->path[r->n_path++] = *p;
    return WS_OK;
}

/* Whether cutter x's piece comes before cutter y's: the later first, ties
 * in the order of the locations. */
static int before(const cutter *x, const cutter *y)
{
    const ws_path_segment *a = &x->piece, *b = &y->piece;
    if (a->start != b->start)
        return a->start > b->start;
    if (a->end != b->end)
        return a->end > b->end;
    return x->loc < y->loc;
}

static void sift_down(cutter **heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(heap[l], heap[m]))
            m = l;
        if (r < n && before(heap[r], heap[m]))
            m = r;
        if (m == i)
            return;
        cutter *tmp = heap[i];
        heap[i] = heap[m];
        heap[m] = tmp;
        i = m;
    }
}

static int out_of_order(uint32_t loc, ws_error *err)
{
    return ws_error_set(err, WS_ERR_INTERNAL, "location %u: the critical path moved out of order", (unsigned)loc);
}

int ws_causes_path_pieces(ws_causes *c, ws_error *err)
{
    if (!c->cp)
        return WS_OK;
    const ws_analysis *a = c->a;
    uint32_t n = a->n_local;
    cutter *cut = ws_malloc_array(n ? n : 1, sizeof *cut);
    cutter **heap = ws_malloc_array(n ? n : 1, sizeof *heap);
    int rc = WS_OK;
    if (!cut || !heap) {
        rc = ws_error_nomem(err, "critical path");
        goto done;
    }
    /* A location gives at most one piece per event: room for that many,
     * reserved at once and returned below, so that the array is not
     * copied as it grows nor its pages touched twice (its pages are
     * touched only as pieces come; the 2-rank barrier trace: 1.6 million
     * pieces, whose doubling was most of the analysis's small page
     * faults).  Without the room it grows as before. */
    ws_result *r = a->result;
    size_t bound = 0;
    for (uint32_t i = 0; i < n; i++)
        bound += (size_t)a->trace->locations[a->local[i]].events.n;
    if (bound > r->cap_path - r->n_path && bound < (SIZE_MAX / sizeof *r->path) - r->n_path) {
        void *room = ws_realloc(r->path, (r->n_path + bound) * sizeof *r->path);
        if (room) {
            r->path = room;
            r->cap_path = r->n_path + bound;
        }
    }
    size_t h = 0;
    for (uint32_t i = 0; i < n; i++) {
        cutter *k = &cut[i];
        cutter_begin(c, k, a->local[i]);
        int got = cutter_next(c, k);
        if (got < 0) {
            rc = out_of_order(k->loc, err);
            goto done;
        }
        if (got)
            heap[h++] = k;
    }
    for (size_t i = h / 2; i-- > 0;)
        sift_down(heap, h, i);
    while (h) {
        cutter *k = heap[0];
        if ((rc = append(c, &k->piece, err)))
            goto done;
        int got = cutter_next(c, k);
        if (got < 0) {
            rc = out_of_order(k->loc, err);
            goto done;
        }
        if (!got)
            heap[0] = heap[--h];
        if (h)
            sift_down(heap, h, 0);
    }
    if (r->cap_path > r->n_path) {
        /* the room not used goes back */
        void *kept = ws_realloc(r->path, (r->n_path ? r->n_path : 1) * sizeof *r->path);
        if (kept) {
            r->path = kept;
            r->cap_path = r->n_path ? r->n_path : 1;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        cause_loc *cl = &c->locs[a->local[i]];
        free(cl->moves);
        cl->moves = NULL;
        cl->n_moves = cl->cap_moves = 0;
    }
done:
    free(cut);
    free(heap);
    return rc;
}
