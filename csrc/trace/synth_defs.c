/* Synthetic programs, pass 4: definitions and exactly sized event columns (see synth.c). */
#include "synth_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pass 4: definitions ------------------------------------------------------ */

static uint32_t add_string(ws_trace *t, const char *str)
{
    return ws_trace_add_string(t, t->n_strings, str);
}

#define TABLE(field, cap, n)                                              \
    do {                                                                  \
        t->field = ws_calloc((n) ? (n) : 1, sizeof *t->field);            \
        if (!t->field)                                                    \
            return ws_error_nomem(s->err, "definitions");                 \
        t->cap = (n) ? (n) : 1;                                           \
    } while (0)

#define NOMEM_IF(cond)                                                    \
    do {                                                                  \
        if (cond)                                                         \
            return ws_error_nomem(s->err, "definitions");                 \
    } while (0)

static int new_group(synth *s, uint8_t type, uint64_t n_members, uint32_t name)
{
    ws_trace *t = s->t;
    ws_group *g = &t->groups[t->n_groups];
    g->members = ws_malloc_array(n_members ? n_members : 1, sizeof *g->members);
    NOMEM_IF(!g->members);
    g->otf2_id = t->n_groups;
    g->name = name;
    g->type = type;
    g->paradigm = OTF2_PARADIGM_MPI;
    g->flags = OTF2_GROUP_FLAG_NONE;
    g->n_members = n_members;
    /* counted at once, so that freeing the trace frees the members */
    t->n_groups++;
    NOMEM_IF(ws_map64_put(&t->group_ids, g->otf2_id, t->n_groups - 1) != 0);
    return WS_OK;
}

static int new_comm(synth *s, uint32_t name, uint32_t group, uint32_t parent)
{
    ws_trace *t = s->t;
    ws_comm *c = &t->comms[t->n_comms];
    c->otf2_id = t->n_comms;
    c->name = name;
    c->group = group;
    c->parent = parent;
    NOMEM_IF(ws_map64_put(&t->comm_ids, c->otf2_id, t->n_comms) != 0);
    t->n_comms++;
    return WS_OK;
}

static int new_region(synth *s, uint32_t name, uint8_t role, uint8_t paradigm, uint32_t file, uint32_t empty)
{
    ws_trace *t = s->t;
    ws_region *g = &t->regions[t->n_regions];
    g->otf2_id = t->n_regions;
    g->name = name;
    g->canonical_name = name;
    g->description = empty;
    g->role = role;
    g->paradigm = paradigm;
    g->flags = OTF2_REGION_FLAG_NONE;
    g->source_file = file;
    g->begin_line = 0;
    g->end_line = 0;
    NOMEM_IF(ws_map64_put(&t->region_ids, g->otf2_id, t->n_regions) != 0);
    t->n_regions++;
    return WS_OK;
}

int synth_build_definitions(synth *s)
{
    const ws_synth_program *p = s->p;
    ws_trace *t = s->t = ws_trace_new();
    NOMEM_IF(!t);
    /* not backed by files: loading has nothing to read */
    t->path = ws_strdup("<synthetic>");
    t->directory = ws_strdup("<synthetic>");
    NOMEM_IF(!t->path || !t->directory);
    t->clock.resolution = (uint64_t)s->res;
    /* time 0 is tick 1: libotf2 cannot read back a location whose events
     * all sit at tick 0 over more than one 1 MiB chunk (its reader decodes
     * without end), and a program without computation puts them there */
    t->clock.offset = 1;
    t->clock.realtime = OTF2_UNDEFINED_TIMESTAMP;
    t->clock.defined = 1;

    /* which MPI functions are used */
    int used[F_COUNT] = {0};
    used[F_INIT] = used[F_FINALIZE] = 1;
    for (uint64_t gi = 0; gi < s->n_ops; gi++) {
        int f = function_of((int)op_row(s, gi)[0]);
        if (f >= 0)
            used[f] = 1;
    }

    /* strings: a few fixed ones, names of regions, communicators and
     * topologies, then one per rank */
    uint32_t s_empty = add_string(t, "");
    uint32_t s_machine = add_string(t, "machine");
    uint32_t s_machine_name = add_string(t, "synthetic");
    uint32_t s_node = add_string(t, "node");
    uint32_t s_node_name = add_string(t, "node0");
    uint32_t s_thread = add_string(t, "Master thread");
    uint32_t s_main = add_string(t, "main");
    uint32_t s_mpi = add_string(t, "MPI");
    NOMEM_IF(s_empty == WS_NONE32 || s_machine == WS_NONE32 || s_machine_name == WS_NONE32 || s_node == WS_NONE32 ||
             s_node_name == WS_NONE32 || s_thread == WS_NONE32 || s_main == WS_NONE32 || s_mpi == WS_NONE32);

    /* regions: main, user regions, MPI functions, the program */
    uint32_t n_regions = 1 + p->n_regions + F_COUNT + 1;
    TABLE(regions, cap_regions, n_regions);
    NOMEM_IF(new_region(s, s_main, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, WS_NONE32, s_empty));
    s->user_region = ws_malloc_array(p->n_regions ? p->n_regions : 1, sizeof *s->user_region);
    NOMEM_IF(!s->user_region);
    for (uint32_t u = 0; u < p->n_regions; u++) {
        const char *name = p->region_names[u] ? p->region_names[u] : "";
        if (strcmp(name, "main") == 0) {
            s->user_region[u] = 0;
            continue;
        }
        for (int f = 0; f < F_COUNT; f++)
            if (strcmp(name, synth_mpi_functions[f].name) == 0)
                return ARG_FAIL("region name '%s' is reserved for the MPI function", name);
        uint32_t str = ws_trace_intern_string(t, name);
        NOMEM_IF(str == WS_NONE32);
        s->user_region[u] = t->n_regions;
        NOMEM_IF(new_region(s, str, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, WS_NONE32, s_empty));
    }
    for (int f = 0; f < F_COUNT; f++) {
        s->mpi_region[f] = WS_NONE32;
        if (!used[f])
            continue;
        uint32_t str = ws_trace_intern_string(t, synth_mpi_functions[f].name);
        NOMEM_IF(str == WS_NONE32);
        s->mpi_region[f] = t->n_regions;
        NOMEM_IF(new_region(s, str, synth_mpi_functions[f].role, OTF2_PARADIGM_MPI, s_mpi, s_empty));
    }
    /* Score-P's program region: the root of every call path, entered and
     * left where the program begins and ends; the OTF2 writer writes them as
     * ProgramBegin (named with its canonical name, which Scalasca requires)
     * and ProgramEnd */
    {
        const char *prog = p->name && *p->name ? p->name : "synthetic";
        size_t len = strlen(prog);
        char *canonical = ws_malloc(len + sizeof "/synthetic/");
        NOMEM_IF(!canonical);
        memcpy(canonical, "/synthetic/", sizeof "/synthetic/" - 1);
        memcpy(canonical + sizeof "/synthetic/" - 1, prog, len + 1);
        uint32_t s_prog = ws_trace_intern_string(t, prog);
        uint32_t s_canon = ws_trace_intern_string(t, canonical);
        free(canonical);
        NOMEM_IF(s_prog == WS_NONE32 || s_canon == WS_NONE32);
        NOMEM_IF(new_region(s, s_prog, OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_MEASUREMENT_SYSTEM, WS_NONE32,
                            s_empty));
        t->regions[t->n_regions - 1].canonical_name = s_canon;
        s->program_region = t->n_regions - 1;
    }

    /* system tree: machine -> node */
    TABLE(system_nodes, cap_system_nodes, 2);
    t->system_nodes[0] = (ws_system_node){0, s_machine_name, s_machine, WS_NONE32};
    t->system_nodes[1] = (ws_system_node){1, s_node_name, s_node, 0};
    t->n_system_nodes = 2;
    NOMEM_IF(ws_map64_put(&t->system_node_ids, 0, 0) != 0 || ws_map64_put(&t->system_node_ids, 1, 1) != 0);

    /* communicators: world, self, sub-communicators */
    uint32_t s_world = add_string(t, "MPI_COMM_WORLD");
    uint32_t s_self = add_string(t, "MPI_COMM_SELF");
    NOMEM_IF(s_world == WS_NONE32 || s_self == WS_NONE32);
    uint32_t n_groups = 3 + p->n_comms;
    TABLE(groups, cap_groups, n_groups);
    TABLE(comms, cap_comms, 2 + p->n_comms);
    int rc;
    if ((rc = new_group(s, WS_GROUP_COMM_LOCATIONS, s->n, s_empty)) ||
        (rc = new_group(s, WS_GROUP_COMM_GROUP, s->n, s_empty)) || (rc = new_group(s, WS_GROUP_COMM_SELF, 0, s_empty)))
        return rc;
    for (uint32_t r = 0; r < s->n; r++)
        t->groups[0].members[r] = t->groups[1].members[r] = r;
    if ((rc = new_comm(s, s_world, 1, WS_NONE32)) || (rc = new_comm(s, s_self, 2, WS_NONE32)))
        return rc;
    for (uint32_t i = 0; i < p->n_comms; i++) {
        const xcomm *x = &s->comm[i + 1];
        uint32_t name = ws_trace_intern_string(t, x->name);
        NOMEM_IF(name == WS_NONE32);
        uint32_t group = t->n_groups;
        if ((rc = new_group(s, WS_GROUP_COMM_GROUP, x->size, s_empty)))
            return rc;
        for (uint32_t k = 0; k < x->size; k++)
            t->groups[group].members[k] = x->members[k];
        if ((rc = new_comm(s, name, group, 0)))
            return rc;
    }

    /* Cartesian topologies */
    uint32_t n_dims = 0;
    for (uint32_t i = 0; i < p->n_carts; i++) {
        const ws_synth_cart *k = &p->carts[i];
        if (k->comm >= s->n_xcomm)
            return ARG_FAIL("Cartesian topology %u: unknown communicator %u", (unsigned)i, (unsigned)k->comm);
        if (k->n_dims == 0 || k->n_dims > 8)
            return ARG_FAIL("Cartesian topology %u: %u dimensions (1 to 8 are supported)", (unsigned)i,
                            (unsigned)k->n_dims);
        uint64_t product = 1;
        for (uint32_t d = 0; d < k->n_dims; d++) {
            if (k->dims[d] <= 0 || k->dims[d] > (int64_t)s->comm[k->comm].size)
                return ARG_FAIL("Cartesian topology %u: invalid size %lld of dimension %u", (unsigned)i,
                                (long long)k->dims[d], (unsigned)d);
            product *= (uint64_t)k->dims[d];
            if (product > s->comm[k->comm].size)
                break;
        }
        if (product > s->comm[k->comm].size)
            return ARG_FAIL("Cartesian topology %u needs more ranks than %s has (%u)", (unsigned)i,
                            s->comm[k->comm].name, (unsigned)s->comm[k->comm].size);
        n_dims += k->n_dims;
    }
    if (p->n_carts) {
        TABLE(cart_dims, cap_cart_dims, n_dims);
        TABLE(cart_topologies, cap_cart_topologies, p->n_carts);
    }
    for (uint32_t i = 0; i < p->n_carts; i++) {
        const ws_synth_cart *k = &p->carts[i];
        ws_cart_topology *topo = &t->cart_topologies[i];
        topo->otf2_id = i;
        topo->name = ws_trace_intern_string(t, k->name ? k->name : "");
        NOMEM_IF(topo->name == WS_NONE32);
        topo->comm = s->comm[k->comm].trace_comm;
        topo->n_dims = k->n_dims;
        topo->dims = ws_malloc_array(k->n_dims, sizeof *topo->dims);
        NOMEM_IF(!topo->dims);
        t->n_cart_topologies++;
        NOMEM_IF(ws_map64_put(&t->cart_topology_ids, i, i) != 0);
        for (uint32_t d = 0; d < k->n_dims; d++) {
            char name[32];
            snprintf(name, sizeof name, "dim %u", (unsigned)d);
            ws_cart_dim *dim = &t->cart_dims[t->n_cart_dims];
            dim->name = ws_trace_intern_string(t, name);
            NOMEM_IF(dim->name == WS_NONE32);
            dim->size = (uint32_t)k->dims[d];
            dim->periodic = k->periodic && k->periodic[d] != 0;
            topo->dims[d] = t->n_cart_dims;
            NOMEM_IF(ws_map64_put(&t->cart_dim_ids, t->n_cart_dims, t->n_cart_dims) != 0);
            t->n_cart_dims++;
        }
    }

    /* one process with one thread per rank */
    TABLE(location_groups, cap_location_groups, s->n);
    TABLE(locations, cap_locations, s->n);
    for (uint32_t r = 0; r < s->n; r++) {
        char name[48];
        snprintf(name, sizeof name, "MPI Rank %u", (unsigned)r);
        uint32_t str = add_string(t, name);
        NOMEM_IF(str == WS_NONE32);
        ws_location_group *g = &t->location_groups[r];
        g->otf2_id = r;
        g->name = str;
        g->type = OTF2_LOCATION_GROUP_TYPE_PROCESS;
        g->system_node = 1;
        ws_location *l = &t->locations[r];
        l->otf2_id = r;
        l->name = s_thread;
        l->type = OTF2_LOCATION_TYPE_CPU_THREAD;
        l->group = r;
        NOMEM_IF(ws_map64_put(&t->location_group_ids, r, r) != 0 || ws_map64_put(&t->location_ids, r, r) != 0);
        t->n_location_groups++;
        t->n_locations++;
    }

    if ((rc = ws_trace_resolve_definitions(t, s->err)))
        return rc;

    /* the region lookup table the OTF2 reader builds for dense ids */
    t->region_lut_size = t->n_regions;
    t->region_lut = ws_malloc_array(t->n_regions, sizeof *t->region_lut);
    NOMEM_IF(!t->region_lut);
    for (uint32_t i = 0; i < t->n_regions; i++)
        t->region_lut[i] = i;

    /* coordinates, row-major (last dimension fastest) like MPI_Cart_create */
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        ws_cart_topology *topo = &t->cart_topologies[i];
        const ws_synth_cart *k = &p->carts[i];
        uint32_t size = t->comms[topo->comm].size;
        topo->n_ranks = size;
        topo->coords = ws_malloc_array((size_t)size * topo->n_dims, sizeof *topo->coords);
        NOMEM_IF(!topo->coords);
        uint64_t product = 1;
        for (uint32_t d = 0; d < topo->n_dims; d++)
            product *= (uint64_t)k->dims[d];
        for (uint32_t r = 0; r < size; r++) {
            uint32_t *c = topo->coords + (size_t)r * topo->n_dims;
            uint64_t rest = r;
            for (uint32_t d = topo->n_dims; d-- > 0;) {
                if (r < product) {
                    c[d] = (uint32_t)(rest % (uint64_t)k->dims[d]);
                    rest /= (uint64_t)k->dims[d];
                } else {
                    c[d] = WS_NONE32;
                }
            }
        }
    }

    /* exactly sized event columns */
    for (uint32_t r = 0; r < s->n; r++) {
        const rank_state *st = &s->st[r];
        ws_events *ev = &t->locations[r].events;
        if (ws_events_reserve(ev, st->n_events) != 0)
            return ws_error_nomem(s->err, "events");
#define ALLOC(field, count)                                                        \
    do {                                                                           \
        ev->field = ws_malloc_array((count) ? (count) : 1, sizeof *ev->field);     \
        if (!ev->field)                                                            \
            return ws_error_nomem(s->err, "events");                               \
    } while (0)
        ALLOC(msg_event, st->n_messages);
        ALLOC(msg_peer, st->n_messages);
        ALLOC(msg_comm, st->n_messages);
        ALLOC(msg_tag, st->n_messages);
        ALLOC(msg_bytes, st->n_messages);
        ALLOC(req_event, st->n_requests);
        ALLOC(req_id, st->n_requests);
        ALLOC(coll_event, st->n_collectives);
        ALLOC(coll_comm, st->n_collectives);
        ALLOC(coll_root, st->n_collectives);
        ALLOC(coll_op, st->n_collectives);
        ALLOC(coll_sent, st->n_collectives);
        ALLOC(coll_received, st->n_collectives);
#undef ALLOC
    }
    return WS_OK;
}

#undef TABLE
#undef NOMEM_IF

