/* Internal to building the synchronization data: sync.c (matching, the
 * checks across locations) and sync_location.c (one location's pass). */
#ifndef WS_REPLAY_SYNC_INT_H
#define WS_REPLAY_SYNC_INT_H
#include "sync.h"

#include "../common/util.h"

/* Per-communicator state of one location while sites are built. */
typedef struct comm_counter {
    uint32_t rank;   /* rank of the location in the comm */
    uint32_t count;  /* collectives seen so far */
    int known;
} comm_counter;

/* the kind of MPI function a region is (WS_MPIFN_*) */
uint8_t ws_sync_classify_region(const ws_trace *t, const ws_region *r);
/* (communicator, location) -> rank, for every non-self communicator */
int ws_sync_rank_map(const ws_trace *t, ws_map64 *m);
/* the rank of `loc` in `comm` (as ws_comm_rank_of) */
uint32_t ws_sync_comm_rank(const ws_trace *t, const ws_map64 *ranks, uint32_t comm, uint32_t loc);
/* one location's pass: its messages, sites and synchronization events;
 * counts its MPI_Init and MPI_Finalize regions and, per communicator, its
 * collectives (comms) */
int ws_sync_build_location(const ws_trace *t, const ws_sync *sync, uint32_t loc, ws_loc_sync *s, uint64_t *init_count,
                           uint64_t *finalize_count, comm_counter *comms, const ws_map64 *ranks, ws_error *err);
#endif
