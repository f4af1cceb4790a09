/* Unification, the OpenMP teams: one communicator per distinct set of
 * threads a process's parallel regions had, its master first.  A team's
 * members are the ThreadTeamBegin records of one parallel region (the
 * region's number in the process, the thread's index in the team) on the
 * process's locations, named by slot: 0 its MPI thread, k its k-th thread
 * file.  The sets are found by the process alone (from its own files), the
 * communicators made wherever the definitions are built. */
#include "unify_int.h"

#include <otf2/OTF2_Definitions.h>
#include <stdlib.h>
#include <string.h>

void ws_team_sets_init(ws_team_sets *s)
{
    memset(s, 0, sizeof *s);
    ws_map64_init(&s->of_region);
}

void ws_team_sets_free(ws_team_sets *s)
{
    free(s->m);
    free(s->start);
    free(s->size);
    free(s->slots);
    ws_map64_free(&s->of_region);
    ws_team_sets_init(s);
}

int ws_team_sets_scan(ws_team_sets *s, const ws_raw_event *raw, uint64_t n, uint32_t slot)
{
    for (uint64_t e = 0; e < n; e++) {
        if (raw[e].kind != WS_EV_THREAD_TEAM_BEGIN)
            continue;
        if (ws_grow((void **)&s->m, &s->cap_m, s->n_m + 1, sizeof *s->m) != 0)
            return -1;
        s->m[s->n_m++] = (ws_team_member){raw[e].req, raw[e].tag, slot};
    }
    return 0;
}

static int by_region_then_index(const void *a, const void *b)
{
    const ws_team_member *x = a, *y = b;
    if (x->number != y->number)
        return x->number < y->number ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int ws_team_sets_build(ws_team_sets *s)
{
    size_t n = s->n_m;
    if (n == 0)
        return 0;
    qsort(s->m, n, sizeof *s->m, by_region_then_index);
    s->slots = ws_malloc_array(n, sizeof *s->slots);
    s->start = ws_malloc_array(n, sizeof *s->start);
    s->size = ws_malloc_array(n, sizeof *s->size);
    if (!s->slots || !s->start || !s->size)
        return -1;
    uint32_t used = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint32_t size = 0, *p = s->slots + used;
        for (; j < n && s->m[j].number == s->m[i].number; j++)
            if (size == 0 || s->m[j].slot != p[size - 1])
                p[size++] = s->m[j].slot;
        uint32_t team = UINT32_MAX;
        for (uint32_t k = 0; k < s->n && team == UINT32_MAX; k++)
            if (s->size[k] == size && memcmp(s->slots + s->start[k], p, size * sizeof *p) == 0)
                team = k;
        if (team == UINT32_MAX) {
            team = s->n++;
            s->start[team] = used;
            s->size[team] = size;
            used += size;
        }
        if (ws_map64_put(&s->of_region, s->m[i].number, team) != 0)
            return -1;
        i = j;
    }
    s->n_slots = used;
    free(s->m);
    s->m = NULL;
    s->n_m = s->cap_m = 0;
    return 0;
}

int ws_unify_team_comms(ws_unify_builder *b, const uint32_t *locs, const uint32_t *start, const uint32_t *size,
                        const uint32_t *slots, uint32_t n, uint32_t *comm_of)
{
    ws_trace *t = b->t;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t g, comm;
        int rc;
        if ((rc = ws_unify_add_group(b, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_OPENMP, "", size[k], &g)) ||
            (rc = ws_unify_add_comm(b, "", g, WS_NONE32, &comm)))
            return rc;
        for (uint32_t i = 0; i < size[k]; i++)
            t->groups[g].members[i] = b->position[locs[slots[start[k] + i]]];
        comm_of[k] = comm;
    }
    return WS_OK;
}

int ws_unify_teams(ws_unify_builder *b, const ws_raw_event *const *raws, const uint64_t *ns, const uint32_t *locs,
                   uint32_t n_locs, ws_map64 *teams)
{
    if (!b->openmp)
        return WS_OK;
    ws_team_sets s;
    ws_team_sets_init(&s);
    int rc = WS_OK;
    for (uint32_t i = 0; i < n_locs && rc == WS_OK; i++)
        if (ws_team_sets_scan(&s, raws[i], ns[i], i) != 0)
            rc = ws_error_nomem(b->err, "definitions");
    if (rc == WS_OK && ws_team_sets_build(&s) != 0)
        rc = ws_error_nomem(b->err, "definitions");
    uint32_t *comm_of = rc == WS_OK ? ws_malloc_array(s.n ? s.n : 1, sizeof *comm_of) : NULL;
    if (rc == WS_OK && !comm_of)
        rc = ws_error_nomem(b->err, "definitions");
    if (rc == WS_OK)
        rc = ws_unify_team_comms(b, locs, s.start, s.size, s.slots, s.n, comm_of);
    if (rc == WS_OK)
        rc = ws_unify_team_map(&s, comm_of, teams) == 0 ? WS_OK : ws_error_nomem(b->err, "definitions");
    free(comm_of);
    ws_team_sets_free(&s);
    return rc;
}

int ws_unify_team_map(const ws_team_sets *s, const uint32_t *comm_of, ws_map64 *teams)
{
    for (size_t j = 0; j < s->of_region.capacity; j++) {
        if (s->of_region.keys[j] == UINT64_MAX)
            continue;
        if (ws_map64_put(teams, s->of_region.keys[j], comm_of[s->of_region.values[j]]) != 0)
            return -1;
    }
    return 0;
}
