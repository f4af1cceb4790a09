/* waitscope: the public C interface of the analysis kernel.
 *
 * A host (a C or C++ tool, the CPython module waitscope._core) includes
 * this header and nothing else of csrc/.  It opens OTF2 archives (or
 * synthesizes traces of small MPI programs), loads their events and runs
 * the wait-state, delay-cost and critical-path analyses on them.
 *
 * Conventions, for every function below:
 *   - A fallible call returns a status (enum ws_status, WS_OK == 0) and
 *     fills the caller-owned `ws_error *err` (which may be NULL) with the
 *     code and a message naming the file or argument concerned.  Nothing
 *     prints, exits, aborts or longjmps; nothing keeps global state, except
 *     that the first use of OTF2 installs OTF2's process-wide error
 *     handler once (one that only returns the code), and never again.
 *   - Handles are opaque.  Who owns what is stated per call: a call that
 *     returns a handle through `**out` gives the caller that handle, which
 *     the caller releases with the matching *_free; on failure *out is
 *     NULL.  Pointers returned by accessors are borrowed from the handle
 *     and valid until it is freed.
 *   - One handle is used by one thread at a time.  Different handles may
 *     be used from different threads concurrently.
 *   - Locations, call paths and metrics are dense indices 0..n-1.
 *
 * Building: compile the kernel's sources (csrc/common, csrc/trace,
 * csrc/replay without transport_mpi*.c, csrc/analysis, csrc/api) with
 * -std=c11 and OTF2's flags (`otf2-config --cflags`, `--ldflags`,
 * `--libs`), link -lm -lpthread; examples/embed.c and its Makefile
 * target show it.
 */
#ifndef WAITSCOPE_H
#define WAITSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------ */

#define WS_VERSION_MAJOR 0
#define WS_VERSION_MINOR 1
#define WS_VERSION_PATCH 0
#define WS_VERSION_STRING "0.1.0"
/* One number to compare against: 10000 * major + 100 * minor + patch. */
#define WS_VERSION_NUMBER (10000 * WS_VERSION_MAJOR + 100 * WS_VERSION_MINOR + WS_VERSION_PATCH)

/* The version of the kernel linked in (WS_VERSION_STRING of its build). */
const char *ws_version(void);

/* ---- status and errors -------------------------------------------------- */

enum ws_status {
    WS_OK = 0,
    WS_ERR_IO = 1,          /* a file is missing or unreadable            */
    WS_ERR_FORMAT = 2,      /* a file is not what it claims to be         */
    WS_ERR_NOMEM = 3,       /* allocation failed                          */
    WS_ERR_ARGUMENT = 4,    /* a caller passed an invalid argument        */
    WS_ERR_INTERRUPTED = 5, /* the caller asked to stop (e.g. Ctrl-C)     */
    WS_ERR_MATCH = 6,       /* communication records do not match up      */
    WS_ERR_MPI = 7,         /* an MPI call failed                         */
    WS_ERR_INTERNAL = 8,    /* a broken invariant inside the kernel       */
    WS_STATUS_COUNT = 9
};

/* "WS_OK", "WS_ERR_IO", ...; "unknown status" for other values.  The
 * string is static. */
const char *ws_status_name(int status);

/* Owned by the caller (usually on its stack). */
typedef struct ws_error {
    int code;            /* enum ws_status */
    char message[1024];  /* NUL-terminated; names the file or argument */
} ws_error;

void ws_error_clear(ws_error *err);

/* ---- progress and interruption ------------------------------------------ */

/* Owned by the caller; read, never kept beyond the call it is passed to.
 * May be NULL wherever it is accepted. */
typedef struct ws_progress {
    /* Called now and then during long work; a nonzero return stops the
     * work with WS_ERR_INTERRUPTED.  `done` and `total` count events. */
    int (*callback)(void *context, const char *stage, uint64_t done, uint64_t total);
    void *context;
    /* May be NULL.  Asked now and then while a process waits for others
     * (the parallel replay) without reporting: a nonzero return stops the
     * work with WS_ERR_INTERRUPTED (Ctrl-C). */
    int (*interrupted)(void *context);
} ws_progress;

/* ---- handles -------------------------------------------------------------- */

typedef struct ws_trace ws_trace;         /* definitions and events */
typedef struct ws_result ws_result;       /* what an analysis found */
typedef struct ws_transport ws_transport; /* how replaying processes exchange data */

/* ---- traces ----------------------------------------------------------------- */

/* Opens an archive (anchor file "dir/traces.otf2" or the experiment
 * directory "dir") and reads its global definitions; no event is read
 * yet.  The caller owns *out (ws_trace_free). */
int ws_open(const char *path, ws_trace **out, ws_error *err);

/* Reads the events of the given locations (NULL and n == 0: all).  Only
 * those locations' files are opened; on error the trace keeps no partial
 * events of the failing location.  `locations` is borrowed. */
int ws_load(ws_trace *t, const uint32_t *locations, uint32_t n, const ws_progress *progress, ws_error *err);

/* The same with up to `n_threads` threads of this process (1: ws_load),
 * each with its own OTF2 reader over a contiguous block of the locations.
 * The store is the one ws_load builds, column for column (call paths get
 * the ids one thread gives them).  An error is the one ws_load reports
 * (the first failing location in the list's order), and the locations
 * after it are not loaded.  The progress callback and the interruption
 * check run on the calling thread only. */
int ws_load_threads(ws_trace *t, const uint32_t *locations, uint32_t n, uint32_t n_threads,
                    const ws_progress *progress, ws_error *err);

/* Releases a trace and everything it owns.  NULL is allowed. */
void ws_trace_free(ws_trace *t);

uint32_t ws_trace_n_locations(const ws_trace *t);
/* Events stored, over all loaded locations. */
uint64_t ws_trace_n_events(const ws_trace *t);
/* 1 if the events of location `loc` are loaded, else 0. */
int ws_trace_location_loaded(const ws_trace *t, uint32_t loc);
uint32_t ws_trace_n_callpaths(const ws_trace *t);
/* The full name of call path `cp` ("main/foo/MPI_Recv") into buf (always
 * NUL-terminated when size > 0, truncated to size - 1 characters); returns
 * the number of characters written (0 for an unknown call path). */
size_t ws_callpath_name(const ws_trace *t, uint32_t cp, char *buf, size_t size);

/* ---- synthetic MPI programs ------------------------------------------------ */

/* A per-rank list of operations executed with MPI blocking semantics and
 * a simple cost model into a trace that looks like one Score-P writes
 * (pkg/waitscope/synth.py documents the timing model).  For every rank a
 * contiguous run of operation rows of WS_SYNTH_FIELDS int64 values
 *     (kind, a, b, size, comm)
 * whose meaning depends on the kind (below).  `comm` is 0 for
 * MPI_COMM_WORLD and i >= 1 for sub-communicator i - 1; peers and roots
 * are ranks within that communicator. */
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
    WS_SYNTH_PARALLEL = 20, /* a: parallel region (its row in teams); a rank's operation only */
    /* the operations of a thread in a parallel region (besides COMPUTE,
     * ENTER and LEAVE) */
    WS_SYNTH_OMP_BARRIER = 21,  /* an explicit OpenMP barrier             */
    WS_SYNTH_OMP_CRITICAL = 22, /* a: critical section (0 <= a < 2^31), b: duration index, size: region or -1 */
    WS_SYNTH_OMP_LOCK = 23,     /* a: lock (0 <= a < 2^31), b: duration index, size: region or -1 */
    WS_SYNTH_OP_END = 24
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

/* All arrays are borrowed for the duration of ws_synthesize. */
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

    /* OpenMP (pkg/waitscope/synth.py documents the model).  Every process
     * has n_threads threads (0 or 1: its master thread alone).  Parallel
     * region j, executed by the one operation WS_SYNTH_PARALLEL with a = j
     * of some rank, is the row teams[j] of WS_SYNTH_FIELDS values
     *     (threads, name, fork, join, barrier)
     * threads: the team's size (1..n_threads); name: index into
     * parallel_names; fork: the duration index (of the rank) of the first
     * of `threads` consecutive delays from the fork to each thread's
     * start; join: of the delay from the end to the join; barrier: of the
     * overhead of every barrier in the region.  Thread i of region j
     * executes the rows thread_ops[thread_ptr[b + i] .. thread_ptr[b + i +
     * 1]), b being the sum of the sizes of regions 0..j-1. */
    uint32_t n_threads;
    uint32_t n_teams;
    const int64_t *teams;        /* n_teams rows */
    const int64_t *thread_ptr;   /* (sum of the sizes) + 1 offsets (rows) into thread_ops */
    const int64_t *thread_ops;   /* rows of WS_SYNTH_FIELDS values */
    uint32_t n_parallel_names;
    const char *const *parallel_names;
} ws_synth_program;

typedef struct ws_synth_params {
    double latency;       /* seconds, L */
    double bandwidth;     /* bytes per second; <= 0 means infinite */
    uint64_t eager_limit; /* bytes; larger standard sends use rendezvous */
    double overhead;      /* seconds, o */
    uint64_t resolution;  /* clock ticks per second */
} ws_synth_params;

/* Executes the program and gives the caller a complete trace (all
 * locations loaded) in *out (ws_trace_free).  An unexecutable program
 * (unmatched messages, inconsistent collectives, unknown requests,
 * deadlock) fails with WS_ERR_MATCH naming the rank and operation;
 * malformed input with WS_ERR_ARGUMENT. */
int ws_synthesize(const ws_synth_program *program, const ws_synth_params *params, const ws_progress *progress,
                  ws_trace **out, ws_error *err);

/* ---- analysis ------------------------------------------------------------------- */

enum ws_delay_model {
    WS_DELAY_NONE = 0,
    WS_DELAY_PROPORTIONAL = 1, /* seed 004 eqs. 2.1-2.6 */
    WS_DELAY_WAIT_FIRST = 2    /* seed 004 eqs. 3.1-3.9 */
};

enum ws_replays { WS_REPLAYS_AUTO = 0, WS_REPLAYS_SCHEDULED = 1, WS_REPLAYS_JOINS = 2 };
enum ws_path_walk { WS_PATH_WALK_AUTO = 0, WS_PATH_WALK_NEVER = 1, WS_PATH_WALK_ALWAYS = 2 };

/* Owned by the caller; zero-initialized means: wait states only. */
typedef struct ws_analysis_options {
    int delay_model;          /* enum ws_delay_model */
    int critical_path;        /* extract the critical path */
    int keep_delay_records;   /* keep one record per delay calculation */
    int wait_records;         /* keep one record per wait-state instance */
    const int32_t *partition; /* per location partition id (NULL: derived); borrowed */
    uint64_t schedule_seed;   /* nonzero: replay locations in a seeded order (results do not depend on it) */
    /* time window (docs/metrics.md, "Time windows"): with has_window the
     * metrics cover [window_start, window_end] only; the replays still see
     * every event */
    int has_window;
    double window_start, window_end;
    /* how the replays that allow it run (the results are the same; the
     * tests compare them): WS_REPLAYS_AUTO, WS_REPLAYS_SCHEDULED (none as
     * a join) or WS_REPLAYS_JOINS (as joins even with many collectives) */
    int replays;
    /* where the critical path is followed (the results are the same; the
     * tests compare them): WS_PATH_WALK_AUTO, WS_PATH_WALK_NEVER (with the
     * notes of the backward replay) or WS_PATH_WALK_ALWAYS (walked in one
     * place after it, which AUTO does between processes or threads when
     * their collectives would otherwise wait for it) */
    int path_walk;
    /* for comparisons with Scalasca 2.6 only (the tests): reproduce the
     * defects of Scalasca 2.6 that docs/metrics.md documents ("Where
     * waitscope differs from Scalasca 2.6"), so that the remaining results
     * can be compared with its reports exactly:
     * - where a receive ends before its send begins (clocks violating the
     *   clock condition), the critical path continues on the partner from
     *   the synchronization time, so that the stretch in between is on the
     *   path twice (and the path is longer than the run);
     * - the long-term cost a collective's waiting member passes on reaches
     *   the delayer's wait states only from the next later point at which
     *   the delayer synchronized with another member;
     * - the Late Senders in wrong order that one receive reveals are all
     *   classified (same or different source) and charged to the call
     *   path of the first of them;
     * - a send that waited for a Late Receiver counts, as the start of the
     *   next interval, the negative difference of its leave and the
     *   receive's (when it left first) */
    int scalasca_compat;
} ws_analysis_options;

/* The in-process transport for n_locations locations, all replayed in
 * this process.  The caller owns it (ws_transport_free); NULL when out of
 * memory. */
ws_transport *ws_transport_local_new(uint32_t n_locations);
/* Releases a transport.  NULL is allowed. */
void ws_transport_free(ws_transport *tr);

/* Analyses the given locations of `t` (whose events must be loaded) with
 * transport `tr`: in one process, every location and a transport from
 * ws_transport_local_new(ws_trace_n_locations(t)).  `t`, `locations`,
 * `tr` and `options` are borrowed; the caller owns *out (ws_result_free).
 * `t` is only read: several analyses of one trace may run at once. */
int ws_analyze(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_transport *tr,
               const ws_analysis_options *options, const ws_progress *progress, ws_result **out, ws_error *err);

/* The same in one process over every location (all must be loaded):
 * makes and frees the in-process transport itself. */
int ws_analyze_all(const ws_trace *t, const ws_analysis_options *options, const ws_progress *progress,
                   ws_result **out, ws_error *err);

/* The same over every location with `n_threads` threads of this process
 * (capped at the number of locations; 1: ws_analyze_all): each thread
 * replays a contiguous block of locations (the parallel mode's partition)
 * with a threaded transport, and the result is gathered as in the
 * parallel mode, so it equals the one-thread result bit for bit.  The
 * progress callback and the interruption check run on the calling thread
 * only; an error on one thread stops all and is reported once. */
int ws_analyze_threads(const ws_trace *t, const ws_analysis_options *options, uint32_t n_threads,
                       const ws_progress *progress, ws_result **out, ws_error *err);
/* ---- parallel mode ---------------------------------------------------------------------
 * Several processes each load some locations of one trace (ws_load with
 * their list), agree on the call paths, analyze their locations with a
 * transport that connects them (the MPI transport: csrc/replay/
 * transport_mpi.h, built with the MPI compiler) and gather the result on
 * process 0.  Every call here is collective over the transport's
 * processes; a failure on one process is reported on all. */

/* Gives every process the call-path tree (and call-path ids in its
 * events) that one process loading all locations would build. */
int ws_unify_callpaths(ws_trace *t, ws_transport *tr, ws_error *err);

/* Moves every process's share of a result (from ws_analyze with the same
 * transport) to process 0, whose `r` then holds the whole result; the
 * other processes' results are left unspecified (free them). */
int ws_result_gather(ws_result *r, ws_transport *tr, ws_error *err);

/* ---- simulation ----------------------------------------------------------------------
 * (reserved: the forward replay that simulates a changed execution of a
 * trace, ws_simulate, is declared here, with the same conventions) */

/* ---- results ------------------------------------------------------------------------ */

void ws_result_free(ws_result *r);

/* The metrics computed, in cube order: k = 0..n-1. */
uint32_t ws_result_n_metrics(const ws_result *r);
/* The unique name of cube metric k ("time", "mpi_latesender", ... as in
 * docs/metrics.md), or NULL if k is out of range.  Static string. */
const char *ws_result_metric_id(const ws_result *r, uint32_t k);
/* The cube index of a metric by its unique name, or -1. */
int ws_result_metric_index(const ws_result *r, const char *id);
/* "sec", "occ" or "bytes" (static string), NULL if k is out of range. */
const char *ws_result_metric_unit(const ws_result *r, uint32_t k);
uint32_t ws_result_n_callpaths(const ws_result *r);
uint32_t ws_result_n_locations(const ws_result *r);
/* The cube [metric][callpath][location] (exclusive values), borrowed. */
const double *ws_result_cube(const ws_result *r);
/* One cell of the cube (0 where an index is out of range). */
double ws_result_value(const ws_result *r, uint32_t k, uint32_t callpath, uint32_t location);
/* Clock-condition violations per location (n_locations entries), borrowed. */
const uint64_t *ws_result_clock_violations(const ws_result *r);

/* The critical path (option critical_path), segment by segment. */
uint64_t ws_result_n_path_segments(const ws_result *r);
/* Segment i: the location and call path on the path between start and
 * end (seconds).  WS_ERR_ARGUMENT if i is out of range. */
int ws_result_path_segment(const ws_result *r, uint64_t i, uint32_t *location, uint32_t *callpath, double *start,
                           double *end);

#ifdef __cplusplus
}
#endif

#endif
