/* Call-path unification and the communicator layout of the parallel mode
 * (see parallel.h). */
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

#include "../waitscope.h"

int ws_comm_layout_of(const ws_trace *t, ws_comm_layout *out, ws_error *err)
{
    memset(out, 0, sizeof *out);
    out->n_locations = t->n_locations;
    out->n_comms = t->n_comms;
    out->comms = ws_calloc(t->n_comms ? t->n_comms : 1, sizeof *out->comms);
    if (!out->comms)
        return ws_error_nomem(err, "the communicator layout");
    for (uint32_t c = 0; c < t->n_comms; c++) {
        const ws_comm *cm = &t->comms[c];
        out->comms[c].size = cm->is_self ? 0 : cm->size;
        out->comms[c].rank_location = cm->is_self ? NULL : cm->rank_location;
    }
    return WS_OK;
}

void ws_comm_layout_free(ws_comm_layout *layout)
{
    if (layout) {
        free(layout->comms);
        layout->comms = NULL;
        layout->n_comms = 0;
    }
}

/* Every process built its own call-path tree while loading its
 * locations.  The trees are merged in process order, which is the order
 * of the locations (blocks are contiguous), so the ids are those a single
 * process loading all locations would create. */
int ws_unify_callpaths(ws_trace *t, ws_transport *tr, ws_error *err)
{
    if (!t || !tr)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_unify_callpaths: %s is NULL", t ? "transport" : "trace");
    ws_callpaths *cp = &t->callpaths;
    uint32_t n = cp->n;
    uint32_t nprocs = tr->n_processes ? tr->n_processes : 1;
    uint32_t *mine = ws_malloc_array(n ? n : 1, 2 * sizeof *mine);
    size_t *sizes = ws_calloc(nprocs, sizeof *sizes);
    uint32_t *all = NULL, *map = NULL, *my_map = NULL;
    ws_callpaths g;
    memset(&g, 0, sizeof g);
    ws_map64_init(&g.index);
    int failed = !mine || !sizes, rc;
    if (failed)
        ws_error_nomem(err, "call-path unification");
    /* a process that ran out of memory still takes part in the gather
     * (with nothing), which then fails on every process */
    if (!failed)
        for (uint32_t i = 0; i < n; i++) {
            mine[2 * i] = cp->parent[i];
            mine[2 * i + 1] = cp->region[i];
        }
    if (tr->ops->agree(tr, failed, err)) {
        rc = err->code ? err->code : WS_ERR_INTERNAL;
        goto done;
    }
    void *gathered = NULL;
    rc = tr->ops->gather(tr, mine, (size_t)n * 2 * sizeof *mine, 1, &gathered, sizes, err);
    if (rc != WS_OK)
        goto done;
    all = gathered;
    size_t offset = 0;
    for (uint32_t p = 0; p < nprocs && rc == WS_OK; p++) {
        size_t np = sizes[p] / (2 * sizeof *all);
        free(map);
        map = ws_malloc_array(np ? np : 1, sizeof *map);
        if (!map) {
            rc = ws_error_nomem(err, "call-path unification");
            break;
        }
        for (size_t i = 0; i < np; i++) {
            uint32_t parent = all[offset + 2 * i], region = all[offset + 2 * i + 1];
            if (parent != WS_NONE32 && parent >= i) {
                rc = ws_error_set(err, WS_ERR_INTERNAL, "process %u: call path %zu has a later parent", (unsigned)p,
                                  i);
                break;
            }
            uint32_t id = ws_callpath_child(&g, parent == WS_NONE32 ? WS_NONE32 : map[parent], region);
            if (id == WS_NONE32) {
                rc = ws_error_nomem(err, "call-path unification");
                break;
            }
            map[i] = id;
        }
        offset += 2 * np;
        if (p == tr->process) {
            my_map = map;
            map = NULL;
        }
    }
    /* a failure on one process (memory) is a failure on all */
    if (tr->ops->agree(tr, rc != WS_OK, err)) {
        rc = err->code ? err->code : WS_ERR_INTERNAL;
        goto done;
    }
    /* renumber the local events */
    for (uint32_t l = 0; l < t->n_locations; l++) {
        ws_events *e = &t->locations[l].events;
        if (!t->locations[l].loaded)
            continue;
        for (uint64_t i = 0; i < e->n; i++)
            if (e->kind[i] == WS_EV_ENTER || e->kind[i] == WS_EV_LEAVE)
                e->ref[i] = my_map[e->ref[i]];
    }
    ws_callpaths_free(cp);
    *cp = g;
    memset(&g, 0, sizeof g);
done:
    free(mine);
    free(sizes);
    free(all);
    free(map);
    free(my_map);
    ws_callpaths_free(&g);
    return rc;
}
