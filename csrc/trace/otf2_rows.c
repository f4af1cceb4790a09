/* The side tables (messages, requests, collectives) of a location while
 * the reader fills them, and the columns they become (otf2_rows.h). */
#include "otf2_rows.h"

#include <stdlib.h>
#include <string.h>

void ws_rows_free(side_rows *r)
{
    free(r->msg_event);
    free(r->msg_peer);
    free(r->msg_comm);
    free(r->msg_tag);
    free(r->msg_bytes);
    free(r->req_event);
    free(r->req_id);
    free(r->coll_event);
    free(r->coll_comm);
    free(r->coll_root);
    free(r->coll_op);
    free(r->coll_sent);
    free(r->coll_received);
    free(r->thr_event);
    free(r->thr_comm);
    free(r->thr_model);
    free(r->thr_a);
    free(r->thr_b);
    memset(r, 0, sizeof *r);
}

/* Reserves every column of `r` (empty) for n rows; -1 (and r empty) if
 * memory runs out. */
int ws_rows_reserve(side_rows *r, size_t n)
{
    int failed = 0;
#define RESERVE_ROWS(field)                                          \
    do {                                                             \
        r->field = ws_malloc_array(n, sizeof *r->field);             \
        if (r->field)                                                \
            ws_advise_huge(r->field, n * sizeof *r->field);          \
        else                                                         \
            failed = 1;                                              \
    } while (0)
    RESERVE_ROWS(msg_event);
    RESERVE_ROWS(msg_peer);
    RESERVE_ROWS(msg_comm);
    RESERVE_ROWS(msg_tag);
    RESERVE_ROWS(msg_bytes);
    RESERVE_ROWS(req_event);
    RESERVE_ROWS(req_id);
    RESERVE_ROWS(coll_event);
    RESERVE_ROWS(coll_comm);
    RESERVE_ROWS(coll_root);
    RESERVE_ROWS(coll_op);
    RESERVE_ROWS(coll_sent);
    RESERVE_ROWS(coll_received);
    RESERVE_ROWS(thr_event);
    RESERVE_ROWS(thr_comm);
    RESERVE_ROWS(thr_model);
    RESERVE_ROWS(thr_a);
    RESERVE_ROWS(thr_b);
#undef RESERVE_ROWS
    if (failed) {
        ws_rows_free(r);
        return -1;
    }
    r->cap_msg = r->cap_req = r->cap_coll = r->cap_thr = n;
    return 0;
}

/* Grows each of the given side-table arrays to `cap` rows (their common
 * capacity is `old`).  Returns 0 or -1; arrays grown before a failure stay
 * valid. */
#define GROW_ROWS(arr, old, cap)                                          \
    do {                                                                  \
        size_t k__ = (old);                                               \
        if (ws_grow((void **)&(arr), &k__, (cap), sizeof *(arr)) != 0)    \
            return -1;                                                    \
        ws_advise_huge((arr), k__ * sizeof *(arr));                       \
    } while (0)

int ws_rows_grow_messages(side_rows *r)
{
    size_t cap = r->cap_msg ? r->cap_msg * 2 : 256;
    GROW_ROWS(r->msg_event, r->cap_msg, cap);
    GROW_ROWS(r->msg_peer, r->cap_msg, cap);
    GROW_ROWS(r->msg_comm, r->cap_msg, cap);
    GROW_ROWS(r->msg_tag, r->cap_msg, cap);
    GROW_ROWS(r->msg_bytes, r->cap_msg, cap);
    r->cap_msg = cap;
    return 0;
}

int ws_rows_grow_requests(side_rows *r)
{
    size_t cap = r->cap_req ? r->cap_req * 2 : 256;
    GROW_ROWS(r->req_event, r->cap_req, cap);
    GROW_ROWS(r->req_id, r->cap_req, cap);
    r->cap_req = cap;
    return 0;
}

int ws_rows_grow_collectives(side_rows *r)
{
    size_t cap = r->cap_coll ? r->cap_coll * 2 : 64;
    GROW_ROWS(r->coll_event, r->cap_coll, cap);
    GROW_ROWS(r->coll_comm, r->cap_coll, cap);
    GROW_ROWS(r->coll_root, r->cap_coll, cap);
    GROW_ROWS(r->coll_op, r->cap_coll, cap);
    GROW_ROWS(r->coll_sent, r->cap_coll, cap);
    GROW_ROWS(r->coll_received, r->cap_coll, cap);
    r->cap_coll = cap;
    return 0;
}

int ws_rows_grow_threads(side_rows *r)
{
    size_t cap = r->cap_thr ? r->cap_thr * 2 : 64;
    GROW_ROWS(r->thr_event, r->cap_thr, cap);
    GROW_ROWS(r->thr_comm, r->cap_thr, cap);
    GROW_ROWS(r->thr_model, r->cap_thr, cap);
    GROW_ROWS(r->thr_a, r->cap_thr, cap);
    GROW_ROWS(r->thr_b, r->cap_thr, cap);
    r->cap_thr = cap;
    return 0;
}
#undef GROW_ROWS

/* Copies `n` rows of `size` bytes into a new array of exactly that size
 * (of one zeroed element when n == 0, so that every column is a valid
 * pointer). */
static void *exact_copy(const void *rows, uint64_t n, size_t size)
{
    if (n == 0)
        return ws_calloc(1, size);
    if (n > SIZE_MAX / size)
        return NULL;
    void *p = ws_malloc((size_t)n * size);
    if (p) {
        ws_advise_huge(p, (size_t)n * size);
        memcpy(p, rows, (size_t)n * size);
    }
    return p;
}

/* Completes the columns of a finished location: time, kind and ref were
 * reserved for the announced number of records and are shrunk only if
 * some records were skipped; the side tables are copied from the rows. */
int ws_rows_finish_columns(ws_events *ev, uint64_t cap, side_rows *r, int direct)
{
#define SHRINK(field)                                                           \
    do {                                                                        \
        void *p__ = ws_realloc(ev->field, (size_t)ev->n * sizeof *ev->field + 1);  \
        if (p__)                                                                \
            ev->field = p__;                                                    \
    } while (0)
    if (cap != ev->n) {
        if (ev->time) {
            SHRINK(time);
        } else {
            SHRINK(tick_delta);
            void *p = ws_realloc(ev->tick_block, (size_t)ws_tick_blocks(ev->n) * sizeof *ev->tick_block + 1);
            if (p)
                ev->tick_block = p;
        }
        SHRINK(kind);
        SHRINK(ref);
    }
#undef SHRINK
    if (direct) {
        /* the columns were written in place: shrink them (in place; should
         * that fail, the larger block serves as well) and hand them over */
#define TAKE(field, n)                                                                      \
    do {                                                                                    \
        void *p__ = ws_realloc(r->field, (size_t)((n) ? (n) : 1) * sizeof *ev->field);      \
        ev->field = p__ ? p__ : r->field;                                                   \
        r->field = NULL;                                                                    \
        if ((n) == 0)                                                                       \
            memset(ev->field, 0, sizeof *ev->field);                                        \
    } while (0)
        TAKE(msg_event, ev->n_messages);
        TAKE(msg_peer, ev->n_messages);
        TAKE(msg_comm, ev->n_messages);
        TAKE(msg_tag, ev->n_messages);
        TAKE(msg_bytes, ev->n_messages);
        TAKE(req_event, ev->n_requests);
        TAKE(req_id, ev->n_requests);
        TAKE(coll_event, ev->n_collectives);
        TAKE(coll_comm, ev->n_collectives);
        TAKE(coll_root, ev->n_collectives);
        TAKE(coll_op, ev->n_collectives);
        TAKE(coll_sent, ev->n_collectives);
        TAKE(coll_received, ev->n_collectives);
        TAKE(thr_event, ev->n_threads);
        TAKE(thr_comm, ev->n_threads);
        TAKE(thr_model, ev->n_threads);
        TAKE(thr_a, ev->n_threads);
        TAKE(thr_b, ev->n_threads);
#undef TAKE
        ws_rows_free(r);
        return ws_events_narrow(ev);
    }
#define COPY(field, n)                                           \
    do {                                                         \
        ev->field = exact_copy(r->field, (n), sizeof *ev->field); \
        if (!ev->field)                                          \
            return -1;                                           \
    } while (0)
    COPY(msg_event, ev->n_messages);
    COPY(msg_peer, ev->n_messages);
    COPY(msg_comm, ev->n_messages);
    COPY(msg_tag, ev->n_messages);
    COPY(msg_bytes, ev->n_messages);
    COPY(req_event, ev->n_requests);
    COPY(req_id, ev->n_requests);
    COPY(coll_event, ev->n_collectives);
    COPY(coll_comm, ev->n_collectives);
    COPY(coll_root, ev->n_collectives);
    COPY(coll_op, ev->n_collectives);
    COPY(coll_sent, ev->n_collectives);
    COPY(coll_received, ev->n_collectives);
    COPY(thr_event, ev->n_threads);
    COPY(thr_comm, ev->n_threads);
    COPY(thr_model, ev->n_threads);
    COPY(thr_a, ev->n_threads);
    COPY(thr_b, ev->n_threads);
#undef COPY
    return ws_events_narrow(ev);
}
