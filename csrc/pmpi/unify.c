/* Unification: the per-rank definition and event files (rawtrace.h) ->
 * one trace store with the definitions Score-P writes (program region,
 * MPI regions with paradigm MPI and source file "MPI", system tree,
 * "MPI Rank r" location groups, one "Master thread" per rank, the
 * COMM_LOCATIONS group, MPI_COMM_WORLD/SELF and every created
 * communicator, Cartesian topologies) -> written by the project's OTF2
 * writer (trace/otf2_writer.c).
 *
 * Local ids are mapped to global ones here: user regions by name,
 * communicators by the key their members agreed on.  Timestamps are
 * brought onto rank 0's clock with the offsets measured at MPI_Init and
 * MPI_Finalize (linear in between); the ClockOffset records at those
 * two points (Score-P writes them) therefore carry offset 0.
 *
 * This is the unification of one process over every rank's files, which
 * holds the events of all ranks in memory while the archive is written:
 * the unification of a run cut short, done after it.  A run that reaches
 * MPI_Finalize is unified by its ranks together (unify_mpi.c), each
 * writing its own events. */
#define _GNU_SOURCE
#include "unify.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <otf2/OTF2_Definitions.h>

#include "../trace/otf2_io.h"
#include "manifest.h"
#include "unify_int.h"

/* ---- definitions ------------------------------------------------------------- */

typedef ws_unify_builder builder;

#define NOMEM(cond)                                                          \
    do {                                                                     \
        if (cond)                                                            \
            return ws_error_nomem(b->err, "definitions");                    \
    } while (0)

static uint32_t str(builder *b, const char *s)
{
    return ws_trace_intern_string(b->t, s);
}

int ws_unify_add_region(builder *b, const char *name, const char *canonical, uint8_t role, uint8_t paradigm,
                        uint32_t file, uint32_t *out)
{
    ws_trace *t = b->t;
    NOMEM(ws_grow((void **)&t->regions, &t->cap_regions, (size_t)t->n_regions + 1, sizeof *t->regions) != 0);
    ws_region *g = &t->regions[t->n_regions];
    memset(g, 0, sizeof *g);
    g->otf2_id = t->n_regions;
    g->name = str(b, name);
    g->canonical_name = str(b, canonical);
    g->description = b->s_empty;
    g->role = role;
    g->paradigm = paradigm;
    g->flags = OTF2_REGION_FLAG_NONE;
    g->source_file = file;
    NOMEM(g->name == WS_NONE32 || g->canonical_name == WS_NONE32);
    NOMEM(ws_map64_put(&t->region_ids, g->otf2_id, t->n_regions) != 0);
    *out = t->n_regions++;
    return WS_OK;
}

int ws_unify_add_group(builder *b, uint8_t type, uint8_t paradigm, const char *name, uint64_t n, uint32_t *out)
{
    ws_trace *t = b->t;
    NOMEM(ws_grow((void **)&t->groups, &t->cap_groups, (size_t)t->n_groups + 1, sizeof *t->groups) != 0);
    ws_group *g = &t->groups[t->n_groups];
    memset(g, 0, sizeof *g);
    g->members = ws_calloc(n ? n : 1, sizeof *g->members);
    NOMEM(!g->members);
    g->otf2_id = t->n_groups;
    g->name = str(b, name);
    g->type = type;
    g->paradigm = paradigm;
    g->n_members = n;
    NOMEM(ws_map64_put(&t->group_ids, g->otf2_id, t->n_groups) != 0);
    *out = t->n_groups++;
    return WS_OK;
}

int ws_unify_add_comm(builder *b, const char *name, uint32_t group, uint32_t parent, uint32_t *out)
{
    ws_trace *t = b->t;
    NOMEM(ws_grow((void **)&t->comms, &t->cap_comms, (size_t)t->n_comms + 1, sizeof *t->comms) != 0);
    ws_comm *c = &t->comms[t->n_comms];
    memset(c, 0, sizeof *c);
    c->otf2_id = t->n_comms;
    c->name = str(b, name);
    c->group = group;
    c->parent = parent;
    NOMEM(c->name == WS_NONE32);
    NOMEM(ws_map64_put(&t->comm_ids, c->otf2_id, t->n_comms) != 0);
    *out = t->n_comms++;
    return WS_OK;
}

static int region_kind(const char *kind, uint8_t *role, uint8_t *paradigm)
{
    if (strncmp(kind, "mpi:", 4) == 0) {
        *role = (uint8_t)atoi(kind + 4);
        *paradigm = OTF2_PARADIGM_MPI;
    } else if (strcmp(kind, "program") == 0) {
        *role = OTF2_REGION_ROLE_ARTIFICIAL;
        *paradigm = OTF2_PARADIGM_MEASUREMENT_SYSTEM;
    } else {
        *role = OTF2_REGION_ROLE_FUNCTION;
        *paradigm = OTF2_PARADIGM_USER;
    }
    return 0;
}

int ws_unify_definitions(builder *b, ws_rankfile *ranks, uint32_t n)
{
    ws_trace *t = b->t;
    int rc;
    t->clock.resolution = 1000000000ull;
    t->clock.realtime = OTF2_UNDEFINED_TIMESTAMP;
    t->clock.defined = 1;
    t->has_mpi_paradigm = 1;
    b->s_empty = str(b, "");
    b->s_mpi = str(b, "MPI");
    NOMEM(b->s_empty == WS_NONE32 || b->s_mpi == WS_NONE32);

    /* regions: by (kind, name), in the order rank 0 defined them */
    for (uint32_t r = 0; r < n; r++) {
        ws_rankfile *rf = &ranks[r];
        uint32_t max_id = 0;
        for (uint32_t i = 0; i < rf->n_regions; i++)
            if (rf->regions[i].id + 1 > max_id)
                max_id = rf->regions[i].id + 1;
        rf->region_map = malloc((max_id ? max_id : 1) * sizeof *rf->region_map);
        NOMEM(!rf->region_map);
        rf->region_map_n = max_id;
        for (uint32_t i = 0; i < max_id; i++)
            rf->region_map[i] = WS_NONE32;
        for (uint32_t i = 0; i < rf->n_regions; i++) {
            ws_local_region *g = &rf->regions[i];
            uint8_t role, paradigm;
            region_kind(g->kind, &role, &paradigm);
            uint32_t found = WS_NONE32;
            for (uint32_t k = 0; k < t->n_regions && found == WS_NONE32; k++)
                if (t->regions[k].paradigm == paradigm &&
                    strcmp(ws_trace_string(t, t->regions[k].name), g->name) == 0)
                    found = k;
            if (found == WS_NONE32 &&
                (rc = ws_unify_add_region(b, g->name, g->canonical, role, paradigm,
                                 paradigm == OTF2_PARADIGM_MPI ? b->s_mpi : WS_NONE32, &found)))
                return rc;
            rf->region_map[g->id] = found;
        }
    }

    /* system tree: machine -> one node per host */
    NOMEM(ws_grow((void **)&t->system_nodes, &t->cap_system_nodes, (size_t)n + 1, sizeof *t->system_nodes) != 0);
    t->system_nodes[0] = (ws_system_node){0, str(b, "Linux"), str(b, "machine"), WS_NONE32};
    t->n_system_nodes = 1;
    NOMEM(ws_map64_put(&t->system_node_ids, 0, 0) != 0);
    NOMEM(ws_grow((void **)&t->location_groups, &t->cap_location_groups, n, sizeof *t->location_groups) != 0);
    NOMEM(ws_grow((void **)&t->locations, &t->cap_locations, n, sizeof *t->locations) != 0);
    uint32_t s_thread = str(b, "Master thread"), s_node = str(b, "node");
    for (uint32_t r = 0; r < n; r++) {
        uint32_t host = str(b, ranks[r].host[0] ? ranks[r].host : "unknown"), node = WS_NONE32;
        NOMEM(host == WS_NONE32);
        for (uint32_t k = 1; k < t->n_system_nodes; k++)
            if (t->system_nodes[k].name == host)
                node = k;
        if (node == WS_NONE32) {
            node = t->n_system_nodes++;
            t->system_nodes[node] = (ws_system_node){node, host, s_node, 0};
            NOMEM(ws_map64_put(&t->system_node_ids, node, node) != 0);
        }
        char name[64];
        snprintf(name, sizeof name, "MPI Rank %u", (unsigned)r);
        t->location_groups[r] = (ws_location_group){r, str(b, name), OTF2_LOCATION_GROUP_TYPE_PROCESS, node};
        NOMEM(ws_map64_put(&t->location_group_ids, r, r) != 0);
        ws_location *l = &t->locations[r];
        memset(l, 0, sizeof *l);
        l->otf2_id = r;
        l->name = s_thread;
        l->type = OTF2_LOCATION_TYPE_CPU_THREAD;
        l->group = r;
        l->rank = r;
        NOMEM(ws_map64_put(&t->location_ids, r, r) != 0);
    }
    t->n_location_groups = n;
    t->n_locations = n;

    /* groups and communicators */
    uint32_t g_locs, g_world, g_self, c_world, c_self;
    if ((rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI, "", n, &g_locs)) ||
        (rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, "", n, &g_world)) ||
        (rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_SELF, OTF2_PARADIGM_MPI, "", 0, &g_self)))
        return rc;
    for (uint32_t r = 0; r < n; r++)
        t->groups[g_locs].members[r] = t->groups[g_world].members[r] = r;
    if ((rc = ws_unify_add_comm(b, "MPI_COMM_WORLD", g_world, WS_NONE32, &c_world)) ||
        (rc = ws_unify_add_comm(b, "MPI_COMM_SELF", g_self, WS_NONE32, &c_self)))
        return rc;
    for (uint32_t r = 0; r < n; r++) {
        for (uint32_t i = 0; i < ranks[r].n_comms; i++) {
            ws_local_comm *c = &ranks[r].comms[i];
            if (strcmp(c->key, "world") == 0) {
                c->global = c_world;
                continue;
            }
            if (strcmp(c->key, "self") == 0) {
                c->global = c_self;
                continue;
            }
            c->global = WS_NONE32;
            for (uint32_t q = 0; q < r && c->global == WS_NONE32; q++)
                for (uint32_t j = 0; j < ranks[q].n_comms; j++)
                    if (strcmp(ranks[q].comms[j].key, c->key) == 0) {
                        c->global = ranks[q].comms[j].global;
                        break;
                    }
            if (c->global != WS_NONE32)
                continue;
            uint32_t g;
            if ((rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, "", c->size, &g)))
                return rc;
            const char *s = c->members;
            for (uint32_t k = 0; k < c->size && *s; k++) {
                t->groups[g].members[k] = strtoull(s, (char **)&s, 10);
                if (*s == ',')
                    s++;
            }
            uint32_t parent = c_world;
            for (uint32_t j = 0; j < i; j++)
                if (ranks[r].comms[j].id == c->parent)
                    parent = ranks[r].comms[j].global;
            if ((rc = ws_unify_add_comm(b, c->name, g, parent, &c->global)))
                return rc;
        }
    }

    /* Cartesian topologies: one per communicator, coordinates from each rank */
    for (uint32_t r = 0; r < n; r++) {
        for (uint32_t i = 0; i < ranks[r].n_carts; i++) {
            ws_local_cart *k = &ranks[r].carts[i];
            uint32_t comm = WS_NONE32;
            for (uint32_t j = 0; j < ranks[r].n_comms; j++)
                if (ranks[r].comms[j].id == k->comm)
                    comm = ranks[r].comms[j].global;
            if (comm == WS_NONE32 || k->ndims == 0)
                continue;
            ws_cart_topology *topo = NULL;
            for (uint32_t j = 0; j < t->n_cart_topologies; j++)
                if (t->cart_topologies[j].comm == comm)
                    topo = &t->cart_topologies[j];
            uint32_t comm_size = (uint32_t)t->groups[t->comms[comm].group].n_members;
            if (!topo) {
                NOMEM(ws_grow((void **)&t->cart_topologies, &t->cap_cart_topologies,
                              (size_t)t->n_cart_topologies + 1, sizeof *t->cart_topologies) != 0);
                NOMEM(ws_grow((void **)&t->cart_dims, &t->cap_cart_dims, (size_t)t->n_cart_dims + k->ndims,
                              sizeof *t->cart_dims) != 0);
                uint32_t ti = t->n_cart_topologies;
                topo = &t->cart_topologies[ti];
                memset(topo, 0, sizeof *topo);
                topo->otf2_id = ti;
                char name[300];
                snprintf(name, sizeof name, "Topology of %s", ws_trace_string(t, t->comms[comm].name));
                topo->name = str(b, name);
                topo->comm = comm;
                topo->n_dims = k->ndims;
                topo->dims = ws_malloc_array(k->ndims, sizeof *topo->dims);
                topo->n_ranks = comm_size;
                topo->coords = ws_malloc_array((size_t)comm_size * k->ndims, sizeof *topo->coords);
                NOMEM(!topo->dims || !topo->coords);
                for (size_t q = 0; q < (size_t)comm_size * k->ndims; q++)
                    topo->coords[q] = WS_NONE32;
                NOMEM(ws_map64_put(&t->cart_topology_ids, ti, ti) != 0);
                t->n_cart_topologies++;
                for (uint32_t d = 0; d < k->ndims; d++) {
                    snprintf(name, sizeof name, "dim %u", (unsigned)d);
                    ws_cart_dim *dim = &t->cart_dims[t->n_cart_dims];
                    dim->name = str(b, name);
                    dim->size = k->dims[d];
                    dim->periodic = k->periods[d] != 0;
                    topo->dims[d] = t->n_cart_dims;
                    NOMEM(ws_map64_put(&t->cart_dim_ids, t->n_cart_dims, t->n_cart_dims) != 0);
                    t->n_cart_dims++;
                }
            }
            if (k->rank < topo->n_ranks && k->ndims == topo->n_dims)
                for (uint32_t d = 0; d < k->ndims; d++)
                    topo->coords[(size_t)k->rank * k->ndims + d] = k->coords[d];
        }
    }
    return ws_unify_threads(b, ranks, n);
}

/* ---- clock offsets ------------------------------------------------------------ */

/* One ClockOffset record per location for each clock measurement of its
 * rank (MPI_Init, MPI_Finalize), at the time of the measurement, as
 * Score-P writes them.  The events are already on rank 0's clock (the
 * measured offsets were applied above, linearly in between), so the offset
 * left to apply to the archive's timestamps is 0: a reader that applies
 * ClockOffset records (Scalasca) does not shift them a second time, and
 * waitscope's reader, which ignores them, reads the same times. */
int ws_unify_clock_offsets(ws_trace *t, const ws_rankfile *ranks, uint32_t size, double origin, ws_error *err)
{
    uint32_t n = 0;
    for (uint32_t r = 0; r < size; r++)
        n += ranks[r].n_clocks;
    if (n == 0)
        return WS_OK;
    t->clock_offsets = calloc(n, sizeof *t->clock_offsets);
    if (!t->clock_offsets)
        return ws_error_nomem(err, "clock offsets");
    for (uint32_t r = 0; r < size; r++)
        for (uint32_t i = 0; i < ranks[r].n_clocks; i++) {
            double global = ws_rankfile_global_time(&ranks[r], ranks[r].clock_local[i]);
            t->clock_offsets[t->n_clock_offsets++] = (ws_clock_offset){r, (global - origin) * 1e-9, 0, 0.0};
        }
    return WS_OK;
}

/* ---- events ------------------------------------------------------------------- */

/* The raw events of one file (none if it is missing); a torn last record
 * and the zeroed tail of a dying process's mapped window are dropped. */
static int load_raw(const char *path, ws_raw_event **out, uint64_t *n_out, ws_error *err)
{
    *out = NULL;
    *n_out = 0;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f)
        return WS_OK;
    uint64_t n = 0;
    struct stat st;
    if (fstat(fileno(f), &st) == 0)
        n = (uint64_t)st.st_size / sizeof(ws_raw_event);
    ws_raw_event *raw = malloc((n ? n : 1) * sizeof *raw);
    if (!raw) {
        fclose(f);
        return ws_error_nomem(err, "events");
    }
    n = fread(raw, sizeof *raw, n, f);
    fclose(f);
    while (n > 0 && raw[n - 1].kind == 0)
        n--;
    *out = raw;
    *n_out = n;
    return WS_OK;
}

static int is_thread_record(uint8_t kind)
{
    return kind == WS_EV_THREAD_FORK || kind == WS_EV_THREAD_JOIN || kind == WS_EV_THREAD_TEAM_BEGIN ||
           kind == WS_EV_THREAD_TEAM_END || kind == WS_EV_THREAD_ACQUIRE_LOCK || kind == WS_EV_THREAD_RELEASE_LOCK;
}

static int alloc_columns(ws_events *ev, uint64_t cap, uint64_t cap_thr)
{
    if (ws_events_reserve(ev, cap) != 0)
        return -1;
#define COLUMN(field, count)                                                  \
    do {                                                                      \
        ev->field = ws_malloc_array((count) ? (count) : 1, sizeof *ev->field); \
        if (!ev->field)                                                       \
            return -1;                                                        \
    } while (0)
    COLUMN(msg_event, cap);
    COLUMN(msg_peer, cap);
    COLUMN(msg_comm, cap);
    COLUMN(msg_tag, cap);
    COLUMN(msg_bytes, cap);
    COLUMN(req_event, cap);
    COLUMN(req_id, cap);
    COLUMN(coll_event, cap);
    COLUMN(coll_comm, cap);
    COLUMN(coll_root, cap);
    COLUMN(coll_op, cap);
    COLUMN(coll_sent, cap);
    COLUMN(coll_received, cap);
    if (cap_thr) {
        COLUMN(thr_event, cap_thr);
        COLUMN(thr_comm, cap_thr);
        COLUMN(thr_model, cap_thr);
        COLUMN(thr_a, cap_thr);
        COLUMN(thr_b, cap_thr);
    }
#undef COLUMN
    return 0;
}

static void thread_row(ws_events *ev, uint64_t k, uint32_t comm, uint8_t model, uint64_t a, uint64_t b)
{
    uint64_t i = ev->n_threads++;
    ev->thr_event[i] = (uint32_t)k;
    ev->thr_comm[i] = comm;
    ev->thr_model[i] = model;
    ev->thr_a[i] = a;
    ev->thr_b[i] = b;
    ev->ref[k] = (uint32_t)i;
}

int ws_unify_columns(ws_events *ev, uint64_t cap, uint64_t cap_thr)
{
    return alloc_columns(ev, cap, cap_thr);
}

/* The raw events `raw` of the converter's location, appended to `ev`
 * (room for c->cap events, c->cap_thr thread records); `close`: they are
 * the last, so what the location left open is closed at its last event (a
 * rank cut short), as far as the room goes. */
int ws_unify_convert(ws_unify_conv *c, const ws_raw_event *raw, uint64_t n, ws_events *ev, int close, ws_error *err)
{
    ws_trace *t = c->t;
    const ws_rankfile *rf = c->rf;
    int rc = WS_OK;
    for (uint64_t i = 0; i < n && rc == WS_OK; i++) {
        const ws_raw_event *e = &raw[i];
        double time = (ws_rankfile_global_time(rf, e->time) - c->origin) * 1e-9;
        if (time < c->last)
            time = c->last; /* the interpolated offset must not reorder events */
        c->last = time;
        uint64_t k = ev->n;
        uint32_t comm = WS_NONE32;
        if (e->kind == WS_EV_SEND || e->kind == WS_EV_RECV || e->kind == WS_EV_ISEND || e->kind == WS_EV_IRECV ||
            e->kind == WS_EV_COLL_END) {
            for (uint32_t j = 0; j < rf->n_comms; j++)
                if (rf->comms[j].id == e->comm)
                    comm = rf->comms[j].global;
            if (comm == WS_NONE32)
                continue;
        }
        switch (e->kind) {
        case WS_EV_ENTER: {
            uint32_t region = WS_NONE32;
            if (e->a >= WS_RAW_FIRST_OMP_REGION) {
                uint32_t j = e->a - WS_RAW_FIRST_OMP_REGION;
                if (j < rf->n_omp_regions)
                    region = rf->omp_regions[j].global;
            } else if (e->a < rf->region_map_n) {
                region = rf->region_map[e->a];
            }
            if (region == WS_NONE32)
                continue;
            if (ws_grow((void **)&c->stack, &c->cap_stack, (size_t)c->depth + 1, sizeof *c->stack) != 0)
                return ws_error_nomem(err, "call paths");
            uint32_t cp = ws_callpath_child(&t->callpaths, c->depth ? c->stack[c->depth - 1] : WS_NONE32, region);
            if (cp == WS_NONE32)
                rc = ws_error_nomem(err, "call paths");
            c->stack[c->depth++] = cp;
            ev->ref[k] = cp;
            break;
        }
        case WS_EV_LEAVE:
            if (c->depth == 0)
                continue;
            ev->ref[k] = c->stack[--c->depth];
            break;
        case WS_EV_SEND:
        case WS_EV_RECV:
        case WS_EV_ISEND:
        case WS_EV_IRECV: {
            uint64_t m = ev->n_messages++;
            ev->msg_event[m] = (uint32_t)k;
            ev->msg_peer[m] = e->a;
            ev->msg_comm[m] = comm;
            ev->msg_tag[m] = e->tag;
            ev->msg_bytes[m] = e->bytes;
            ev->ref[k] = (uint32_t)m;
            if (e->kind == WS_EV_ISEND || e->kind == WS_EV_IRECV) {
                uint64_t q = ev->n_requests++;
                ev->req_event[q] = (uint32_t)k;
                ev->req_id[q] = e->req;
            }
            break;
        }
        case WS_EV_ISEND_COMPLETE:
        case WS_EV_IRECV_REQUEST: {
            uint64_t q = ev->n_requests++;
            ev->req_event[q] = (uint32_t)k;
            ev->req_id[q] = e->req;
            ev->ref[k] = (uint32_t)q;
            break;
        }
        case WS_EV_COLL_BEGIN:
            ev->ref[k] = WS_NONE32;
            break;
        case WS_EV_COLL_END: {
            uint64_t m = ev->n_collectives++;
            ev->coll_event[m] = (uint32_t)k;
            ev->coll_comm[m] = comm;
            ev->coll_root[m] = e->a;
            ev->coll_op[m] = e->op;
            ev->coll_sent[m] = e->bytes;
            ev->coll_received[m] = e->req;
            ev->ref[k] = (uint32_t)m;
            break;
        }
        case WS_EV_PROGRAM_BEGIN:
        case WS_EV_PROGRAM_END:
            ev->ref[k] = WS_NONE32;
            break;
        case WS_EV_THREAD_FORK:
        case WS_EV_THREAD_JOIN:
            if (e->kind == WS_EV_THREAD_JOIN && c->forks == 0)
                continue;
            c->forks += e->kind == WS_EV_THREAD_FORK ? 1 : (uint32_t)-1;
            thread_row(ev, k, WS_NONE32, OTF2_PARADIGM_OPENMP, e->kind == WS_EV_THREAD_FORK ? e->a : 0, 0);
            break;
        case WS_EV_THREAD_TEAM_BEGIN:
        case WS_EV_THREAD_TEAM_END: {
            uint64_t m;
            if (!c->teams || !ws_map64_get(c->teams, e->req, &m) ||
                (e->kind == WS_EV_THREAD_TEAM_BEGIN) != (c->open_team == WS_NONE32) ||
                (e->kind == WS_EV_THREAD_TEAM_END && c->open_team != (uint32_t)m))
                continue;
            c->open_team = e->kind == WS_EV_THREAD_TEAM_BEGIN ? (uint32_t)m : WS_NONE32;
            thread_row(ev, k, (uint32_t)m, 0, 0, 0);
            break;
        }
        case WS_EV_THREAD_ACQUIRE_LOCK:
        case WS_EV_THREAD_RELEASE_LOCK:
            thread_row(ev, k, WS_NONE32, OTF2_PARADIGM_OPENMP, e->a, e->bytes);
            break;
        default:
            continue;
        }
        ev->time[k] = time;
        ev->kind[k] = e->kind;
        ev->n++;
    }
    if (!close || rc != WS_OK)
        return rc;
    /* cut short: close what it left open at its last event */
    while (c->depth > 0 && ev->n < c->cap) {
        uint64_t k = ev->n++;
        ev->time[k] = c->last;
        ev->kind[k] = WS_EV_LEAVE;
        ev->ref[k] = c->stack[--c->depth];
    }
    if (c->open_team != WS_NONE32 && ev->n < c->cap && ev->n_threads < c->cap_thr) {
        uint64_t k = ev->n++;
        ev->time[k] = c->last;
        ev->kind[k] = WS_EV_THREAD_TEAM_END;
        thread_row(ev, k, c->open_team, 0, 0, 0);
        c->open_team = WS_NONE32;
    }
    if (c->forks > 0 && ev->n < c->cap && ev->n_threads < c->cap_thr) {
        uint64_t k = ev->n++;
        ev->time[k] = c->last;
        ev->kind[k] = WS_EV_THREAD_JOIN;
        thread_row(ev, k, WS_NONE32, OTF2_PARADIGM_OPENMP, 0, 0);
        c->forks = 0;
    }
    return rc;
}

/* The raw events of location `loc` (of rank file `rf`) into the store;
 * `teams`: the process's parallel regions' communicators (unify_threads.c). */
static int convert_events(ws_trace *t, ws_rankfile *rf, const ws_raw_event *raw, uint64_t n, uint32_t loc,
                          double origin, const ws_map64 *teams, ws_error *err)
{
    ws_location *l = &t->locations[loc];
    ws_events *ev = &l->events;
    uint64_t n_thr = 0;
    for (uint64_t i = 0; i < n; i++)
        n_thr += is_thread_record(raw[i].kind);
    /* room for the records that close a location cut short */
    ws_unify_conv c = ws_unify_conv_init(t, rf, teams, origin);
    c.cap = n + 258;
    c.cap_thr = n_thr ? n_thr + 2 : 0;
    if (alloc_columns(ev, c.cap, c.cap_thr) != 0)
        return ws_error_nomem(err, "events");
    int rc = ws_unify_convert(&c, raw, n, ev, 1, err);
    free(c.stack);
    l->loaded = 1;
    l->n_events_defined = ev->n;
    t->n_events += ev->n;
    return rc;
}

/* Rank r's locations: its MPI thread's events and its OpenMP threads'. */
static int read_rank(builder *b, ws_rankfile *rf, uint32_t r, double origin, double *end)
{
    uint32_t n_locs = 1 + rf->n_threads;
    ws_raw_event **raws = ws_calloc(n_locs, sizeof *raws);
    uint64_t *ns = ws_calloc(n_locs, sizeof *ns);
    uint32_t *locs = ws_malloc_array(n_locs, sizeof *locs);
    ws_map64 teams;
    ws_map64_init(&teams);
    int rc = raws && ns && locs ? WS_OK : ws_error_nomem(b->err, "events");
    for (uint32_t i = 0; i < n_locs && rc == WS_OK; i++) {
        char *path = i == 0 ? rf->evt : ws_rank_thread_path(rf, rf->threads[i - 1]);
        locs[i] = i == 0 ? r : b->thread_loc[r][i - 1];
        rc = path ? load_raw(path, &raws[i], &ns[i], b->err) : ws_error_nomem(b->err, "path");
        if (i > 0)
            free(path);
    }
    if (rc == WS_OK)
        rc = ws_unify_teams(b, (const ws_raw_event *const *)raws, ns, locs, n_locs, &teams);
    for (uint32_t i = 0; i < n_locs && rc == WS_OK; i++) {
        rc = convert_events(b->t, rf, raws[i], ns[i], locs[i], origin, &teams, b->err);
        const ws_events *ev = &b->t->locations[locs[i]].events;
        if (ev->n && ev->time[ev->n - 1] > *end)
            *end = ev->time[ev->n - 1];
    }
    for (uint32_t i = 0; raws && i < n_locs; i++)
        free(raws[i]);
    free(raws);
    free(ns);
    free(locs);
    ws_map64_free(&teams);
    return rc;
}

/* ---- driver -------------------------------------------------------------------- */

static int by_rank(const void *a, const void *b)
{
    return ((const ws_rankfile *)a)->rank - ((const ws_rankfile *)b)->rank;
}

int ws_pmpi_unify(const char *dir, uint32_t *n_cut_short, ws_error *err)
{
    if (!dir || !*dir)
        return ws_error_set(err, WS_ERR_ARGUMENT, "no trace directory given");
    char *raw_dir = ws_rank_path(dir, WS_RAW_SUBDIR);
    if (!raw_dir)
        return ws_error_nomem(err, "path");
    DIR *d = opendir(raw_dir);
    if (!d) {
        int rc = ws_error_set(err, WS_ERR_IO, "%s: no per-rank trace files (%s)", raw_dir, strerror(errno));
        free(raw_dir);
        return rc;
    }
    ws_rankfile *files = NULL;
    uint32_t n_files = 0;
    int rc = WS_OK;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL && rc == WS_OK) {
        size_t len = strlen(entry->d_name);
        if (len < 6 || strcmp(entry->d_name + len - 5, ".defs") != 0)
            continue;
        ws_rankfile *g = realloc(files, (n_files + 1) * sizeof *files);
        if (!g) {
            rc = ws_error_nomem(err, "definitions");
            break;
        }
        files = g;
        ws_rankfile *r = &files[n_files++];
        memset(r, 0, sizeof *r);
        r->defs = ws_rank_path(raw_dir, entry->d_name);
        r->evt = r->defs ? strdup(r->defs) : NULL;
        if (!r->defs || !r->evt) {
            rc = ws_error_nomem(err, "path");
            break;
        }
        strcpy(r->evt + strlen(r->evt) - 5, ".evt");
        rc = ws_rankfile_read(r, err);
    }
    closedir(d);
    if (rc == WS_OK && n_files == 0)
        rc = ws_error_set(err, WS_ERR_IO, "%s: no per-rank trace files", raw_dir);
    uint32_t size = 0;
    if (rc == WS_OK) {
        qsort(files, n_files, sizeof *files, by_rank);
        size = (uint32_t)files[0].size;
        for (uint32_t i = 0; i < n_files && rc == WS_OK; i++)
            if (files[i].size != (int)size || files[i].rank < 0 || files[i].rank >= (int)size ||
                (i && files[i].rank == files[i - 1].rank))
                rc = ws_error_set(err, WS_ERR_FORMAT,
                                  "%s: the per-rank files do not belong to one run (rank %d of %d); remove the "
                                  "directory before tracing again",
                                  raw_dir, files[i].rank, files[i].size);
    }
    /* ranks that left no files at all get an empty placeholder */
    ws_rankfile *ranks = NULL;
    if (rc == WS_OK) {
        ranks = calloc(size, sizeof *ranks);
        if (!ranks)
            rc = ws_error_nomem(err, "ranks");
    }
    if (rc == WS_OK) {
        for (uint32_t i = 0; i < n_files; i++) {
            ranks[files[i].rank] = files[i];
            memset(&files[i], 0, sizeof files[i]);
        }
        for (uint32_t r = 0; r < size; r++)
            if (!ranks[r].defs) {
                ranks[r].rank = (int)r;
                ranks[r].size = (int)size;
                ranks[r].evt = strdup("/nonexistent");
            }
    }

    ws_trace *t = NULL;
    char *cut = NULL;
    if (rc == WS_OK) {
        t = ws_trace_new();
        if (!t)
            rc = ws_error_nomem(err, "trace");
    }
    builder b;
    memset(&b, 0, sizeof b);
    b.t = t;
    b.err = err;
    if (rc == WS_OK)
        rc = ws_unify_definitions(&b, ranks, size);
    if (rc == WS_OK) {
        /* origin: the earliest global timestamp */
        double origin = INFINITY, end = 0.0;
        for (uint32_t r = 0; r < size; r++)
            origin = fmin(origin, ws_rankfile_first_time(&ranks[r]));
        if (!isfinite(origin))
            origin = 0.0;
        origin = floor(origin);
        t->clock.offset = (uint64_t)origin;
        for (uint32_t r = 0; r < size && rc == WS_OK; r++)
            rc = read_rank(&b, &ranks[r], r, origin, &end);
        t->clock.length = (uint64_t)llround(end * 1e9) + 1;
        if (rc == WS_OK)
            rc = ws_unify_clock_offsets(t, ranks, size, origin, err);
    }
    uint32_t n_cut = 0;
    if (rc == WS_OK) {
        size_t len = 0;
        cut = calloc((size_t)size * 12 + 1, 1);
        if (!cut)
            rc = ws_error_nomem(err, "ranks");
        for (uint32_t r = 0; r < size && cut; r++)
            if (!ranks[r].complete) {
                len += (size_t)sprintf(cut + len, "%s%u", n_cut ? "," : "", (unsigned)r);
                n_cut++;
            }
        if (cut && n_cut)
            t->cut_short_ranks = cut, cut = NULL;
    }
    if (rc == WS_OK) {
        char *anchor = ws_rank_path(dir, "traces.otf2");
        if (!anchor)
            rc = ws_error_nomem(err, "path");
        else
            rc = ws_otf2_write(t, anchor, NULL, err);
        free(anchor);
    }
    if (rc == WS_OK) {
        uint64_t *counts = calloc(t->n_locations ? t->n_locations : 1, sizeof *counts);
        for (uint32_t i = 0; counts && i < t->n_locations; i++)
            counts[i] = t->locations[i].loaded ? t->locations[i].events.n : 0;
        ws_error merr;
        memset(&merr, 0, sizeof merr);
        if (counts)
            ws_manifest_write(dir, t, ranks, size, counts,
                              n_cut ? "assembled by one process after the run, from the per-rank files"
                                    : "written by one process from every rank's files",
                              &merr);
        free(counts);
    }
    if (rc == WS_OK) {
        /* the archive is complete: the per-rank files are no longer needed */
        for (uint32_t r = 0; r < size; r++) {
            for (uint32_t i = 0; i < ranks[r].n_threads; i++) {
                char *path = ws_rank_thread_path(&ranks[r], ranks[r].threads[i]);
                if (path)
                    unlink(path);
                free(path);
            }
            if (ranks[r].defs)
                unlink(ranks[r].defs);
            if (ranks[r].evt)
                unlink(ranks[r].evt);
        }
        rmdir(raw_dir);
        if (n_cut_short)
            *n_cut_short = n_cut;
    }
    free(cut);
    ws_unify_threads_free(&b, size);
    ws_trace_free(t);
    for (uint32_t i = 0; i < n_files; i++)
        ws_rankfile_free(&files[i]);
    free(files);
    if (ranks)
        for (uint32_t r = 0; r < size; r++)
            ws_rankfile_free(&ranks[r]);
    free(ranks);
    free(raw_dir);
    return rc;
}
