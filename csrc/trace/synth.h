/* Synthetic MPI programs: executes a per-rank list of operations with MPI
 * blocking semantics and a simple cost model and builds a trace store
 * that looks like one Score-P writes (see pkg/waitscope/synth.py for the
 * timing model).
 *
 * The program is given as packed arrays: for every rank a contiguous run
 * of operation rows of WS_SYNTH_FIELDS int64 values
 *     (kind, a, b, size, comm)
 * whose meaning depends on the kind (below).  `comm` is 0 for
 * MPI_COMM_WORLD and i >= 1 for sub-communicator i - 1; peers and roots
 * are ranks within that communicator.
 */
#ifndef WS_TRACE_SYNTH_H
#define WS_TRACE_SYNTH_H

#include "otf2_io.h"

enum ws_synth_op {
    WS_SYNTH_COMPUTE = 1,   /* a: region, b: duration index (of the rank) */
    WS_SYNTH_ENTER = 2,     /* a: region                                  */
    WS_SYNTH_LEAVE = 3,     /* a: region                                  */
    WS_SYNTH_SEND = 4,      /* a: destination, b: tag, size, comm         */
    WS_SYNTH_SSEND = 5,     /* a: destination, b: tag, size, comm         */
    WS_SYNTH_RECV = 6,      /* a: source, b: tag, comm                    */
    WS_SYNTH_ISEND = 7,     /* a: destination, b: tag, size, comm         */
    WS_SYNTH_IRECV = 8,     /* a: source, b: tag, comm                    */
    WS_SYNTH_WAIT = 9,      /* a: first entry in the rank's request list, b: count */
    WS_SYNTH_WAITALL = 10,  /* a: first entry in the rank's request list, b: count */
    WS_SYNTH_BARRIER = 11,  /* comm                                       */
    WS_SYNTH_BCAST = 12,    /* a: root, size, comm                        */
    WS_SYNTH_SCATTER = 13,  /* a: root, size, comm                        */
    WS_SYNTH_REDUCE = 14,   /* a: root, size, comm                        */
    WS_SYNTH_GATHER = 15,   /* a: root, size, comm                        */
    WS_SYNTH_ALLREDUCE = 16,/* size, comm                                 */
    WS_SYNTH_ALLTOALL = 17, /* size, comm                                 */
    WS_SYNTH_ALLGATHER = 18,/* size, comm                                 */
    WS_SYNTH_SCAN = 19,     /* size, comm                                 */
    WS_SYNTH_OP_END = 20
};

#define WS_SYNTH_FIELDS 5

/* Request list entries: the request id (1-based ordinal of the rank's
 * isend/irecv operations) or, for a request that another rank started,
 * -1 - ((owner_rank << 32) | id).  Anything else is an unknown request. */

typedef struct ws_synth_cart {
    uint32_t comm;          /* 0 = world, i = sub-communicator i - 1 */
    uint32_t n_dims;
    const int64_t *dims;    /* n_dims sizes */
    const int64_t *periodic;/* n_dims flags */
    const char *name;
} ws_synth_cart;

typedef struct ws_synth_program {
    uint32_t n_ranks;
    const int64_t *rank_ptr;  /* n_ranks + 1 offsets (rows) into ops */
    const int64_t *ops;       /* rows of WS_SYNTH_FIELDS values */
    const int64_t *dur_ptr;   /* n_ranks + 1 offsets into durations */
    const double *durations;  /* seconds */
    const int64_t *req_ptr;   /* n_ranks + 1 offsets into requests */
    const int64_t *requests;

    uint32_t n_regions;       /* user regions (COMPUTE/ENTER/LEAVE) */
    const char *const *region_names;

    uint32_t n_comms;         /* sub-communicators */
    const int64_t *comm_ptr;  /* n_comms + 1 offsets into comm_members */
    const int64_t *comm_members; /* world ranks, in communicator rank order */
    const char *const *comm_names;

    uint32_t n_carts;
    const ws_synth_cart *carts;

    /* the program's name (NULL: "synthetic"): Score-P's program region
     * (role ARTIFICIAL, paradigm MEASUREMENT_SYSTEM, canonical name
     * "/synthetic/<name>") names ProgramBegin */
    const char *name;
} ws_synth_program;

typedef struct ws_synth_params {
    double latency;       /* seconds, L */
    double bandwidth;     /* bytes per second; <= 0 means infinite */
    uint64_t eager_limit; /* bytes; larger standard sends use rendezvous */
    double overhead;      /* seconds, o */
    uint64_t resolution;  /* clock ticks per second */
} ws_synth_params;

/* Executes the program and returns a complete trace store (definitions
 * resolved, all locations loaded).  An unexecutable program (unmatched
 * messages, inconsistent collectives, unknown requests, deadlock) fails
 * with WS_ERR_MATCH naming the rank and operation; malformed input with
 * WS_ERR_ARGUMENT. */
int ws_synth_run(const ws_synth_program *program, const ws_synth_params *params, const ws_progress *progress,
                 ws_trace **out, ws_error *err);

#endif
