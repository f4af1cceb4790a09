/* OTF2 archive -> trace store, with the OTF2 C reader API. */
#include "otf2_io.h"
#include "otf2_check.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <otf2/otf2.h>

static int is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static char *join_path(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* Resolves a user path to the anchor file path. */
static int resolve_anchor(const char *path, char **anchor, ws_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return ws_error_set(err, WS_ERR_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        char *candidate = join_path(path, "traces.otf2");
        if (!candidate)
            return ws_error_nomem(err, "path");
        if (!is_regular_file(candidate)) {
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

static char *archive_directory(const char *anchor)
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
    char *path = malloc(n);
    if (!path)
        return ws_error_nomem(err, "path");
    snprintf(path, n, "%s.def", t->directory);
    int rc = is_regular_file(path)
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
    char *path = malloc(n);
    if (!path)
        return ws_error_nomem(err, "path");
    uint32_t present = 0, first_missing = WS_NONE32;
    for (uint32_t i = 0; i < t->n_locations; i++) {
        snprintf(path, n, "%s/%llu.def", t->directory, (unsigned long long)t->locations[i].otf2_id);
        if (is_regular_file(path))
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

int ws_otf2_open(const char *path, ws_trace **out, ws_error *err)
{
    *out = NULL;
    if (!path || !*path)
        return ws_error_set(err, WS_ERR_ARGUMENT, "empty trace path");
    ws_otf2_silence();
    char *anchor = NULL;
    int rc = resolve_anchor(path, &anchor, err);
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

    ws_trace *t = ws_trace_new();
    if (!t) {
        OTF2_Reader_Close(reader);
        free(anchor);
        return ws_error_nomem(err, "trace");
    }
    t->path = anchor;
    t->directory = archive_directory(anchor);
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

/* ---- events ------------------------------------------------------------- */

/* The side tables (messages, requests, collectives) of the location being
 * read are collected in these rows, which one ws_otf2_load_events call
 * reuses for all its locations; when a location is complete they are
 * copied into columns of exactly the right size.  So the store's arrays
 * are never grown or shrunk (no realloc copies, no heap holes), and the
 * rows stay allocated (and their pages resident) from one location to the
 * next. */
typedef struct side_rows {
    size_t cap_msg, cap_req, cap_coll;
    uint32_t *msg_event;
    uint32_t *msg_peer;
    uint32_t *msg_comm;
    uint32_t *msg_tag;
    uint64_t *msg_bytes;
    uint32_t *req_event;
    uint64_t *req_id;
    uint32_t *coll_event;
    uint32_t *coll_comm;
    uint32_t *coll_root;
    uint8_t *coll_op;
    uint64_t *coll_sent;
    uint64_t *coll_received;
} side_rows;

/* A direct-mapped memo of Enter lookups (parent call path, OTF2 region
 * id) -> call path in front of lookup_region and ws_callpath_child: an
 * Enter costs one probe instead of a region lookup plus a sibling scan or
 * a hash-map lookup.  Call paths are never removed and only defined
 * regions are memoized, so entries stay valid for the whole load. */
#define CP_MEMO_SIZE 1024u /* power of two */
/* never a call path index (ws_callpath_child stops at WS_NONE32 - 1) nor
 * WS_NONE32 (the parent of roots): marks empty entries */
#define CP_MEMO_EMPTY (WS_NONE32 - 1u)

typedef struct cp_memo_entry {
    uint32_t parent;     /* CP_MEMO_EMPTY: empty entry */
    OTF2_RegionRef region;
    uint32_t cp;
} cp_memo_entry;

/* Working memory of one ws_otf2_load_events call. */
typedef struct load_scratch {
    side_rows side;
    uint32_t *stack;          /* call paths of the open regions */
    OTF2_RegionRef *stack_id; /* and their OTF2 region ids */
    size_t stack_cap;
    cp_memo_entry memo[CP_MEMO_SIZE];
} load_scratch;

static load_scratch *scratch_new(void)
{
    load_scratch *s = calloc(1, sizeof *s);
    if (s)
        for (size_t i = 0; i < CP_MEMO_SIZE; i++)
            s->memo[i].parent = CP_MEMO_EMPTY;
    return s;
}

static void scratch_free(load_scratch *s)
{
    if (!s)
        return;
    side_rows *r = &s->side;
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
    free(s->stack);
    free(s->stack_id);
    free(s);
}

typedef struct evt_ctx {
    ws_trace *t;
    ws_events *ev;
    load_scratch *s;
    uint64_t cap; /* capacity of ev->time, kind, ref */
    uint32_t depth;
    double inv_resolution;
    uint64_t offset;
    uint64_t last_ticks;
    uint64_t last_comm_id; /* OTF2 id of the last communicator looked up (UINT64_MAX: none) */
    uint32_t last_comm;    /* its index */
    int failed;
    ws_error *err;
} evt_ctx;

#define EVT_FAIL(c, code, ...)                                    \
    do {                                                          \
        ws_error_set((c)->err, code, __VA_ARGS__);                 \
        (c)->failed = 1;                                          \
        return OTF2_CALLBACK_INTERRUPT;                           \
    } while (0)

/* Appends the common columns of one event; returns its index or -1. */
static inline int64_t push_event(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint32_t ref)
{
    ws_events *ev = c->ev;
    if (time < c->last_ticks) {
        ws_error_set(c->err, WS_ERR_FORMAT, "event %llu: timestamp goes backwards (%llu after %llu)",
                     (unsigned long long)ev->n, (unsigned long long)time, (unsigned long long)c->last_ticks);
        c->failed = 1;
        return -1;
    }
    if (ev->n == c->cap) {
        if (ev->n >= UINT32_MAX) {
            ws_error_set(c->err, WS_ERR_FORMAT, "more than 2^32 events on one location are not supported");
            c->failed = 1;
            return -1;
        }
        uint64_t cap = c->cap ? c->cap * 2 : 1024;
        if (cap > UINT32_MAX)
            cap = UINT32_MAX;
        if (ws_events_reserve(ev, cap) != 0) {
            ws_error_nomem(c->err, "events");
            c->failed = 1;
            return -1;
        }
        c->cap = cap;
    }
    c->last_ticks = time;
    /* load everything before the first store: the uint8_t store may alias
     * anything and would make the compiler reload the other pointers */
    uint64_t i = ev->n;
    double *tm = ev->time;
    uint32_t *rf = ev->ref;
    uint8_t *kd = ev->kind;
    double seconds = (double)(int64_t)(time - c->offset) * c->inv_resolution;
    ev->n = i + 1;
    tm[i] = seconds;
    rf[i] = ref;
    kd[i] = kind;
    return (int64_t)i;
}

static inline int lookup_region(evt_ctx *c, OTF2_RegionRef region, uint32_t *out)
{
    const ws_trace *t = c->t;
    if (t->region_lut) {
        if (region < t->region_lut_size && t->region_lut[region] != WS_NONE32) {
            *out = t->region_lut[region];
            return 0;
        }
    } else {
        uint64_t index;
        if (ws_map64_get(&t->region_ids, region, &index)) {
            *out = (uint32_t)index;
            return 0;
        }
    }
    ws_error_set(c->err, WS_ERR_FORMAT, "event %llu refers to undefined region %u", (unsigned long long)c->ev->n,
                 (unsigned)region);
    c->failed = 1;
    return -1;
}

static OTF2_CallbackCode on_enter(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    (void)location;
    (void)pos;
    (void)attributes;
    evt_ctx *c = user;
    load_scratch *s = c->s;
    uint32_t parent = c->depth ? s->stack[c->depth - 1] : WS_NONE32;
    cp_memo_entry *m = &s->memo[(parent * 33u + region) & (CP_MEMO_SIZE - 1)];
    uint32_t cp;
    if (m->region == region && m->parent == parent) {
        cp = m->cp;
    } else {
        uint32_t r;
        if (lookup_region(c, region, &r))
            return OTF2_CALLBACK_INTERRUPT;
        cp = ws_callpath_child(&c->t->callpaths, parent, r);
        if (cp == WS_NONE32)
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory in the call-path tree");
        m->parent = parent;
        m->region = region;
        m->cp = cp;
    }
    if (c->depth == s->stack_cap) {
        size_t cap = s->stack_cap;
        if (ws_grow((void **)&s->stack, &cap, (size_t)c->depth + 1, sizeof *s->stack) != 0 ||
            (cap = s->stack_cap,
             ws_grow((void **)&s->stack_id, &cap, (size_t)c->depth + 1, sizeof *s->stack_id) != 0))
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for the call stack");
        s->stack_cap = cap;
    }
    s->stack_id[c->depth] = region;
    s->stack[c->depth++] = cp;
    return push_event(c, time, WS_EV_ENTER, cp) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_leave(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    (void)location;
    (void)pos;
    (void)attributes;
    evt_ctx *c = user;
    const ws_trace *t = c->t;
    uint32_t cp = c->depth ? c->s->stack[c->depth - 1] : WS_NONE32;
    /* the usual case: the record leaves the innermost open region, which
     * is a defined one; compare OTF2 ids without a region lookup */
    if (cp == WS_NONE32 || c->s->stack_id[c->depth - 1] != region) {
        uint32_t r;
        if (lookup_region(c, region, &r))
            return OTF2_CALLBACK_INTERRUPT;
        if (cp == WS_NONE32)
            EVT_FAIL(c, WS_ERR_FORMAT, "event %llu leaves region '%s' that was never entered",
                     (unsigned long long)c->ev->n, ws_trace_string(t, t->regions[r].name));
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu leaves region '%s' but '%s' is the innermost open region",
                 (unsigned long long)c->ev->n, ws_trace_string(t, t->regions[r].name),
                 ws_trace_string(t, t->regions[t->callpaths.region[cp]].name));
    }
    c->depth--;
    return push_event(c, time, WS_EV_LEAVE, cp) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static int map_comm(evt_ctx *c, OTF2_CommRef comm, uint32_t *out)
{
    if (comm == c->last_comm_id) {
        *out = c->last_comm;
        return 0;
    }
    uint64_t index;
    if (!ws_map64_get(&c->t->comm_ids, comm, &index)) {
        ws_error_set(c->err, WS_ERR_FORMAT, "event %llu refers to undefined communicator %u",
                     (unsigned long long)c->ev->n, (unsigned)comm);
        c->failed = 1;
        return -1;
    }
    c->last_comm_id = comm;
    c->last_comm = (uint32_t)index;
    *out = (uint32_t)index;
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
    } while (0)

static int grow_messages(side_rows *r)
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

static int grow_requests(side_rows *r)
{
    size_t cap = r->cap_req ? r->cap_req * 2 : 256;
    GROW_ROWS(r->req_event, r->cap_req, cap);
    GROW_ROWS(r->req_id, r->cap_req, cap);
    r->cap_req = cap;
    return 0;
}

static int grow_collectives(side_rows *r)
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
#undef GROW_ROWS

static OTF2_CallbackCode push_message(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint32_t peer,
                                      OTF2_CommRef comm, uint32_t tag, uint64_t bytes)
{
    uint32_t m;
    if (map_comm(c, comm, &m))
        return OTF2_CALLBACK_INTERRUPT;
    const ws_comm *cm = &c->t->comms[m];
    if (!cm->is_self && peer >= cm->size)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: partner rank %u is outside communicator '%s' of size %u",
                 (unsigned long long)c->ev->n, (unsigned)peer, ws_trace_string(c->t, cm->name), (unsigned)cm->size);
    if (cm->is_self && peer != 0)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: partner rank %u on a self communicator",
                 (unsigned long long)c->ev->n, (unsigned)peer);
    ws_events *ev = c->ev;
    side_rows *rows = &c->s->side;
    uint64_t i = ev->n_messages;
    if (i + 1 > rows->cap_msg && grow_messages(rows) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for message records");
    int64_t e = push_event(c, time, kind, (uint32_t)i);
    if (e < 0)
        return OTF2_CALLBACK_INTERRUPT;
    rows->msg_event[i] = (uint32_t)e;
    rows->msg_peer[i] = peer;
    rows->msg_comm[i] = m;
    rows->msg_tag[i] = tag;
    rows->msg_bytes[i] = bytes;
    ev->n_messages++;
    return OTF2_CALLBACK_SUCCESS;
}

/* Records a request id; `event` is the index of an already pushed event
 * or -1 to push a new event of the given kind whose ref is the row. */
static OTF2_CallbackCode push_request(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint64_t request,
                                      int64_t event)
{
    ws_events *ev = c->ev;
    side_rows *rows = &c->s->side;
    uint64_t i = ev->n_requests;
    if (i + 1 > rows->cap_req && grow_requests(rows) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for request records");
    if (event < 0) {
        event = push_event(c, time, kind, (uint32_t)i);
        if (event < 0)
            return OTF2_CALLBACK_INTERRUPT;
    }
    rows->req_event[i] = (uint32_t)event;
    rows->req_id[i] = request;
    ev->n_requests++;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_send(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                 OTF2_AttributeList *a, uint32_t receiver, OTF2_CommRef comm, uint32_t tag,
                                 uint64_t bytes)
{
    (void)l;
    (void)pos;
    (void)a;
    return push_message(user, time, WS_EV_SEND, receiver, comm, tag, bytes);
}

static OTF2_CallbackCode on_recv(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                 OTF2_AttributeList *a, uint32_t sender, OTF2_CommRef comm, uint32_t tag,
                                 uint64_t bytes)
{
    (void)l;
    (void)pos;
    (void)a;
    return push_message(user, time, WS_EV_RECV, sender, comm, tag, bytes);
}

static OTF2_CallbackCode on_isend(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *a, uint32_t receiver, OTF2_CommRef comm, uint32_t tag,
                                  uint64_t bytes, uint64_t request)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    OTF2_CallbackCode rc = push_message(c, time, WS_EV_ISEND, receiver, comm, tag, bytes);
    if (rc != OTF2_CALLBACK_SUCCESS)
        return rc;
    return push_request(c, time, WS_EV_ISEND, request, (int64_t)(c->ev->n - 1));
}

static OTF2_CallbackCode on_irecv(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *a, uint32_t sender, OTF2_CommRef comm, uint32_t tag,
                                  uint64_t bytes, uint64_t request)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    OTF2_CallbackCode rc = push_message(c, time, WS_EV_IRECV, sender, comm, tag, bytes);
    if (rc != OTF2_CALLBACK_SUCCESS)
        return rc;
    return push_request(c, time, WS_EV_IRECV, request, (int64_t)(c->ev->n - 1));
}

#define REQUEST_CALLBACK(fn, kind)                                                                  \
    static OTF2_CallbackCode fn(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user, \
                                OTF2_AttributeList *a, uint64_t request)                            \
    {                                                                                               \
        (void)l;                                                                                    \
        (void)pos;                                                                                  \
        (void)a;                                                                                    \
        return push_request(user, time, kind, request, -1);                                         \
    }

REQUEST_CALLBACK(on_isend_complete, WS_EV_ISEND_COMPLETE)
REQUEST_CALLBACK(on_irecv_request, WS_EV_IRECV_REQUEST)
REQUEST_CALLBACK(on_request_test, WS_EV_REQUEST_TEST)
REQUEST_CALLBACK(on_request_cancelled, WS_EV_REQUEST_CANCELLED)

static OTF2_CallbackCode on_coll_begin(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                       OTF2_AttributeList *a)
{
    (void)l;
    (void)pos;
    (void)a;
    return push_event(user, time, WS_EV_COLL_BEGIN, WS_NONE32) < 0 ? OTF2_CALLBACK_INTERRUPT
                                                                  : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_coll_end(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                     OTF2_AttributeList *a, OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root,
                                     uint64_t sent, uint64_t received)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    uint32_t m;
    if (map_comm(c, comm, &m))
        return OTF2_CALLBACK_INTERRUPT;
    const ws_comm *cm = &c->t->comms[m];
    if (root != OTF2_UNDEFINED_UINT32 && root >= cm->size)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: collective root %u is outside communicator '%s' of size %u",
                 (unsigned long long)c->ev->n, (unsigned)root, ws_trace_string(c->t, cm->name), (unsigned)cm->size);
    ws_events *ev = c->ev;
    side_rows *rows = &c->s->side;
    uint64_t i = ev->n_collectives;
    if (i + 1 > rows->cap_coll && grow_collectives(rows) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for collective records");
    int64_t e = push_event(c, time, WS_EV_COLL_END, (uint32_t)i);
    if (e < 0)
        return OTF2_CALLBACK_INTERRUPT;
    rows->coll_event[i] = (uint32_t)e;
    rows->coll_comm[i] = m;
    rows->coll_root[i] = (root == OTF2_UNDEFINED_UINT32) ? WS_NONE32 : root;
    rows->coll_op[i] = op;
    rows->coll_sent[i] = sent;
    rows->coll_received[i] = received;
    ev->n_collectives++;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_program_begin(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                          OTF2_AttributeList *a, OTF2_StringRef name, uint32_t n_args,
                                          const OTF2_StringRef *args)
{
    (void)l;
    (void)pos;
    (void)a;
    (void)name;
    (void)n_args;
    (void)args;
    return push_event(user, time, WS_EV_PROGRAM_BEGIN, 0) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_program_end(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                        OTF2_AttributeList *a, int64_t status)
{
    (void)l;
    (void)pos;
    (void)a;
    (void)status;
    return push_event(user, time, WS_EV_PROGRAM_END, 0) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_measurement(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                        OTF2_AttributeList *a, OTF2_MeasurementMode mode)
{
    (void)l;
    (void)pos;
    (void)a;
    uint8_t kind = mode == OTF2_MEASUREMENT_ON ? WS_EV_MEASUREMENT_ON : WS_EV_MEASUREMENT_OFF;
    return push_event(user, time, kind, 0) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_EvtReaderCallbacks *new_event_callbacks(void)
{
    OTF2_EvtReaderCallbacks *cbs = OTF2_EvtReaderCallbacks_New();
    if (!cbs)
        return NULL;
    OTF2_EvtReaderCallbacks_SetEnterCallback(cbs, on_enter);
    OTF2_EvtReaderCallbacks_SetLeaveCallback(cbs, on_leave);
    OTF2_EvtReaderCallbacks_SetMpiSendCallback(cbs, on_send);
    OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cbs, on_isend);
    OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cbs, on_isend_complete);
    OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cbs, on_irecv_request);
    OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cbs, on_recv);
    OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cbs, on_irecv);
    OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(cbs, on_request_test);
    OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(cbs, on_request_cancelled);
    OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(cbs, on_coll_begin);
    OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cbs, on_coll_end);
    OTF2_EvtReaderCallbacks_SetProgramBeginCallback(cbs, on_program_begin);
    OTF2_EvtReaderCallbacks_SetProgramEndCallback(cbs, on_program_end);
    OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback(cbs, on_measurement);
    return cbs;
}

/* Copies `n` rows of `size` bytes into a new array of exactly that size
 * (of one zeroed element when n == 0, so that every column is a valid
 * pointer). */
static void *exact_copy(const void *rows, uint64_t n, size_t size)
{
    if (n == 0)
        return calloc(1, size);
    if (n > SIZE_MAX / size)
        return NULL;
    void *p = malloc((size_t)n * size);
    if (p)
        memcpy(p, rows, (size_t)n * size);
    return p;
}

/* Completes the columns of a finished location: time, kind and ref were
 * reserved for the announced number of records and are shrunk only if
 * some records were skipped; the side tables are copied from the rows. */
static int finish_columns(ws_events *ev, uint64_t cap, const side_rows *r)
{
#define SHRINK(field)                                                           \
    do {                                                                        \
        void *p__ = realloc(ev->field, (size_t)ev->n * sizeof *ev->field + 1);  \
        if (p__)                                                                \
            ev->field = p__;                                                    \
    } while (0)
    if (cap != ev->n) {
        SHRINK(time);
        SHRINK(kind);
        SHRINK(ref);
    }
#undef SHRINK
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
#undef COPY
    return 0;
}

static char *location_file(const char *directory, uint64_t location, const char *suffix)
{
    size_t n = strlen(directory) + 48;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%llu.%s", directory, (unsigned long long)location, suffix);
    return p;
}

static int read_location(ws_trace *t, OTF2_Reader *reader, OTF2_EvtReaderCallbacks *cbs, load_scratch *scratch,
                         uint32_t index, const ws_progress *progress, uint64_t *done, uint64_t total,
                         ws_error *err)
{
    ws_location *loc = &t->locations[index];
    char *evt_path = location_file(t->directory, loc->otf2_id, "evt");
    char *def_path = location_file(t->directory, loc->otf2_id, "def");
    if (!evt_path || !def_path) {
        free(evt_path);
        free(def_path);
        return ws_error_nomem(err, "path");
    }
    int rc = WS_OK;
    evt_ctx c;
    memset(&c, 0, sizeof c);

    if (!is_regular_file(evt_path)) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: event file of location %llu is missing", evt_path,
                          (unsigned long long)loc->otf2_id);
        goto done;
    }
    /* local definitions carry id mappings and clock offsets; they are
     * optional in OTF2 */
    if (is_regular_file(def_path)) {
        char what[64];
        snprintf(what, sizeof what, "local definition file of location %llu", (unsigned long long)loc->otf2_id);
        if ((rc = ws_otf2_check_buffer_file(def_path, what, err)))
            goto done;
        OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader, loc->otf2_id);
        if (!dr) {
            rc = ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open local definitions", def_path);
            goto done;
        }
        uint64_t n_defs = 0;
        OTF2_ErrorCode s = OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &n_defs);
        OTF2_Reader_CloseDefReader(reader, dr);
        if (s != OTF2_SUCCESS) {
            rc = ws_error_set(err, WS_ERR_FORMAT, "%s: %s: %s", def_path, OTF2_Error_GetName(s),
                              OTF2_Error_GetDescription(s));
            goto done;
        }
    }

    char evt_what[64];
    snprintf(evt_what, sizeof evt_what, "event file of location %llu", (unsigned long long)loc->otf2_id);
    if ((rc = ws_otf2_check_buffer_file(evt_path, evt_what, err)))
        goto done;
    OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(reader, loc->otf2_id);
    if (!er) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: OTF2 cannot read the event file of location %llu (damaged?)",
                          evt_path, (unsigned long long)loc->otf2_id);
        goto done;
    }
    c.t = t;
    c.ev = &loc->events;
    c.s = scratch;
    c.err = err;
    c.inv_resolution = 1.0 / (double)t->clock.resolution;
    c.offset = t->clock.offset;
    c.last_ticks = 0;
    c.last_comm_id = UINT64_MAX;
    c.depth = 0;
    /* the definitions announce the number of records: reserve them at
     * once (records of kinds the store skips make this an upper bound) */
    uint64_t initial = loc->n_events_defined;
    if (initial > (1u << 24))
        initial = 1u << 24;
    if (initial < 64)
        initial = 64;
    if (ws_events_reserve(c.ev, initial) != 0) {
        OTF2_Reader_CloseEvtReader(reader, er);
        rc = ws_error_nomem(err, "events");
        goto done;
    }
    c.cap = initial;
    OTF2_ErrorCode s = OTF2_EvtReader_SetCallbacks(er, cbs, &c);
    uint64_t records = 0;
    const uint64_t batch = 1u << 20;
    while (s == OTF2_SUCCESS) {
        uint64_t n = 0;
        s = OTF2_EvtReader_ReadEvents(er, batch, &n);
        records += n;
        *done += n;
        if (s != OTF2_SUCCESS || n < batch)
            break;
        if (progress && progress->callback && progress->callback(progress->context, "load", *done, total)) {
            OTF2_Reader_CloseEvtReader(reader, er);
            rc = ws_error_set(err, WS_ERR_INTERRUPTED, "loading interrupted");
            goto done;
        }
    }
    OTF2_Reader_CloseEvtReader(reader, er);
    if (c.failed) {
        rc = ws_error_prefix(err, "%s: location %llu", evt_path, (unsigned long long)loc->otf2_id);
        goto done;
    }
    if (s != OTF2_SUCCESS) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: corrupted or truncated event file of location %llu (%s: %s)",
                          evt_path, (unsigned long long)loc->otf2_id, OTF2_Error_GetName(s),
                          OTF2_Error_GetDescription(s));
        goto done;
    }
    if (c.depth != 0) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s: location %llu: %u region(s) are still open at the end of the events: the file is "
                          "truncated",
                          evt_path, (unsigned long long)loc->otf2_id, (unsigned)c.depth);
        goto done;
    }
    if (records != loc->n_events_defined) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s: location %llu: %llu event records read but the definitions announce %llu: the file "
                          "is truncated or does not belong to this archive",
                          evt_path, (unsigned long long)loc->otf2_id, (unsigned long long)records,
                          (unsigned long long)loc->n_events_defined);
        goto done;
    }
    c.ev->n_skipped = records - c.ev->n;
    if (finish_columns(c.ev, c.cap, &scratch->side) != 0) {
        rc = ws_error_nomem(err, "events");
        goto done;
    }
    loc->loaded = 1;
    t->n_events += c.ev->n;

done:
    if (rc != WS_OK)
        ws_events_free(&loc->events);
    free(evt_path);
    free(def_path);
    return rc;
}

int ws_otf2_load_events(ws_trace *t, const uint32_t *locations, uint32_t n, const ws_progress *progress,
                        ws_error *err)
{
    ws_otf2_silence();
    uint32_t *all = NULL;
    if (!locations || n == 0) {
        n = t->n_locations;
        all = ws_malloc_array(n, sizeof *all);
        if (!all)
            return ws_error_nomem(err, "location list");
        for (uint32_t i = 0; i < n; i++)
            all[i] = i;
        locations = all;
    }
    for (uint32_t i = 0; i < n; i++)
        if (locations[i] >= t->n_locations) {
            free(all);
            return ws_error_set(err, WS_ERR_ARGUMENT, "location index %u out of range (trace has %u)",
                                (unsigned)locations[i], (unsigned)t->n_locations);
        }
    int rc = WS_OK;
    OTF2_Reader *reader = OTF2_Reader_Open(t->path);
    if (!reader) {
        free(all);
        return ws_error_set(err, WS_ERR_FORMAT, "%s: cannot reopen the archive", t->path);
    }
    OTF2_Reader_SetSerialCollectiveCallbacks(reader);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ws_location *l = &t->locations[locations[i]];
        if (!l->loaded)
            total += l->n_events_defined;
    }
    OTF2_ErrorCode s = OTF2_SUCCESS;
    for (uint32_t i = 0; i < n && s == OTF2_SUCCESS; i++)
        if (!t->locations[locations[i]].loaded)
            s = OTF2_Reader_SelectLocation(reader, t->locations[locations[i]].otf2_id);
    if (s == OTF2_SUCCESS) {
        /* a failure here just means no local definition files exist */
        OTF2_Reader_OpenDefFiles(reader);
        s = OTF2_Reader_OpenEvtFiles(reader);
    }
    if (s != OTF2_SUCCESS) {
        OTF2_Reader_Close(reader);
        free(all);
        return ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open event files (%s)", t->path,
                            OTF2_Error_GetDescription(s));
    }
    OTF2_EvtReaderCallbacks *cbs = new_event_callbacks();
    load_scratch *scratch = scratch_new();
    if (!cbs || !scratch) {
        if (cbs)
            OTF2_EvtReaderCallbacks_Delete(cbs);
        scratch_free(scratch);
        OTF2_Reader_CloseEvtFiles(reader);
        OTF2_Reader_CloseDefFiles(reader);
        OTF2_Reader_Close(reader);
        free(all);
        return ws_error_nomem(err, "event callbacks");
    }
    uint64_t done = 0;
    for (uint32_t i = 0; i < n && rc == WS_OK; i++) {
        if (t->locations[locations[i]].loaded)
            continue;
        rc = read_location(t, reader, cbs, scratch, locations[i], progress, &done, total, err);
        if (rc == WS_OK && progress && progress->callback &&
            progress->callback(progress->context, "load", done, total))
            rc = ws_error_set(err, WS_ERR_INTERRUPTED, "loading interrupted");
    }
    scratch_free(scratch);
    OTF2_EvtReaderCallbacks_Delete(cbs);
    OTF2_Reader_CloseEvtFiles(reader);
    OTF2_Reader_CloseDefFiles(reader);
    OTF2_Reader_Close(reader);
    free(all);
    return rc;
}

/* ---- bare read (benchmark baseline) ------------------------------------- */

/* Collects the location ids while the global definitions are decoded; no
 * other definition record has a callback. */
typedef struct bare_defs {
    uint64_t *ids;
    size_t n, cap;
} bare_defs;

static OTF2_CallbackCode bare_on_location(void *user, OTF2_LocationRef self, OTF2_StringRef name,
                                          OTF2_LocationType type, uint64_t n_events, OTF2_LocationGroupRef group)
{
    (void)name;
    (void)type;
    (void)n_events;
    (void)group;
    bare_defs *d = user;
    if (ws_grow((void **)&d->ids, &d->cap, d->n + 1, sizeof *d->ids) != 0)
        return OTF2_CALLBACK_INTERRUPT;
    d->ids[d->n++] = self;
    return OTF2_CALLBACK_SUCCESS;
}

/* The file work of ws_otf2_open + ws_otf2_load_events (anchor, global
 * definitions once, then per location its local definitions and events),
 * decoded by OTF2 with callbacks that do nothing. */
int ws_otf2_bare_read(const char *path, uint64_t *n_records, ws_error *err)
{
    ws_otf2_silence();
    *n_records = 0;
    char *anchor = NULL;
    int rc = resolve_anchor(path, &anchor, err);
    if (rc)
        return rc;
    if ((rc = ws_otf2_check_anchor(anchor, err))) {
        free(anchor);
        return rc;
    }
    char *directory = archive_directory(anchor);
    if (!directory) {
        free(anchor);
        return ws_error_nomem(err, "path");
    }
    OTF2_Reader *reader = OTF2_Reader_Open(anchor);
    if (!reader) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: not a readable OTF2 anchor file", anchor);
        free(directory);
        free(anchor);
        return rc;
    }
    OTF2_Reader_SetSerialCollectiveCallbacks(reader);

    bare_defs d = {NULL, 0, 0};
    OTF2_ErrorCode s = OTF2_ERROR_MEM_ALLOC_FAILED;
    OTF2_GlobalDefReader *defs = OTF2_Reader_GetGlobalDefReader(reader);
    OTF2_GlobalDefReaderCallbacks *gcbs = OTF2_GlobalDefReaderCallbacks_New();
    if (defs && gcbs) {
        OTF2_GlobalDefReaderCallbacks_SetLocationCallback(gcbs, bare_on_location);
        s = OTF2_Reader_RegisterGlobalDefCallbacks(reader, defs, gcbs, &d);
        uint64_t n_defs = 0;
        if (s == OTF2_SUCCESS)
            s = OTF2_Reader_ReadAllGlobalDefinitions(reader, defs, &n_defs);
    }
    if (gcbs)
        OTF2_GlobalDefReaderCallbacks_Delete(gcbs);
    if (defs)
        OTF2_Reader_CloseGlobalDefReader(reader, defs);
    if (s != OTF2_SUCCESS)
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s.def (global definitions): %s", directory,
                          OTF2_Error_GetDescription(s));

    for (size_t i = 0; i < d.n && rc == WS_OK; i++)
        if (OTF2_Reader_SelectLocation(reader, d.ids[i]) != OTF2_SUCCESS)
            rc = ws_error_set(err, WS_ERR_FORMAT, "cannot select location %llu", (unsigned long long)d.ids[i]);
    if (rc == WS_OK) {
        OTF2_Reader_OpenDefFiles(reader);
        if (OTF2_Reader_OpenEvtFiles(reader) != OTF2_SUCCESS)
            rc = ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open event files", anchor);
    }
    OTF2_EvtReaderCallbacks *cbs = rc == WS_OK ? OTF2_EvtReaderCallbacks_New() : NULL;
    if (rc == WS_OK && !cbs)
        rc = ws_error_nomem(err, "event callbacks");
    for (size_t i = 0; i < d.n && rc == WS_OK; i++) {
        char *evt_path = location_file(directory, d.ids[i], "evt");
        char *def_path = location_file(directory, d.ids[i], "def");
        if (!evt_path || !def_path) {
            rc = ws_error_nomem(err, "path");
        } else if (!is_regular_file(evt_path)) {
            rc = ws_error_set(err, WS_ERR_IO, "%s: event file is missing", evt_path);
        } else {
            if (is_regular_file(def_path)) {
                OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader, d.ids[i]);
                if (dr) {
                    uint64_t nd = 0;
                    OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &nd);
                    OTF2_Reader_CloseDefReader(reader, dr);
                }
            }
            OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(reader, d.ids[i]);
            if (!er) {
                rc = ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open the event file", evt_path);
            } else {
                OTF2_EvtReader_SetCallbacks(er, cbs, NULL);
                uint64_t n = 0;
                s = OTF2_EvtReader_ReadEvents(er, OTF2_UNDEFINED_UINT64, &n);
                if (s != OTF2_SUCCESS)
                    rc = ws_error_set(err, WS_ERR_FORMAT, "%s: reading events failed: %s", evt_path,
                                      OTF2_Error_GetDescription(s));
                *n_records += n;
                OTF2_Reader_CloseEvtReader(reader, er);
            }
        }
        free(evt_path);
        free(def_path);
    }
    if (cbs)
        OTF2_EvtReaderCallbacks_Delete(cbs);
    OTF2_Reader_CloseEvtFiles(reader);
    OTF2_Reader_CloseDefFiles(reader);
    OTF2_Reader_Close(reader);
    free(d.ids);
    free(directory);
    free(anchor);
    return rc;
}
