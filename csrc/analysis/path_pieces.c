/* The pieces of the critical path (seed 001 section III), cut after the
 * backward replay of pass 4 (causes.c).  That replay visits only the
 * synchronization events and records, per location, where the path was
 * taken over and handed on (path_move); here each location walks its
 * events once more from its end, only while it holds the path, exactly
 * as a replay of every event would have: a piece per event, clipped to
 * where the path is on the location (its top, where it was handed on,
 * MPI_Init's Enter) and to the analysis window. */
#include "causes_int.h"

static int add_segment(ws_causes *c, uint32_t loc, uint32_t cp, double start, double end, ws_error *err)
{
    ws_result *r = c->a->result;
    const ws_analysis_options *o = &c->a->options;
    if (o->has_window) {
        /* the path inside the window only */
        if (start < o->window_start)
            start = o->window_start;
        if (end > o->window_end)
            end = o->window_end;
    }
    if (!(end > start))
        return WS_OK;
    if (cp != WS_NONE32)
        add(c, WS_M_CRITICAL_PATH, cp, loc, end - start);
    /* merge with the previous piece when contiguous on the same call path */
    if (r->n_path) {
        ws_path_segment *last = &r->path[r->n_path - 1];
        if (last->location == loc && last->callpath == cp && last->start == end) {
            last->start = start;
            return WS_OK;
        }
    }
    if (ws_grow((void **)&r->path, &r->cap_path, r->n_path + 1, sizeof *r->path) != 0)
        return ws_error_nomem(err, "critical path");
    ws_path_segment *seg = &r->path[r->n_path++];
    seg->location = loc;
    seg->callpath = cp;
    seg->start = start;
    seg->end = end;
    return WS_OK;
}

/* One location's pieces, latest first. */
static int location_pieces(ws_causes *c, uint32_t loc, ws_error *err)
{
    const ws_trace *t = c->a->trace;
    const ws_events *e = &t->locations[loc].events;
    cause_loc *cl = &c->locs[loc];
    cl->owner = 0;
    cl->at_start = 0;
    if (loc == c->end_loc) {
        cl->owner = 1;
        cl->top = c->t_end;
        cl->bottom = -INFINITY;
    }
    size_t m = 0;
    int64_t ev = (int64_t)e->n - 1;
    uint32_t cp = e->n ? ws_callpath_after(t, e, ev) : WS_NONE32;
    while (ev >= 0) {
        if (!cl->owner) {
            /* nothing to cut until the path comes here again */
            if (m == cl->n_moves)
                break;
            if ((int64_t)cl->moves[m].ev > ev)
                return ws_error_set(err, WS_ERR_INTERNAL, "location %u: the critical path moved out of order",
                                    (unsigned)loc);
            ev = cl->moves[m].ev;
            cp = ws_callpath_after(t, e, ev);
        }
        /* the moves at this event, in the order the replay made them */
        for (; m < cl->n_moves && cl->moves[m].ev == (uint64_t)ev; m++) {
            if (cl->moves[m].take) {
                cl->owner = 1;
                cl->top = cl->moves[m].time;
                cl->bottom = -INFINITY;
            } else {
                cl->bottom = cl->moves[m].time;
            }
        }
        if (cl->owner && (uint64_t)ev + 1 < e->n) {
            double lo = e->time[ev], hi = e->time[ev + 1];
            if (lo < cl->bottom)
                lo = cl->bottom;
            if (lo < cl->floor)
                lo = cl->floor;
            if (hi > cl->top)
                hi = cl->top;
            int rc = add_segment(c, loc, cp, lo, hi, err);
            if (rc)
                return rc;
            if (e->time[ev] <= cl->bottom)
                cl->owner = 0;
        }
        if (cl->owner && ev == 0)
            cl->at_start = 1;
        if (e->kind[ev] == WS_EV_LEAVE)
            cp = e->ref[ev];
        else if (e->kind[ev] == WS_EV_ENTER)
            cp = t->callpaths.parent[e->ref[ev]];
        ev--;
    }
    if (m != cl->n_moves)
        return ws_error_set(err, WS_ERR_INTERNAL, "location %u: a move of the critical path was not reached",
                            (unsigned)loc);
    free(cl->moves);
    cl->moves = NULL;
    cl->n_moves = cl->cap_moves = 0;
    return WS_OK;
}

/* a location's pieces [at, end) still to merge, latest first */
typedef struct block {
    size_t at, end;
} block;

/* Whether the next piece of block x comes before that of block y: the
 * later piece first, ties in block order. */
static int before(const ws_path_segment *p, const block *x, const block *y)
{
    const ws_path_segment *a = &p[x->at], *b = &p[y->at];
    if (a->start != b->start)
        return a->start > b->start;
    if (a->end != b->end)
        return a->end > b->end;
    return x->at < y->at;
}

static void sift_down(const ws_path_segment *p, block *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(p, &heap[l], &heap[m]))
            m = l;
        if (r < n && before(p, &heap[r], &heap[m]))
            m = r;
        if (m == i)
            return;
        block tmp = heap[i];
        heap[i] = heap[m];
        heap[m] = tmp;
        i = m;
    }
}

/* The pieces come location by location, each location's latest first
 * (`starts`: where each location's begin, n_blocks of them).  Merged
 * latest first, the path is descending as a replay of every event
 * appended it, which ws_derive_critical_path sorts in linear time. */
static int merge_locations(ws_result *r, const size_t *starts, size_t n_blocks, ws_error *err)
{
    size_t from = starts[0], n = r->n_path - from;
    if (n_blocks < 2 || n < 2)
        return WS_OK;
    ws_path_segment *p = r->path;
    block *heap = ws_malloc_array(n_blocks, sizeof *heap);
    ws_path_segment *merged = ws_malloc_array(n, sizeof *merged);
    if (!heap || !merged) {
        free(heap);
        free(merged);
        return ws_error_nomem(err, "critical path");
    }
    size_t h = 0;
    for (size_t b = 0; b < n_blocks; b++) {
        size_t end = b + 1 < n_blocks ? starts[b + 1] : r->n_path;
        if (starts[b] < end) {
            heap[h].at = starts[b];
            heap[h].end = end;
            h++;
        }
    }
    for (size_t i = h / 2; i-- > 0;)
        sift_down(p, heap, h, i);
    for (size_t j = 0; j < n; j++) {
        merged[j] = p[heap[0].at++];
        if (heap[0].at == heap[0].end)
            heap[0] = heap[--h];
        if (h)
            sift_down(p, heap, h, 0);
    }
    memcpy(p + from, merged, n * sizeof *merged);
    free(merged);
    free(heap);
    return WS_OK;
}

int ws_causes_path_pieces(ws_causes *c, ws_error *err)
{
    if (!c->cp)
        return WS_OK;
    const ws_analysis *a = c->a;
    size_t *starts = ws_malloc_array(a->n_local ? a->n_local : 1, sizeof *starts);
    if (!starts)
        return ws_error_nomem(err, "critical path");
    size_t n_blocks = 0;
    int rc = WS_OK;
    for (uint32_t i = 0; i < a->n_local && rc == WS_OK; i++) {
        size_t before_loc = a->result->n_path;
        rc = location_pieces(c, a->local[i], err);
        if (rc == WS_OK && a->result->n_path > before_loc)
            starts[n_blocks++] = before_loc;
    }
    if (rc == WS_OK && n_blocks)
        rc = merge_locations(a->result, starts, n_blocks, err);
    free(starts);
    return rc;
}
