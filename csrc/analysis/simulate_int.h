/* Internal to the what-if simulation (simulate.c: the forward replay
 * that computes the new times; simulate_prep.c: the balanced work per
 * visit and which sends are synchronous). */
#ifndef WS_ANALYSIS_SIMULATE_INT_H
#define WS_ANALYSIS_SIMULATE_INT_H

#include "simulate.h"

typedef struct sim_loc {
    double *time;        /* new event times (the result) */
    uint8_t *sync;       /* per message row: a synchronous send (known on both sides) */
    /* balanced visits of this location in the order of their Enter events */
    uint64_t n_visits, visit_pos;
    double *visit_factor; /* factor of the non-MPI time inside the visit */
    double *visit_extra;  /* work added at the visit's Leave (its own work was 0) */
    /* factors of the open regions (non-MPI time is scaled by the top) */
    double *fac, *extra;
    size_t depth, cap;
    /* the open outermost MPI call */
    uint32_t mpi_depth;
    uint64_t call_enter;  /* its Enter event */
    double E, En;         /* recorded and new Enter */
    double R, Rn;         /* recorded and new release: the latest constraint */
    double M;             /* network model: the new Leave */
    double s;             /* factor of its non-waiting time */
    int64_t last;         /* last event processed */
    /* a thread of an OpenMP team other than its master, at the fork site
     * (its Enter of the parallel region): the master's recorded and new
     * fork times, from which its part of the region starts */
    int fork_pending;
    double fork, new_fork;
} sim_loc;

typedef struct sim {
    const ws_trace *t;
    const ws_sync *sync;
    ws_sim_options o;
    const uint32_t *local;
    uint32_t n_local;
    sim_loc *locs;       /* indexed by location */
    uint8_t *cp_mpi;     /* per call path: a call with constraints (an MPI region or an OpenMP barrier) */
    uint8_t *cp_ssend;   /* per call path: MPI_Ssend / MPI_Issend */
    ws_sim_stats stats;
} sim;

/* simulate_prep.c */
int ws_sim_balance(sim *s, ws_transport *tr, ws_error *err);
/* handlers of the two sparse replays that decide the synchronous sends:
 * pass 1 (forward) decides at the receiver, pass 2 (backward) tells the sender */
void ws_sim_sync_handlers(sim *s, int pass, ws_handler *h);

#endif
