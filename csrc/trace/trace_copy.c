/* A deep copy of the trace store (definitions, call paths and the events
 * of every loaded location), for analyses that produce a changed trace
 * (the what-if simulation) without touching the original. */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

/* A copy of n elements of `size` bytes (NULL stays NULL; 0 elements give
 * NULL).  Sets *failed on allocation failure. */
static void *dup_array(const void *src, size_t n, size_t size, int *failed)
{
    if (!src || n == 0)
        return NULL;
    void *p = ws_malloc_array(n, size);
    if (!p) {
        *failed = 1;
        return NULL;
    }
    memcpy(p, src, n * size);
    return p;
}

static void dup_map(ws_map64 *dst, const ws_map64 *src, int *failed)
{
    ws_map64_init(dst);
    if (!src->capacity)
        return;
    dst->keys = dup_array(src->keys, src->capacity, sizeof *src->keys, failed);
    dst->values = dup_array(src->values, src->capacity, sizeof *src->values, failed);
    if (!dst->keys || !dst->values) {
        free(dst->keys);
        free(dst->values);
        ws_map64_init(dst);
        *failed = 1;
        return;
    }
    dst->capacity = src->capacity;
    dst->count = src->count;
}

static void dup_events(ws_events *d, const ws_events *s, int *f)
{
    memset(d, 0, sizeof *d);
    d->n = s->n;
    if (s->time) {
        d->time = dup_array(s->time, s->n, sizeof *s->time, f);
    } else {
        d->tick_scale = s->tick_scale;
        d->tick_delta = dup_array(s->tick_delta, s->n, sizeof *s->tick_delta, f);
        d->tick_block = dup_array(s->tick_block, ws_tick_blocks(s->n), sizeof *s->tick_block, f);
        d->n_escapes = d->cap_escapes = s->n_escapes;
        d->escape_event = dup_array(s->escape_event, s->n_escapes, sizeof *s->escape_event, f);
        d->escape_ticks = dup_array(s->escape_ticks, s->n_escapes, sizeof *s->escape_ticks, f);
    }
    d->kind = dup_array(s->kind, s->n, sizeof *s->kind, f);
    d->ref = dup_array(s->ref, s->n, sizeof *s->ref, f);
    d->n_messages = s->n_messages;
    d->msg_event = dup_array(s->msg_event, s->n_messages, sizeof *s->msg_event, f);
    d->msg_peer = dup_array(s->msg_peer, s->n_messages, sizeof *s->msg_peer, f);
    d->msg_peer16 = dup_array(s->msg_peer16, s->n_messages, sizeof *s->msg_peer16, f);
    d->msg_comm = dup_array(s->msg_comm, s->n_messages, sizeof *s->msg_comm, f);
    d->msg_comm16 = dup_array(s->msg_comm16, s->n_messages, sizeof *s->msg_comm16, f);
    d->msg_tag = dup_array(s->msg_tag, s->n_messages, sizeof *s->msg_tag, f);
    d->msg_tag16 = dup_array(s->msg_tag16, s->n_messages, sizeof *s->msg_tag16, f);
    if (s->msg_bytes)
        d->msg_bytes = dup_array(s->msg_bytes, s->n_messages, sizeof *s->msg_bytes, f);
    else
        d->msg_bytes32 = dup_array(s->msg_bytes32, s->n_messages, sizeof *s->msg_bytes32, f);
    d->n_requests = s->n_requests;
    d->req_event = dup_array(s->req_event, s->n_requests, sizeof *s->req_event, f);
    if (s->req_id)
        d->req_id = dup_array(s->req_id, s->n_requests, sizeof *s->req_id, f);
    else
        d->req_id32 = dup_array(s->req_id32, s->n_requests, sizeof *s->req_id32, f);
    d->n_collectives = s->n_collectives;
    d->coll_event = dup_array(s->coll_event, s->n_collectives, sizeof *s->coll_event, f);
    d->coll_comm = dup_array(s->coll_comm, s->n_collectives, sizeof *s->coll_comm, f);
    d->coll_root = dup_array(s->coll_root, s->n_collectives, sizeof *s->coll_root, f);
    d->coll_op = dup_array(s->coll_op, s->n_collectives, sizeof *s->coll_op, f);
    d->coll_sent = dup_array(s->coll_sent, s->n_collectives, sizeof *s->coll_sent, f);
    d->coll_received = dup_array(s->coll_received, s->n_collectives, sizeof *s->coll_received, f);
    d->n_threads = s->n_threads;
    d->thr_event = dup_array(s->thr_event, s->n_threads, sizeof *s->thr_event, f);
    d->thr_comm = dup_array(s->thr_comm, s->n_threads, sizeof *s->thr_comm, f);
    d->thr_model = dup_array(s->thr_model, s->n_threads, sizeof *s->thr_model, f);
    d->thr_a = dup_array(s->thr_a, s->n_threads, sizeof *s->thr_a, f);
    d->thr_b = dup_array(s->thr_b, s->n_threads, sizeof *s->thr_b, f);
    d->n_skipped = s->n_skipped;
}

static char *dup_string(const char *s, int *failed)
{
    if (!s)
        return NULL;
    char *p = ws_strdup(s);
    if (!p)
        *failed = 1;
    return p;
}

ws_trace *ws_trace_copy(const ws_trace *s, ws_error *err)
{
    ws_trace *t = ws_calloc(1, sizeof *t);
    if (!t) {
        ws_error_nomem(err, "trace copy");
        return NULL;
    }
    int f = 0;
    /* scalars first; every pointer is replaced below */
    *t = *s;
    t->path = NULL;
    t->directory = NULL;
    t->cut_short_ranks = NULL;
    t->openmp_recording = NULL;
    t->n_strings = 0;
    t->strings = NULL;
    t->n_groups = 0;
    t->groups = NULL;
    t->n_comms = 0;
    t->comms = NULL;
    t->n_locations = 0;
    t->locations = NULL;
    t->n_cart_topologies = 0;
    t->cart_topologies = NULL;
    t->regions = NULL;
    t->system_nodes = NULL;
    t->location_groups = NULL;
    t->cart_dims = NULL;
    t->clock_offsets = NULL;
    t->region_lut = NULL;
    memset(&t->callpaths, 0, sizeof t->callpaths);
    ws_map64 *maps[] = {&t->callpaths.index,     &t->string_ids,    &t->region_ids,   &t->group_ids,
                        &t->comm_ids,            &t->location_ids,  &t->location_group_ids,
                        &t->system_node_ids,     &t->cart_dim_ids,  &t->cart_topology_ids};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        ws_map64_init(maps[i]);

    t->path = dup_string(s->path, &f);
    t->directory = dup_string(s->directory, &f);
    t->cut_short_ranks = dup_string(s->cut_short_ranks, &f);
    t->openmp_recording = dup_string(s->openmp_recording, &f);
    t->clock_offsets = dup_array(s->clock_offsets, s->n_clock_offsets, sizeof *s->clock_offsets, &f);
    if (s->n_strings && !f) {
        t->strings = ws_calloc(s->n_strings, sizeof *t->strings);
        if (!t->strings)
            f = 1;
        for (uint32_t i = 0; i < s->n_strings && !f; i++) {
            t->strings[i] = dup_string(s->strings[i], &f);
            t->n_strings = i + 1;
        }
    }
    t->cap_strings = t->n_strings;
    t->regions = dup_array(s->regions, s->n_regions, sizeof *s->regions, &f);
    t->cap_regions = s->n_regions;
    if (s->n_groups && !f) {
        t->groups = dup_array(s->groups, s->n_groups, sizeof *s->groups, &f);
        for (uint32_t i = 0; i < s->n_groups && !f; i++) {
            t->groups[i].members = NULL;
            t->n_groups = i + 1;
            t->groups[i].members = dup_array(s->groups[i].members, s->groups[i].n_members,
                                             sizeof *s->groups[i].members, &f);
        }
    }
    t->cap_groups = t->n_groups;
    if (s->n_comms && !f) {
        t->comms = dup_array(s->comms, s->n_comms, sizeof *s->comms, &f);
        for (uint32_t i = 0; i < s->n_comms && !f; i++) {
            t->comms[i].rank_location = NULL;
            t->n_comms = i + 1;
            t->comms[i].rank_location = dup_array(s->comms[i].rank_location, s->comms[i].size,
                                                  sizeof *s->comms[i].rank_location, &f);
        }
    }
    t->cap_comms = t->n_comms;
    t->system_nodes = dup_array(s->system_nodes, s->n_system_nodes, sizeof *s->system_nodes, &f);
    t->cap_system_nodes = s->n_system_nodes;
    t->location_groups = dup_array(s->location_groups, s->n_location_groups, sizeof *s->location_groups, &f);
    t->cap_location_groups = s->n_location_groups;
    if (s->n_locations && !f) {
        t->locations = ws_calloc(s->n_locations, sizeof *t->locations);
        if (!t->locations)
            f = 1;
        for (uint32_t i = 0; i < s->n_locations && !f; i++) {
            t->locations[i] = s->locations[i];
            t->n_locations = i + 1;
            dup_events(&t->locations[i].events, &s->locations[i].events, &f);
        }
    }
    t->cap_locations = t->n_locations;
    t->cart_dims = dup_array(s->cart_dims, s->n_cart_dims, sizeof *s->cart_dims, &f);
    t->cap_cart_dims = s->n_cart_dims;
    if (s->n_cart_topologies && !f) {
        t->cart_topologies = dup_array(s->cart_topologies, s->n_cart_topologies, sizeof *s->cart_topologies, &f);
        for (uint32_t i = 0; i < s->n_cart_topologies && !f; i++) {
            ws_cart_topology *c = &t->cart_topologies[i];
            const ws_cart_topology *o = &s->cart_topologies[i];
            c->dims = NULL;
            c->coords = NULL;
            t->n_cart_topologies = i + 1;
            c->dims = dup_array(o->dims, o->n_dims, sizeof *o->dims, &f);
            c->coords = dup_array(o->coords, (size_t)o->n_ranks * o->n_dims, sizeof *o->coords, &f);
        }
    }
    t->cap_cart_topologies = t->n_cart_topologies;
    const ws_callpaths *sc = &s->callpaths;
    ws_callpaths *tc = &t->callpaths;
    tc->n = sc->n;
    tc->capacity = sc->n;
    tc->parent = dup_array(sc->parent, sc->n, sizeof *sc->parent, &f);
    tc->region = dup_array(sc->region, sc->n, sizeof *sc->region, &f);
    tc->first_child = dup_array(sc->first_child, sc->n, sizeof *sc->first_child, &f);
    tc->next_sibling = dup_array(sc->next_sibling, sc->n, sizeof *sc->next_sibling, &f);
    tc->depth = dup_array(sc->depth, sc->n, sizeof *sc->depth, &f);
    if (!f && sc->n && (!tc->parent || !tc->region || !tc->first_child || !tc->next_sibling || !tc->depth))
        f = 1;
    if (!f) {
        const ws_map64 *from[] = {&s->callpaths.index, &s->string_ids,   &s->region_ids, &s->group_ids,
                                  &s->comm_ids,        &s->location_ids, &s->location_group_ids,
                                  &s->system_node_ids, &s->cart_dim_ids, &s->cart_topology_ids};
        for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
            dup_map(maps[i], from[i], &f);
        t->region_lut = dup_array(s->region_lut, s->region_lut_size, sizeof *s->region_lut, &f);
    }
    if (f) {
        if (!t->region_lut)
            t->region_lut_size = 0;
        ws_trace_free(t);
        ws_error_nomem(err, "trace copy");
        return NULL;
    }
    return t;
}
