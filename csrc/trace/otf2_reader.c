/* OTF2 archive -> trace store, with the OTF2 C reader API. */
#include "otf2_io.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <otf2/otf2.h>

/* OTF2 prints its errors to stderr unless a handler is registered.  The
 * core reports errors through ws_error instead, so this handler only
 * returns the code.  It keeps no state. */
static OTF2_ErrorCode silent_otf2_errors(void *user, const char *file, uint64_t line, const char *function,
                                         OTF2_ErrorCode code, const char *fmt, va_list va)
{
    (void)user;
    (void)file;
    (void)line;
    (void)function;
    (void)fmt;
    (void)va;
    return code;
}

void ws_otf2_silence(void);
void ws_otf2_silence(void)
{
    OTF2_Error_RegisterCallback(silent_otf2_errors, NULL);
}

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

/* Checks the first bytes of the anchor: an OTF2 anchor starts with a
 * one-byte header and an endianness mark, followed by "OTF2". */
static int check_anchor_magic(const char *anchor, ws_error *err)
{
    FILE *f = fopen(anchor, "rb");
    if (!f)
        return ws_error_set(err, WS_ERR_IO, "%s: %s", anchor, strerror(errno));
    char head[6] = {0};
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n < 6 || memcmp(head + 2, "OTF2", 4) != 0)
        return ws_error_set(err, WS_ERR_FORMAT, "%s: not an OTF2 anchor file", anchor);
    return WS_OK;
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
    if ((rc = check_anchor_magic(anchor, err))) {
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
    uint64_t n_read = 0;
    if (status == OTF2_SUCCESS)
        status = OTF2_Reader_ReadAllGlobalDefinitions(reader, defs, &n_read);
    OTF2_Reader_CloseGlobalDefReader(reader, defs);
    OTF2_Reader_Close(reader);

    if (ctx.base.failed) {
        rc = ws_error_prefix(err, "%s.def (global definitions)", t->directory);
    } else if (status != OTF2_SUCCESS) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s.def (global definitions): %s: %s", t->directory,
                          OTF2_Error_GetName(status), OTF2_Error_GetDescription(status));
    } else if (t->n_locations == 0) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s.def (global definitions): no location is defined", t->directory);
    } else {
        rc = finish_definitions(t, &ctx.coords, err);
        if (rc)
            ws_error_prefix(err, "%s.def (global definitions)", t->directory);
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

typedef struct evt_ctx {
    ws_trace *t;
    ws_location *loc;
    ws_events *ev;
    uint64_t cap;
    size_t cap_msg, cap_req, cap_coll;
    uint32_t *stack;
    size_t stack_cap;
    uint32_t depth;
    double inv_resolution;
    uint64_t offset;
    uint64_t last_ticks;
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
    uint64_t i = ev->n++;
    ev->time[i] = (double)(int64_t)(time - c->offset) * c->inv_resolution;
    ev->kind[i] = kind;
    ev->ref[i] = ref;
    return (int64_t)i;
}

static int lookup_region(evt_ctx *c, OTF2_RegionRef region, uint32_t *out)
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
    uint32_t r;
    if (lookup_region(c, region, &r))
        return OTF2_CALLBACK_INTERRUPT;
    uint32_t parent = c->depth ? c->stack[c->depth - 1] : WS_NONE32;
    uint32_t cp = ws_callpath_child(&c->t->callpaths, parent, r);
    if (cp == WS_NONE32)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory in the call-path tree");
    if (ws_grow((void **)&c->stack, &c->stack_cap, (size_t)c->depth + 1, sizeof *c->stack) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for the call stack");
    c->stack[c->depth++] = cp;
    return push_event(c, time, WS_EV_ENTER, cp) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode on_leave(OTF2_LocationRef location, OTF2_TimeStamp time, uint64_t pos, void *user,
                                  OTF2_AttributeList *attributes, OTF2_RegionRef region)
{
    (void)location;
    (void)pos;
    (void)attributes;
    evt_ctx *c = user;
    uint32_t r;
    if (lookup_region(c, region, &r))
        return OTF2_CALLBACK_INTERRUPT;
    if (c->depth == 0)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu leaves region '%s' that was never entered",
                 (unsigned long long)c->ev->n, ws_trace_string(c->t, c->t->regions[r].name));
    uint32_t cp = c->stack[c->depth - 1];
    if (c->t->callpaths.region[cp] != r)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu leaves region '%s' but '%s' is the innermost open region",
                 (unsigned long long)c->ev->n, ws_trace_string(c->t, c->t->regions[r].name),
                 ws_trace_string(c->t, c->t->regions[c->t->callpaths.region[cp]].name));
    c->depth--;
    return push_event(c, time, WS_EV_LEAVE, cp) < 0 ? OTF2_CALLBACK_INTERRUPT : OTF2_CALLBACK_SUCCESS;
}

static int map_comm(evt_ctx *c, OTF2_CommRef comm, uint32_t *out)
{
    uint64_t index;
    if (!ws_map64_get(&c->t->comm_ids, comm, &index)) {
        ws_error_set(c->err, WS_ERR_FORMAT, "event %llu refers to undefined communicator %u",
                     (unsigned long long)c->ev->n, (unsigned)comm);
        c->failed = 1;
        return -1;
    }
    *out = (uint32_t)index;
    return 0;
}

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
    uint64_t i = ev->n_messages;
    if (i + 1 > c->cap_msg) {
        size_t cap = c->cap_msg ? c->cap_msg * 2 : 256;
        size_t k = c->cap_msg;
        if (ws_grow((void **)&ev->msg_event, &k, cap, sizeof *ev->msg_event) ||
            (k = c->cap_msg, ws_grow((void **)&ev->msg_peer, &k, cap, sizeof *ev->msg_peer)) ||
            (k = c->cap_msg, ws_grow((void **)&ev->msg_comm, &k, cap, sizeof *ev->msg_comm)) ||
            (k = c->cap_msg, ws_grow((void **)&ev->msg_tag, &k, cap, sizeof *ev->msg_tag)) ||
            (k = c->cap_msg, ws_grow((void **)&ev->msg_bytes, &k, cap, sizeof *ev->msg_bytes)))
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for message records");
        c->cap_msg = cap;
    }
    int64_t e = push_event(c, time, kind, (uint32_t)i);
    if (e < 0)
        return OTF2_CALLBACK_INTERRUPT;
    ev->msg_event[i] = (uint32_t)e;
    ev->msg_peer[i] = peer;
    ev->msg_comm[i] = m;
    ev->msg_tag[i] = tag;
    ev->msg_bytes[i] = bytes;
    ev->n_messages++;
    return OTF2_CALLBACK_SUCCESS;
}

/* Records a request id; `event` is the index of an already pushed event
 * or -1 to push a new event of the given kind whose ref is the row. */
static OTF2_CallbackCode push_request(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint64_t request,
                                      int64_t event)
{
    ws_events *ev = c->ev;
    uint64_t i = ev->n_requests;
    if (i + 1 > c->cap_req) {
        size_t cap = c->cap_req ? c->cap_req * 2 : 256;
        size_t k = c->cap_req;
        if (ws_grow((void **)&ev->req_event, &k, cap, sizeof *ev->req_event) ||
            (k = c->cap_req, ws_grow((void **)&ev->req_id, &k, cap, sizeof *ev->req_id)))
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for request records");
        c->cap_req = cap;
    }
    if (event < 0) {
        event = push_event(c, time, kind, (uint32_t)i);
        if (event < 0)
            return OTF2_CALLBACK_INTERRUPT;
    }
    ev->req_event[i] = (uint32_t)event;
    ev->req_id[i] = request;
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
    uint64_t i = ev->n_collectives;
    if (i + 1 > c->cap_coll) {
        size_t cap = c->cap_coll ? c->cap_coll * 2 : 64;
        size_t k = c->cap_coll;
        if (ws_grow((void **)&ev->coll_event, &k, cap, sizeof *ev->coll_event) ||
            (k = c->cap_coll, ws_grow((void **)&ev->coll_comm, &k, cap, sizeof *ev->coll_comm)) ||
            (k = c->cap_coll, ws_grow((void **)&ev->coll_root, &k, cap, sizeof *ev->coll_root)) ||
            (k = c->cap_coll, ws_grow((void **)&ev->coll_op, &k, cap, sizeof *ev->coll_op)) ||
            (k = c->cap_coll, ws_grow((void **)&ev->coll_sent, &k, cap, sizeof *ev->coll_sent)) ||
            (k = c->cap_coll, ws_grow((void **)&ev->coll_received, &k, cap, sizeof *ev->coll_received)))
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for collective records");
        c->cap_coll = cap;
    }
    int64_t e = push_event(c, time, WS_EV_COLL_END, (uint32_t)i);
    if (e < 0)
        return OTF2_CALLBACK_INTERRUPT;
    ev->coll_event[i] = (uint32_t)e;
    ev->coll_comm[i] = m;
    ev->coll_root[i] = (root == OTF2_UNDEFINED_UINT32) ? WS_NONE32 : root;
    ev->coll_op[i] = op;
    ev->coll_sent[i] = sent;
    ev->coll_received[i] = received;
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

/* Shrinks the arrays of a finished location to their exact size. */
static void shrink_events(ws_events *ev)
{
#define SHRINK(field, n)                                                       \
    do {                                                                       \
        if (ev->field) {                                                       \
            void *p__ = realloc(ev->field, (size_t)(n) * sizeof *ev->field + 1); \
            if (p__)                                                           \
                ev->field = p__;                                               \
        }                                                                      \
    } while (0)
    SHRINK(time, ev->n);
    SHRINK(kind, ev->n);
    SHRINK(ref, ev->n);
    SHRINK(msg_event, ev->n_messages);
    SHRINK(msg_peer, ev->n_messages);
    SHRINK(msg_comm, ev->n_messages);
    SHRINK(msg_tag, ev->n_messages);
    SHRINK(msg_bytes, ev->n_messages);
    SHRINK(req_event, ev->n_requests);
    SHRINK(req_id, ev->n_requests);
    SHRINK(coll_event, ev->n_collectives);
    SHRINK(coll_comm, ev->n_collectives);
    SHRINK(coll_root, ev->n_collectives);
    SHRINK(coll_op, ev->n_collectives);
    SHRINK(coll_sent, ev->n_collectives);
    SHRINK(coll_received, ev->n_collectives);
#undef SHRINK
}

/* Makes sure every column of an empty location is a valid pointer. */
static int ensure_columns(ws_events *ev)
{
#define ENSURE(field)                          \
    do {                                       \
        if (!ev->field) {                      \
            ev->field = calloc(1, sizeof *ev->field); \
            if (!ev->field)                    \
                return -1;                     \
        }                                      \
    } while (0)
    ENSURE(time);
    ENSURE(kind);
    ENSURE(ref);
    ENSURE(msg_event);
    ENSURE(msg_peer);
    ENSURE(msg_comm);
    ENSURE(msg_tag);
    ENSURE(msg_bytes);
    ENSURE(req_event);
    ENSURE(req_id);
    ENSURE(coll_event);
    ENSURE(coll_comm);
    ENSURE(coll_root);
    ENSURE(coll_op);
    ENSURE(coll_sent);
    ENSURE(coll_received);
#undef ENSURE
    return 0;
}

static char *location_file(const ws_trace *t, const ws_location *l, const char *suffix)
{
    size_t n = strlen(t->directory) + 48;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%llu.%s", t->directory, (unsigned long long)l->otf2_id, suffix);
    return p;
}

static int read_location(ws_trace *t, OTF2_Reader *reader, OTF2_EvtReaderCallbacks *cbs, uint32_t index,
                         const ws_progress *progress, uint64_t *done, uint64_t total, ws_error *err)
{
    ws_location *loc = &t->locations[index];
    char *evt_path = location_file(t, loc, "evt");
    char *def_path = location_file(t, loc, "def");
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

    OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(reader, loc->otf2_id);
    if (!er) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: cannot open the event file", evt_path);
        goto done;
    }
    c.t = t;
    c.loc = loc;
    c.ev = &loc->events;
    c.err = err;
    c.inv_resolution = 1.0 / (double)t->clock.resolution;
    c.offset = t->clock.offset;
    c.last_ticks = 0;
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
        rc = ws_error_prefix(err, "%s", evt_path);
        goto done;
    }
    if (s != OTF2_SUCCESS) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: corrupted or truncated event file (%s: %s)", evt_path,
                          OTF2_Error_GetName(s), OTF2_Error_GetDescription(s));
        goto done;
    }
    if (c.depth != 0) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s: %u region(s) are still open at the end of the events: the file is truncated",
                          evt_path, (unsigned)c.depth);
        goto done;
    }
    if (records != loc->n_events_defined) {
        rc = ws_error_set(err, WS_ERR_FORMAT,
                          "%s: %llu event records read but the definitions announce %llu: the file is truncated "
                          "or does not belong to this archive",
                          evt_path, (unsigned long long)records, (unsigned long long)loc->n_events_defined);
        goto done;
    }
    c.ev->n_skipped = records - c.ev->n;
    shrink_events(c.ev);
    if (ensure_columns(c.ev) != 0) {
        rc = ws_error_nomem(err, "events");
        goto done;
    }
    loc->loaded = 1;
    t->n_events += c.ev->n;

done:
    if (rc != WS_OK)
        ws_events_free(&loc->events);
    free(c.stack);
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
    if (!cbs) {
        OTF2_Reader_Close(reader);
        free(all);
        return ws_error_nomem(err, "event callbacks");
    }
    uint64_t done = 0;
    for (uint32_t i = 0; i < n && rc == WS_OK; i++) {
        if (t->locations[locations[i]].loaded)
            continue;
        rc = read_location(t, reader, cbs, locations[i], progress, &done, total, err);
        if (rc == WS_OK && progress && progress->callback &&
            progress->callback(progress->context, "load", done, total))
            rc = ws_error_set(err, WS_ERR_INTERRUPTED, "loading interrupted");
    }
    OTF2_EvtReaderCallbacks_Delete(cbs);
    OTF2_Reader_CloseEvtFiles(reader);
    OTF2_Reader_CloseDefFiles(reader);
    OTF2_Reader_Close(reader);
    free(all);
    return rc;
}

/* ---- bare read (benchmark baseline) ------------------------------------- */

int ws_otf2_bare_read(const char *path, uint64_t *n_records, ws_error *err)
{
    ws_otf2_silence();
    *n_records = 0;
    char *anchor = NULL;
    int rc = resolve_anchor(path, &anchor, err);
    if (rc)
        return rc;
    OTF2_Reader *reader = OTF2_Reader_Open(anchor);
    if (!reader) {
        rc = ws_error_set(err, WS_ERR_FORMAT, "%s: not a readable OTF2 anchor file", anchor);
        free(anchor);
        return rc;
    }
    OTF2_Reader_SetSerialCollectiveCallbacks(reader);
    uint64_t n_locations = 0;
    OTF2_Reader_GetNumberOfLocations(reader, &n_locations);
    /* location ids come from the definitions: read them with a minimal
     * callback set */
    ws_trace *t = NULL;
    rc = ws_otf2_open(anchor, &t, err);
    if (rc) {
        OTF2_Reader_Close(reader);
        free(anchor);
        return rc;
    }
    for (uint32_t i = 0; i < t->n_locations; i++)
        OTF2_Reader_SelectLocation(reader, t->locations[i].otf2_id);
    OTF2_Reader_OpenDefFiles(reader);
    OTF2_Reader_OpenEvtFiles(reader);
    OTF2_EvtReaderCallbacks *cbs = OTF2_EvtReaderCallbacks_New();
    for (uint32_t i = 0; i < t->n_locations && rc == WS_OK; i++) {
        OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader, t->locations[i].otf2_id);
        if (dr) {
            uint64_t nd;
            OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &nd);
            OTF2_Reader_CloseDefReader(reader, dr);
        }
        OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(reader, t->locations[i].otf2_id);
        if (!er) {
            rc = ws_error_set(err, WS_ERR_FORMAT, "cannot open events of location %u", (unsigned)i);
            break;
        }
        OTF2_EvtReader_SetCallbacks(er, cbs, NULL);
        uint64_t n = 0;
        OTF2_ErrorCode s = OTF2_EvtReader_ReadEvents(er, OTF2_UNDEFINED_UINT64, &n);
        if (s != OTF2_SUCCESS)
            rc = ws_error_set(err, WS_ERR_FORMAT, "reading events failed: %s", OTF2_Error_GetDescription(s));
        *n_records += n;
        OTF2_Reader_CloseEvtReader(reader, er);
    }
    OTF2_EvtReaderCallbacks_Delete(cbs);
    OTF2_Reader_CloseEvtFiles(reader);
    OTF2_Reader_CloseDefFiles(reader);
    OTF2_Reader_Close(reader);
    ws_trace_free(t);
    free(anchor);
    return rc;
}
