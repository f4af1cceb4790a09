/* Trace store -> OTF2 archive, with the OTF2 C writer API.
 *
 * The archive is written in the order Score-P uses: the events of every
 * location (one event writer at a time, so that memory stays bounded for
 * any number of locations), one local definition file per location
 * (holding only its ClockOffset records, if the store has any), then the
 * global definitions with the exact number of event records written per
 * location.  All identifiers are the OTF2 ids kept in
 * the store, so a trace read from an archive is written back unchanged.
 */
#include "otf2_io.h"
#include "otf2_write_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <unistd.h>

#include <otf2/otf2.h>

/* ---- paths --------------------------------------------------------------- */

/* Creates directory `dir` and its missing parents (like mkdir -p). */
static int make_directories(const char *dir, ws_error *err)
{
    char *p = ws_strdup(dir);
    if (!p)
        return ws_error_nomem(err, "path");
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    int rc = WS_OK;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char saved = *s;
        *s = '\0';
        struct stat st;
        if (stat(p, &st) != 0) {
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                rc = ws_error_set(err, WS_ERR_IO, "%s: cannot create the directory: %s", p, strerror(errno));
                break;
            }
        } else if (!S_ISDIR(st.st_mode)) {
            rc = ws_error_set(err, WS_ERR_IO, "%s: exists and is not a directory", p);
            break;
        }
        *s = saved;
        if (saved == '\0')
            break;
    }
    free(p);
    return rc;
}

static char *path_join(const char *a, const char *b, const char *suffix)
{
    size_t n = strlen(a) + strlen(b) + strlen(suffix) + 2;
    char *p = ws_malloc(n);
    if (p)
        snprintf(p, n, "%s/%s%s", a, b, suffix);
    return p;
}

/* Splits the user path into the archive directory and the archive name:
 * "dir/name.otf2" -> ("dir", "name"); "dir" -> ("dir", "traces"). */
static int split_path(const char *path, char **dir, char **name, ws_error *err)
{
    *dir = *name = NULL;
    size_t n = strlen(path);
    if (n > 5 && strcmp(path + n - 5, ".otf2") == 0) {
        const char *slash = strrchr(path, '/');
        const char *base = slash ? slash + 1 : path;
        size_t base_len = (size_t)(path + n - 5 - base);
        if (base_len == 0)
            return ws_error_set(err, WS_ERR_ARGUMENT, "%s: the anchor file needs a name before '.otf2'", path);
        if (!slash)
            *dir = ws_strdup(".");
        else if (slash == path)
            *dir = ws_strdup("/");
        else {
            *dir = ws_malloc((size_t)(slash - path) + 1);
            if (*dir) {
                memcpy(*dir, path, (size_t)(slash - path));
                (*dir)[slash - path] = '\0';
            }
        }
        *name = ws_malloc(base_len + 1);
        if (*name) {
            memcpy(*name, base, base_len);
            (*name)[base_len] = '\0';
        }
    } else {
        *dir = ws_strdup(path);
        *name = ws_strdup("traces");
    }
    if (!*dir || !*name) {
        free(*dir);
        free(*name);
        *dir = *name = NULL;
        return ws_error_nomem(err, "path");
    }
    return WS_OK;
}

/* Is `name` the name of a per-location file of an OTF2 archive
 * ("<digits>.evt", ".def", ".snap")? */
static int is_location_file(const char *name)
{
    const char *p = name;
    while (*p >= '0' && *p <= '9')
        p++;
    return p > name && (strcmp(p, ".evt") == 0 || strcmp(p, ".def") == 0 || strcmp(p, ".snap") == 0);
}

/* OTF2 refuses to create an archive over an existing one.  Overwriting is
 * allowed: the files of the old archive (anchor, global definitions and
 * the per-location files in its directory) are removed first.  Nothing
 * else is touched; if the location directory holds other files, writing
 * stops with an error. */
static int remove_old_archive(const char *dir, const char *name, ws_error *err)
{
    char *anchor = path_join(dir, name, ".otf2");
    char *defs = path_join(dir, name, ".def");
    char *locdir = path_join(dir, name, "");
    char *file = NULL;
    int rc = WS_OK;
    if (!anchor || !defs || !locdir) {
        rc = ws_error_nomem(err, "path");
        goto done;
    }
    struct stat st;
    if (lstat(anchor, &st) == 0 && unlink(anchor) != 0) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: cannot replace the existing anchor file: %s", anchor, strerror(errno));
        goto done;
    }
    if (lstat(defs, &st) == 0 && unlink(defs) != 0) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: cannot replace the existing definitions: %s", defs, strerror(errno));
        goto done;
    }
    if (lstat(locdir, &st) != 0)
        goto done;
    if (!S_ISDIR(st.st_mode)) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: exists and is not a directory", locdir);
        goto done;
    }
    DIR *d = opendir(locdir);
    if (!d) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: cannot list the old archive: %s", locdir, strerror(errno));
        goto done;
    }
    size_t n = strlen(locdir) + 300;
    file = ws_malloc(n);
    if (!file) {
        closedir(d);
        rc = ws_error_nomem(err, "path");
        goto done;
    }
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        if (!is_location_file(entry->d_name))
            continue;
        snprintf(file, n, "%s/%s", locdir, entry->d_name);
        if (unlink(file) != 0 && errno != ENOENT) {
            rc = ws_error_set(err, WS_ERR_IO, "%s: cannot replace the existing file: %s", file, strerror(errno));
            break;
        }
    }
    closedir(d);
    if (rc == WS_OK && rmdir(locdir) != 0)
        rc = ws_error_set(err, WS_ERR_IO,
                          "%s: cannot replace the old archive's location directory (%s); it holds files that are "
                          "not part of an OTF2 archive",
                          locdir, strerror(errno));
done:
    free(file);
    free(anchor);
    free(defs);
    free(locdir);
    return rc;
}

/* ---- OTF2 callbacks ------------------------------------------------------ */

static OTF2_FlushType pre_flush(void *user, OTF2_FileType type, OTF2_LocationRef location, void *caller, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    (void)caller;
    (void)final;
    return OTF2_FLUSH;
}

/* The memory of an event writer: OTF2 buffers up to 128 MiB per writer by
 * default; with these callbacks a writer's chunks are flushed to its file
 * once it holds EVENT_MEMORY bytes (a chunk is refused, OTF2 flushes and
 * frees them, then asks again).  Other files keep OTF2's way. */
#define EVENT_MEMORY (4u << 20)

typedef struct chunks {
    void **p;
    size_t n, cap;
} chunks;

static void *allocate_chunk(void *user, OTF2_FileType type, OTF2_LocationRef location, void **per_buffer,
                            uint64_t size)
{
    (void)user;
    (void)location;
    chunks *c = *per_buffer;
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return NULL;
        *per_buffer = c;
    }
    if (type == OTF2_FILETYPE_EVENTS && c->n > 0 && (c->n + 1) * size > EVENT_MEMORY)
        return NULL;
    if (ws_grow((void **)&c->p, &c->cap, c->n + 1, sizeof *c->p) != 0)
        return NULL;
    void *chunk = malloc(size);
    if (chunk)
        c->p[c->n++] = chunk;
    return chunk;
}

static void free_chunks(void *user, OTF2_FileType type, OTF2_LocationRef location, void **per_buffer, bool final)
{
    (void)user;
    (void)type;
    (void)location;
    chunks *c = *per_buffer;
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->p[i]);
    c->n = 0;
    if (final) {
        free(c->p);
        free(c);
        *per_buffer = NULL;
    }
}

static const OTF2_MemoryCallbacks memory_callbacks = {
    .otf2_allocate = allocate_chunk,
    .otf2_free_all = free_chunks,
};

static const OTF2_FlushCallbacks flush_callbacks = {
    .otf2_pre_flush = pre_flush,
    .otf2_post_flush = NULL, /* no BufferFlush record: the flushes of a conversion are not the run's */
};

/* ---- writer state -------------------------------------------------------- */


int ws_otf2w_fail(writer *w, OTF2_ErrorCode s, const char *what)
{
    return ws_error_set(w->err, WS_ERR_IO, "%s: writing %s failed (%s: %s)", w->anchor, what, OTF2_Error_GetName(s),
                        OTF2_Error_GetDescription(s));
}

OTF2_StringRef ws_otf2w_str_ref(const writer *w, uint32_t index)
{
    if (index == WS_NONE32 || index >= w->t->n_strings)
        return OTF2_UNDEFINED_STRING;
    return (OTF2_StringRef)w->string_id[index];
}

/* Inverts an (OTF2 id -> dense index) map into out[index] = id.  Every
 * index below n must be present. */
static int invert_map(const ws_map64 *m, uint32_t n, uint64_t *out, const char *what, ws_error *err)
{
    for (uint32_t i = 0; i < n; i++)
        out[i] = WS_NONE64;
    for (size_t j = 0; j < m->capacity; j++) {
        if (m->keys[j] == UINT64_MAX)
            continue;
        if (m->values[j] < n)
            out[m->values[j]] = m->keys[j];
    }
    for (uint32_t i = 0; i < n; i++)
        if (out[i] == WS_NONE64)
            return ws_error_set(err, WS_ERR_INTERNAL, "%s %u has no OTF2 identifier", what, (unsigned)i);
    return WS_OK;
}

/* ---- events -------------------------------------------------------------- */


static int write_location_events(writer *w, uint32_t index, const ws_progress *progress, uint64_t *done_events,
                                 uint64_t total, uint64_t *next_report)
{
    const ws_location *loc = &w->t->locations[index];
    OTF2_EvtWriter *ew = OTF2_Archive_GetEvtWriter(w->archive, loc->otf2_id);
    if (!ew)
        return ws_error_set(w->err, WS_ERR_IO, "%s: cannot open the event writer of location %llu", w->anchor,
                            (unsigned long long)loc->otf2_id);
    const ws_events *ev = &loc->events;
    int rc = WS_OK;
    if (loc->loaded && w->copies > 1) {
        /* the part before the body, the body `copies` times, the rest */
        uint64_t b0 = w->body[2 * (size_t)index], b1 = w->body[2 * (size_t)index + 1];
        rc = ws_otf2w_events(w, ew, loc, ev, 0, b0, 0, progress, done_events, total, next_report);
        for (uint32_t c = 0; c < w->copies && rc == WS_OK; c++)
            rc = ws_otf2w_events(w, ew, loc, ev, b0, b1, c * w->period, progress, done_events, total, next_report);
        if (rc == WS_OK)
            rc = ws_otf2w_events(w, ew, loc, ev, b1, ev->n, (uint64_t)(w->copies - 1) * w->period, progress,
                                 done_events, total, next_report);
    } else if (loc->loaded) {
        rc = ws_otf2w_events(w, ew, loc, ev, 0, ev->n, 0, progress, done_events, total, next_report);
    }
    OTF2_ErrorCode s = OTF2_Archive_CloseEvtWriter(w->archive, ew);
    if (rc == WS_OK && s != OTF2_SUCCESS)
        rc = ws_otf2w_fail(w, s, "events");
    return rc;
}

/* ---- global definitions -------------------------------------------------- */

#define CHECK(call, what)                      \
    do {                                       \
        OTF2_ErrorCode s__ = (call);           \
        if (s__ != OTF2_SUCCESS)               \
            return ws_otf2w_fail(w, s__, what);    \
    } while (0)

static uint64_t node_id(const ws_trace *t, uint32_t index)
{
    return index < t->n_system_nodes ? t->system_nodes[index].otf2_id : OTF2_UNDEFINED_SYSTEM_TREE_NODE;
}

/* The OTF2 id of the store's string `str` (OTF2_UNDEFINED_STRING: none). */
static OTF2_StringRef string_ref(const writer *w, const char *str)
{
    for (uint32_t i = 0; i < w->t->n_strings; i++)
        if (strcmp(w->t->strings[i], str) == 0)
            return (OTF2_StringRef)w->string_id[i];
    return OTF2_UNDEFINED_STRING;
}

static int write_definitions(writer *w, OTF2_GlobalDefWriter *gw, OTF2_StringRef mpi_name, int extra_mpi_string,
                             OTF2_StringRef omp_name, int extra_omp_string)
{
    const ws_trace *t = w->t;
    uint64_t length = t->clock.length + (w->copies > 1 ? (uint64_t)(w->copies - 1) * w->period : 0);
    CHECK(OTF2_GlobalDefWriter_WriteClockProperties(gw, t->clock.resolution, t->clock.offset, length,
                                                    t->clock.realtime),
          "clock properties");
    for (uint32_t i = 0; i < t->n_strings; i++)
        CHECK(OTF2_GlobalDefWriter_WriteString(gw, (OTF2_StringRef)w->string_id[i], t->strings[i]), "strings");
    if (extra_mpi_string)
        CHECK(OTF2_GlobalDefWriter_WriteString(gw, mpi_name, "MPI"), "strings");
    if (w->extra_program) {
        CHECK(OTF2_GlobalDefWriter_WriteString(gw, w->program_name_ref, w->program_stem), "strings");
        CHECK(OTF2_GlobalDefWriter_WriteString(gw, w->program_name, w->program_canonical), "strings");
    }
    if (extra_omp_string)
        CHECK(OTF2_GlobalDefWriter_WriteString(gw, omp_name, "OpenMP"), "strings");
    if (mpi_name != OTF2_UNDEFINED_STRING)
        CHECK(OTF2_GlobalDefWriter_WriteParadigm(gw, OTF2_PARADIGM_MPI, mpi_name, OTF2_PARADIGM_CLASS_PROCESS),
              "paradigm");
    if (omp_name != OTF2_UNDEFINED_STRING)
        CHECK(OTF2_GlobalDefWriter_WriteParadigm(gw, OTF2_PARADIGM_OPENMP, omp_name,
                                                 OTF2_PARADIGM_CLASS_THREAD_FORK_JOIN),
              "paradigm");
    for (uint32_t i = 0; i < t->n_system_nodes; i++) {
        const ws_system_node *n = &t->system_nodes[i];
        CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNode(gw, (OTF2_SystemTreeNodeRef)n->otf2_id, ws_otf2w_str_ref(w, n->name),
                                                       ws_otf2w_str_ref(w, n->class_name),
                                                       (OTF2_SystemTreeNodeRef)node_id(t, n->parent)),
              "system tree");
        /* the store keeps no domains; Score-P's classes imply them */
        const char *cls = ws_trace_string(t, n->class_name);
        if (strcmp(cls, "machine") == 0)
            CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(gw, (OTF2_SystemTreeNodeRef)n->otf2_id,
                                                                 OTF2_SYSTEM_TREE_DOMAIN_MACHINE),
                  "system tree");
        else if (strcmp(cls, "node") == 0)
            CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(gw, (OTF2_SystemTreeNodeRef)n->otf2_id,
                                                                 OTF2_SYSTEM_TREE_DOMAIN_SHARED_MEMORY),
                  "system tree");
    }
    for (uint32_t i = 0; i < t->n_location_groups; i++) {
        const ws_location_group *g = &t->location_groups[i];
        CHECK(OTF2_GlobalDefWriter_WriteLocationGroup(gw, (OTF2_LocationGroupRef)g->otf2_id, ws_otf2w_str_ref(w, g->name),
                                                      (OTF2_LocationGroupType)g->type,
                                                      (OTF2_SystemTreeNodeRef)node_id(t, g->system_node),
                                                      OTF2_UNDEFINED_LOCATION_GROUP),
              "location groups");
    }
    for (uint32_t i = 0; i < t->n_locations; i++) {
        const ws_location *l = &t->locations[i];
        if (l->group >= t->n_location_groups)
            return ws_error_set(w->err, WS_ERR_INTERNAL, "location %llu has no location group",
                                (unsigned long long)l->otf2_id);
        uint64_t n_events = ws_otf2w_event_count(w, i);
        CHECK(OTF2_GlobalDefWriter_WriteLocation(gw, (OTF2_LocationRef)l->otf2_id, ws_otf2w_str_ref(w, l->name),
                                                 (OTF2_LocationType)l->type, n_events,
                                                 (OTF2_LocationGroupRef)t->location_groups[l->group].otf2_id),
              "locations");
    }
    for (uint32_t i = 0; i < t->n_regions; i++) {
        const ws_region *r = &t->regions[i];
        CHECK(OTF2_GlobalDefWriter_WriteRegion(gw, (OTF2_RegionRef)r->otf2_id, ws_otf2w_str_ref(w, r->name),
                                               ws_otf2w_str_ref(w, r->canonical_name), ws_otf2w_str_ref(w, r->description),
                                               (OTF2_RegionRole)r->role, (OTF2_Paradigm)r->paradigm,
                                               (OTF2_RegionFlag)r->flags, ws_otf2w_str_ref(w, r->source_file), r->begin_line,
                                               r->end_line),
              "regions");
    }
    if (w->extra_program)
        CHECK(OTF2_GlobalDefWriter_WriteRegion(gw, w->program_region, w->program_name_ref, w->program_name,
                                               w->program_name_ref, OTF2_REGION_ROLE_ARTIFICIAL,
                                               OTF2_PARADIGM_MEASUREMENT_SYSTEM, OTF2_REGION_FLAG_NONE,
                                               OTF2_UNDEFINED_STRING, 0, 0),
              "regions");
    for (uint32_t i = 0; i < t->n_groups; i++) {
        const ws_group *g = &t->groups[i];
        if (g->n_members > UINT32_MAX)
            return ws_error_set(w->err, WS_ERR_ARGUMENT, "group %u has too many members for OTF2", (unsigned)i);
        CHECK(OTF2_GlobalDefWriter_WriteGroup(gw, (OTF2_GroupRef)g->otf2_id, ws_otf2w_str_ref(w, g->name),
                                              (OTF2_GroupType)g->type, (OTF2_Paradigm)g->paradigm,
                                              (OTF2_GroupFlag)g->flags, (uint32_t)g->n_members, g->members),
              "groups");
    }
    for (uint32_t i = 0; i < t->n_comms; i++) {
        const ws_comm *c = &t->comms[i];
        if (c->group >= t->n_groups)
            return ws_error_set(w->err, WS_ERR_INTERNAL, "communicator %u has no group", (unsigned)i);
        OTF2_CommRef parent = c->parent < t->n_comms ? (OTF2_CommRef)t->comms[c->parent].otf2_id : OTF2_UNDEFINED_COMM;
        CHECK(OTF2_GlobalDefWriter_WriteComm(gw, (OTF2_CommRef)c->otf2_id, ws_otf2w_str_ref(w, c->name),
                                             (OTF2_GroupRef)t->groups[c->group].otf2_id, parent, OTF2_COMM_FLAG_NONE),
              "communicators");
    }
    for (uint32_t i = 0; i < t->n_cart_dims; i++) {
        const ws_cart_dim *d = &t->cart_dims[i];
        CHECK(OTF2_GlobalDefWriter_WriteCartDimension(gw, (OTF2_CartDimensionRef)w->cart_dim_id[i],
                                                      ws_otf2w_str_ref(w, d->name), d->size,
                                                      d->periodic ? OTF2_CART_PERIODIC_TRUE : OTF2_CART_PERIODIC_FALSE),
              "Cartesian dimensions");
    }
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        const ws_cart_topology *k = &t->cart_topologies[i];
        if (k->n_dims > UINT8_MAX || k->comm >= t->n_comms)
            return ws_error_set(w->err, WS_ERR_ARGUMENT, "Cartesian topology %u cannot be written", (unsigned)i);
        OTF2_CartDimensionRef dims[UINT8_MAX];
        for (uint32_t d = 0; d < k->n_dims; d++) {
            if (k->dims[d] >= t->n_cart_dims)
                return ws_error_set(w->err, WS_ERR_INTERNAL, "Cartesian topology %u has an unknown dimension",
                                    (unsigned)i);
            dims[d] = (OTF2_CartDimensionRef)w->cart_dim_id[k->dims[d]];
        }
        CHECK(OTF2_GlobalDefWriter_WriteCartTopology(gw, (OTF2_CartTopologyRef)k->otf2_id, ws_otf2w_str_ref(w, k->name),
                                                     (OTF2_CommRef)t->comms[k->comm].otf2_id, (uint8_t)k->n_dims, dims),
              "Cartesian topologies");
    }
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        const ws_cart_topology *k = &t->cart_topologies[i];
        if (!k->coords)
            continue;
        for (uint32_t r = 0; r < k->n_ranks; r++) {
            const uint32_t *c = k->coords + (size_t)r * k->n_dims;
            int complete = 1;
            for (uint32_t d = 0; d < k->n_dims; d++)
                if (c[d] == WS_NONE32)
                    complete = 0;
            if (complete && k->n_dims)
                CHECK(OTF2_GlobalDefWriter_WriteCartCoordinate(gw, (OTF2_CartTopologyRef)k->otf2_id, r,
                                                               (uint8_t)k->n_dims, c),
                      "Cartesian coordinates");
        }
    }
    return WS_OK;
}

#undef CHECK

/* Score-P names the program in ProgramBegin with the canonical name of its
 * artificial measurement-system region for the program (the executable's
 * path).  The reader stores ProgramBegin and ProgramEnd as the Enter and
 * Leave of that region at the root of the call tree (or, when the archive
 * had no such region, as events of their own), so the name is recovered
 * from that region when present; without one, ws_otf2_write adds it
 * (Scalasca refuses archives without a program region).  Sets
 * w->program_region_index to its index (WS_NONE32: none). */
static OTF2_StringRef program_name(writer *w)
{
    const ws_trace *t = w->t;
    w->program_region_index = WS_NONE32;
    /* the region at the root of the call tree, when it is one */
    for (uint32_t c = 0; c < t->callpaths.n; c++) {
        uint32_t i = t->callpaths.region[c];
        if (t->callpaths.parent[c] != WS_NONE32 || i >= t->n_regions)
            continue;
        const ws_region *r = &t->regions[i];
        if (r->role == OTF2_REGION_ROLE_ARTIFICIAL && r->paradigm == OTF2_PARADIGM_MEASUREMENT_SYSTEM &&
            r->canonical_name != WS_NONE32) {
            w->program_region_index = i;
            return ws_otf2w_str_ref(w, r->canonical_name);
        }
    }
    /* else (ProgramBegin as an event of its own) Score-P's program region */
    for (uint32_t i = 0; i < t->n_regions; i++) {
        const ws_region *r = &t->regions[i];
        if (r->role == OTF2_REGION_ROLE_ARTIFICIAL && r->paradigm == OTF2_PARADIGM_MEASUREMENT_SYSTEM &&
            strcmp(ws_trace_string(t, r->name), "TRACE BUFFER FLUSH") != 0 && r->canonical_name != WS_NONE32) {
            w->program_region_index = i;
            return ws_otf2w_str_ref(w, r->canonical_name);
        }
    }
    return OTF2_UNDEFINED_STRING;
}

/* The events of the locations a part writes, chunk by chunk from its
 * source; their numbers into counts[]. */
static int write_part_events(writer *w, const ws_otf2_part *part, uint64_t *counts)
{
    int rc = WS_OK;
    for (uint32_t k = 0; k < part->n_locations && rc == WS_OK; k++) {
        uint32_t index = part->locations[k];
        if (index >= w->t->n_locations)
            return ws_error_set(w->err, WS_ERR_ARGUMENT, "location index %u out of range", (unsigned)index);
        const ws_location *loc = &w->t->locations[index];
        OTF2_EvtWriter *ew = OTF2_Archive_GetEvtWriter(w->archive, loc->otf2_id);
        if (!ew)
            return ws_error_set(w->err, WS_ERR_IO, "%s: cannot open the event writer of location %llu", w->anchor,
                                (unsigned long long)loc->otf2_id);
        uint64_t done = 0, next_report = UINT64_MAX;
        for (;;) {
            const ws_events *chunk = NULL;
            if ((rc = part->next(part->context, index, &chunk, w->err)) != WS_OK || !chunk)
                break;
            if ((rc = ws_otf2w_events(w, ew, loc, chunk, 0, chunk->n, 0, NULL, &done, 0, &next_report)) != WS_OK)
                break;
        }
        counts[index] = done;
        OTF2_ErrorCode s = OTF2_Archive_CloseEvtWriter(w->archive, ew);
        if (rc == WS_OK && s != OTF2_SUCCESS)
            rc = ws_otf2w_fail(w, s, "events");
    }
    return rc;
}

/* The local definitions of location `i`: its ClockOffset records. */
static int write_local_definitions(writer *w, uint32_t i)
{
    const ws_trace *t = w->t;
    OTF2_ErrorCode s;
    int rc = WS_OK;
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(w->archive, t->locations[i].otf2_id);
    if (!dw)
        return ws_error_set(w->err, WS_ERR_IO, "%s: cannot open the local definitions of location %llu", w->anchor,
                            (unsigned long long)t->locations[i].otf2_id);
    for (uint32_t k = 0; k < t->n_clock_offsets && rc == WS_OK; k++) {
        const ws_clock_offset *o = &t->clock_offsets[k];
        if (o->location == i &&
            (s = OTF2_DefWriter_WriteClockOffset(dw, ticks_of(t, o->time), o->offset, o->stddev)) != OTF2_SUCCESS)
            rc = ws_otf2w_fail(w, s, "clock offsets");
    }
    if ((s = OTF2_Archive_CloseDefWriter(w->archive, dw)) != OTF2_SUCCESS && rc == WS_OK)
        rc = ws_otf2w_fail(w, s, "local definitions");
    return rc;
}

/* This process's code, failed if `worst` (of all processes) says another failed. */
static int others_failed(int rc, int worst, ws_error *err)
{
    if (worst != WS_OK && rc == WS_OK)
        rc = ws_error_set(err, worst, "another process failed to write its part of the archive");
    return rc;
}

/* What every process of a part agrees on: the worst of their codes (a
 * failure anywhere fails all, so that none waits in a collective step the
 * others skip). */
static int agree(const ws_otf2_part *part, int rc, ws_error *err)
{
    return others_failed(rc, part->agree(part->context, rc), err);
}

/* A part of an archive that several processes write (ws_otf2_write_part):
 * every process takes each collective step of OTF2, whatever failed
 * before, and the root writes the global definitions once all agree. */
static int write_part(writer *w, ws_trace *t, const ws_otf2_part *part, OTF2_StringRef mpi_name, int extra_mpi_string,
                      OTF2_StringRef omp_name, int extra_omp_string)
{
    ws_error *err = w->err;
    uint64_t *counts = ws_calloc(t->n_locations, sizeof *counts);
    int rc = counts ? WS_OK : ws_error_nomem(err, "event counts");
    OTF2_ErrorCode s = OTF2_Archive_OpenEvtFiles(w->archive);
    if (rc == WS_OK && s != OTF2_SUCCESS)
        rc = ws_otf2w_fail(w, s, "event files");
    if (rc == WS_OK)
        rc = write_part_events(w, part, counts);
    s = OTF2_Archive_CloseEvtFiles(w->archive);
    if (rc == WS_OK && s != OTF2_SUCCESS)
        rc = ws_otf2w_fail(w, s, "event files");
    /* every process's event counts and clock to the root */
    rc = others_failed(rc, part->complete(part->context, t, counts, rc), err);
    s = OTF2_Archive_OpenDefFiles(w->archive);
    if (rc == WS_OK && s != OTF2_SUCCESS)
        rc = ws_otf2w_fail(w, s, "local definition files");
    for (uint32_t k = 0; k < part->n_locations && rc == WS_OK; k++)
        rc = write_local_definitions(w, part->locations[k]);
    s = OTF2_Archive_CloseDefFiles(w->archive);
    if (rc == WS_OK && s != OTF2_SUCCESS)
        rc = ws_otf2w_fail(w, s, "local definition files");
    rc = agree(part, rc, err);
    if (rc == WS_OK && part->root) {
        w->event_counts = counts;
        OTF2_GlobalDefWriter *gw = OTF2_Archive_GetGlobalDefWriter(w->archive);
        rc = gw ? write_definitions(w, gw, mpi_name, extra_mpi_string, omp_name, extra_omp_string)
                : ws_error_set(err, WS_ERR_IO, "%s: cannot open the global definition writer", w->anchor);
        w->event_counts = NULL;
    }
    free(counts);
    return rc;
}

static int write_archive(ws_trace *t, const char *path, const ws_progress *progress, const ws_otf2_part *part,
                         uint32_t copies, ws_error *err)
{
    if (!t)
        return ws_error_set(err, WS_ERR_ARGUMENT, "no trace to write");
    if (!path || !*path)
        return ws_error_set(err, WS_ERR_ARGUMENT, "empty output path");
    if (!t->clock.defined || t->clock.resolution == 0)
        return ws_error_set(err, WS_ERR_ARGUMENT, "%s: the trace has no clock definition (timer resolution)", path);
    if (t->n_locations == 0)
        return ws_error_set(err, WS_ERR_ARGUMENT, "%s: the trace defines no location", path);
    ws_otf2_silence();

    writer w;
    memset(&w, 0, sizeof w);
    w.t = t;
    w.err = err;
    w.copies = copies;
    char *dir = NULL, *name = NULL, *anchor = NULL;
    int rc = split_path(path, &dir, &name, err);
    if (rc)
        return rc;
    anchor = path_join(dir, name, ".otf2");
    if (!anchor) {
        rc = ws_error_nomem(err, "path");
        goto done;
    }
    w.anchor = anchor;
    if (!part || part->root)
        rc = make_directories(dir, err);
    if (rc == WS_OK && (!part || part->root))
        rc = remove_old_archive(dir, name, err);
    if (part)
        rc = agree(part, rc, err);
    if (rc == WS_OK && copies > 1)
        rc = ws_otf2w_repeat_plan(&w);
    if (rc)
        goto done;

    /* dense -> OTF2 ids of strings and Cartesian dimensions */
    w.string_id = ws_malloc_array(t->n_strings ? t->n_strings : 1, sizeof *w.string_id);
    w.cart_dim_id = ws_malloc_array(t->n_cart_dims ? t->n_cart_dims : 1, sizeof *w.cart_dim_id);
    if (!w.string_id || !w.cart_dim_id) {
        rc = ws_error_nomem(err, "identifier tables");
        goto done;
    }
    if ((rc = invert_map(&t->string_ids, t->n_strings, w.string_id, "string", err)) ||
        (rc = invert_map(&t->cart_dim_ids, t->n_cart_dims, w.cart_dim_id, "Cartesian dimension", err)))
        goto done;
    for (uint32_t i = 0; i < t->n_strings; i++)
        if (w.string_id[i] >= w.next_string)
            w.next_string = w.string_id[i] + 1;
    w.program_name = program_name(&w);

    /* the MPI paradigm is defined when MPI regions or MPI groups exist,
     * OpenMP's when OpenMP regions or groups do (as Score-P defines it for
     * hybrid runs); a name the store lacks gets a string of its own (MPI's
     * before the program's, OpenMP's after) */
    int mpi = t->has_mpi_paradigm, omp = 0;
    for (uint32_t i = 0; i < t->n_regions; i++) {
        mpi |= t->regions[i].paradigm == OTF2_PARADIGM_MPI;
        omp |= t->regions[i].paradigm == OTF2_PARADIGM_OPENMP;
    }
    for (uint32_t i = 0; i < t->n_groups; i++)
        omp |= t->groups[i].paradigm == OTF2_PARADIGM_OPENMP;
    OTF2_StringRef mpi_name = mpi ? string_ref(&w, "MPI") : OTF2_UNDEFINED_STRING;
    OTF2_StringRef omp_name = omp ? string_ref(&w, "OpenMP") : OTF2_UNDEFINED_STRING;
    int extra_mpi_string = mpi && mpi_name == OTF2_UNDEFINED_STRING;
    int extra_omp_string = omp && omp_name == OTF2_UNDEFINED_STRING;
    if (extra_mpi_string)
        mpi_name = (OTF2_StringRef)w.next_string;
    if (w.program_name == OTF2_UNDEFINED_STRING) {
        /* the program region the store lacks: named after the archive,
         * canonical name "/synthetic/<name>" (as waitscope.synth names its
         * programs), with the next free region id */
        w.extra_program = 1;
        w.program_stem = name;
        size_t len = strlen(name);
        w.program_canonical = ws_malloc(len + sizeof "/synthetic/");
        if (!w.program_canonical) {
            rc = ws_error_nomem(err, "program region");
            goto done;
        }
        memcpy(w.program_canonical, "/synthetic/", sizeof "/synthetic/" - 1);
        memcpy(w.program_canonical + sizeof "/synthetic/" - 1, name, len + 1);
        w.program_name_ref = (OTF2_StringRef)(w.next_string + (uint64_t)extra_mpi_string);
        w.program_name = w.program_name_ref + 1;
        uint64_t region = 0;
        for (uint32_t i = 0; i < t->n_regions; i++)
            if (t->regions[i].otf2_id >= region)
                region = t->regions[i].otf2_id + 1;
        w.program_region = (OTF2_RegionRef)region;
    }

    if (extra_omp_string)
        omp_name = (OTF2_StringRef)(w.next_string + (uint64_t)extra_mpi_string + 2u * (uint64_t)w.extra_program);

    /* a definition chunk must hold the largest group record */
    uint64_t largest = 0;
    for (uint32_t i = 0; i < t->n_groups; i++)
        if (t->groups[i].n_members > largest)
            largest = t->groups[i].n_members;
    if (t->n_locations > largest)
        largest = t->n_locations;
    uint64_t def_chunk = OTF2_CHUNK_SIZE_DEFINITIONS_DEFAULT;
    while (def_chunk < 16 * largest + 65536 && def_chunk < (16u << 20))
        def_chunk *= 2;
    if (def_chunk < 16 * largest + 65536) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "%s: a group of %llu members is too large for OTF2", anchor,
                          (unsigned long long)largest);
        goto done;
    }

    if (part && (rc = agree(part, rc, err)) != WS_OK)
        goto done;
    w.archive = OTF2_Archive_Open(dir, name, OTF2_FILEMODE_WRITE, OTF2_CHUNK_SIZE_EVENTS_DEFAULT, def_chunk,
                                  OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!w.archive) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: cannot create the OTF2 archive", anchor);
        goto done;
    }
    OTF2_ErrorCode s;
    if ((s = OTF2_Archive_SetFlushCallbacks(w.archive, &flush_callbacks, NULL)) != OTF2_SUCCESS ||
        (s = OTF2_Archive_SetMemoryCallbacks(w.archive, &memory_callbacks, NULL)) != OTF2_SUCCESS ||
        (s = part ? OTF2_Archive_SetCollectiveCallbacks(w.archive, part->callbacks, part->callback_data, part->comm,
                                                        NULL)
                  : OTF2_Archive_SetSerialCollectiveCallbacks(w.archive)) != OTF2_SUCCESS ||
        (s = OTF2_Archive_SetCreator(w.archive, "waitscope")) != OTF2_SUCCESS ||
        (t->cut_short_ranks && (s = OTF2_Archive_SetProperty(w.archive, "WAITSCOPE::CUT_SHORT_RANKS",
                                                             t->cut_short_ranks, true)) != OTF2_SUCCESS) ||
        (t->openmp_recording && (s = OTF2_Archive_SetProperty(w.archive, "WAITSCOPE::OPENMP", t->openmp_recording,
                                                              true)) != OTF2_SUCCESS)) {
        rc = ws_otf2w_fail(&w, s, "the archive header");
        goto done;
    }

    if (part) {
        rc = write_part(&w, t, part, mpi_name, extra_mpi_string, omp_name, extra_omp_string);
        s = OTF2_Archive_Close(w.archive);
        w.archive = NULL;
        if (rc == WS_OK && s != OTF2_SUCCESS)
            rc = ws_otf2w_fail(&w, s, "the archive");
        goto done;
    }

    /* events, one location at a time */
    if ((s = OTF2_Archive_OpenEvtFiles(w.archive)) != OTF2_SUCCESS) {
        rc = ws_otf2w_fail(&w, s, "event files");
        goto done;
    }
    uint64_t total = 0, written = 0, next_report = 1u << 20;
    for (uint32_t i = 0; i < t->n_locations; i++)
        total += ws_otf2w_event_count(&w, i);
    for (uint32_t i = 0; i < t->n_locations && rc == WS_OK; i++)
        rc = write_location_events(&w, i, progress, &written, total, &next_report);
    s = OTF2_Archive_CloseEvtFiles(w.archive);
    if (rc)
        goto done;
    if (s != OTF2_SUCCESS) {
        rc = ws_otf2w_fail(&w, s, "event files");
        goto done;
    }

    /* local definitions: one file per location, as Score-P writes, with
     * the location's ClockOffset records (if any) */
    if ((s = OTF2_Archive_OpenDefFiles(w.archive)) != OTF2_SUCCESS) {
        rc = ws_otf2w_fail(&w, s, "local definition files");
        goto done;
    }
    for (uint32_t i = 0; i < t->n_locations && rc == WS_OK; i++)
        rc = write_local_definitions(&w, i);
    s = OTF2_Archive_CloseDefFiles(w.archive);
    if (rc)
        goto done;
    if (s != OTF2_SUCCESS) {
        rc = ws_otf2w_fail(&w, s, "local definition files");
        goto done;
    }

    OTF2_GlobalDefWriter *gw = OTF2_Archive_GetGlobalDefWriter(w.archive);
    if (!gw) {
        rc = ws_error_set(err, WS_ERR_IO, "%s: cannot open the global definition writer", anchor);
        goto done;
    }
    if ((rc = write_definitions(&w, gw, mpi_name, extra_mpi_string, omp_name, extra_omp_string)))
        goto done;
    s = OTF2_Archive_Close(w.archive);
    w.archive = NULL;
    if (s != OTF2_SUCCESS)
        rc = ws_otf2w_fail(&w, s, "the archive");
    if (rc == WS_OK && progress && progress->callback &&
        progress->callback(progress->context, "write", written, total))
        rc = ws_error_set(err, WS_ERR_INTERRUPTED, "writing interrupted");

done:
    if (w.archive)
        OTF2_Archive_Close(w.archive);
    free(w.string_id);
    free(w.cart_dim_id);
    free(w.program_canonical);
    free(w.body);
    free(anchor);
    free(dir);
    free(name);
    return rc;
}

int ws_otf2_write(const ws_trace *t, const char *path, const ws_progress *progress, ws_error *err)
{
    return write_archive((ws_trace *)t, path, progress, NULL, 1, err);
}

int ws_otf2_write_repeated(const ws_trace *t, const char *path, uint32_t copies, const ws_progress *progress,
                           ws_error *err)
{
    if (copies == 0)
        return ws_error_set(err, WS_ERR_ARGUMENT, "the number of copies must be at least 1");
    return write_archive((ws_trace *)t, path, progress, NULL, copies, err);
}

int ws_otf2_write_part(ws_trace *t, const char *path, const ws_otf2_part *part, ws_error *err)
{
    if (!part || !part->callbacks || !part->next || !part->agree || !part->complete)
        return ws_error_set(err, WS_ERR_ARGUMENT, "an incomplete description of the archive's part");
    return write_archive(t, path, NULL, part, 1, err);
}
