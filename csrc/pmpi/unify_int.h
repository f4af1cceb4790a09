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

/* After the MPI definitions: the OpenMP threads' locations, the
 * constructs' regions, Score-P's "Process x Thread" groups, communicator
 * and topology, the archive's WAITSCOPE::OPENMP property. */
int ws_unify_threads(ws_unify_builder *b, ws_rankfile *ranks, uint32_t n);
/* The team communicators of one process's parallel regions from the
 * ThreadTeamBegin records of its locations (`n_locs` raw event arrays of
 * the locations `locs`): region number -> comm index, into *teams. */
int ws_unify_teams(ws_unify_builder *b, const ws_raw_event *const *raws, const uint64_t *ns, const uint32_t *locs,
                   uint32_t n_locs, ws_map64 *teams);
void ws_unify_threads_free(ws_unify_builder *b, uint32_t n_ranks);

#endif
