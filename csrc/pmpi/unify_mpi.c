/* Unification at MPI_Finalize by every rank together, as Score-P's ranks
 * build their archive: no rank reads another rank's events.
 *
 *   1. Each rank reads its own definition file, finds its thread teams in
 *      its own event files (unify_teams.c) and adds them to the file.
 *   2. The definition files are exchanged (MPI_Allgatherv: O(log P)
 *      rounds) and every rank derives the same global definitions from
 *      them (unify.c, unify_threads.c, unify_teams.c): the same ids on
 *      every rank, so no mapping has to be sent back.  The origin of time
 *      is the earliest event of all (MPI_Allreduce).
 *   3. Each rank converts its own events to OTF2, a block at a time (its
 *      memory is bounded whatever the run's length), and writes its
 *      locations' event and local definition files; rank 0 writes the
 *      anchor and the global definitions with every location's number of
 *      events and the run's length (MPI_Reduce), through OTF2's collective
 *      callbacks (otf2_mpi.c).
 *
 * If any rank fails, all of them keep their per-rank files, from which
 * `waitscope trace` (or waitscope.pmpi.finish_trace) builds the archive in
 * one process afterwards (unify.c). */
#define _GNU_SOURCE
#include "unify_mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <otf2/OTF2_Definitions.h>

#include "../trace/otf2_io.h"
#include "manifest.h"
#include "otf2_mpi.h"
#include "unify_int.h"

#define BLOCK 16384 /* raw events converted at a time */

typedef struct part {
    MPI_Comm comm;
    int rank, size;
    ws_trace *t;
    ws_rankfile *me;
    uint32_t n_locs;
    uint32_t *locs; /* slot -> location index */
    char **paths;   /* slot -> event file */
    ws_map64 teams; /* parallel region number -> communicator */
    double origin;  /* ns on rank 0's clock of time 0 */
    /* the location being converted (WS_NONE32: none), its file while it is read */
    uint32_t current;
    FILE *file;
    ws_unify_conv conv;
    ws_raw_event *raw;
    ws_events rows;
    double end;
    uint64_t *counts; /* rank 0: events per location, for the manifest */
    ws_error *err;
} part;

/* ---- step 1: what this rank knows alone ----------------------------------- */

static int read_file(const char *path, ws_buffer *out, ws_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ws_error_set(err, WS_ERR_IO, "%s: cannot read", path);
    char chunk[4096];
    size_t got;
    int rc = WS_OK;
    while (rc == WS_OK && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (ws_buffer_append(out, chunk, got) != 0)
            rc = ws_error_nomem(err, "definitions");
    fclose(f);
    return rc;
}

/* The teams of this process's parallel regions and its threads' first team
 * indices, appended to its definition file. */
static int add_teams(part *p, ws_team_sets *sets)
{
    ws_rankfile *me = p->me;
    int rc = WS_OK;
    ws_raw_event *buf = malloc(BLOCK * sizeof *buf);
    if (!buf)
        return ws_error_nomem(p->err, "events");
    for (uint32_t s = 0; s < p->n_locs && rc == WS_OK; s++) {
        FILE *f = fopen(p->paths[s], "rb");
        if (!f)
            continue;
        size_t got;
        while (rc == WS_OK && (got = fread(buf, sizeof *buf, BLOCK, f)) > 0)
            if (ws_team_sets_scan(sets, buf, got, s) != 0)
                rc = ws_error_nomem(p->err, "definitions");
        fclose(f);
    }
    free(buf);
    if (rc == WS_OK && ws_team_sets_build(sets) != 0)
        rc = ws_error_nomem(p->err, "definitions");
    if (rc != WS_OK)
        return rc;
    FILE *f = fopen(me->defs, "a");
    if (!f)
        return ws_error_set(p->err, WS_ERR_IO, "%s: cannot append", me->defs);
    fprintf(f, "teams\n");
    for (uint32_t i = 0; i < me->n_threads; i++)
        fprintf(f, "threadfirst\t%u\t%u\n", (unsigned)me->threads[i], (unsigned)ws_first_team_index(p->paths[i + 1]));
    for (uint32_t k = 0; k < sets->n; k++) {
        fprintf(f, "teamset\t");
        for (uint32_t i = 0; i < sets->size[k]; i++)
            fprintf(f, "%s%u", i ? "," : "", (unsigned)sets->slots[sets->start[k] + i]);
        fprintf(f, "\n");
    }
    if (fclose(f) != 0)
        rc = ws_error_set(p->err, WS_ERR_IO, "%s: cannot append", me->defs);
    return rc;
}

/* ---- step 2: every rank's definitions ------------------------------------- */

static int gather_ranks(part *p, const char *text, size_t len, ws_rankfile *ranks)
{
    int n = (int)len; /* checked before the ranks agreed to go on */
    int *lens = malloc((size_t)p->size * sizeof *lens), *displs = malloc((size_t)p->size * sizeof *displs);
    char *all = NULL;
    int rc = lens && displs ? WS_OK : ws_error_nomem(p->err, "definitions");
    if (rc == WS_OK && PMPI_Allgather(&n, 1, MPI_INT, lens, 1, MPI_INT, p->comm) != MPI_SUCCESS)
        rc = ws_error_set(p->err, WS_ERR_MPI, "exchanging the definitions failed");
    long long total = 0;
    for (int r = 0; rc == WS_OK && r < p->size; r++) {
        displs[r] = (int)total;
        total += lens[r];
        if (total > 0x7fffffff)
            rc = ws_error_set(p->err, WS_ERR_ARGUMENT, "the ranks' definitions are too large to exchange");
    }
    if (rc == WS_OK && !(all = malloc(total ? (size_t)total : 1)))
        rc = ws_error_nomem(p->err, "definitions");
    if (rc == WS_OK &&
        PMPI_Allgatherv((void *)text, n, MPI_CHAR, all, lens, displs, MPI_CHAR, p->comm) != MPI_SUCCESS)
        rc = ws_error_set(p->err, WS_ERR_MPI, "exchanging the definitions failed");
    for (int r = 0; rc == WS_OK && r < p->size; r++) {
        ranks[r].defs = r == p->rank ? strdup(p->me->defs) : NULL;
        rc = ws_rankfile_parse(&ranks[r], all + displs[r], (size_t)lens[r], p->err);
        if (rc == WS_OK && (ranks[r].rank != r || ranks[r].size != p->size || !ranks[r].team_known))
            rc = ws_error_set(p->err, WS_ERR_FORMAT, "rank %d's definitions are not of this run", r);
    }
    free(all);
    free(lens);
    free(displs);
    return rc;
}

/* ---- step 3: this rank's events --------------------------------------------- */

static void rows_reset(ws_events *ev)
{
    ev->n = ev->n_messages = ev->n_requests = ev->n_collectives = ev->n_threads = 0;
}

/* the next block of rows of location `index` (ws_otf2_part.next) */
static int next_rows(void *context, uint32_t index, const ws_events **chunk, ws_error *err)
{
    part *p = context;
    *chunk = NULL;
    if (p->current != index) { /* a new location */
        uint32_t s = 0;
        while (s < p->n_locs && p->locs[s] != index)
            s++;
        if (s == p->n_locs)
            return ws_error_set(err, WS_ERR_INTERNAL, "location %u is not this rank's", (unsigned)index);
        p->current = index;
        free(p->conv.stack);
        p->conv = ws_unify_conv_init(p->t, p->me, &p->teams, p->origin);
        p->conv.cap = BLOCK + 258;
        p->conv.cap_thr = BLOCK + 2;
        p->file = fopen(p->paths[s], "rb"); /* none: a thread's file that never got events */
    }
    rows_reset(&p->rows);
    int rc = WS_OK;
    while (rc == WS_OK && p->rows.n == 0) {
        if (p->file) {
            size_t got = fread(p->raw, sizeof *p->raw, BLOCK, p->file);
            while (got > 0 && p->raw[got - 1].kind == 0)
                got--; /* the zeroed tail of an unfinished window */
            if (got == 0) {
                fclose(p->file);
                p->file = NULL;
                continue;
            }
            rc = ws_unify_convert(&p->conv, p->raw, got, &p->rows, 0, err);
            continue;
        }
        /* the file is read: close what the location left open, a block at a time */
        const ws_unify_conv *c = &p->conv;
        if (c->depth == 0 && c->open_team == WS_NONE32 && c->forks == 0) {
            p->current = WS_NONE32;
            return WS_OK; /* the location's last block was given */
        }
        rc = ws_unify_convert(&p->conv, NULL, 0, &p->rows, 1, err);
    }
    if (rc == WS_OK) {
        double last = p->rows.time[p->rows.n - 1];
        if (last > p->end)
            p->end = last;
        *chunk = &p->rows;
    }
    return rc;
}

static int agree(void *context, int rc)
{
    part *p = context;
    int worst = rc;
    if (PMPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, p->comm) != MPI_SUCCESS)
        return WS_ERR_MPI;
    return worst;
}

static int complete(void *context, ws_trace *t, uint64_t *counts, int rc)
{
    part *p = context;
    double end = 0.0;
    int root = p->rank == 0, n = (int)t->n_locations;
    if (PMPI_Reduce(&p->end, &end, 1, MPI_DOUBLE, MPI_MAX, 0, p->comm) != MPI_SUCCESS ||
        PMPI_Reduce(root ? MPI_IN_PLACE : (void *)counts, counts, n, MPI_UINT64_T, MPI_SUM, 0, p->comm) !=
            MPI_SUCCESS)
        rc = WS_ERR_MPI;
    if (root) {
        t->clock.length = (uint64_t)llround(end * 1e9) + 1;
        /* a copy for the manifest (none if out of memory) */
        p->counts = malloc((n ? (size_t)n : 1) * sizeof *p->counts);
        if (p->counts)
            memcpy(p->counts, counts, (size_t)n * sizeof *counts);
    }
    return agree(p, rc);
}

/* ---- the whole -------------------------------------------------------------- */

static int own_files(part *p)
{
    ws_rankfile *me = p->me;
    p->n_locs = 1 + me->n_threads;
    p->paths = calloc(p->n_locs, sizeof *p->paths);
    p->locs = calloc(p->n_locs, sizeof *p->locs);
    if (!p->paths || !p->locs)
        return ws_error_nomem(p->err, "paths");
    for (uint32_t s = 0; s < p->n_locs; s++)
        if (!(p->paths[s] = s == 0 ? strdup(me->evt) : ws_rank_thread_path(me, me->threads[s - 1])))
            return ws_error_nomem(p->err, "paths");
    return WS_OK;
}

/* step 2: the definitions, the teams of every rank, this rank's locations */
static int define(part *p, ws_unify_builder *b, ws_rankfile *ranks, const ws_team_sets *mine)
{
    int rc = ws_unify_definitions(b, ranks, (uint32_t)p->size);
    for (int r = 0; rc == WS_OK && b->openmp && r < p->size; r++) {
        const ws_rankfile *rf = &ranks[r];
        uint32_t *locs = malloc((1 + rf->n_threads) * sizeof *locs);
        uint32_t *comm_of = malloc((rf->n_team_sets ? rf->n_team_sets : 1) * sizeof *comm_of);
        rc = locs && comm_of ? WS_OK : ws_error_nomem(p->err, "definitions");
        for (uint32_t s = 0; rc == WS_OK && s <= rf->n_threads; s++)
            locs[s] = s == 0 ? (uint32_t)r : b->thread_loc[r][s - 1];
        if (rc == WS_OK)
            rc = ws_unify_team_comms(b, locs, rf->team_start, rf->team_size, rf->team_slots, rf->n_team_sets,
                                     comm_of);
        if (rc == WS_OK && r == p->rank) {
            if (mine->n != rf->n_team_sets)
                rc = ws_error_set(p->err, WS_ERR_INTERNAL, "the thread teams changed while unifying");
            else if (ws_unify_team_map(mine, comm_of, &p->teams) != 0)
                rc = ws_error_nomem(p->err, "definitions");
        }
        free(locs);
        free(comm_of);
    }
    for (uint32_t s = 0; rc == WS_OK && s < p->n_locs; s++)
        p->locs[s] = s == 0 ? (uint32_t)p->rank : b->thread_loc[p->rank][s - 1];
    return rc;
}

int ws_pmpi_unify_parallel(const char *dir, const char *defs_path, const char *evt_path, MPI_Comm comm,
                           ws_error *err)
{
    part p;
    memset(&p, 0, sizeof p);
    p.comm = comm;
    p.err = err;
    p.current = WS_NONE32;
    p.conv = ws_unify_conv_init(NULL, NULL, NULL, 0.0);
    ws_map64_init(&p.teams);
    PMPI_Comm_rank(comm, &p.rank);
    PMPI_Comm_size(comm, &p.size);
    ws_rankfile me, *ranks = calloc((size_t)p.size, sizeof *ranks);
    memset(&me, 0, sizeof me);
    me.defs = strdup(defs_path);
    me.evt = strdup(evt_path);
    p.me = &me;
    ws_team_sets sets;
    ws_team_sets_init(&sets);
    ws_unify_builder b;
    memset(&b, 0, sizeof b);
    b.err = err;
    ws_buffer text;
    ws_buffer_init(&text);
    char *anchor = ws_rank_path(dir, "traces.otf2");
    OTF2_CollectiveContext *ctx = ws_otf2_mpi_context(comm);

    /* step 1 */
    int rc = ranks && me.defs && me.evt && anchor && ctx ? WS_OK : ws_error_nomem(err, "definitions");
    if (rc == WS_OK)
        rc = ws_rankfile_read(&me, err);
    if (rc == WS_OK)
        rc = own_files(&p);
    if (rc == WS_OK)
        rc = add_teams(&p, &sets);
    if (rc == WS_OK)
        rc = read_file(me.defs, &text, err);
    if (rc == WS_OK && text.size > 0x7fffffff)
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "%s: definitions too large", me.defs);
    double origin = rc == WS_OK ? ws_rankfile_first_time(&me) : INFINITY, min_origin = INFINITY;
    rc = agree(&p, rc);
    /* step 2 */
    if (rc == WS_OK && PMPI_Allreduce(&origin, &min_origin, 1, MPI_DOUBLE, MPI_MIN, comm) != MPI_SUCCESS)
        rc = ws_error_set(err, WS_ERR_MPI, "exchanging the clocks failed");
    if (rc == WS_OK)
        rc = gather_ranks(&p, (const char *)text.data, text.size, ranks);
    if (rc == WS_OK && !(b.t = p.t = ws_trace_new()))
        rc = ws_error_nomem(err, "trace");
    if (rc == WS_OK)
        rc = define(&p, &b, ranks, &sets);
    if (rc == WS_OK) {
        origin = isfinite(min_origin) ? floor(min_origin) : 0.0;
        p.t->clock.offset = (uint64_t)origin;
        p.origin = origin;
        rc = ws_unify_clock_offsets(p.t, ranks, (uint32_t)p.size, origin, err);
    }
    if (rc == WS_OK) {
        p.me = &ranks[p.rank];
        p.raw = malloc(BLOCK * sizeof *p.raw);
        if (!p.raw || ws_unify_columns(&p.rows, BLOCK + 258, BLOCK + 2) != 0)
            rc = ws_error_nomem(err, "events");
    }
    rc = agree(&p, rc);
    /* step 3 */
    if (rc == WS_OK) {
        ws_otf2_part desc = {ws_otf2_mpi_callbacks(), NULL, ctx, p.rank == 0, p.locs, p.n_locs, &p,
                             next_rows, agree, complete};
        rc = ws_otf2_write_part(p.t, anchor, &desc, err);
    }
    if (p.file)
        fclose(p.file);
    if (rc == WS_OK && p.rank == 0 && p.counts) {
        ws_error merr;
        memset(&merr, 0, sizeof merr);
        ws_manifest_write(dir, p.t, ranks, (uint32_t)p.size, p.counts,
                          "written at MPI_Finalize by every rank together (each its own events)", &merr);
    }
    if (rc == WS_OK) {
        /* the archive is complete: this rank's files are no longer needed */
        for (uint32_t s = 0; s < p.n_locs; s++)
            unlink(p.paths[s]);
        unlink(me.defs);
    }
    free(p.conv.stack);
    free(p.counts);
    free(p.raw);
    ws_events_free(&p.rows);
    for (uint32_t s = 0; p.paths && s < p.n_locs; s++)
        free(p.paths[s]);
    free(p.paths);
    free(p.locs);
    ws_map64_free(&p.teams);
    ws_team_sets_free(&sets);
    ws_unify_threads_free(&b, (uint32_t)p.size);
    ws_trace_free(p.t);
    for (int r = 0; ranks && r < p.size; r++)
        ws_rankfile_free(&ranks[r]);
    free(ranks);
    ws_rankfile_free(&me);
    ws_buffer_free(&text);
    free(anchor);
    ws_otf2_mpi_context_free(ctx);
    return rc;
}
