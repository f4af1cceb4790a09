/* Unification, the OpenMP part: the threads the OMPT tool recorded
 * (ompt.c) become what Score-P defines for a hybrid run.
 *
 *   locations  "OMP thread k" (OTF2 id k << 32 | rank) in the rank's
 *              process, k its index in the first team it was in (its
 *              OpenMP thread number), another free number if two threads
 *              of a process had the same;
 *   regions    the constructs (paradigm OpenMP, their roles), the lock
 *              calls with source file "OMP";
 *   groups     "PROCESSXTHREADS_GROUP_LOCATIONS" and "_GROUP" with the
 *              communicator "Process x Threads CPU Locations" and its
 *              Cartesian topology "Process x Thread"; "OpenMP", every
 *              location, whose places the team groups name;
 *   teams      one communicator per distinct set of threads a process's
 *              parallel regions had, its master first (unify_teams.c).
 *
 * The archive's property WAITSCOPE::OPENMP says whether OpenMP was
 * recorded, and if not why. */
#define _GNU_SOURCE
#include "unify_int.h"

#include <otf2/OTF2_Definitions.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOMEM(cond)                                                          \
    do {                                                                     \
        if (cond)                                                            \
            return ws_error_nomem(b->err, "definitions");                    \
    } while (0)

static int set_property(ws_unify_builder *b, const ws_rankfile *ranks, uint32_t n)
{
    const ws_rankfile *recorded = NULL, *no_tool = NULL, *off = NULL;
    for (uint32_t r = 0; r < n; r++) {
        if (ranks[r].openmp == WS_RANK_OPENMP_RECORDED && !recorded)
            recorded = &ranks[r];
        if (ranks[r].openmp == WS_RANK_OPENMP_NO_TOOL && !no_tool)
            no_tool = &ranks[r];
        if (ranks[r].openmp == WS_RANK_OPENMP_OFF && !off)
            off = &ranks[r];
    }
    char text[400];
    if (recorded)
        snprintf(text, sizeof text, "recorded through OMPT (%s)", recorded->openmp_text);
    else if (off)
        snprintf(text, sizeof text, "not recorded: recording OpenMP was turned off (%s)", off->openmp_text);
    else if (no_tool)
        snprintf(text, sizeof text,
                 "not recorded: the program's OpenMP runtime (%s) has no OpenMP tools interface (OMPT); run it "
                 "on LLVM's libomp",
                 no_tool->openmp_text);
    else
        return WS_OK;
    b->t->openmp_recording = ws_strdup(text);
    NOMEM(!b->t->openmp_recording);
    return WS_OK;
}

static int omp_regions(ws_unify_builder *b, ws_rankfile *ranks, uint32_t n)
{
    ws_trace *t = b->t;
    uint32_t s_omp = ws_trace_intern_string(t, "OMP");
    NOMEM(s_omp == WS_NONE32);
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t i = 0; i < ranks[r].n_omp_regions; i++) {
            ws_local_omp_region *g = &ranks[r].omp_regions[i];
            g->global = WS_NONE32;
            if (g->role < 0 || !g->name)
                continue;
            for (uint32_t k = 0; k < t->n_regions && g->global == WS_NONE32; k++)
                if (t->regions[k].paradigm == OTF2_PARADIGM_OPENMP && t->regions[k].role == (uint8_t)g->role &&
                    strcmp(ws_trace_string(t, t->regions[k].name), g->name) == 0)
                    g->global = k;
            int rc;
            if (g->global == WS_NONE32 &&
                (rc = ws_unify_add_region(b, g->name, g->name, (uint8_t)g->role, OTF2_PARADIGM_OPENMP,
                                          g->role == OTF2_REGION_ROLE_WRAPPER ? s_omp : WS_NONE32, &g->global)))
                return rc;
        }
    return WS_OK;
}

/* The index of the first team a thread's events show it in (its
 * OpenMP thread number), UINT32_MAX if none: read in blocks. */
uint32_t ws_first_team_index(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f)
        return UINT32_MAX;
    ws_raw_event buf[256];
    size_t got;
    uint32_t index = UINT32_MAX;
    while (index == UINT32_MAX && (got = fread(buf, sizeof buf[0], 256, f)) > 0)
        for (size_t i = 0; i < got && index == UINT32_MAX; i++)
            if (buf[i].kind == WS_EV_THREAD_TEAM_BEGIN)
                index = buf[i].tag;
    fclose(f);
    return index;
}

/* thread numbers of rank r: k[i] for ranks[r].threads[i] */
static int number_threads(const ws_rankfile *rf, uint32_t *k)
{
    for (uint32_t i = 0; i < rf->n_threads; i++) {
        uint32_t want;
        if (rf->thread_first) {
            want = rf->thread_first[i];
        } else {
            char *path = ws_rank_thread_path(rf, rf->threads[i]);
            if (!path)
                return -1;
            want = ws_first_team_index(path);
            free(path);
        }
        int taken = want == 0 || want >= (1u << 20);
        for (uint32_t j = 0; j < i && !taken; j++)
            taken = k[j] == want;
        k[i] = taken ? 0 : want;
    }
    for (uint32_t i = 0; i < rf->n_threads; i++) {
        if (k[i])
            continue;
        uint32_t c = 1;
        for (int clash = 1; clash; c += clash) {
            clash = 0;
            for (uint32_t j = 0; j < rf->n_threads && !clash; j++)
                clash = k[j] == c;
        }
        k[i] = c;
    }
    return 0;
}

static int thread_locations(ws_unify_builder *b, const ws_rankfile *ranks, uint32_t n, uint32_t **numbers)
{
    ws_trace *t = b->t;
    size_t total = t->n_locations;
    for (uint32_t r = 0; r < n; r++)
        total += ranks[r].n_threads;
    NOMEM(ws_grow((void **)&t->locations, &t->cap_locations, total, sizeof *t->locations) != 0);
    b->thread_loc = ws_calloc(n ? n : 1, sizeof *b->thread_loc);
    NOMEM(!b->thread_loc);
    for (uint32_t r = 0; r < n; r++) {
        const ws_rankfile *rf = &ranks[r];
        b->thread_loc[r] = ws_malloc_array(rf->n_threads ? rf->n_threads : 1, sizeof *b->thread_loc[r]);
        numbers[r] = ws_malloc_array(rf->n_threads ? rf->n_threads : 1, sizeof *numbers[r]);
        NOMEM(!b->thread_loc[r] || !numbers[r] || number_threads(rf, numbers[r]) != 0);
        for (uint32_t i = 0; i < rf->n_threads; i++) {
            char name[48];
            snprintf(name, sizeof name, "OMP thread %u", (unsigned)numbers[r][i]);
            uint32_t index = t->n_locations++;
            ws_location *l = &t->locations[index];
            memset(l, 0, sizeof *l);
            l->otf2_id = (uint64_t)numbers[r][i] << 32 | r;
            l->name = ws_trace_intern_string(t, name);
            l->type = OTF2_LOCATION_TYPE_CPU_THREAD;
            l->group = r;
            l->rank = WS_NONE32;
            l->process = r;
            l->thread = numbers[r][i];
            NOMEM(l->name == WS_NONE32 || ws_map64_put(&t->location_ids, l->otf2_id, index) != 0);
            b->thread_loc[r][i] = index;
        }
    }
    return WS_OK;
}

/* Score-P's groups of every location and "Process x Thread" */
static int process_x_thread(ws_unify_builder *b, const ws_rankfile *ranks, uint32_t n, uint32_t *const *numbers)
{
    ws_trace *t = b->t;
    uint32_t n_loc = t->n_locations, max_k = 0;
    uint32_t g_locs, g_pxt, c_pxt;
    int rc;
    if ((rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MEASUREMENT_SYSTEM,
                                 "PROCESSXTHREADS_GROUP_LOCATIONS", n_loc, &g_locs)) ||
        (rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MEASUREMENT_SYSTEM,
                                 "PROCESSXTHREADS_GROUP", n_loc, &g_pxt)) ||
        (rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_OPENMP, "OpenMP", n_loc,
                                 &b->g_omp)) ||
        (rc = ws_unify_add_comm(b, "Process x Threads CPU Locations", g_pxt, WS_NONE32, &c_pxt)))
        return rc;
    b->position = ws_malloc_array(n_loc ? n_loc : 1, sizeof *b->position);
    uint32_t *coords = ws_malloc_array(2 * (size_t)(n_loc ? n_loc : 1), sizeof *coords);
    NOMEM(!b->position || !coords);
    /* rank by rank: the master, then the threads by number */
    uint32_t p = 0;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t k_prev = 0;
        for (uint32_t done = 0; done <= ranks[r].n_threads; done++) {
            uint32_t loc = r, k = 0;
            if (done > 0) { /* the next thread by number */
                uint32_t best = UINT32_MAX;
                for (uint32_t i = 0; i < ranks[r].n_threads; i++)
                    if (numbers[r][i] > k_prev && (best == UINT32_MAX || numbers[r][i] < numbers[r][best]))
                        best = i;
                loc = b->thread_loc[r][best];
                k = numbers[r][best];
            }
            k_prev = k;
            b->position[loc] = p;
            t->groups[g_locs].members[p] = t->groups[b->g_omp].members[p] = t->locations[loc].otf2_id;
            t->groups[g_pxt].members[p] = p;
            coords[2 * p] = r;
            coords[2 * p + 1] = k;
            if (k > max_k)
                max_k = k;
            p++;
        }
    }
    NOMEM(ws_grow((void **)&t->cart_topologies, &t->cap_cart_topologies, (size_t)t->n_cart_topologies + 1,
                  sizeof *t->cart_topologies) != 0);
    NOMEM(ws_grow((void **)&t->cart_dims, &t->cap_cart_dims, (size_t)t->n_cart_dims + 2, sizeof *t->cart_dims) != 0);
    uint32_t ti = t->n_cart_topologies;
    ws_cart_topology *topo = &t->cart_topologies[ti];
    memset(topo, 0, sizeof *topo);
    topo->otf2_id = ti;
    topo->name = ws_trace_intern_string(t, "Process x Thread");
    topo->comm = c_pxt;
    topo->n_dims = 2;
    topo->dims = ws_malloc_array(2, sizeof *topo->dims);
    topo->n_ranks = n_loc;
    topo->coords = coords;
    NOMEM(topo->name == WS_NONE32 || !topo->dims || ws_map64_put(&t->cart_topology_ids, ti, ti) != 0);
    t->n_cart_topologies++;
    static const char *const dim_names[2] = {"Process", "Thread"};
    for (uint32_t d = 0; d < 2; d++) {
        ws_cart_dim *dim = &t->cart_dims[t->n_cart_dims];
        dim->name = ws_trace_intern_string(t, dim_names[d]);
        dim->size = d == 0 ? n : max_k + 1;
        dim->periodic = 0;
        NOMEM(dim->name == WS_NONE32 || ws_map64_put(&t->cart_dim_ids, t->n_cart_dims, t->n_cart_dims) != 0);
        topo->dims[d] = t->n_cart_dims++;
    }
    return WS_OK;
}

int ws_unify_threads(ws_unify_builder *b, ws_rankfile *ranks, uint32_t n)
{
    int rc = set_property(b, ranks, n);
    if (rc)
        return rc;
    b->openmp = 0;
    for (uint32_t r = 0; r < n; r++)
        b->openmp |= ranks[r].n_threads > 0 || ranks[r].n_omp_regions > 0;
    if (!b->openmp)
        return WS_OK;
    if ((rc = omp_regions(b, ranks, n)))
        return rc;
    uint32_t **numbers = ws_calloc(n ? n : 1, sizeof *numbers);
    NOMEM(!numbers);
    rc = thread_locations(b, ranks, n, numbers);
    if (rc == WS_OK)
        rc = process_x_thread(b, ranks, n, numbers);
    for (uint32_t r = 0; r < n; r++)
        free(numbers[r]);
    free(numbers);
    return rc;
}

void ws_unify_threads_free(ws_unify_builder *b, uint32_t n_ranks)
{
    if (b->thread_loc)
        for (uint32_t r = 0; r < n_ranks; r++)
            free(b->thread_loc[r]);
    free(b->thread_loc);
    free(b->position);
    b->thread_loc = NULL;
    b->position = NULL;
}
