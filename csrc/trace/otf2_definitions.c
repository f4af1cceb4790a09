/* OTF2 archive -> trace store, part 1: the anchor and the global
 * definitions (ws_otf2_open), with the OTF2 C reader API. */
#include "otf2_io.h"
#include "otf2_check.h"
#include "otf2_reader_int.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <otf2/otf2.h>

int ws_otf2_is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static char *join_path(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = ws_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* Resolves a user path to the anchor file path. */
int ws_otf2_resolve_anchor(const char *path, char **anchor, ws_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return ws_error_set(err, WS_ERR_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        char *candidate = join_path(path, "traces.otf2");
        if (!candidate)
            return ws_error_nomem(err, "path");
        if (!ws_otf2_is_regular_file(candidate)) {
            free(candidate);
            return ws_error_set(err, WS_ERR_IO,
                                "%s: directory holds no OTF2 anchor file 'traces.otf2'", path);
        }
        *anchor = candidate;
        return WS_OK;
    }
    *anchor = ws_strdup(path);
    return *anchor ? WS_OK : ws_error_nomem(err, "path");
}

/* ---- global definitions ------------------------------------------------ */

typedef struct def_ctx {
    ws_trace *t;
    ws_error *err;
    int failed;
    uint64_t clock_count;
} def_ctx;

#define DEF_FAIL(ctx, ...)                                        \
    do {                                                          \
        ws_error_set((ctx)->err, WS_ERR_FORMAT, __VA_ARGS__);      \
        (ctx)->failed = 1;                                        \
        return OTF2_CALLBACK_INTERRUPT;                           \
    } while (0)

#define DEF_NOMEM(ctx, what)                                      \
    do {                                                          \
        ws_error_nomem((ctx)->err, what);                          \
        (ctx)->failed = 1;                                        \
        return OTF2_CALLBACK_INTERRUPT;                           \
    } while (0)

static OTF2_CallbackCode on_clock(void *user, uint64_t resolution, uint64_t offset, uint64_t length,
                                  uint64_t realtime)
{
    def_ctx *c = user;
    c->t->clock.resolution = resolution;
    c->t->clock.offset = offset;
    c->t->clock.length = length;
    c->t->clock.realtime = realtime;
    c->t->clock.defined = 1;
    c->clock_count++;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_string(void *user, OTF2_StringRef self, const char *s)
{
    def_ctx *c = user;
    if (ws_map64_get(&c->t->string_ids, self, NULL))
        DEF_FAIL(c, "string %u is defined twice", (unsigned)self);
    if (ws_trace_add_string(c->t, self, s) == WS_NONE32)
        DEF_NOMEM(c, "strings");
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_region(void *user, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef canonical,
                                   OTF2_StringRef description, OTF2_RegionRole role, OTF2_Paradigm paradigm,
                                   OTF2_RegionFlag flags, OTF2_StringRef file, uint32_t begin, uint32_t end)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    if (ws_map64_get(&t->region_ids, self, NULL))
        DEF_FAIL(c, "region %u is defined twice", (unsigned)self);
    if (ws_grow((void **)&t->regions, &t->cap_regions, (size_t)t->n_regions + 1, sizeof *t->regions) != 0 ||
        ws_map64_put(&t->region_ids, self, t->n_regions) != 0)
        DEF_NOMEM(c, "regions");
    ws_region *r = &t->regions[t->n_regions++];
    r->otf2_id = self;
    /* string references hold raw OTF2 ids until finish_definitions() */
    r->name = name;
    r->canonical_name = canonical;
    r->description = description;
    r->role = role;
    r->paradigm = paradigm;
    r->flags = flags;
    r->source_file = file;
    r->begin_line = begin;
    r->end_line = end;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_group(void *user, OTF2_GroupRef self, OTF2_StringRef name, OTF2_GroupType type,
                                  OTF2_Paradigm paradigm, OTF2_GroupFlag flags, uint32_t n, const uint64_t *members)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    if (ws_map64_get(&t->group_ids, self, NULL))
        DEF_FAIL(c, "group %u is defined twice", (unsigned)self);
    if (ws_grow((void **)&t->groups, &t->cap_groups, (size_t)t->n_groups + 1, sizeof *t->groups) != 0 ||
        ws_map64_put(&t->group_ids, self, t->n_groups) != 0)
        DEF_NOMEM(c, "groups");
    ws_group *g = &t->groups[t->n_groups];
    memset(g, 0, sizeof *g);
    g->members = ws_malloc_array(n ? n : 1, sizeof *g->members);
    if (!g->members)
        DEF_NOMEM(c, "group members");
    if (n)
        memcpy(g->members, members, (size_t)n * sizeof *members);
    g->otf2_id = self;
    g->name = name;
    g->type = type;
    g->paradigm = paradigm;
    g->flags = flags;
    g->n_members = n;
    t->n_groups++;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_comm(void *user, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group,
                                 OTF2_CommRef parent, OTF2_CommFlag flags)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    (void)flags;
    if (ws_map64_get(&t->comm_ids, self, NULL))
        DEF_FAIL(c, "communicator %u is defined twice", (unsigned)self);
    if (ws_grow((void **)&t->comms, &t->cap_comms, (size_t)t->n_comms + 1, sizeof *t->comms) != 0 ||
        ws_map64_put(&t->comm_ids, self, t->n_comms) != 0)
        DEF_NOMEM(c, "communicators");
    ws_comm *m = &t->comms[t->n_comms++];
    memset(m, 0, sizeof *m);
    m->otf2_id = self;
    m->name = name;
    m->group = group;
    m->parent = parent;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_system_node(void *user, OTF2_SystemTreeNodeRef self, OTF2_StringRef name,
                                        OTF2_StringRef class_name, OTF2_SystemTreeNodeRef parent)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    if (ws_map64_get(&t->system_node_ids, self, NULL))
        DEF_FAIL(c, "system tree node %u is defined twice", (unsigned)self);
    if (ws_grow((void **)&t->system_nodes, &t->cap_system_nodes, (size_t)t->n_system_nodes + 1,
                sizeof *t->system_nodes) != 0 ||
        ws_map64_put(&t->system_node_ids, self, t->n_system_nodes) != 0)
        DEF_NOMEM(c, "system tree");
    ws_system_node *s = &t->system_nodes[t->n_system_nodes++];
    s->otf2_id = self;
    s->name = name;
    s->class_name = class_name;
    s->parent = parent;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_location_group(void *user, OTF2_LocationGroupRef self, OTF2_StringRef name,
                                           OTF2_LocationGroupType type, OTF2_SystemTreeNodeRef parent,
                                           OTF2_LocationGroupRef creator)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    (void)creator;
    if (ws_map64_get(&t->location_group_ids, self, NULL))
        DEF_FAIL(c, "location group %u is defined twice", (unsigned)self);
    if (ws_grow((void **)&t->location_groups, &t->cap_location_groups, (size_t)t->n_location_groups + 1,
                sizeof *t->location_groups) != 0 ||
        ws_map64_put(&t->location_group_ids, self, t->n_location_groups) != 0)
        DEF_NOMEM(c, "location groups");
    ws_location_group *g = &t->location_groups[t->n_location_groups++];
    g->otf2_id = self;
    g->name = name;
    g->type = type;
    g->system_node = parent;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_location(void *user, OTF2_LocationRef self, OTF2_StringRef name, OTF2_LocationType type,
                                     uint64_t n_events, OTF2_LocationGroupRef group)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    if (ws_map64_get(&t->location_ids, self, NULL))
        DEF_FAIL(c, "location %llu is defined twice", (unsigned long long)self);
    if (t->n_locations >= WS_NONE32 - 1)
        DEF_FAIL(c, "too many locations");
    if (ws_grow((void **)&t->locations, &t->cap_locations, (size_t)t->n_locations + 1, sizeof *t->locations) != 0 ||
        ws_map64_put(&t->location_ids, self, t->n_locations) != 0)
        DEF_NOMEM(c, "locations");
    ws_location *l = &t->locations[t->n_locations++];
    memset(l, 0, sizeof *l);
    l->otf2_id = self;
    l->name = name;
    l->type = type;
    l->n_events_defined = n_events;
    l->group = group;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_paradigm(void *user, OTF2_Paradigm paradigm, OTF2_StringRef name,
                                     OTF2_ParadigmClass cls)
{
    def_ctx *c = user;
    (void)name;
    (void)cls;
    if (paradigm == OTF2_PARADIGM_MPI)
        c->t->has_mpi_paradigm = 1;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_cart_dimension(void *user, OTF2_CartDimensionRef self, OTF2_StringRef name,
                                           uint32_t size, OTF2_CartPeriodicity periodicity)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    if (ws_map64_get(&t->cart_dim_ids, self, NULL))
        DEF_FAIL(c, "Cartesian dimension %u is defined twice", (unsigned)self);
    if (ws_grow((void **)&t->cart_dims, &t->cap_cart_dims, (size_t)t->n_cart_dims + 1, sizeof *t->cart_dims) != 0 ||
        ws_map64_put(&t->cart_dim_ids, self, t->n_cart_dims) != 0)
        DEF_NOMEM(c, "Cartesian dimensions");
    ws_cart_dim *d = &t->cart_dims[t->n_cart_dims++];
    d->name = name;
    d->size = size;
    d->periodic = periodicity == OTF2_CART_PERIODIC_TRUE;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_cart_topology(void *user, OTF2_CartTopologyRef self, OTF2_StringRef name,
                                          OTF2_CommRef comm, uint8_t n_dims, const OTF2_CartDimensionRef *dims)
{
    def_ctx *c = user;
    ws_trace *t = c->t;
    if (ws_map64_get(&t->cart_topology_ids, self, NULL))
        DEF_FAIL(c, "Cartesian topology %u is defined twice", (unsigned)self);
    if (ws_grow((void **)&t->cart_topologies, &t->cap_cart_topologies, (size_t)t->n_cart_topologies + 1,
                sizeof *t->cart_topologies) != 0 ||
        ws_map64_put(&t->cart_topology_ids, self, t->n_cart_topologies) != 0)
        DEF_NOMEM(c, "Cartesian topologies");
    ws_cart_topology *k = &t->cart_topologies[t->n_cart_topologies];
    memset(k, 0, sizeof *k);
    k->dims = ws_malloc_array(n_dims ? n_dims : 1, sizeof *k->dims);
    if (!k->dims)
        DEF_NOMEM(c, "Cartesian topology");
    for (uint8_t i = 0; i < n_dims; i++) {
        uint64_t d;
        if (!ws_map64_get(&t->cart_dim_ids, dims[i], &d)) {
            free(k->dims);
            k->dims = NULL;
            DEF_FAIL(c, "Cartesian topology %u refers to unknown dimension %u", (unsigned)self, (unsigned)dims[i]);
        }
        k->dims[i] = (uint32_t)d;
    }
    k->otf2_id = self;
    k->name = name;
    k->comm = comm;
    k->n_dims = n_dims;
    t->n_cart_topologies++;
    return OTF2_CALLBACK_SUCCESS;
}

/* Coordinates arrive before communicator sizes are resolved; they are
 * kept as (rank, coords) rows in a growing array per topology. */
typedef struct coord_row {
    uint32_t topology;
    uint32_t rank;
    uint32_t coords[8];
} coord_row;

typedef struct coord_list {
    coord_row *rows;
    size_t n, cap;
} coord_list;

typedef struct def_ctx_full {
    def_ctx base;
    coord_list coords;
} def_ctx_full;

static OTF2_CallbackCode on_cart_coordinate(void *user, OTF2_CartTopologyRef topology, uint32_t rank,
                                            uint8_t n_dims, const uint32_t *coords)
{
    def_ctx_full *c = user;
    uint64_t k;
    if (!ws_map64_get(&c->base.t->cart_topology_ids, topology, &k))
        DEF_FAIL(&c->base, "Cartesian coordinate for unknown topology %u", (unsigned)topology);
    if (n_dims > 8 || n_dims != c->base.t->cart_topologies[k].n_dims)
        DEF_FAIL(&c->base, "Cartesian coordinate with %u dimensions for a %u-dimensional topology",
                 (unsigned)n_dims, (unsigned)c->base.t->cart_topologies[k].n_dims);
    if (ws_grow((void **)&c->coords.rows, &c->coords.cap, c->coords.n + 1, sizeof *c->coords.rows) != 0)
        DEF_NOMEM(&c->base, "Cartesian coordinates");
    coord_row *row = &c->coords.rows[c->coords.n++];
    row->topology = (uint32_t)k;
    row->rank = rank;
    memset(row->coords, 0, sizeof row->coords);
    memcpy(row->coords, coords, n_dims * sizeof *coords);
    return OTF2_CALLBACK_SUCCESS;
}

/* Maps a raw string reference to its dense index. */
static int map_string(ws_trace *t, uint32_t *ref, const char *what, ws_error *err)
{
    if (*ref == OTF2_UNDEFINED_STRING) {
        *ref = WS_NONE32;
        return WS_OK;
    }
    uint64_t index;
    if (!ws_map64_get(&t->string_ids, *ref, &index))
        return ws_error_set(err, WS_ERR_FORMAT, "%s refers to undefined string %u", what, (unsigned)*ref);
    *ref = (uint32_t)index;
    return WS_OK;
}

static int map_ref(const ws_map64 *m, uint32_t *ref, uint32_t undefined, const char *what, ws_error *err)
{
    if (*ref == undefined) {
        *ref = WS_NONE32;
        return WS_OK;
    }
    uint64_t index;
    if (!ws_map64_get(m, *ref, &index))
        return ws_error_set(err, WS_ERR_FORMAT, "%s refers to undefined id %u", what, (unsigned)*ref);
    *ref = (uint32_t)index;
    return WS_OK;
}

/* Translates raw OTF2 references to dense indices and resolves ranks. */
static int finish_definitions(ws_trace *t, coord_list *coords, ws_error *err)
{
    int rc;
    if (!t->clock.defined)
        return ws_error_set(err, WS_ERR_FORMAT, "no clock properties are defined: the time unit is unknown");
    if (t->clock.resolution == 0)
        return ws_error_set(err, WS_ERR_FORMAT, "unknown clock: timer resolution is 0 ticks per second");
    for (uint32_t i = 0; i < t->n_regions; i++) {
        ws_region *r = &t->regions[i];
        if ((rc = map_string(t, &r->name, "region name", err)) ||
            (rc = map_string(t, &r->canonical_name, "region canonical name", err)) ||
            (rc = map_string(t, &r->description, "region description", err)) ||
            (rc = map_string(t, &r->source_file, "region source file", err)))
            return rc;
    }
    for (uint32_t i = 0; i < t->n_groups; i++)
        if ((rc = map_string(t, &t->groups[i].name, "group name", err)))
            return rc;
    for (uint32_t i = 0; i < t->n_comms; i++) {
        ws_comm *m = &t->comms[i];
        if ((rc = map_string(t, &m->name, "communicator name", err)) ||
            (rc = map_ref(&t->group_ids, &m->group, OTF2_UNDEFINED_GROUP, "communicator group", err)) ||
            (rc = map_ref(&t->comm_ids, &m->parent, OTF2_UNDEFINED_COMM, "communicator parent", err)))
            return rc;
        if (m->group == WS_NONE32)
            return ws_error_set(err, WS_ERR_FORMAT, "communicator %llu has no group",
                                (unsigned long long)m->otf2_id);
    }
    for (uint32_t i = 0; i < t->n_system_nodes; i++) {
        ws_system_node *s = &t->system_nodes[i];
        if ((rc = map_string(t, &s->name, "system tree node name", err)) ||
            (rc = map_string(t, &s->class_name, "system tree node class", err)) ||
            (rc = map_ref(&t->system_node_ids, &s->parent, OTF2_UNDEFINED_SYSTEM_TREE_NODE, "system tree node parent",
                          err)))
            return rc;
    }
    for (uint32_t i = 0; i < t->n_location_groups; i++) {
        ws_location_group *g = &t->location_groups[i];
        if ((rc = map_string(t, &g->name, "location group name", err)) ||
            (rc = map_ref(&t->system_node_ids, &g->system_node, OTF2_UNDEFINED_SYSTEM_TREE_NODE,
                          "location group parent", err)))
            return rc;
    }
    for (uint32_t i = 0; i < t->n_locations; i++) {
        ws_location *l = &t->locations[i];
        if ((rc = map_string(t, &l->name, "location name", err)) ||
            (rc = map_ref(&t->location_group_ids, &l->group, OTF2_UNDEFINED_LOCATION_GROUP, "location group", err)))
            return rc;
        if (l->group == WS_NONE32)
            return ws_error_set(err, WS_ERR_FORMAT, "location %llu belongs to no location group",
                                (unsigned long long)l->otf2_id);
    }
    for (uint32_t i = 0; i < t->n_cart_dims; i++)
        if ((rc = map_string(t, &t->cart_dims[i].name, "Cartesian dimension name", err)))
            return rc;
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        ws_cart_topology *k = &t->cart_topologies[i];
        if ((rc = map_string(t, &k->name, "Cartesian topology name", err)) ||
            (rc = map_ref(&t->comm_ids, &k->comm, OTF2_UNDEFINED_COMM, "Cartesian topology communicator", err)))
            return rc;
        if (k->comm == WS_NONE32)
            return ws_error_set(err, WS_ERR_FORMAT, "Cartesian topology without communicator");
    }
    if ((rc = ws_trace_resolve_definitions(t, err)))
        return rc;
    /* coordinates: one row of n_dims values per communicator rank */
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        ws_cart_topology *k = &t->cart_topologies[i];
        uint32_t size = t->comms[k->comm].size;
        k->n_ranks = size;
        k->coords = ws_malloc_array((size_t)size * (k->n_dims ? k->n_dims : 1), sizeof *k->coords);
        if (!k->coords)
            return ws_error_nomem(err, "Cartesian coordinates");
        for (size_t j = 0; j < (size_t)size * k->n_dims; j++)
            k->coords[j] = WS_NONE32;
    }
    for (size_t j = 0; j < coords->n; j++) {
        const coord_row *row = &coords->rows[j];
        ws_cart_topology *k = &t->cart_topologies[row->topology];
        if (row->rank >= k->n_ranks)
            return ws_error_set(err, WS_ERR_FORMAT, "Cartesian coordinate for rank %u outside its communicator",
                                (unsigned)row->rank);
        for (uint32_t d = 0; d < k->n_dims; d++) {
            if (row->coords[d] >= t->cart_dims[k->dims[d]].size)
                return ws_error_set(err, WS_ERR_FORMAT, "Cartesian coordinate %u outside dimension of size %u",
                                    (unsigned)row->coords[d], (unsigned)t->cart_dims[k->dims[d]].size);
            k->coords[(size_t)row->rank * k->n_dims + d] = row->coords[d];
        }
    }
    /* region lookup table for the event reader */
    uint64_t max_id = 0;
    for (uint32_t i = 0; i < t->n_regions; i++)
        if (t->regions[i].otf2_id > max_id)
            max_id = t->regions[i].otf2_id;
    if (t->n_regions && max_id < (uint64_t)t->n_regions * 4 + 4096) {
        t->region_lut_size = max_id + 1;
        t->region_lut = ws_malloc_array(t->region_lut_size, sizeof *t->region_lut);
        if (!t->region_lut)
            return ws_error_nomem(err, "region table");
        for (uint64_t j = 0; j < t->region_lut_size; j++)
            t->region_lut[j] = WS_NONE32;
        for (uint32_t i = 0; i < t->n_regions; i++)
            t->region_lut[t->regions[i].otf2_id] = i;
    }
    return WS_OK;
}

char *ws_otf2_archive_directory(const char *anchor)
{
    /* "<dir>/<name>.otf2" -> "<dir>/<name>" holds the per-location files */
    size_t n = strlen(anchor);
    char *d = ws_strdup(anchor);
    if (!d)
        return NULL;
    if (n > 5 && strcmp(anchor + n - 5, ".otf2") == 0)
        d[n - 5] = '\0';
    return d;
}

/* The global definition file "<dir>.def": present, complete, not overwritten. */
static int check_global_definition_file(const ws_trace *t, ws_error *err)
{
    size_t n = strlen(t->directory) + 5;
    char *path = ws_malloc(n);
    if (!path)
        return ws_error_nomem(err, "path");
    snprintf(path, n, "%s.def", t->directory);
    int rc = ws_otf2_is_regular_file(path)
                 ? ws_otf2_check_buffer_file(path, "the global definition file", err)
                 : ws_error_set(err, WS_ERR_IO, "%s: the global definition file of %s is missing", path, t->path);
    free(path);
    return rc;
}

/* Local definition files ("<dir>/<location>.def") are optional in OTF2, but
 * a writer writes one for every location or for none (Score-P writes them
 * all: they map each rank's communicator ids).  Some present and some
 * missing means a damaged copy; found here, when the trace is opened, not
 * by the analysis later as unmatched messages. */
static int check_local_definition_files(const ws_trace *t, ws_error *err)
{
    size_t n = strlen(t->directory) + 32;
    char *path = ws_malloc(n);
    if (!path)
        return ws_error_nomem(err, "path");
    uint32_t present = 0, first_missing = WS_NONE32;
    for (uint32_t i = 0; i < t->n_locations; i++) {
        snprintf(path, n, "%s/%llu.def", t->directory, (unsigned long long)t->locations[i].otf2_id);
        if (ws_otf2_is_regular_file(path))
            present++;
        else if (first_missing == WS_NONE32)
            first_missing = i;
    }
    int rc = WS_OK;
    if (present > 0 && first_missing != WS_NONE32) {
        snprintf(path, n, "%s/%llu.def", t->directory, (unsigned long long)t->locations[first_missing].otf2_id);
        rc = ws_error_set(err, WS_ERR_IO,
                          "%s: the local definitions of location %llu are missing (%u of %u locations have theirs): "
                          "the archive is incomplete",
                          path, (unsigned long long)t->locations[first_missing].otf2_id, (unsigned)present,
                          (unsigned)t->n_locations);
    }
    free(path);
    return rc;
}

int ws_otf2_open_anchor(const char *path, char **anchor_out, OTF2_Reader **reader_out, ws_error *err)
{
    *anchor_out = NULL;
    *reader_out = NULL;
    ws_otf2_silence();
    char *anchor = NULL;
    int rc = ws_otf2_resolve_anchor(path, &anchor, err);
    if (rc)
        return rc;
    if ((rc = ws_otf2_check_anchor(anchor, err))) {
        free(anchor);
        return rc;
    }
    OTF2_Reader *reader = OTF2_Reader_Open(anchor);
    if (!reader) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: not a readable OTF2 anchor file", anchor);
        free(anchor);
        return rc;
    }
    OTF2_Reader_SetSerialCollectiveCallbacks(reader);
    *anchor_out = anchor;
    *reader_out = reader;
    return WS_OK;
}

int ws_otf2_open(const char *path, ws_trace **out, ws_error *err)
{
    *out = NULL;
    if (!path || !*path)
        return ws_error_set(err, WS_ERR_ARGUMENT, "empty trace path");
    char *anchor = NULL;
    OTF2_Reader *reader = NULL;
    int rc = ws_otf2_open_anchor(path, &anchor, &reader, err);
    if (rc)
        return rc;

    ws_trace *t = ws_trace_new();
    if (!t) {
        OTF2_Reader_Close(reader);
        free(anchor);
        return ws_error_nomem(err, "trace");
    }
    t->path = anchor;
    t->directory = ws_otf2_archive_directory(anchor);
    if (!t->directory) {
        OTF2_Reader_Close(reader);
        ws_trace_free(t);
        return ws_error_nomem(err, "path");
    }

    /* written by the interposition library for a run that was cut short */
    char *cut_short = NULL;
    if (OTF2_Reader_GetProperty(reader, "WAITSCOPE::CUT_SHORT_RANKS", &cut_short) == OTF2_SUCCESS && cut_short) {
        t->cut_short_ranks = ws_strdup(cut_short);
        free(cut_short);
        if (!t->cut_short_ranks) {
            OTF2_Reader_Close(reader);
            ws_trace_free(t);
            return ws_error_nomem(err, "trace properties");
        }
    }

    char *openmp = NULL;
    if (OTF2_Reader_GetProperty(reader, "WAITSCOPE::OPENMP", &openmp) == OTF2_SUCCESS && openmp) {
        t->openmp_recording = ws_strdup(openmp);
        free(openmp);
        if (!t->openmp_recording) {
            OTF2_Reader_Close(reader);
            ws_trace_free(t);
            return ws_error_nomem(err, "trace properties");
        }
    }

    if ((rc = check_global_definition_file(t, err))) {
        OTF2_Reader_Close(reader);
        ws_trace_free(t);
        return rc;
    }

    def_ctx_full ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.base.t = t;
    ctx.base.err = err;

    OTF2_GlobalDefReader *defs = OTF2_Reader_GetGlobalDefReader(reader);
    if (!defs) {
        OTF2_Reader_Close(reader);
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open the global definitions (%s.def)", t->path,
                          t->directory);
        ws_trace_free(t);
        return rc;
    }
    OTF2_GlobalDefReaderCallbacks *cbs = OTF2_GlobalDefReaderCallbacks_New();
    if (!cbs) {
        OTF2_Reader_Close(reader);
        ws_trace_free(t);
        return ws_error_nomem(err, "definition callbacks");
    }
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cbs, on_clock);
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cbs, on_string);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cbs, on_region);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cbs, on_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(cbs, on_comm);
    OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cbs, on_system_node);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cbs, on_location_group);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cbs, on_location);
    OTF2_GlobalDefReaderCallbacks_SetParadigmCallback(cbs, on_paradigm);
    OTF2_GlobalDefReaderCallbacks_SetCartDimensionCallback(cbs, on_cart_dimension);
    OTF2_GlobalDefReaderCallbacks_SetCartTopologyCallback(cbs, on_cart_topology);
    OTF2_GlobalDefReaderCallbacks_SetCartCoordinateCallback(cbs, on_cart_coordinate);
    OTF2_ErrorCode status = OTF2_Reader_RegisterGlobalDefCallbacks(reader, defs, cbs, &ctx);
    OTF2_GlobalDefReaderCallbacks_Delete(cbs);
    uint64_t n_read = 0, n_announced = 0;
    if (OTF2_Reader_GetNumberOfGlobalDefinitions(reader, &n_announced) != OTF2_SUCCESS)
        n_announced = 0;
    if (status == OTF2_SUCCESS)
        status = OTF2_Reader_ReadAllGlobalDefinitions(reader, defs, &n_read);
    OTF2_Reader_CloseGlobalDefReader(reader, defs);
    OTF2_Reader_Close(reader);

    if (ctx.base.failed || status != OTF2_SUCCESS) {
        if (!ctx.base.failed)
            ws_error_set(err, WS_ERR_FORMAT, "%s: %s", OTF2_Error_GetName(status), OTF2_Error_GetDescription(status));
        rc = ws_error_prefix(err, "%s.def (global definitions): damaged or truncated, reading stopped at", t->directory);
    } else if (n_announced && n_read != n_announced) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s.def (global definitions): %llu definitions read, but the anchor announces %llu: the "
                          "file is truncated or does not belong to this archive",
                          t->directory, (unsigned long long)n_read, (unsigned long long)n_announced);
    } else if (t->n_locations == 0) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s.def (global definitions): no location is defined", t->directory);
    } else {
        rc = finish_definitions(t, &ctx.coords, err);
        if (rc)
            ws_error_prefix(err, "%s.def (global definitions)", t->directory);
        else
            rc = check_local_definition_files(t, err);
    }
    free(ctx.coords.rows);
    if (rc) {
        ws_trace_free(t);
        return rc;
    }
    *out = t;
    return WS_OK;
}

