/* The compact forms of the store's columns (trace.h): event times as
 * ticks since the clock's offset, a 64-bit base per block of
 * WS_TICK_BLOCK events and a 32-bit distance per event, with an escape
 * table for the rare event that is too far from its block's base; and
 * message sizes and request ids in 32 bits, message partners,
 * communicators and tags in 16, where a location's values fit. */
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "trace.h"

int ws_events_set_ticks(ws_events *ev, uint64_t i, uint64_t ticks)
{
    uint64_t b = i >> WS_TICK_SHIFT;
    if ((i & (WS_TICK_BLOCK - 1)) == 0)
        ev->tick_block[b] = ticks;
    uint64_t d = ticks - ev->tick_block[b]; /* before the base: wraps, escapes */
    if (d < WS_TICK_ESCAPE) {
        ev->tick_delta[i] = (uint32_t)d;
        return 0;
    }
    if (ev->n_escapes == ev->cap_escapes) {
        uint64_t cap = ev->cap_escapes ? 2 * ev->cap_escapes : 16;
        uint32_t *e = ws_realloc(ev->escape_event, (size_t)cap * sizeof *e);
        if (!e)
            return -1;
        ev->escape_event = e;
        uint64_t *t = ws_realloc(ev->escape_ticks, (size_t)cap * sizeof *t);
        if (!t)
            return -1;
        ev->escape_ticks = t;
        ev->cap_escapes = cap;
    }
    ev->escape_event[ev->n_escapes] = (uint32_t)i;
    ev->escape_ticks[ev->n_escapes++] = ticks;
    ev->tick_delta[i] = WS_TICK_ESCAPE;
    return 0;
}

uint64_t ws_events_escaped_ticks(const ws_events *ev, uint64_t i)
{
    uint64_t lo = ws_lower_bound_u32(ev->escape_event, 0, ev->n_escapes, i);
    return lo < ev->n_escapes && ev->escape_event[lo] == i ? ev->escape_ticks[lo] : 0;
}

void ws_events_adopt_seconds(ws_events *ev, double *time)
{
    free(ev->time);
    free(ev->tick_block);
    free(ev->tick_delta);
    free(ev->escape_event);
    free(ev->escape_ticks);
    ev->tick_block = NULL;
    ev->tick_delta = NULL;
    ev->escape_event = NULL;
    ev->escape_ticks = NULL;
    ev->n_escapes = ev->cap_escapes = 0;
    ev->time = time;
}

void ws_events_times(const ws_events *ev, double *out)
{
    if (ev->time) {
        memcpy(out, ev->time, (size_t)ev->n * sizeof *out);
        return;
    }
    for (uint64_t i = 0; i < ev->n; i++)
        out[i] = ws_ev_time(ev, i);
}

int ws_events_widen(ws_events *ev)
{
    if (ev->time || !ev->tick_delta)
        return 0;
    double *time = ws_malloc((size_t)(ev->n ? ev->n : 1) * sizeof *time);
    if (!time)
        return -1;
    ws_events_times(ev, time);
    ws_events_adopt_seconds(ev, time);
    return 0;
}

/* narrowed_N(wide, n, nomem): the NARROW-bit copy of a WIDE-bit column
 * whose n values all fit, or NULL (*nomem set if they fit but memory ran
 * out). */
#define DEFINE_NARROWED(name, wide_t, narrow_t, max)                     \
    static narrow_t *name(const wide_t *wide, uint64_t n, int *nomem)    \
    {                                                                    \
        if (!wide)                                                       \
            return NULL;                                                 \
        for (uint64_t i = 0; i < n; i++)                                 \
            if (wide[i] > (max))                                         \
                return NULL;                                             \
        narrow_t *out = ws_malloc((size_t)(n ? n : 1) * sizeof *out);    \
        if (!out) {                                                      \
            *nomem = 1;                                                  \
            return NULL;                                                 \
        }                                                                \
        for (uint64_t i = 0; i < n; i++)                                 \
            out[i] = (narrow_t)wide[i];                                  \
        return out;                                                      \
    }
DEFINE_NARROWED(narrowed_32, uint64_t, uint32_t, UINT32_MAX)
DEFINE_NARROWED(narrowed_16, uint32_t, uint16_t, UINT16_MAX)
#undef DEFINE_NARROWED

/* The narrow column replaces the wide one (when there is one). */
#define TAKE_NARROW(wide, narrow, value) \
    do {                                 \
        if (value) {                     \
            free(ev->wide);              \
            ev->wide = NULL;             \
            ev->narrow = (value);        \
        }                                \
    } while (0)

int ws_events_narrow(ws_events *ev)
{
    int nomem = 0;
    uint64_t m = ev->n_messages;
    uint32_t *bytes = narrowed_32(ev->msg_bytes, m, &nomem);
    uint32_t *ids = narrowed_32(ev->req_id, ev->n_requests, &nomem);
    uint16_t *peer = narrowed_16(ev->msg_peer, m, &nomem), *comm = narrowed_16(ev->msg_comm, m, &nomem),
             *tag = narrowed_16(ev->msg_tag, m, &nomem);
    if (nomem) {
        free(bytes);
        free(ids);
        free(peer);
        free(comm);
        free(tag);
        return -1;
    }
    TAKE_NARROW(msg_bytes, msg_bytes32, bytes);
    TAKE_NARROW(req_id, req_id32, ids);
    TAKE_NARROW(msg_peer, msg_peer16, peer);
    TAKE_NARROW(msg_comm, msg_comm16, comm);
    TAKE_NARROW(msg_tag, msg_tag16, tag);
    return 0;
}
#undef TAKE_NARROW

uint64_t ws_events_bytes(const ws_events *ev)
{
    uint64_t b = ev->n * (1 + sizeof(uint32_t));
    if (ev->time)
        b += ev->n * sizeof(double);
    else
        b += ev->n * sizeof(uint32_t) + ws_tick_blocks(ev->n) * sizeof(uint64_t) +
             ev->n_escapes * (sizeof(uint32_t) + sizeof(uint64_t));
    b += ev->n_messages * (sizeof(uint32_t) + (ev->msg_bytes ? sizeof(uint64_t) : sizeof(uint32_t)) +
                           (ev->msg_peer ? 4 : 2) + (ev->msg_comm ? 4 : 2) + (ev->msg_tag ? 4 : 2));
    b += ev->n_requests * (sizeof(uint32_t) + (ev->req_id ? sizeof(uint64_t) : sizeof(uint32_t)));
    b += ev->n_collectives * (3 * sizeof(uint32_t) + 1 + 2 * sizeof(uint64_t));
    b += ev->n_threads * (2 * sizeof(uint32_t) + 1 + 2 * sizeof(uint64_t));
    return b;
}
