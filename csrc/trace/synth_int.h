/* Internals of the synthetic MPI program executor, shared by its passes
 * (synth.c: entry point and pass 6; synth_validate.c, synth_match.c,
 * synth_defs.c, synth_exec.c: passes 0-5; synth_omp.c: OpenMP parallel
 * regions in passes 1 and 5). */
#ifndef WS_TRACE_SYNTH_INT_H
#define WS_TRACE_SYNTH_INT_H

#include "synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

/* internal kinds of the implicit MPI_Init/MPI_Finalize world barriers */
#define K_INIT 100
#define K_FINALIZE 101

/* Times stay below TICKS_MAX and every single cost below COST_MAX, so
 * that time + L + x + o never overflows an int64. */
#define TICKS_MAX ((int64_t)1 << 62)
#define COST_MAX ((int64_t)1 << 60)

enum { REQ_NONE = 0, REQ_PENDING = 1, REQ_IN_WAIT = 2, REQ_DONE = 3 };
enum { WAIT_NOTHING = 0, WAIT_OP = 1, WAIT_INSTANCE = 2 };

/* MPI functions, alphabetically as Score-P defines them */
enum {
    F_ALLGATHER, F_ALLREDUCE, F_ALLTOALL, F_BARRIER, F_BCAST, F_FINALIZE, F_GATHER, F_INIT, F_IRECV, F_ISEND,
    F_RECV, F_REDUCE, F_SCAN, F_SCATTER, F_SEND, F_SSEND, F_WAIT, F_WAITALL, F_COUNT
};

typedef struct synth_function {
    const char *name;
    uint8_t role;
} synth_function;

/* MPI functions, alphabetically as Score-P defines them (synth.c) */
extern const synth_function synth_mpi_functions[F_COUNT];

static inline int function_of(int kind)
{
    switch (kind) {
    case WS_SYNTH_SEND: return F_SEND;
    case WS_SYNTH_SSEND: return F_SSEND;
    case WS_SYNTH_RECV: return F_RECV;
    case WS_SYNTH_ISEND: return F_ISEND;
    case WS_SYNTH_IRECV: return F_IRECV;
    case WS_SYNTH_WAIT: return F_WAIT;
    case WS_SYNTH_WAITALL: return F_WAITALL;
    case WS_SYNTH_BARRIER: return F_BARRIER;
    case WS_SYNTH_BCAST: return F_BCAST;
    case WS_SYNTH_SCATTER: return F_SCATTER;
    case WS_SYNTH_REDUCE: return F_REDUCE;
    case WS_SYNTH_GATHER: return F_GATHER;
    case WS_SYNTH_ALLREDUCE: return F_ALLREDUCE;
    case WS_SYNTH_ALLTOALL: return F_ALLTOALL;
    case WS_SYNTH_ALLGATHER: return F_ALLGATHER;
    case WS_SYNTH_SCAN: return F_SCAN;
    case K_INIT: return F_INIT;
    case K_FINALIZE: return F_FINALIZE;
    default: return -1;
    }
}

static inline int is_p2p(int kind)
{
    return kind >= WS_SYNTH_SEND && kind <= WS_SYNTH_IRECV;
}

static inline int is_send(int kind)
{
    return kind == WS_SYNTH_SEND || kind == WS_SYNTH_SSEND || kind == WS_SYNTH_ISEND;
}

static inline int is_collective(int kind)
{
    return kind >= WS_SYNTH_BARRIER && kind <= WS_SYNTH_SCAN;
}

static inline int has_root(int kind)
{
    return kind == WS_SYNTH_BCAST || kind == WS_SYNTH_SCATTER || kind == WS_SYNTH_REDUCE || kind == WS_SYNTH_GATHER;
}

/* synchronisation classes of collectives */
enum { SYNC_ALL, SYNC_ONE2ALL, SYNC_ALL2ONE, SYNC_SCAN };

static inline int sync_class(int kind)
{
    switch (kind) {
    case WS_SYNTH_BCAST:
    case WS_SYNTH_SCATTER: return SYNC_ONE2ALL;
    case WS_SYNTH_REDUCE:
    case WS_SYNTH_GATHER: return SYNC_ALL2ONE;
    case WS_SYNTH_SCAN: return SYNC_SCAN;
    default: return SYNC_ALL;
    }
}

static inline uint8_t otf2_collective_op(int kind)
{
    switch (kind) {
    case WS_SYNTH_BCAST: return OTF2_COLLECTIVE_OP_BCAST;
    case WS_SYNTH_SCATTER: return OTF2_COLLECTIVE_OP_SCATTER;
    case WS_SYNTH_REDUCE: return OTF2_COLLECTIVE_OP_REDUCE;
    case WS_SYNTH_GATHER: return OTF2_COLLECTIVE_OP_GATHER;
    case WS_SYNTH_ALLREDUCE: return OTF2_COLLECTIVE_OP_ALLREDUCE;
    case WS_SYNTH_ALLTOALL: return OTF2_COLLECTIVE_OP_ALLTOALL;
    case WS_SYNTH_ALLGATHER: return OTF2_COLLECTIVE_OP_ALLGATHER;
    case WS_SYNTH_SCAN: return OTF2_COLLECTIVE_OP_SCAN;
    default: return OTF2_COLLECTIVE_OP_BARRIER;
    }
}

/* ---- state ---------------------------------------------------------------- */

typedef struct xcomm {
    uint32_t size;
    uint32_t *members;     /* comm rank -> world rank */
    uint32_t trace_comm;   /* dense communicator index in the trace */
    const char *name;
    uint64_t inst_base;    /* first collective instance */
    uint64_t n_inst;
    uint64_t count_base;   /* first per-member counter */
} xcomm;

typedef struct instance {
    uint64_t slot;         /* first member slot */
    int64_t max_enter;
    int64_t prefix_max;
    uint32_t comm;
    uint32_t arrived;
    uint32_t prefix;       /* scan: members 0..prefix-1 may leave */
    uint32_t root;         /* comm rank or WS_NONE32 */
    uint32_t first_rank;   /* the rank whose call defined the instance */
    uint64_t first_pc;
    int kind;              /* 0 while undefined */
} instance;

typedef struct rank_state {
    uint64_t pc;           /* 0: MPI_Init, 1..n: user operations, n+1: MPI_Finalize */
    int64_t t;             /* current time (ticks) */
    int64_t t_enter;       /* enter time of the current operation */
    int64_t acc;           /* wait: latest completion so far */
    uint64_t cursor;       /* wait: next request to resolve */
    uint64_t wait_id;      /* operation or instance the rank waits for */
    uint64_t n_started;    /* isend/irecv operations started */
    uint64_t n_events, n_messages, n_requests, n_collectives; /* sizes from pass 1 */
    uint64_t n_teams;      /* parallel regions of the rank (pass 1) */
    uint32_t n_locks;      /* OpenMP locks given an OTF2 id so far (pass 5) */
    uint8_t phase;
    uint8_t wait_kind;
    uint8_t done;
} rank_state;


/* OpenMP: the constructs of a parallel region's name, each a region */
enum { OMP_R_PARALLEL, OMP_R_IBARRIER, OMP_R_BARRIER, OMP_R_CRITICAL, OMP_R_SBLOCK, OMP_R_COUNT };

/* a thread of the team being executed (synth_omp.c) */
typedef struct omp_thread {
    uint64_t pc, end;      /* its next and its end row of thread_ops */
    int64_t t;             /* its time (ticks) */
    uint8_t state;         /* enum in synth_omp.c */
} omp_thread;

/* an OpenMP lock or critical section of a rank (synth_omp.c) */
typedef struct omp_lock {
    int64_t release;       /* the last release (ticks) */
    uint32_t id;           /* OTF2 lock id */
    uint32_t order;        /* acquisitions so far */
} omp_lock;

typedef struct synth {
    const ws_synth_program *p;
    ws_error *err;
    const ws_progress *progress;
    ws_trace *t;
    uint32_t n;
    uint64_t n_ops;

    int64_t L, o;
    double bandwidth, res, inv;
    uint64_t eager;

    uint32_t n_xcomm;
    xcomm *comm;
    ws_map64 comm_rank; /* (comm << 32 | world rank) -> comm rank, comm >= 1 */

    uint64_t *link;     /* p2p: partner operation; collectives: instance */
    int64_t *post;      /* post (enter) time of p2p operations, -1 unknown */

    uint64_t *req_base; /* n + 1 */
    uint64_t *req_op;
    uint8_t *req_state;

    uint64_t *counts;   /* per (comm, member) collective calls */
    uint64_t n_counts;
    instance *inst;
    uint64_t n_inst;
    int64_t *slot_time;

    rank_state *st;
    uint32_t *queue;
    uint64_t q_head, q_count;

    uint32_t *user_region;       /* user region -> trace region */
    uint32_t mpi_region[F_COUNT];/* MPI function -> trace region or WS_NONE32 */
    uint32_t program_region;     /* the program region, the root of every call path */
    uint32_t max_depth;

    uint64_t total_events, produced, next_report;
    int times_failed;            /* an escape table of the compact times could not grow */

    /* OpenMP (synth_omp.c): location r * T + k is thread k of rank r */
    uint32_t T;                  /* threads per process (1: the master alone) */
    int hybrid;                  /* OpenMP definitions: T > 1 or parallel regions */
    uint64_t *loc_events;        /* per location: events (pass 1) */
    uint64_t *loc_threads;       /* per location: thread records (pass 1) */
    uint32_t *team_rank;         /* per parallel region: its rank (pass 1) */
    uint64_t *team_base;         /* per parallel region: its first entry of thread_ptr */
    uint32_t *team_comm;         /* per (rank, size), r * T + size - 1: the team's communicator or WS_NONE32 */
    uint8_t *omp_used;           /* per parallel name: the constructs used (1 << OMP_R_*) */
    uint32_t *omp_region;        /* per parallel name: OMP_R_COUNT regions (WS_NONE32: unused) */
    uint32_t set_lock_region, unset_lock_region; /* omp_set_lock, omp_unset_lock or WS_NONE32 */
    int any_lock;                /* some thread calls omp_set_lock */
    uint64_t max_teams;          /* the most parallel regions of one rank */
    omp_thread *th;              /* the team being executed */
    omp_lock *locks;             /* every rank's locks ... */
    size_t n_locks, cap_locks;
    ws_map64 lock_index;         /* ... by (rank << 32 | lock key) */
} synth;

/* ---- small helpers --------------------------------------------------------- */

/* the location of thread k of rank r */
static inline uint32_t loc_of(const synth *s, uint32_t r, uint32_t k)
{
    return r * s->T + k;
}

static inline uint64_t emit(synth *s, ws_events *ev, int64_t time, uint8_t kind, uint32_t ref)
{
    uint64_t i = ev->n++;
    /* the reader's form and conversion: (ticks - offset) / resolution */
    if (ws_events_set_ticks(ev, i, (uint64_t)time) != 0)
        s->times_failed = 1;
    ev->kind[i] = kind;
    ev->ref[i] = ref;
    s->produced++;
    return i;
}

static inline const int64_t *op_row(const synth *s, uint64_t gi)
{
    return s->p->ops + (size_t)gi * WS_SYNTH_FIELDS;
}

static inline uint64_t n_user_ops(const synth *s, uint32_t r)
{
    return (uint64_t)(s->p->rank_ptr[r + 1] - s->p->rank_ptr[r]);
}

static inline uint32_t rank_of_op(const synth *s, uint64_t gi)
{
    uint32_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((uint64_t)s->p->rank_ptr[mid] <= gi)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static inline uint32_t comm_rank(const synth *s, uint32_t c, uint32_t world)
{
    if (c == 0)
        return world < s->n ? world : WS_NONE32;
    uint64_t v;
    if (ws_map64_get(&s->comm_rank, ((uint64_t)c << 32) | world, &v))
        return (uint32_t)v;
    return WS_NONE32;
}

static inline int64_t ticks(const synth *s, double seconds)
{
    return (int64_t)llround(seconds * s->res);
}

/* transfer time of `size` bytes, in ticks */
static inline int64_t xfer(const synth *s, uint64_t size)
{
    if (s->bandwidth <= 0.0)
        return 0;
    double x = ((double)size / s->bandwidth) * s->res;
    return x < (double)COST_MAX ? (int64_t)llround(x) : COST_MAX;
}

static inline int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static inline const char *region_name(const synth *s, int64_t region)
{
    if (region < 0 || (uint64_t)region >= s->p->n_regions)
        return "?";
    return s->p->region_names[region];
}

static inline const char *comm_name(const synth *s, int64_t c)
{
    if (c < 0 || (uint64_t)c >= s->n_xcomm)
        return "?";
    return s->comm[c].name;
}

#define ARG_FAIL(...) ws_error_set(s->err, WS_ERR_ARGUMENT, __VA_ARGS__)
#define MATCH_FAIL(...) ws_error_set(s->err, WS_ERR_MATCH, __VA_ARGS__)


/* synth.c */
void synth_describe(const synth *s, uint32_t r, uint64_t pc, char *buf, size_t size);
void synth_describe_op(const synth *s, uint64_t gi, char *buf, size_t size);

/* synth_validate.c: pass 0 (structure, communicators) and pass 1 (validation and sizes) */
int synth_check_offsets(synth *s, const int64_t *ptr, uint64_t count, const char *what);
int synth_setup_comms(synth *s);
int synth_validate(synth *s);

/* synth_match.c: pass 2 (message matching) and pass 3 (collective instances) */
int synth_match_messages(synth *s);
int synth_build_collectives(synth *s);

/* synth_defs.c: pass 4 (definitions) */
int synth_build_definitions(synth *s);

/* synth_exec.c: pass 5 (timed execution) */
int synth_execute(synth *s);

/* synth_omp.c: OpenMP parallel regions */
/* pass 1: the parallel regions' table (team_rank, team_base, ...) */
int synth_setup_teams(synth *s);
/* pass 1: checks parallel region j of rank r (whose master has `depth`
 * regions open) and counts its events on every location */
int synth_validate_team(synth *s, uint32_t r, uint64_t pc, int64_t j, uint32_t depth);
/* pass 5: executes parallel region j of rank r forked at t; *join: the
 * master's ThreadJoin */
int synth_run_team(synth *s, uint32_t r, uint64_t j, int64_t t, int64_t *join);
/* "thread 1, operation 2 (compute in 'work')" of parallel region j */
void synth_describe_thread_op(const synth *s, uint64_t j, uint32_t thread, uint64_t row, char *buf, size_t size);
static inline const char *parallel_name(const synth *s, int64_t name)
{
    if (name < 0 || (uint64_t)name >= s->p->n_parallel_names || !s->p->parallel_names)
        return "?";
    return s->p->parallel_names[name];
}

#endif
