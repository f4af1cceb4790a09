/* What-if simulation: new timestamps for a trace under a hypothesis
 * (balanced or scaled computation, another network), computed by a
 * forward replay that keeps every recorded operation and its order and
 * follows MPI's semantics at every synchronization point.  The method and
 * its rules are described in docs/simulate.md; the idea of re-enacting a
 * trace changed by an optimization hypothesis is seed 000's (section VI,
 * `000_2c0890e2e3cf66e6.txt`). */
#ifndef WS_ANALYSIS_SIMULATE_H
#define WS_ANALYSIS_SIMULATE_H

#include "../replay/replay.h"

enum ws_sim_network {
    WS_NET_RECORDED = 0, /* every MPI call keeps its recorded non-waiting time */
    WS_NET_MODEL = 1     /* transfers cost latency + bytes / bandwidth, nothing else */
};

/* Sends up to this many bytes are never taken as synchronous because
 * their completion recorded a Late Receiver (64 KiB, the largest default
 * eager limit of MPICH and Open MPI); MPI_Ssend/MPI_Issend always are. */
#define WS_SIM_EAGER_LIMIT 65536u

typedef struct ws_sim_options {
    const double *scale;     /* per call path: factor of its time (NULL: all 1) */
    const uint8_t *balance;  /* per call path: nonzero balances its visits (NULL: none) */
    int network;             /* enum ws_sim_network */
    double latency;          /* WS_NET_MODEL: seconds per transfer (>= 0) */
    double bandwidth;        /* WS_NET_MODEL: bytes per second (> 0, may be INFINITY) */
} ws_sim_options;

typedef struct ws_sim_stats {
    uint64_t sync_sends;      /* sends treated as synchronous (all processes) */
    uint64_t balanced_visits; /* visits whose work was balanced (all processes) */
    double recorded_end;      /* latest recorded event time (all processes) */
    double simulated_end;     /* latest simulated event time (all processes) */
} ws_sim_stats;

/* Simulates the given (local) locations over the transport; every
 * process of the replay calls it.  times[loc] receives a malloc'ed array
 * of the new event times of every local location (the caller frees
 * them); on failure none is left allocated. */
int ws_simulate(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_transport *tr, const ws_sim_options *o,
                const ws_progress *progress, double **times, ws_sim_stats *stats, ws_error *err);

#endif
