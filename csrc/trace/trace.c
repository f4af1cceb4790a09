#include "trace.h"

#include <otf2/OTF2_GeneralDefinitions.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ws_trace *ws_trace_new(void)
{
    ws_trace *t = ws_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    ws_map64_init(&t->string_ids);
    ws_map64_init(&t->region_ids);
    ws_map64_init(&t->group_ids);
    ws_map64_init(&t->comm_ids);
    ws_map64_init(&t->location_ids);
    ws_map64_init(&t->location_group_ids);
    ws_map64_init(&t->system_node_ids);
    ws_map64_init(&t->cart_dim_ids);
    ws_map64_init(&t->cart_topology_ids);
    ws_map64_init(&t->callpaths.index);
    t->world_comm = WS_NONE32;
    return t;
}

void ws_events_free(ws_events *ev)
{
    free(ev->time);
    free(ev->tick_block);
    free(ev->tick_delta);
    free(ev->escape_event);
    free(ev->escape_ticks);
    free(ev->kind);
    free(ev->ref);
    free(ev->msg_event);
    free(ev->msg_peer);
    free(ev->msg_comm);
    free(ev->msg_tag);
    free(ev->msg_bytes);
    free(ev->msg_bytes32);
    free(ev->msg_peer16);
    free(ev->msg_comm16);
    free(ev->msg_tag16);
    free(ev->req_id32);
    free(ev->req_event);
    free(ev->req_id);
    free(ev->coll_event);
    free(ev->coll_comm);
    free(ev->coll_root);
    free(ev->coll_op);
    free(ev->coll_sent);
    free(ev->coll_received);
    free(ev->thr_event);
    free(ev->thr_comm);
    free(ev->thr_model);
    free(ev->thr_a);
    free(ev->thr_b);
    memset(ev, 0, sizeof *ev);
}

void ws_trace_free(ws_trace *t)
{
    if (!t)
        return;
    free(t->path);
    free(t->directory);
    free(t->cut_short_ranks);
    free(t->openmp_recording);
    free(t->clock_offsets);
    for (uint32_t i = 0; i < t->n_strings; i++)
        free(t->strings[i]);
    free(t->strings);
    free(t->regions);
    for (uint32_t i = 0; i < t->n_groups; i++)
        free(t->groups[i].members);
    free(t->groups);
    for (uint32_t i = 0; i < t->n_comms; i++)
        free(t->comms[i].rank_location);
    free(t->comms);
    free(t->system_nodes);
    free(t->location_groups);
    for (uint32_t i = 0; i < t->n_locations; i++)
        ws_events_free(&t->locations[i].events);
    free(t->locations);
    free(t->cart_dims);
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        free(t->cart_topologies[i].dims);
        free(t->cart_topologies[i].coords);
    }
    free(t->cart_topologies);
    ws_callpaths_free(&t->callpaths);
    ws_map64_free(&t->string_ids);
    ws_map64_free(&t->region_ids);
    ws_map64_free(&t->group_ids);
    ws_map64_free(&t->comm_ids);
    ws_map64_free(&t->location_ids);
    ws_map64_free(&t->location_group_ids);
    ws_map64_free(&t->system_node_ids);
    ws_map64_free(&t->cart_dim_ids);
    ws_map64_free(&t->cart_topology_ids);
    free(t->region_lut);
    free(t);
}

uint32_t ws_trace_add_string(ws_trace *t, uint64_t otf2_id, const char *s)
{
    if (t->n_strings >= WS_NONE32 - 1)
        return WS_NONE32;
    if (ws_grow((void **)&t->strings, &t->cap_strings, (size_t)t->n_strings + 1, sizeof *t->strings) != 0)
        return WS_NONE32;
    char *copy = ws_strdup(s);
    if (!copy)
        return WS_NONE32;
    uint32_t index = t->n_strings;
    if (ws_map64_put(&t->string_ids, otf2_id, index) != 0) {
        free(copy);
        return WS_NONE32;
    }
    t->strings[index] = copy;
    t->n_strings++;
    return index;
}

uint32_t ws_trace_intern_string(ws_trace *t, const char *s)
{
    for (uint32_t i = 0; i < t->n_strings; i++)
        if (strcmp(t->strings[i], s) == 0)
            return i;
    return ws_trace_add_string(t, t->n_strings, s);
}

const char *ws_trace_string(const ws_trace *t, uint32_t index)
{
    if (index == WS_NONE32 || index >= t->n_strings)
        return "";
    return t->strings[index];
}

const char *ws_trace_comm_label(const ws_trace *t, uint32_t c, char *buf, size_t size)
{
    if (c >= t->n_comms) {
        snprintf(buf, size, "an unknown communicator");
        return buf;
    }
    const ws_comm *k = &t->comms[c];
    const char *name = ws_trace_string(t, k->name);
    int team = k->group < t->n_groups && t->groups[k->group].paradigm == OTF2_PARADIGM_OPENMP;
    if (*name)
        snprintf(buf, size, "communicator '%s'", name);
    else
        snprintf(buf, size, "%s %llu", team ? "thread team" : "communicator", (unsigned long long)k->otf2_id);
    return buf;
}

void ws_callpaths_free(ws_callpaths *cp)
{
    free(cp->parent);
    free(cp->region);
    free(cp->first_child);
    free(cp->next_sibling);
    free(cp->depth);
    ws_map64_free(&cp->index);
    memset(cp, 0, sizeof *cp); /* an empty tree (the map as after ws_map64_init) */
}

uint32_t ws_callpath_child(ws_callpaths *cp, uint32_t parent, uint32_t region)
{
    /* siblings are short lists in practice: scan them first; a complete
     * scan that does not meet the region proves that the child is new,
     * and only longer lists and roots need the index */
    int scanned_all = 0;
    if (parent != WS_NONE32) {
        uint32_t c = cp->first_child[parent];
        for (uint32_t k = 0; c != WS_NONE32 && k < 32; k++, c = cp->next_sibling[c])
            if (cp->region[c] == region)
                return c;
        scanned_all = (c == WS_NONE32);
    }
    uint64_t key = ((uint64_t)(parent + 1u) << 32) | region;
    uint64_t found;
    if (!scanned_all && ws_map64_get(&cp->index, key, &found))
        return (uint32_t)found;
    if (cp->n == WS_NONE32 - 1)
        return WS_NONE32;
    if (cp->n == cp->capacity) {
        size_t cap = cp->capacity ? cp->capacity * 2 : 64;
        uint32_t *a = ws_realloc(cp->parent, cap * sizeof *a);
        if (!a)
            return WS_NONE32;
        cp->parent = a;
        if (!(a = ws_realloc(cp->region, cap * sizeof *a)))
            return WS_NONE32;
        cp->region = a;
        if (!(a = ws_realloc(cp->first_child, cap * sizeof *a)))
            return WS_NONE32;
        cp->first_child = a;
        if (!(a = ws_realloc(cp->next_sibling, cap * sizeof *a)))
            return WS_NONE32;
        cp->next_sibling = a;
        if (!(a = ws_realloc(cp->depth, cap * sizeof *a)))
            return WS_NONE32;
        cp->depth = a;
        cp->capacity = cap;
    }
    uint32_t id = cp->n;
    if (ws_map64_put(&cp->index, key, id) != 0)
        return WS_NONE32;
    cp->parent[id] = parent;
    cp->region[id] = region;
    cp->first_child[id] = WS_NONE32;
    cp->depth[id] = (parent == WS_NONE32) ? 0 : cp->depth[parent] + 1;
    /* append at the end of the sibling list to keep creation order */
    cp->next_sibling[id] = WS_NONE32;
    if (parent != WS_NONE32) {
        uint32_t s = cp->first_child[parent];
        if (s == WS_NONE32) {
            cp->first_child[parent] = id;
        } else {
            while (cp->next_sibling[s] != WS_NONE32)
                s = cp->next_sibling[s];
            cp->next_sibling[s] = id;
        }
    }
    cp->n++;
    return id;
}

#define RESERVE(field, count)                                                   \
    do {                                                                        \
        void *p__ = ws_realloc(ev->field, (size_t)(count) * sizeof *ev->field + 1); \
        if (!p__)                                                               \
            return -1;                                                          \
        ev->field = p__;                                                        \
        ws_advise_huge(p__, (size_t)(count) * sizeof *ev->field);               \
    } while (0)

/* The columns for n events, the times compact (`ticks`) or in seconds. */
static int reserve(ws_events *ev, uint64_t n, int ticks)
{
    if (n > SIZE_MAX / 16)
        return -1;
    if (ticks) {
        RESERVE(tick_delta, n);
        RESERVE(tick_block, ws_tick_blocks(n));
    } else {
        RESERVE(time, n);
    }
    RESERVE(kind, n);
    RESERVE(ref, n);
    return 0;
}

int ws_events_reserve(ws_events *ev, uint64_t n)
{
    return reserve(ev, n, ev->tick_delta != NULL);
}

int ws_events_reserve_ticks(ws_events *ev, uint64_t n)
{
    return ev->time ? -1 : reserve(ev, n, 1);
}

size_t ws_callpath_name(const ws_trace *t, uint32_t cp, char *buf, size_t size)
{
    if (size == 0)
        return 0;
    buf[0] = '\0';
    if (cp >= t->callpaths.n)
        return 0;
    /* collect the chain from the root */
    uint32_t chain[256];
    uint32_t depth = 0;
    for (uint32_t c = cp; c != WS_NONE32 && depth < 256; c = t->callpaths.parent[c])
        chain[depth++] = c;
    size_t used = 0;
    for (uint32_t k = depth; k-- > 0;) {
        const ws_region *r = &t->regions[t->callpaths.region[chain[k]]];
        const char *name = ws_trace_string(t, r->name);
        int n = snprintf(buf + used, size - used, "%s%s", used ? "/" : "", name);
        if (n < 0)
            break;
        if ((size_t)n >= size - used) {
            used = size - 1;
            break;
        }
        used += (size_t)n;
    }
    return used;
}

uint32_t ws_comm_location(const ws_trace *t, uint32_t comm, uint32_t rank, uint32_t self)
{
    if (comm >= t->n_comms)
        return WS_NONE32;
    const ws_comm *c = &t->comms[comm];
    if (c->is_self)
        return rank == 0 ? self : WS_NONE32;
    if (rank >= c->size)
        return WS_NONE32;
    return c->rank_location[rank];
}

uint32_t ws_comm_rank_of(const ws_trace *t, uint32_t comm, uint32_t loc)
{
    if (comm >= t->n_comms)
        return WS_NONE32;
    const ws_comm *c = &t->comms[comm];
    if (c->is_self)
        return 0;
    for (uint32_t r = 0; r < c->size; r++)
        if (c->rank_location[r] == loc)
            return r;
    return WS_NONE32;
}

/* Finds the COMM_LOCATIONS group with the given paradigm. */
static uint32_t find_comm_locations_group(const ws_trace *t, uint8_t paradigm)
{
    for (uint32_t g = 0; g < t->n_groups; g++)
        if (t->groups[g].type == WS_GROUP_COMM_LOCATIONS && t->groups[g].paradigm == paradigm)
            return g;
    return WS_NONE32;
}

int ws_trace_resolve_definitions(ws_trace *t, ws_error *err)
{
    /* MPI paradigm is OTF2_PARADIGM_MPI == 4 */
    const uint8_t paradigm_mpi = 4;
    uint32_t mpi_locations = find_comm_locations_group(t, paradigm_mpi);

    /* ranks and threads of locations */
    for (uint32_t l = 0; l < t->n_locations; l++) {
        t->locations[l].rank = WS_NONE32;
        t->locations[l].thread = 0;
    }
    if (mpi_locations != WS_NONE32) {
        const ws_group *g = &t->groups[mpi_locations];
        if (g->n_members > UINT32_MAX)
            return ws_error_set(err, WS_ERR_FORMAT, "MPI location group has too many members");
        for (uint64_t i = 0; i < g->n_members; i++) {
            uint64_t loc;
            if (!ws_map64_get(&t->location_ids, g->members[i], &loc))
                return ws_error_set(err, WS_ERR_FORMAT,
                                    "MPI location group names unknown location %llu",
                                    (unsigned long long)g->members[i]);
            t->locations[loc].rank = (uint32_t)i;
        }
        t->world_size = (uint32_t)g->n_members;
    }
    /* thread number: position among the locations of the same group;
     * without MPI, the first location of each group is its process's
     * "rank", in group order */
    if (t->n_location_groups) {
        uint32_t *seen = ws_calloc(t->n_location_groups, sizeof *seen);
        if (!seen)
            return ws_error_nomem(err, "thread numbering");
        for (uint32_t l = 0; l < t->n_locations; l++) {
            uint32_t g = t->locations[l].group;
            if (g < t->n_location_groups)
                t->locations[l].thread = seen[g]++;
            if (mpi_locations == WS_NONE32 && t->locations[l].thread == 0)
                t->locations[l].rank = g;
        }
        free(seen);
    } else if (mpi_locations == WS_NONE32) {
        for (uint32_t l = 0; l < t->n_locations; l++)
            t->locations[l].rank = l;
    }
    if (mpi_locations == WS_NONE32)
        t->world_size = t->n_location_groups ? t->n_location_groups : t->n_locations;
    /* the process of every location: the rank of its group's MPI location */
    {
        uint32_t ng = t->n_location_groups;
        uint32_t *group_rank = ws_malloc_array(ng ? ng : 1, sizeof *group_rank);
        if (!group_rank)
            return ws_error_nomem(err, "thread numbering");
        for (uint32_t g = 0; g < ng; g++)
            group_rank[g] = WS_NONE32;
        for (uint32_t l = 0; l < t->n_locations; l++) {
            uint32_t g = t->locations[l].group;
            if (g < ng && t->locations[l].rank != WS_NONE32 && group_rank[g] == WS_NONE32)
                group_rank[g] = t->locations[l].rank;
        }
        for (uint32_t l = 0; l < t->n_locations; l++) {
            ws_location *x = &t->locations[l];
            x->process = x->rank != WS_NONE32 ? x->rank : x->group < ng && group_rank[x->group] != WS_NONE32
                                                               ? group_rank[x->group]
                                                               : x->group;
        }
        free(group_rank);
    }

    /* communicators */
    for (uint32_t c = 0; c < t->n_comms; c++) {
        ws_comm *comm = &t->comms[c];
        free(comm->rank_location);
        comm->rank_location = NULL;
        comm->size = 0;
        comm->is_self = 0;
        if (comm->group >= t->n_groups)
            return ws_error_set(err, WS_ERR_FORMAT, "communicator '%s' refers to an unknown group",
                                ws_trace_string(t, comm->name));
        const ws_group *g = &t->groups[comm->group];
        if (g->type == WS_GROUP_COMM_SELF) {
            comm->is_self = 1;
            comm->size = 1;
            continue;
        }
        const ws_group *locs = NULL;
        const uint64_t *members = g->members;
        uint64_t n = g->n_members;
        if (g->type == WS_GROUP_COMM_GROUP) {
            uint32_t lg = find_comm_locations_group(t, g->paradigm);
            if (lg == WS_NONE32)
                return ws_error_set(err, WS_ERR_FORMAT,
                                    "communicator '%s': no COMM_LOCATIONS group for its paradigm",
                                    ws_trace_string(t, comm->name));
            locs = &t->groups[lg];
        } else if (g->type != WS_GROUP_COMM_LOCATIONS && g->type != WS_GROUP_LOCATIONS) {
            return ws_error_set(err, WS_ERR_FORMAT, "communicator '%s' has a group of unsupported type %u",
                                ws_trace_string(t, comm->name), (unsigned)g->type);
        }
        if (n > UINT32_MAX - 1)
            return ws_error_set(err, WS_ERR_FORMAT, "communicator too large");
        comm->size = (uint32_t)n;
        comm->rank_location = ws_malloc_array(n ? n : 1, sizeof *comm->rank_location);
        if (!comm->rank_location)
            return ws_error_nomem(err, "communicator ranks");
        for (uint64_t r = 0; r < n; r++) {
            uint64_t loc_id = members[r];
            if (locs) {
                if (members[r] >= locs->n_members)
                    return ws_error_set(err, WS_ERR_FORMAT,
                                        "communicator '%s': rank %llu refers past its location group",
                                        ws_trace_string(t, comm->name), (unsigned long long)r);
                loc_id = locs->members[members[r]];
            }
            uint64_t loc;
            if (!ws_map64_get(&t->location_ids, loc_id, &loc))
                return ws_error_set(err, WS_ERR_FORMAT, "communicator '%s': unknown location %llu",
                                    ws_trace_string(t, comm->name), (unsigned long long)loc_id);
            comm->rank_location[r] = (uint32_t)loc;
        }
    }

    /* the world communicator: named MPI_COMM_WORLD, else the largest
     * parentless MPI communicator */
    t->world_comm = WS_NONE32;
    for (uint32_t c = 0; c < t->n_comms; c++)
        if (strcmp(ws_trace_string(t, t->comms[c].name), "MPI_COMM_WORLD") == 0) {
            t->world_comm = c;
            break;
        }
    if (t->world_comm == WS_NONE32) {
        uint32_t best = 0;
        for (uint32_t c = 0; c < t->n_comms; c++) {
            const ws_group *g = &t->groups[t->comms[c].group];
            if (g->paradigm == paradigm_mpi && t->comms[c].parent == WS_NONE32 && !t->comms[c].is_self &&
                t->comms[c].size > best) {
                best = t->comms[c].size;
                t->world_comm = c;
            }
        }
    }
    t->has_mpi_paradigm = (mpi_locations != WS_NONE32);
    return WS_OK;
}

int ws_trace_error_at(const ws_trace *t, uint32_t loc, ws_error *err)
{
    if (!t->path || loc >= t->n_locations)
        return ws_trace_error_in(t, err);
    return ws_error_prefix(err, "%s: %s/%llu.evt", t->path, t->directory ? t->directory : ".",
                           (unsigned long long)t->locations[loc].otf2_id);
}

int ws_trace_error_in(const ws_trace *t, ws_error *err)
{
    if (!t->path || strncmp(err->message, t->path, strlen(t->path)) == 0)
        return err->code;
    return ws_error_prefix(err, "%s", t->path);
}

int ws_trace_has_threads(const ws_trace *t)
{
    return t->n_location_groups && t->n_locations > t->n_location_groups;
}

void ws_block_owners(const ws_trace *t, uint32_t n_parts, uint32_t *owner)
{
    uint32_t n = t->n_locations, ng = t->n_location_groups;
    int by_group = ws_trace_has_threads(t);
    for (uint32_t l = 0; l < n; l++) {
        uint32_t g = t->locations[l].group;
        owner[l] = by_group && g < ng ? (uint32_t)(((uint64_t)g * n_parts) / ng)
                                      : (uint32_t)(((uint64_t)l * n_parts) / (n ? n : 1));
    }
}
