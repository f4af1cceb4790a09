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

static int new_group_of(synth *s, uint8_t type, uint8_t paradigm, uint64_t n_members, uint32_t name)
{
    ws_trace *t = s->t;
    ws_group *g = &t->groups[t->n_groups];
    g->members = ws_malloc_array(n_members ? n_members : 1, sizeof *g->members);
    NOMEM_IF(!g->members);
    g->otf2_id = t->n_groups;
    g->name = name;
    g->type = type;
    g->paradigm = paradigm;
    g->flags = OTF2_GROUP_FLAG_NONE;
    g->n_members = n_members;
    /* counted at once, so that freeing the trace frees the members */
    t->n_groups++;
    NOMEM_IF(ws_map64_put(&t->group_ids, g->otf2_id, t->n_groups - 1) != 0);
    return WS_OK;
}

static int new_group(synth *s, uint8_t type, uint64_t n_members, uint32_t name)
{
    return new_group_of(s, type, OTF2_PARADIGM_MPI, n_members, name);
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

/* The OpenMP regions Score-P defines for the constructs used, named
 * after their parallel region's name where Score-P puts the source
 * location ("!$omp parallel @loop"), and the lock calls. */
static int omp_regions(synth *s, uint32_t s_empty)
{
    static const struct {
        const char *prefix;
        uint8_t role;
    } constructs[OMP_R_COUNT] = {
        [OMP_R_PARALLEL] = {"!$omp parallel @", OTF2_REGION_ROLE_PARALLEL},
        [OMP_R_IBARRIER] = {"!$omp implicit barrier @", OTF2_REGION_ROLE_IMPLICIT_BARRIER},
        [OMP_R_BARRIER] = {"!$omp barrier @", OTF2_REGION_ROLE_BARRIER},
        [OMP_R_CRITICAL] = {"!$omp critical @", OTF2_REGION_ROLE_CRITICAL},
        [OMP_R_SBLOCK] = {"!$omp critical sblock @", OTF2_REGION_ROLE_CRITICAL_SBLOCK},
    };
    const ws_synth_program *p = s->p;
    ws_trace *t = s->t;
    size_t n = (size_t)p->n_parallel_names * OMP_R_COUNT;
    s->omp_region = ws_malloc_array(n ? n : 1, sizeof *s->omp_region);
    NOMEM_IF(!s->omp_region);
    s->set_lock_region = s->unset_lock_region = WS_NONE32;
    for (uint32_t k = 0; k < p->n_parallel_names; k++) {
        const char *name = p->parallel_names[k] ? p->parallel_names[k] : "";
        for (int c = 0; c < OMP_R_COUNT; c++) {
            uint32_t *reg = &s->omp_region[(size_t)k * OMP_R_COUNT + c];
            *reg = WS_NONE32;
            if (!(s->omp_used[k] & (1u << c)))
                continue;
            size_t len = strlen(constructs[c].prefix) + strlen(name) + 1;
            char *full = ws_malloc(len);
            NOMEM_IF(!full);
            snprintf(full, len, "%s%s", constructs[c].prefix, name);
            uint32_t str = ws_trace_intern_string(t, full);
            free(full);
            NOMEM_IF(str == WS_NONE32);
            *reg = t->n_regions;
            NOMEM_IF(new_region(s, str, constructs[c].role, OTF2_PARADIGM_OPENMP, WS_NONE32, s_empty));
        }
    }
    if (s->any_lock) {
        uint32_t s_omp = ws_trace_intern_string(t, "OMP");
        uint32_t s_set = ws_trace_intern_string(t, "omp_set_lock");
        uint32_t s_unset = ws_trace_intern_string(t, "omp_unset_lock");
        NOMEM_IF(s_omp == WS_NONE32 || s_set == WS_NONE32 || s_unset == WS_NONE32);
        s->set_lock_region = t->n_regions;
        NOMEM_IF(new_region(s, s_set, OTF2_REGION_ROLE_WRAPPER, OTF2_PARADIGM_OPENMP, s_omp, s_empty));
        s->unset_lock_region = t->n_regions;
        NOMEM_IF(new_region(s, s_unset, OTF2_REGION_ROLE_WRAPPER, OTF2_PARADIGM_OPENMP, s_omp, s_empty));
    }
    return WS_OK;
}

/* The groups and communicators of a hybrid run, as Score-P defines them:
 * every location in Score-P's "Process x Threads" communicator (of the
 * Cartesian topology of the same name, *pxt), every location in the
 * OpenMP locations group, and per team that occurs (a rank's first
 * `size` threads) a group of OpenMP and its communicator, the master as
 * rank 0. */
static int omp_comms(synth *s, uint32_t s_empty, uint32_t *pxt)
{
    ws_trace *t = s->t;
    uint32_t n_loc = s->n * s->T;
    uint32_t s_pxt_locs = ws_trace_intern_string(t, "PROCESSXTHREADS_GROUP_LOCATIONS");
    uint32_t s_pxt_group = ws_trace_intern_string(t, "PROCESSXTHREADS_GROUP");
    uint32_t s_pxt = ws_trace_intern_string(t, "Process x Threads CPU Locations");
    uint32_t s_openmp = ws_trace_intern_string(t, "OpenMP");
    NOMEM_IF(s_pxt_locs == WS_NONE32 || s_pxt_group == WS_NONE32 || s_pxt == WS_NONE32 || s_openmp == WS_NONE32);
    uint32_t g_locs = t->n_groups, g_pxt = g_locs + 1, g_omp = g_locs + 2;
    int rc;
    if ((rc = new_group_of(s, WS_GROUP_COMM_LOCATIONS, OTF2_PARADIGM_MEASUREMENT_SYSTEM, n_loc, s_pxt_locs)) ||
        (rc = new_group_of(s, WS_GROUP_COMM_GROUP, OTF2_PARADIGM_MEASUREMENT_SYSTEM, n_loc, s_pxt_group)) ||
        (rc = new_group_of(s, WS_GROUP_COMM_LOCATIONS, OTF2_PARADIGM_OPENMP, n_loc, s_openmp)))
        return rc;
    for (uint32_t r = 0; r < s->n; r++)
        for (uint32_t k = 0; k < s->T; k++) {
            uint32_t l = loc_of(s, r, k);
            uint64_t id = (uint64_t)k << 32 | r;
            t->groups[g_locs].members[l] = t->groups[g_omp].members[l] = id;
            t->groups[g_pxt].members[l] = l;
        }
    *pxt = t->n_comms;
    if ((rc = new_comm(s, s_pxt, g_pxt, WS_NONE32)))
        return rc;
    for (uint32_t r = 0; r < s->n; r++)
        for (uint32_t size = 1; size <= s->T; size++) {
            uint32_t *team = &s->team_comm[loc_of(s, r, size - 1)];
            if (*team == WS_NONE32)
                continue;
            uint32_t g = t->n_groups;
            if ((rc = new_group_of(s, WS_GROUP_COMM_GROUP, OTF2_PARADIGM_OPENMP, size, s_empty)))
                return rc;
            for (uint32_t k = 0; k < size; k++)
                t->groups[g].members[k] = loc_of(s, r, k);
            *team = t->n_comms;
            if ((rc = new_comm(s, s_empty, g, WS_NONE32)))
                return rc;
        }
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
    uint32_t n_regions = 1 + p->n_regions + F_COUNT + 1 + p->n_parallel_names * OMP_R_COUNT + 2;
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
    int rc;
    if ((rc = omp_regions(s, s_empty)))
        return rc;

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
    uint32_t n_teams = 0; /* team communicators: one per (rank, team size) */
    if (s->hybrid)
        for (size_t l = 0; l < (size_t)s->n * s->T; l++)
            n_teams += s->team_comm[l] != WS_NONE32;
    TABLE(groups, cap_groups, n_groups + (s->hybrid ? 3 + n_teams : 0));
    TABLE(comms, cap_comms, 2 + p->n_comms + (s->hybrid ? 1 + n_teams : 0));
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
    uint32_t pxt_comm = WS_NONE32;
    if (s->hybrid && (rc = omp_comms(s, s_empty, &pxt_comm)))
        return rc;

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
    /* a hybrid run's first: Score-P's "Process x Thread" (rank, thread) */
    uint32_t first = s->hybrid ? 1 : 0;
    int64_t pxt_dims[2] = {s->n, s->T};
    const char *pxt_dim_names[2] = {"Process", "Thread"};
    if (p->n_carts + first) {
        TABLE(cart_dims, cap_cart_dims, n_dims + 2 * first);
        TABLE(cart_topologies, cap_cart_topologies, p->n_carts + first);
    }
    for (uint32_t i = 0; i < p->n_carts + first; i++) {
        const ws_synth_cart *k = i >= first ? &p->carts[i - first] : NULL;
        ws_cart_topology *topo = &t->cart_topologies[i];
        topo->otf2_id = i;
        topo->name = ws_trace_intern_string(t, k ? (k->name ? k->name : "") : "Process x Thread");
        NOMEM_IF(topo->name == WS_NONE32);
        topo->comm = k ? s->comm[k->comm].trace_comm : pxt_comm;
        topo->n_dims = k ? k->n_dims : 2;
        topo->dims = ws_malloc_array(topo->n_dims, sizeof *topo->dims);
        NOMEM_IF(!topo->dims);
        t->n_cart_topologies++;
        NOMEM_IF(ws_map64_put(&t->cart_topology_ids, i, i) != 0);
        for (uint32_t d = 0; d < topo->n_dims; d++) {
            char name[32];
            snprintf(name, sizeof name, "dim %u", (unsigned)d);
            ws_cart_dim *dim = &t->cart_dims[t->n_cart_dims];
            dim->name = ws_trace_intern_string(t, k ? name : pxt_dim_names[d]);
            NOMEM_IF(dim->name == WS_NONE32);
            dim->size = (uint32_t)(k ? k->dims[d] : pxt_dims[d]);
            dim->periodic = k && k->periodic && k->periodic[d] != 0;
            topo->dims[d] = t->n_cart_dims;
            NOMEM_IF(ws_map64_put(&t->cart_dim_ids, t->n_cart_dims, t->n_cart_dims) != 0);
            t->n_cart_dims++;
        }
    }

    /* one process per rank with T threads: the master (OTF2 id r) and
     * "OMP thread k" (id k << 32 | r), as Score-P numbers them */
    TABLE(location_groups, cap_location_groups, s->n);
    size_t n_locations = (size_t)s->n * s->T;
    TABLE(locations, cap_locations, n_locations);
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
        NOMEM_IF(ws_map64_put(&t->location_group_ids, r, r) != 0);
        t->n_location_groups++;
        for (uint32_t k = 0; k < s->T; k++) {
            uint32_t index = loc_of(s, r, k);
            ws_location *l = &t->locations[index];
            l->otf2_id = (uint64_t)k << 32 | r;
            l->name = s_thread;
            if (k) {
                snprintf(name, sizeof name, "OMP thread %u", (unsigned)k);
                l->name = ws_trace_intern_string(t, name);
                NOMEM_IF(l->name == WS_NONE32);
            }
            l->type = OTF2_LOCATION_TYPE_CPU_THREAD;
            l->group = r;
            NOMEM_IF(ws_map64_put(&t->location_ids, l->otf2_id, index) != 0);
            t->n_locations++;
        }
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
        const int64_t *dims = i >= first ? p->carts[i - first].dims : pxt_dims;
        uint32_t size = t->comms[topo->comm].size;
        topo->n_ranks = size;
        topo->coords = ws_malloc_array((size_t)size * topo->n_dims, sizeof *topo->coords);
        NOMEM_IF(!topo->coords);
        uint64_t product = 1;
        for (uint32_t d = 0; d < topo->n_dims; d++)
            product *= (uint64_t)dims[d];
        for (uint32_t r = 0; r < size; r++) {
            uint32_t *c = topo->coords + (size_t)r * topo->n_dims;
            uint64_t rest = r;
            for (uint32_t d = topo->n_dims; d-- > 0;) {
                if (r < product) {
                    c[d] = (uint32_t)(rest % (uint64_t)dims[d]);
                    rest /= (uint64_t)dims[d];
                } else {
                    c[d] = WS_NONE32;
                }
            }
        }
    }

    /* exactly sized event columns (a worker thread's have no MPI records) */
    for (uint32_t l = 0; l < t->n_locations; l++) {
        static const rank_state none;
        const rank_state *st = l % s->T == 0 ? &s->st[l / s->T] : &none;
        ws_events *ev = &t->locations[l].events;
        ev->tick_scale = s->inv;
        if (ws_events_reserve_ticks(ev, s->loc_events[l]) != 0)
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
        if (s->hybrid) {
            ALLOC(thr_event, s->loc_threads[l]);
            ALLOC(thr_comm, s->loc_threads[l]);
            ALLOC(thr_model, s->loc_threads[l]);
            ALLOC(thr_a, s->loc_threads[l]);
            ALLOC(thr_b, s->loc_threads[l]);
        }
#undef ALLOC
    }
    return WS_OK;
}

#undef TABLE
#undef NOMEM_IF

