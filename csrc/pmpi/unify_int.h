/* The parts of the unification (unify.c) that its OpenMP part
 * (unify_threads.c) shares. */
#ifndef WS_PMPI_UNIFY_INT_H
#define WS_PMPI_UNIFY_INT_H

#include <stdint.h>

#include "../common/error.h"
#include "../common/util.h"
#include "../trace/trace.h"
#include "rankfiles.h"
#include "rawtrace.h"

typedef struct ws_unify_builder {
    ws_trace *t;
    ws_error *err;
    uint32_t s_empty, s_mpi;
    /* OpenMP (unify_threads.c) */
    int openmp;            /* some process recorded OpenMP threads or constructs */
    uint32_t g_omp;        /* the group of every location (paradigm OpenMP) */
    uint32_t *position;    /* location index -> its place in that group */
    uint32_t **thread_loc; /* per rank, the location index of each thread of its rank file */
} ws_unify_builder;

int ws_unify_add_region(ws_unify_builder *b, const char *name, const char *canonical, uint8_t role,
                        uint8_t paradigm, uint32_t file, uint32_t *out);
int ws_unify_add_group(ws_unify_builder *b, uint8_t type, uint8_t paradigm, const char *name, uint64_t n,
                       uint32_t *out);
int ws_unify_add_comm(ws_unify_builder *b, const char *name, uint32_t group, uint32_t parent, uint32_t *out);

/* Every definition of the archive from the ranks' definition files (in
 * rank order, every rank present): regions, communicators, topologies,
 * the system tree and locations, and then ws_unify_threads. */
int ws_unify_definitions(ws_unify_builder *b, ws_rankfile *ranks, uint32_t n);
/* The ClockOffset records of every rank's clock measurements. */
int ws_unify_clock_offsets(ws_trace *t, const ws_rankfile *ranks, uint32_t size, double origin, ws_error *err);

/* After the MPI definitions: the OpenMP threads' locations, the
 * constructs' regions, Score-P's "Process x Thread" groups, communicator
 * and topology, the archive's WAITSCOPE::OPENMP property. */
int ws_unify_threads(ws_unify_builder *b, ws_rankfile *ranks, uint32_t n);
/* ---- teams (unify_teams.c) ---- */
typedef struct ws_team_member {
    uint64_t number;      /* the parallel region's number in the process */
    uint32_t index, slot; /* the thread's index in the team; its location slot */
} ws_team_member;

/* the distinct teams of one process, as slot lists, in the order of the
 * first parallel region (by number) that had each */
typedef struct ws_team_sets {
    ws_team_member *m; /* collected by ws_team_sets_scan */
    size_t n_m, cap_m;
    uint32_t n, n_slots;
    uint32_t *start, *size, *slots;
    ws_map64 of_region; /* parallel region number -> team */
} ws_team_sets;

void ws_team_sets_init(ws_team_sets *s);
void ws_team_sets_free(ws_team_sets *s);
/* the ThreadTeamBegin records of `raw` (of location `slot`); -1 out of memory */
int ws_team_sets_scan(ws_team_sets *s, const ws_raw_event *raw, uint64_t n, uint32_t slot);
int ws_team_sets_build(ws_team_sets *s);
/* One communicator per team, in order (comm_of[k]); locs: slot -> location index. */
int ws_unify_team_comms(ws_unify_builder *b, const uint32_t *locs, const uint32_t *start, const uint32_t *size,
                        const uint32_t *slots, uint32_t n, uint32_t *comm_of);
/* parallel region number -> communicator, into *teams */
int ws_unify_team_map(const ws_team_sets *s, const uint32_t *comm_of, ws_map64 *teams);
/* The index of the first team a thread file shows its thread in (its
 * OpenMP thread number), UINT32_MAX if none. */
uint32_t ws_first_team_index(const char *path);

/* The team communicators of one process's parallel regions from the
 * ThreadTeamBegin records of its locations (`n_locs` raw event arrays of
 * the locations `locs`): region number -> comm index, into *teams. */
int ws_unify_teams(ws_unify_builder *b, const ws_raw_event *const *raws, const uint64_t *ns, const uint32_t *locs,
                   uint32_t n_locs, ws_map64 *teams);
/* Converting one location's raw events into store rows, chunk by chunk. */
typedef struct ws_unify_conv {
    ws_trace *t;             /* definitions; call paths are added to it */
    const ws_rankfile *rf;   /* the location's process */
    const ws_map64 *teams;   /* its parallel regions' communicators */
    double origin;           /* ns on rank 0's clock of time 0 */
    uint64_t cap, cap_thr;   /* room in the rows being filled */
    uint32_t *stack;         /* open call paths */
    size_t cap_stack;
    uint32_t depth, open_team, forks;
    double last;
} ws_unify_conv;

static inline ws_unify_conv ws_unify_conv_init(ws_trace *t, const ws_rankfile *rf, const ws_map64 *teams, double origin)
{
    ws_unify_conv c = {t, rf, teams, origin, 0, 0, NULL, 0, 0, WS_NONE32, 0, 0.0};
    return c;
}

int ws_unify_convert(ws_unify_conv *c, const ws_raw_event *raw, uint64_t n, ws_events *ev, int close, ws_error *err);
/* The side columns of rows `ev` (events, messages, requests,
 * collectives: cap; thread records: cap_thr); -1 when out of memory. */
int ws_unify_columns(ws_events *ev, uint64_t cap, uint64_t cap_thr);

void ws_unify_threads_free(ws_unify_builder *b, uint32_t n_ranks);

#endif
