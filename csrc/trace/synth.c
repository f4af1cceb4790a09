/* Synthetic MPI program executor (see synth.h and pkg/waitscope/synth.py).
 *
 * Work is done in passes over the packed operations, each O(operations):
 *   1. validation and exact event/record counts per rank;
 *   2. message matching: the n-th send from s to d with tag T on comm C
 *      matches the n-th receive by d from s with tag T on C (MPI's
 *      non-overtaking rule without wildcards, independent of timing);
 *   3. collective instances: the k-th collective call of every member of a
 *      communicator forms one instance; kinds and roots must agree;
 *   4. definitions and exactly sized event columns;
 *   5. timed execution: every rank runs until it needs a time that is not
 *      known yet (the post time of a matching operation, or the arrival
 *      of other members of a collective), then waits on a ready queue; a
 *      rank is woken exactly when that time becomes known.  An empty queue
 *      with unfinished ranks is a deadlock;
 *   6. call paths, in location order like the OTF2 reader creates them.
 * Apart from the tables sized in passes 1-4 nothing is allocated per
 * event.
 */
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

static const struct {
    const char *name;
    uint8_t role;
} mpi_functions[F_COUNT] = {
    [F_ALLGATHER] = {"MPI_Allgather", OTF2_REGION_ROLE_COLL_ALL2ALL},
    [F_ALLREDUCE] = {"MPI_Allreduce", OTF2_REGION_ROLE_COLL_ALL2ALL},
    [F_ALLTOALL] = {"MPI_Alltoall", OTF2_REGION_ROLE_COLL_ALL2ALL},
    [F_BARRIER] = {"MPI_Barrier", OTF2_REGION_ROLE_BARRIER},
    [F_BCAST] = {"MPI_Bcast", OTF2_REGION_ROLE_COLL_ONE2ALL},
    [F_FINALIZE] = {"MPI_Finalize", OTF2_REGION_ROLE_FUNCTION},
    [F_GATHER] = {"MPI_Gather", OTF2_REGION_ROLE_COLL_ALL2ONE},
    [F_INIT] = {"MPI_Init", OTF2_REGION_ROLE_FUNCTION},
    [F_IRECV] = {"MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT},
    [F_ISEND] = {"MPI_Isend", OTF2_REGION_ROLE_POINT2POINT},
    [F_RECV] = {"MPI_Recv", OTF2_REGION_ROLE_POINT2POINT},
    [F_REDUCE] = {"MPI_Reduce", OTF2_REGION_ROLE_COLL_ALL2ONE},
    [F_SCAN] = {"MPI_Scan", OTF2_REGION_ROLE_COLL_OTHER},
    [F_SCATTER] = {"MPI_Scatter", OTF2_REGION_ROLE_COLL_ONE2ALL},
    [F_SEND] = {"MPI_Send", OTF2_REGION_ROLE_POINT2POINT},
    [F_SSEND] = {"MPI_Ssend", OTF2_REGION_ROLE_POINT2POINT},
    [F_WAIT] = {"MPI_Wait", OTF2_REGION_ROLE_FUNCTION},
    [F_WAITALL] = {"MPI_Waitall", OTF2_REGION_ROLE_FUNCTION},
};

static int function_of(int kind)
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

static int is_p2p(int kind)
{
    return kind >= WS_SYNTH_SEND && kind <= WS_SYNTH_IRECV;
}

static int is_send(int kind)
{
    return kind == WS_SYNTH_SEND || kind == WS_SYNTH_SSEND || kind == WS_SYNTH_ISEND;
}

static int is_collective(int kind)
{
    return kind >= WS_SYNTH_BARRIER && kind <= WS_SYNTH_SCAN;
}

static int has_root(int kind)
{
    return kind == WS_SYNTH_BCAST || kind == WS_SYNTH_SCATTER || kind == WS_SYNTH_REDUCE || kind == WS_SYNTH_GATHER;
}

/* synchronisation classes of collectives */
enum { SYNC_ALL, SYNC_ONE2ALL, SYNC_ALL2ONE, SYNC_SCAN };

static int sync_class(int kind)
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

static uint8_t otf2_collective_op(int kind)
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
    uint8_t phase;
    uint8_t wait_kind;
    uint8_t done;
} rank_state;

/* message matching table entry */
typedef struct mentry {
    uint32_t comm, src, dst, tag; /* comm == WS_NONE32: empty slot */
    uint64_t head, tail;          /* FIFO of unmatched operations (linked through `link`) */
    int64_t queued;               /* > 0: sends waiting, < 0: receives waiting */
    uint64_t n_send, n_recv;
} mentry;

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
    uint32_t max_depth;

    uint64_t total_events, produced, next_report;
} synth;

/* ---- small helpers --------------------------------------------------------- */

static inline const int64_t *op_row(const synth *s, uint64_t gi)
{
    return s->p->ops + (size_t)gi * WS_SYNTH_FIELDS;
}

static inline uint64_t n_user_ops(const synth *s, uint32_t r)
{
    return (uint64_t)(s->p->rank_ptr[r + 1] - s->p->rank_ptr[r]);
}

static uint32_t rank_of_op(const synth *s, uint64_t gi)
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

static uint32_t comm_rank(const synth *s, uint32_t c, uint32_t world)
{
    if (c == 0)
        return world < s->n ? world : WS_NONE32;
    uint64_t v;
    if (ws_map64_get(&s->comm_rank, ((uint64_t)c << 32) | world, &v))
        return (uint32_t)v;
    return WS_NONE32;
}

static int64_t ticks(const synth *s, double seconds)
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

static const char *region_name(const synth *s, int64_t region)
{
    if (region < 0 || (uint64_t)region >= s->p->n_regions)
        return "?";
    return s->p->region_names[region];
}

static const char *comm_name(const synth *s, int64_t c)
{
    if (c < 0 || (uint64_t)c >= s->n_xcomm)
        return "?";
    return s->comm[c].name;
}

/* "rank 3, operation 5 (MPI_Recv from rank 0, tag 1 on MPI_COMM_WORLD)" */
static void describe(const synth *s, uint32_t r, uint64_t pc, char *buf, size_t size)
{
    uint64_t n_user = n_user_ops(s, r);
    if (pc == 0) {
        snprintf(buf, size, "rank %u, MPI_Init", (unsigned)r);
        return;
    }
    if (pc == n_user + 1) {
        snprintf(buf, size, "rank %u, MPI_Finalize", (unsigned)r);
        return;
    }
    const int64_t *op = op_row(s, (uint64_t)s->p->rank_ptr[r] + pc - 1);
    int kind = (int)op[0];
    int n = snprintf(buf, size, "rank %u, operation %llu (", (unsigned)r, (unsigned long long)(pc - 1));
    if (n < 0 || (size_t)n >= size)
        return;
    char *b = buf + n;
    size_t room = size - (size_t)n;
    int f = function_of(kind);
    switch (kind) {
    case WS_SYNTH_COMPUTE:
        snprintf(b, room, "compute in '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_ENTER:
        snprintf(b, room, "enter region '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_LEAVE:
        snprintf(b, room, "leave region '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_SEND:
    case WS_SYNTH_SSEND:
    case WS_SYNTH_ISEND:
        snprintf(b, room, "%s to rank %lld, tag %lld, %lld bytes on %s)", mpi_functions[f].name, (long long)op[1],
                 (long long)op[2], (long long)op[3], comm_name(s, op[4]));
        break;
    case WS_SYNTH_RECV:
    case WS_SYNTH_IRECV:
        snprintf(b, room, "%s from rank %lld, tag %lld on %s)", mpi_functions[f].name, (long long)op[1],
                 (long long)op[2], comm_name(s, op[4]));
        break;
    case WS_SYNTH_WAIT:
    case WS_SYNTH_WAITALL:
        snprintf(b, room, "%s of %lld request(s))", mpi_functions[f].name, (long long)op[2]);
        break;
    default:
        if (f >= 0 && has_root(kind))
            snprintf(b, room, "%s, root %lld, on %s)", mpi_functions[f].name, (long long)op[1],
                     comm_name(s, op[4]));
        else if (f >= 0)
            snprintf(b, room, "%s on %s)", mpi_functions[f].name, comm_name(s, op[4]));
        else
            snprintf(b, room, "unknown kind %d)", kind);
        break;
    }
}

static void describe_op(const synth *s, uint64_t gi, char *buf, size_t size)
{
    uint32_t r = rank_of_op(s, gi);
    describe(s, r, gi - (uint64_t)s->p->rank_ptr[r] + 1, buf, size);
}

#define ARG_FAIL(...) ws_error_set(s->err, WS_ERR_ARGUMENT, __VA_ARGS__)
#define MATCH_FAIL(...) ws_error_set(s->err, WS_ERR_MATCH, __VA_ARGS__)

/* ---- pass 0: structure, communicators -------------------------------------- */

static int check_offsets(synth *s, const int64_t *ptr, uint64_t count, const char *what)
{
    if (!ptr)
        return ARG_FAIL("synthetic program: missing %s offsets", what);
    if (ptr[0] != 0)
        return ARG_FAIL("synthetic program: %s offsets must start at 0", what);
    for (uint64_t i = 0; i < count; i++)
        if (ptr[i + 1] < ptr[i])
            return ARG_FAIL("synthetic program: %s offsets decrease at %llu", what, (unsigned long long)i);
    return WS_OK;
}

static int setup_comms(synth *s)
{
    const ws_synth_program *p = s->p;
    if (p->n_comms > UINT32_MAX - 3)
        return ARG_FAIL("synthetic program: too many communicators");
    s->n_xcomm = p->n_comms + 1;
    s->comm = ws_calloc(s->n_xcomm, sizeof *s->comm);
    if (!s->comm)
        return ws_error_nomem(s->err, "communicators");
    xcomm *w = &s->comm[0];
    w->size = s->n;
    w->members = ws_malloc_array(s->n, sizeof *w->members);
    if (!w->members)
        return ws_error_nomem(s->err, "communicators");
    for (uint32_t r = 0; r < s->n; r++)
        w->members[r] = r;
    w->trace_comm = 0;
    w->name = "MPI_COMM_WORLD";
    if (p->n_comms) {
        int rc = check_offsets(s, p->comm_ptr, p->n_comms, "communicator");
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < p->n_comms; i++) {
        xcomm *c = &s->comm[i + 1];
        int64_t size = p->comm_ptr[i + 1] - p->comm_ptr[i];
        c->name = p->comm_names && p->comm_names[i] ? p->comm_names[i] : "communicator";
        if (size <= 0 || size > (int64_t)s->n)
            return ARG_FAIL("communicator '%s' has %lld members (world has %u ranks)", c->name, (long long)size,
                            (unsigned)s->n);
        c->size = (uint32_t)size;
        c->trace_comm = i + 2; /* after MPI_COMM_WORLD and MPI_COMM_SELF */
        c->members = ws_malloc_array(c->size, sizeof *c->members);
        if (!c->members)
            return ws_error_nomem(s->err, "communicators");
        for (uint32_t k = 0; k < c->size; k++) {
            int64_t w_rank = p->comm_members[p->comm_ptr[i] + k];
            if (w_rank < 0 || w_rank >= (int64_t)s->n)
                return ARG_FAIL("communicator '%s': member %lld is not a world rank", c->name, (long long)w_rank);
            uint64_t key = ((uint64_t)(i + 1) << 32) | (uint64_t)w_rank;
            if (ws_map64_get(&s->comm_rank, key, NULL))
                return ARG_FAIL("communicator '%s': rank %lld is listed twice", c->name, (long long)w_rank);
            if (ws_map64_put(&s->comm_rank, key, k) != 0)
                return ws_error_nomem(s->err, "communicators");
            c->members[k] = (uint32_t)w_rank;
        }
    }
    return WS_OK;
}

/* ---- pass 1: validation and sizes ------------------------------------------- */

static int validate(synth *s)
{
    const ws_synth_program *p = s->p;
    int rc;
    char what[256];
    /* per (comm, member) collective call counters */
    uint64_t n_counts = 0;
    for (uint32_t c = 0; c < s->n_xcomm; c++) {
        s->comm[c].count_base = n_counts;
        n_counts += s->comm[c].size;
    }
    s->n_counts = n_counts;
    s->counts = ws_calloc(n_counts, sizeof *s->counts);
    s->req_base = ws_calloc((size_t)s->n + 1, sizeof *s->req_base);
    if (!s->counts || !s->req_base)
        return ws_error_nomem(s->err, "program tables");
    for (uint32_t r = 0; r < s->n; r++)
        s->counts[s->comm[0].count_base + r] = 2; /* MPI_Init and MPI_Finalize */

    uint32_t *stack = NULL;
    size_t stack_cap = 0;
    uint64_t n_requests = 0;
    for (uint32_t r = 0; r < s->n; r++) {
        rank_state *st = &s->st[r];
        uint64_t first = (uint64_t)p->rank_ptr[r], n_user = n_user_ops(s, r);
        int64_t n_dur = p->dur_ptr[r + 1] - p->dur_ptr[r];
        int64_t n_req = p->req_ptr[r + 1] - p->req_ptr[r];
        uint32_t depth = 0;
        /* ProgramBegin, Enter main, Enter/Leave MPI_Init, Enter/Leave
         * MPI_Finalize, Leave main, ProgramEnd */
        uint64_t n_ev = 8, n_msg = 0, n_rq = 0, n_coll = 0;
        for (uint64_t k = 0; k < n_user; k++) {
            const int64_t *op = op_row(s, first + k);
            int kind = (int)op[0];
            int64_t a = op[1], b = op[2], size = op[3], c = op[4];
#define OP_FAIL(...)                                                                      \
    do {                                                                                  \
        describe(s, r, k + 1, what, sizeof what);                                         \
        char detail__[512];                                                               \
        snprintf(detail__, sizeof detail__, __VA_ARGS__);                                 \
        rc = ARG_FAIL("%s: %s", what, detail__);                                          \
        goto fail;                                                                        \
    } while (0)
            if (kind < WS_SYNTH_COMPUTE || kind >= WS_SYNTH_OP_END)
                OP_FAIL("unknown operation kind %d", kind);
            if (kind == WS_SYNTH_COMPUTE || kind == WS_SYNTH_ENTER || kind == WS_SYNTH_LEAVE) {
                if (a < 0 || (uint64_t)a >= p->n_regions)
                    OP_FAIL("unknown region %lld", (long long)a);
            }
            if (is_p2p(kind) || is_collective(kind)) {
                if (c < 0 || (uint64_t)c >= s->n_xcomm)
                    OP_FAIL("unknown communicator %lld", (long long)c);
                if (comm_rank(s, (uint32_t)c, r) == WS_NONE32)
                    OP_FAIL("rank %u is not a member of %s", (unsigned)r, s->comm[c].name);
                if (size < 0)
                    OP_FAIL("negative message size %lld", (long long)size);
            }
            switch (kind) {
            case WS_SYNTH_COMPUTE: {
                if (b < 0 || b >= n_dur)
                    OP_FAIL("duration index %lld out of range", (long long)b);
                double d = p->durations[p->dur_ptr[r] + b];
                if (!(d >= 0.0) || !(d * s->res < (double)TICKS_MAX))
                    OP_FAIL("invalid duration %g s", d);
                n_ev += 2;
                if (depth + 1 > s->max_depth)
                    s->max_depth = depth + 1;
                break;
            }
            case WS_SYNTH_ENTER:
                if (ws_grow((void **)&stack, &stack_cap, (size_t)depth + 1, sizeof *stack) != 0) {
                    rc = ws_error_nomem(s->err, "region stack");
                    goto fail;
                }
                stack[depth++] = (uint32_t)a;
                if (depth > s->max_depth)
                    s->max_depth = depth;
                n_ev += 1;
                break;
            case WS_SYNTH_LEAVE:
                if (depth == 0 || stack[depth - 1] != (uint32_t)a)
                    OP_FAIL("region '%s' is not the innermost open region", region_name(s, a));
                depth--;
                n_ev += 1;
                break;
            case WS_SYNTH_SEND:
            case WS_SYNTH_SSEND:
            case WS_SYNTH_RECV:
            case WS_SYNTH_ISEND:
            case WS_SYNTH_IRECV:
                if (a < 0 || a >= (int64_t)s->comm[c].size)
                    OP_FAIL("peer rank %lld is outside %s of size %u", (long long)a, s->comm[c].name,
                            (unsigned)s->comm[c].size);
                if (b < 0 || b > (int64_t)UINT32_MAX)
                    OP_FAIL("tag %lld is not a valid OTF2 tag", (long long)b);
                n_ev += 3;
                if (kind == WS_SYNTH_IRECV) {
                    n_rq += 1;
                } else {
                    n_msg += 1;
                    if (kind == WS_SYNTH_ISEND)
                        n_rq += 1;
                }
                if (kind == WS_SYNTH_ISEND || kind == WS_SYNTH_IRECV)
                    n_requests++;
                break;
            case WS_SYNTH_WAIT:
            case WS_SYNTH_WAITALL:
                if (a < 0 || b < 0 || a > n_req || b > n_req - a)
                    OP_FAIL("request list [%lld, %lld) out of range", (long long)a, (long long)(a + b));
                if (kind == WS_SYNTH_WAIT && b != 1)
                    OP_FAIL("MPI_Wait needs exactly one request");
                /* completions: one record each; MpiIrecv also carries a
                 * message (counted as an upper bound) */
                n_ev += 2 + (uint64_t)b;
                n_rq += (uint64_t)b;
                n_msg += (uint64_t)b;
                break;
            default: /* collectives */
                if (has_root(kind) && (a < 0 || a >= (int64_t)s->comm[c].size))
                    OP_FAIL("root %lld is outside %s of size %u", (long long)a, s->comm[c].name,
                            (unsigned)s->comm[c].size);
                n_ev += 4;
                n_coll += 1;
                s->counts[s->comm[c].count_base + comm_rank(s, (uint32_t)c, r)]++;
                break;
            }
#undef OP_FAIL
        }
        if (depth) {
            rc = ARG_FAIL("rank %u: region '%s' is entered but never left", (unsigned)r,
                          region_name(s, stack[depth - 1]));
            goto fail;
        }
        if (n_ev > UINT32_MAX) {
            rc = ARG_FAIL("rank %u: more than 2^32 events on one location are not supported", (unsigned)r);
            goto fail;
        }
        st->n_events = n_ev;
        st->n_messages = n_msg;
        st->n_requests = n_rq;
        st->n_collectives = n_coll;
        s->total_events += n_ev;
        s->req_base[r + 1] = n_requests;
    }
    free(stack);
    stack = NULL;
    s->max_depth += 3; /* main, MPI function */

    /* request slots: the k-th isend/irecv of a rank is its request k+1 */
    s->req_op = ws_malloc_array(n_requests ? n_requests : 1, sizeof *s->req_op);
    s->req_state = ws_calloc(n_requests ? n_requests : 1, sizeof *s->req_state);
    if (!s->req_op || !s->req_state)
        return ws_error_nomem(s->err, "requests");
    for (uint32_t r = 0; r < s->n; r++) {
        uint64_t slot = s->req_base[r];
        for (uint64_t gi = (uint64_t)p->rank_ptr[r]; gi < (uint64_t)p->rank_ptr[r + 1]; gi++) {
            int kind = (int)op_row(s, gi)[0];
            if (kind == WS_SYNTH_ISEND || kind == WS_SYNTH_IRECV)
                s->req_op[slot++] = gi;
        }
    }
    return WS_OK;
fail:
    free(stack);
    return rc;
}

/* ---- pass 2: message matching ----------------------------------------------- */

typedef struct mtable {
    mentry *e;
    size_t cap, count;
} mtable;

static inline size_t mhash(uint32_t comm, uint32_t src, uint32_t dst, uint32_t tag)
{
    return (size_t)(ws_hash64(((uint64_t)comm << 32) ^ src) ^ ws_hash64(((uint64_t)dst << 32) | tag));
}

static mentry *mfind(mtable *m, uint32_t comm, uint32_t src, uint32_t dst, uint32_t tag)
{
    size_t mask = m->cap - 1, j = mhash(comm, src, dst, tag) & mask;
    for (;; j = (j + 1) & mask) {
        mentry *e = &m->e[j];
        if (e->comm == WS_NONE32) {
            e->comm = comm;
            e->src = src;
            e->dst = dst;
            e->tag = tag;
            e->head = e->tail = WS_NONE64;
            e->queued = 0;
            e->n_send = e->n_recv = 0;
            m->count++;
            return e;
        }
        if (e->comm == comm && e->src == src && e->dst == dst && e->tag == tag)
            return e;
    }
}

static int mgrow(mtable *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    mentry *old = m->e;
    size_t old_cap = m->cap;
    m->e = ws_malloc_array(cap, sizeof *m->e);
    if (!m->e) {
        m->e = old;
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        m->e[i].comm = WS_NONE32;
    m->cap = cap;
    m->count = 0;
    size_t mask = cap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].comm == WS_NONE32)
            continue;
        size_t j = mhash(old[i].comm, old[i].src, old[i].dst, old[i].tag) & mask;
        while (m->e[j].comm != WS_NONE32)
            j = (j + 1) & mask;
        m->e[j] = old[i];
        m->count++;
    }
    free(old);
    return 0;
}

static int match_messages(synth *s)
{
    mtable m = {NULL, 0, 0};
    if (mgrow(&m) != 0)
        return ws_error_nomem(s->err, "message matching");
    for (uint32_t r = 0; r < s->n; r++) {
        for (uint64_t gi = (uint64_t)s->p->rank_ptr[r]; gi < (uint64_t)s->p->rank_ptr[r + 1]; gi++) {
            const int64_t *op = op_row(s, gi);
            int kind = (int)op[0];
            if (!is_p2p(kind))
                continue;
            if ((m.count + 1) * 2 > m.cap && mgrow(&m) != 0) {
                free(m.e);
                return ws_error_nomem(s->err, "message matching");
            }
            uint32_t c = (uint32_t)op[4];
            uint32_t peer = s->comm[c].members[op[1]];
            int send = is_send(kind);
            mentry *e = send ? mfind(&m, c, r, peer, (uint32_t)op[2]) : mfind(&m, c, peer, r, (uint32_t)op[2]);
            if (send)
                e->n_send++;
            else
                e->n_recv++;
            if ((send && e->queued < 0) || (!send && e->queued > 0)) {
                /* the oldest waiting partner */
                uint64_t partner = e->head;
                e->head = s->link[partner];
                s->link[partner] = gi;
                s->link[gi] = partner;
                e->queued += send ? 1 : -1;
                if (e->queued == 0)
                    e->head = e->tail = WS_NONE64;
            } else {
                s->link[gi] = WS_NONE64;
                if (e->queued == 0)
                    e->head = gi;
                else
                    s->link[e->tail] = gi;
                e->tail = gi;
                e->queued += send ? 1 : -1;
            }
        }
    }
    /* report the earliest unmatched operation */
    mentry *worst = NULL;
    for (size_t j = 0; j < m.cap; j++)
        if (m.e[j].comm != WS_NONE32 && m.e[j].queued != 0 && (!worst || m.e[j].head < worst->head))
            worst = &m.e[j];
    int rc = WS_OK;
    if (worst) {
        char what[300];
        describe_op(s, worst->head, what, sizeof what);
        const char *cname = s->comm[worst->comm].name;
        if (worst->queued < 0)
            rc = MATCH_FAIL("%s: no matching send: world rank %u sends %llu message(s) with tag %u on %s to world "
                            "rank %u, which receives %llu",
                            what, (unsigned)worst->src, (unsigned long long)worst->n_send, (unsigned)worst->tag,
                            cname, (unsigned)worst->dst, (unsigned long long)worst->n_recv);
        else
            rc = MATCH_FAIL("%s: no matching receive: world rank %u receives %llu message(s) with tag %u on %s from "
                            "world rank %u, which sends %llu",
                            what, (unsigned)worst->dst, (unsigned long long)worst->n_recv, (unsigned)worst->tag,
                            cname, (unsigned)worst->src, (unsigned long long)worst->n_send);
    }
    free(m.e);
    return rc;
}

/* ---- pass 3: collective instances -------------------------------------------- */

/* Operation (pc) of rank r that is its `seq`-th collective call on comm c. */
static uint64_t find_collective_call(const synth *s, uint32_t r, uint32_t c, uint64_t seq)
{
    uint64_t k = (c == 0) ? 1 : 0; /* MPI_Init is call 0 on the world */
    if (c == 0 && seq == 0)
        return 0;
    uint64_t n_user = n_user_ops(s, r);
    for (uint64_t pc = 1; pc <= n_user; pc++) {
        const int64_t *op = op_row(s, (uint64_t)s->p->rank_ptr[r] + pc - 1);
        if (is_collective((int)op[0]) && (uint32_t)op[4] == c) {
            if (k == seq)
                return pc;
            k++;
        }
    }
    return n_user + 1;
}

static void describe_call(const synth *s, int kind, uint32_t root, char *buf, size_t size)
{
    int f = function_of(kind);
    if (has_root(kind))
        snprintf(buf, size, "%s with root %u", mpi_functions[f].name, (unsigned)root);
    else
        snprintf(buf, size, "%s", f >= 0 ? mpi_functions[f].name : "?");
    (void)s;
}

static int build_collectives(synth *s)
{
    /* every member must make the same number of calls per communicator */
    uint64_t n_inst = 0, n_slots = 0;
    for (uint32_t c = 0; c < s->n_xcomm; c++) {
        xcomm *x = &s->comm[c];
        const uint64_t *cnt = s->counts + x->count_base;
        uint32_t lo = 0, hi = 0;
        for (uint32_t k = 1; k < x->size; k++) {
            if (cnt[k] < cnt[lo])
                lo = k;
            if (cnt[k] > cnt[hi])
                hi = k;
        }
        if (cnt[lo] != cnt[hi]) {
            char what[300];
            uint32_t r = x->members[hi];
            /* calls of the world count MPI_Init (first) and MPI_Finalize
             * (last): the first unmatched user call is then at cnt - 1 */
            uint64_t user_lo = cnt[lo] - (c == 0 ? 2 : 0);
            describe(s, r, find_collective_call(s, r, c, c == 0 ? cnt[lo] - 1 : cnt[lo]), what, sizeof what);
            return MATCH_FAIL("%s: collective call #%llu on %s has no counterpart on rank %u, which makes only %llu "
                              "collective call(s) on this communicator",
                              what, (unsigned long long)user_lo, x->name, (unsigned)x->members[lo],
                              (unsigned long long)user_lo);
        }
        x->inst_base = n_inst;
        x->n_inst = cnt[0];
        n_inst += cnt[0];
        if (cnt[0] && x->size > (UINT64_MAX - n_slots) / cnt[0])
            return ARG_FAIL("too many collective calls");
        n_slots += cnt[0] * x->size;
    }
    s->n_inst = n_inst;
    s->inst = ws_calloc(n_inst ? n_inst : 1, sizeof *s->inst);
    s->slot_time = ws_malloc_array(n_slots ? n_slots : 1, sizeof *s->slot_time);
    if (!s->inst || !s->slot_time)
        return ws_error_nomem(s->err, "collective instances");
    for (uint64_t i = 0; i < n_slots; i++)
        s->slot_time[i] = -1;
    uint64_t slot = 0;
    for (uint32_t c = 0; c < s->n_xcomm; c++) {
        xcomm *x = &s->comm[c];
        for (uint64_t k = 0; k < x->n_inst; k++) {
            instance *in = &s->inst[x->inst_base + k];
            in->slot = slot;
            slot += x->size;
            in->comm = c;
            in->max_enter = -1;
            in->prefix_max = -1;
            in->root = WS_NONE32;
        }
    }
    /* world: the first instance is MPI_Init, the last MPI_Finalize */
    s->inst[s->comm[0].inst_base].kind = K_INIT;
    s->inst[s->comm[0].inst_base + s->comm[0].n_inst - 1].kind = K_FINALIZE;

    memset(s->counts, 0, s->n_counts * sizeof *s->counts);
    for (uint32_t r = 0; r < s->n; r++)
        s->counts[s->comm[0].count_base + r] = 1;
    for (uint32_t r = 0; r < s->n; r++) {
        for (uint64_t gi = (uint64_t)s->p->rank_ptr[r]; gi < (uint64_t)s->p->rank_ptr[r + 1]; gi++) {
            const int64_t *op = op_row(s, gi);
            int kind = (int)op[0];
            if (!is_collective(kind))
                continue;
            uint32_t c = (uint32_t)op[4];
            uint32_t cr = comm_rank(s, c, r);
            uint64_t seq = s->counts[s->comm[c].count_base + cr]++;
            uint64_t i = s->comm[c].inst_base + seq;
            instance *in = &s->inst[i];
            uint32_t root = has_root(kind) ? (uint32_t)op[1] : WS_NONE32;
            uint64_t pc = gi - (uint64_t)s->p->rank_ptr[r] + 1;
            if (in->kind == 0) {
                in->kind = kind;
                in->root = root;
                in->first_rank = r;
                in->first_pc = pc;
            } else if (in->kind != kind || in->root != root) {
                char what[300], other[300], mine[64], theirs[64];
                describe(s, r, pc, what, sizeof what);
                describe_call(s, kind, root, mine, sizeof mine);
                if (in->kind == K_FINALIZE) {
                    return MATCH_FAIL("%s: collective call #%llu on %s is %s, but the other members call "
                                      "MPI_Finalize there",
                                      what, (unsigned long long)(seq - (c == 0 ? 1 : 0)), s->comm[c].name, mine);
                }
                describe(s, in->first_rank, in->first_pc, other, sizeof other);
                describe_call(s, in->kind, in->root, theirs, sizeof theirs);
                return MATCH_FAIL("%s: collective call #%llu on %s is %s, but %s calls %s there "
                                  "(collectives must be called in the same order by all members)",
                                  what, (unsigned long long)(seq - (c == 0 ? 1 : 0)), s->comm[c].name, mine, other,
                                  theirs);
            }
            s->link[gi] = i;
        }
    }
    return WS_OK;
}

/* ---- pass 4: definitions ------------------------------------------------------ */

static uint32_t add_string(ws_trace *t, const char *str)
{
    return ws_trace_add_string(t, t->n_strings, str);
}

#define TABLE(field, cap, n)                                              \
    do {                                                                  \
        t->field = ws_calloc((n) ? (n) : 1, sizeof *t->field);            \
        if (!t->field)                                                    \
            return ws_error_nomem(s->err, "definitions");                 \
        t->cap = (n) ? (n) : 1;                                           \
    } while (0)

#define NOMEM_IF(cond)                                                    \
    do {                                                                  \
        if (cond)                                                         \
            return ws_error_nomem(s->err, "definitions");                 \
    } while (0)

static int new_group(synth *s, uint8_t type, uint64_t n_members, uint32_t name)
{
    ws_trace *t = s->t;
    ws_group *g = &t->groups[t->n_groups];
    g->members = ws_malloc_array(n_members ? n_members : 1, sizeof *g->members);
    NOMEM_IF(!g->members);
    g->otf2_id = t->n_groups;
    g->name = name;
    g->type = type;
    g->paradigm = OTF2_PARADIGM_MPI;
    g->flags = OTF2_GROUP_FLAG_NONE;
    g->n_members = n_members;
    NOMEM_IF(ws_map64_put(&t->group_ids, g->otf2_id, t->n_groups) != 0);
    t->n_groups++;
    return WS_OK;
}

static int new_comm(synth *s, uint32_t name, uint32_t group, uint32_t parent)
{
    ws_trace *t = s->t;
    ws_comm *c = &t->comms[t->n_comms];
    c->otf2_id = t->n_comms;
    c->name = name;
    c->group = group;
    c->parent = parent;
    NOMEM_IF(ws_map64_put(&t->comm_ids, c->otf2_id, t->n_comms) != 0);
    t->n_comms++;
    return WS_OK;
}

static int new_region(synth *s, uint32_t name, uint8_t role, uint8_t paradigm, uint32_t file, uint32_t empty)
{
    ws_trace *t = s->t;
    ws_region *g = &t->regions[t->n_regions];
    g->otf2_id = t->n_regions;
    g->name = name;
    g->canonical_name = name;
    g->description = empty;
    g->role = role;
    g->paradigm = paradigm;
    g->flags = OTF2_REGION_FLAG_NONE;
    g->source_file = file;
    g->begin_line = 0;
    g->end_line = 0;
    NOMEM_IF(ws_map64_put(&t->region_ids, g->otf2_id, t->n_regions) != 0);
    t->n_regions++;
    return WS_OK;
}

static int build_definitions(synth *s)
{
    const ws_synth_program *p = s->p;
    ws_trace *t = s->t = ws_trace_new();
    NOMEM_IF(!t);
    /* not backed by files: loading has nothing to read */
    t->path = ws_strdup("<synthetic>");
    t->directory = ws_strdup("<synthetic>");
    NOMEM_IF(!t->path || !t->directory);
    t->clock.resolution = (uint64_t)s->res;
    t->clock.offset = 0;
    t->clock.realtime = OTF2_UNDEFINED_TIMESTAMP;
    t->clock.defined = 1;

    /* which MPI functions are used */
    int used[F_COUNT] = {0};
    used[F_INIT] = used[F_FINALIZE] = 1;
    for (uint64_t gi = 0; gi < s->n_ops; gi++) {
        int f = function_of((int)op_row(s, gi)[0]);
        if (f >= 0)
            used[f] = 1;
    }

    /* strings: a few fixed ones, names of regions, communicators and
     * topologies, then one per rank */
    uint32_t s_empty = add_string(t, "");
    uint32_t s_machine = add_string(t, "machine");
    uint32_t s_machine_name = add_string(t, "synthetic");
    uint32_t s_node = add_string(t, "node");
    uint32_t s_node_name = add_string(t, "node0");
    uint32_t s_thread = add_string(t, "Master thread");
    uint32_t s_main = add_string(t, "main");
    uint32_t s_mpi = add_string(t, "MPI");
    NOMEM_IF(s_empty == WS_NONE32 || s_machine == WS_NONE32 || s_machine_name == WS_NONE32 || s_node == WS_NONE32 ||
             s_node_name == WS_NONE32 || s_thread == WS_NONE32 || s_main == WS_NONE32 || s_mpi == WS_NONE32);

    /* regions: main, user regions, MPI functions, the program */
    uint32_t n_regions = 1 + p->n_regions + F_COUNT + 1;
    TABLE(regions, cap_regions, n_regions);
    NOMEM_IF(new_region(s, s_main, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, WS_NONE32, s_empty));
    s->user_region = ws_malloc_array(p->n_regions ? p->n_regions : 1, sizeof *s->user_region);
    NOMEM_IF(!s->user_region);
    for (uint32_t u = 0; u < p->n_regions; u++) {
        const char *name = p->region_names[u] ? p->region_names[u] : "";
        if (strcmp(name, "main") == 0) {
            s->user_region[u] = 0;
            continue;
        }
        for (int f = 0; f < F_COUNT; f++)
            if (strcmp(name, mpi_functions[f].name) == 0)
                return ARG_FAIL("region name '%s' is reserved for the MPI function", name);
        uint32_t str = ws_trace_intern_string(t, name);
        NOMEM_IF(str == WS_NONE32);
        s->user_region[u] = t->n_regions;
        NOMEM_IF(new_region(s, str, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, WS_NONE32, s_empty));
    }
    for (int f = 0; f < F_COUNT; f++) {
        s->mpi_region[f] = WS_NONE32;
        if (!used[f])
            continue;
        uint32_t str = ws_trace_intern_string(t, mpi_functions[f].name);
        NOMEM_IF(str == WS_NONE32);
        s->mpi_region[f] = t->n_regions;
        NOMEM_IF(new_region(s, str, mpi_functions[f].role, OTF2_PARADIGM_MPI, s_mpi, s_empty));
    }
    /* Score-P's program region: no event enters it, the OTF2 writer names
     * ProgramBegin with its canonical name (which Scalasca requires) */
    {
        const char *prog = p->name && *p->name ? p->name : "synthetic";
        size_t len = strlen(prog);
        char *canonical = malloc(len + sizeof "/synthetic/");
        NOMEM_IF(!canonical);
        memcpy(canonical, "/synthetic/", sizeof "/synthetic/" - 1);
        memcpy(canonical + sizeof "/synthetic/" - 1, prog, len + 1);
        uint32_t s_prog = ws_trace_intern_string(t, prog);
        uint32_t s_canon = ws_trace_intern_string(t, canonical);
        free(canonical);
        NOMEM_IF(s_prog == WS_NONE32 || s_canon == WS_NONE32);
        NOMEM_IF(new_region(s, s_prog, OTF2_REGION_ROLE_ARTIFICIAL, OTF2_PARADIGM_MEASUREMENT_SYSTEM, WS_NONE32,
                            s_empty));
        t->regions[t->n_regions - 1].canonical_name = s_canon;
    }

    /* system tree: machine -> node */
    TABLE(system_nodes, cap_system_nodes, 2);
    t->system_nodes[0] = (ws_system_node){0, s_machine_name, s_machine, WS_NONE32};
    t->system_nodes[1] = (ws_system_node){1, s_node_name, s_node, 0};
    t->n_system_nodes = 2;
    NOMEM_IF(ws_map64_put(&t->system_node_ids, 0, 0) != 0 || ws_map64_put(&t->system_node_ids, 1, 1) != 0);

    /* communicators: world, self, sub-communicators */
    uint32_t s_world = add_string(t, "MPI_COMM_WORLD");
    uint32_t s_self = add_string(t, "MPI_COMM_SELF");
    NOMEM_IF(s_world == WS_NONE32 || s_self == WS_NONE32);
    uint32_t n_groups = 3 + p->n_comms;
    TABLE(groups, cap_groups, n_groups);
    TABLE(comms, cap_comms, 2 + p->n_comms);
    int rc;
    if ((rc = new_group(s, WS_GROUP_COMM_LOCATIONS, s->n, s_empty)) ||
        (rc = new_group(s, WS_GROUP_COMM_GROUP, s->n, s_empty)) || (rc = new_group(s, WS_GROUP_COMM_SELF, 0, s_empty)))
        return rc;
    for (uint32_t r = 0; r < s->n; r++)
        t->groups[0].members[r] = t->groups[1].members[r] = r;
    if ((rc = new_comm(s, s_world, 1, WS_NONE32)) || (rc = new_comm(s, s_self, 2, WS_NONE32)))
        return rc;
    for (uint32_t i = 0; i < p->n_comms; i++) {
        const xcomm *x = &s->comm[i + 1];
        uint32_t name = ws_trace_intern_string(t, x->name);
        NOMEM_IF(name == WS_NONE32);
        uint32_t group = t->n_groups;
        if ((rc = new_group(s, WS_GROUP_COMM_GROUP, x->size, s_empty)))
            return rc;
        for (uint32_t k = 0; k < x->size; k++)
            t->groups[group].members[k] = x->members[k];
        if ((rc = new_comm(s, name, group, 0)))
            return rc;
    }

    /* Cartesian topologies */
    uint32_t n_dims = 0;
    for (uint32_t i = 0; i < p->n_carts; i++) {
        const ws_synth_cart *k = &p->carts[i];
        if (k->comm >= s->n_xcomm)
            return ARG_FAIL("Cartesian topology %u: unknown communicator %u", (unsigned)i, (unsigned)k->comm);
        if (k->n_dims == 0 || k->n_dims > 8)
            return ARG_FAIL("Cartesian topology %u: %u dimensions (1 to 8 are supported)", (unsigned)i,
                            (unsigned)k->n_dims);
        uint64_t product = 1;
        for (uint32_t d = 0; d < k->n_dims; d++) {
            if (k->dims[d] <= 0 || k->dims[d] > (int64_t)s->comm[k->comm].size)
                return ARG_FAIL("Cartesian topology %u: invalid size %lld of dimension %u", (unsigned)i,
                                (long long)k->dims[d], (unsigned)d);
            product *= (uint64_t)k->dims[d];
            if (product > s->comm[k->comm].size)
                break;
        }
        if (product > s->comm[k->comm].size)
            return ARG_FAIL("Cartesian topology %u needs more ranks than %s has (%u)", (unsigned)i,
                            s->comm[k->comm].name, (unsigned)s->comm[k->comm].size);
        n_dims += k->n_dims;
    }
    if (p->n_carts) {
        TABLE(cart_dims, cap_cart_dims, n_dims);
        TABLE(cart_topologies, cap_cart_topologies, p->n_carts);
    }
    for (uint32_t i = 0; i < p->n_carts; i++) {
        const ws_synth_cart *k = &p->carts[i];
        ws_cart_topology *topo = &t->cart_topologies[i];
        topo->otf2_id = i;
        topo->name = ws_trace_intern_string(t, k->name ? k->name : "");
        NOMEM_IF(topo->name == WS_NONE32);
        topo->comm = s->comm[k->comm].trace_comm;
        topo->n_dims = k->n_dims;
        topo->dims = ws_malloc_array(k->n_dims, sizeof *topo->dims);
        NOMEM_IF(!topo->dims);
        t->n_cart_topologies++;
        NOMEM_IF(ws_map64_put(&t->cart_topology_ids, i, i) != 0);
        for (uint32_t d = 0; d < k->n_dims; d++) {
            char name[32];
            snprintf(name, sizeof name, "dim %u", (unsigned)d);
            ws_cart_dim *dim = &t->cart_dims[t->n_cart_dims];
            dim->name = ws_trace_intern_string(t, name);
            NOMEM_IF(dim->name == WS_NONE32);
            dim->size = (uint32_t)k->dims[d];
            dim->periodic = k->periodic && k->periodic[d] != 0;
            topo->dims[d] = t->n_cart_dims;
            NOMEM_IF(ws_map64_put(&t->cart_dim_ids, t->n_cart_dims, t->n_cart_dims) != 0);
            t->n_cart_dims++;
        }
    }

    /* one process with one thread per rank */
    TABLE(location_groups, cap_location_groups, s->n);
    TABLE(locations, cap_locations, s->n);
    for (uint32_t r = 0; r < s->n; r++) {
        char name[48];
        snprintf(name, sizeof name, "MPI Rank %u", (unsigned)r);
        uint32_t str = add_string(t, name);
        NOMEM_IF(str == WS_NONE32);
        ws_location_group *g = &t->location_groups[r];
        g->otf2_id = r;
        g->name = str;
        g->type = OTF2_LOCATION_GROUP_TYPE_PROCESS;
        g->system_node = 1;
        ws_location *l = &t->locations[r];
        l->otf2_id = r;
        l->name = s_thread;
        l->type = OTF2_LOCATION_TYPE_CPU_THREAD;
        l->group = r;
        NOMEM_IF(ws_map64_put(&t->location_group_ids, r, r) != 0 || ws_map64_put(&t->location_ids, r, r) != 0);
        t->n_location_groups++;
        t->n_locations++;
    }

    if ((rc = ws_trace_resolve_definitions(t, s->err)))
        return rc;

    /* the region lookup table the OTF2 reader builds for dense ids */
    t->region_lut_size = t->n_regions;
    t->region_lut = ws_malloc_array(t->n_regions, sizeof *t->region_lut);
    NOMEM_IF(!t->region_lut);
    for (uint32_t i = 0; i < t->n_regions; i++)
        t->region_lut[i] = i;

    /* coordinates, row-major (last dimension fastest) like MPI_Cart_create */
    for (uint32_t i = 0; i < t->n_cart_topologies; i++) {
        ws_cart_topology *topo = &t->cart_topologies[i];
        const ws_synth_cart *k = &p->carts[i];
        uint32_t size = t->comms[topo->comm].size;
        topo->n_ranks = size;
        topo->coords = ws_malloc_array((size_t)size * topo->n_dims, sizeof *topo->coords);
        NOMEM_IF(!topo->coords);
        uint64_t product = 1;
        for (uint32_t d = 0; d < topo->n_dims; d++)
            product *= (uint64_t)k->dims[d];
        for (uint32_t r = 0; r < size; r++) {
            uint32_t *c = topo->coords + (size_t)r * topo->n_dims;
            uint64_t rest = r;
            for (uint32_t d = topo->n_dims; d-- > 0;) {
                if (r < product) {
                    c[d] = (uint32_t)(rest % (uint64_t)k->dims[d]);
                    rest /= (uint64_t)k->dims[d];
                } else {
                    c[d] = WS_NONE32;
                }
            }
        }
    }

    /* exactly sized event columns */
    for (uint32_t r = 0; r < s->n; r++) {
        const rank_state *st = &s->st[r];
        ws_events *ev = &t->locations[r].events;
        if (ws_events_reserve(ev, st->n_events) != 0)
            return ws_error_nomem(s->err, "events");
#define ALLOC(field, count)                                                        \
    do {                                                                           \
        ev->field = ws_malloc_array((count) ? (count) : 1, sizeof *ev->field);     \
        if (!ev->field)                                                            \
            return ws_error_nomem(s->err, "events");                               \
    } while (0)
        ALLOC(msg_event, st->n_messages);
        ALLOC(msg_peer, st->n_messages);
        ALLOC(msg_comm, st->n_messages);
        ALLOC(msg_tag, st->n_messages);
        ALLOC(msg_bytes, st->n_messages);
        ALLOC(req_event, st->n_requests);
        ALLOC(req_id, st->n_requests);
        ALLOC(coll_event, st->n_collectives);
        ALLOC(coll_comm, st->n_collectives);
        ALLOC(coll_root, st->n_collectives);
        ALLOC(coll_op, st->n_collectives);
        ALLOC(coll_sent, st->n_collectives);
        ALLOC(coll_received, st->n_collectives);
#undef ALLOC
    }
    return WS_OK;
}

#undef TABLE
#undef NOMEM_IF

/* ---- pass 5: timed execution ------------------------------------------------- */

static inline uint64_t emit(synth *s, ws_events *ev, int64_t time, uint8_t kind, uint32_t ref)
{
    uint64_t i = ev->n++;
    /* exactly the reader's conversion: (ticks - offset) / resolution */
    ev->time[i] = (double)time * s->inv;
    ev->kind[i] = kind;
    ev->ref[i] = ref;
    s->produced++;
    return i;
}

static inline void emit_message(synth *s, ws_events *ev, int64_t time, uint8_t kind, uint32_t peer, uint32_t comm,
                                uint32_t tag, uint64_t bytes)
{
    uint64_t m = ev->n_messages++;
    uint64_t e = emit(s, ev, time, kind, (uint32_t)m);
    ev->msg_event[m] = (uint32_t)e;
    ev->msg_peer[m] = peer;
    ev->msg_comm[m] = comm;
    ev->msg_tag[m] = tag;
    ev->msg_bytes[m] = bytes;
}

/* request row for the event just emitted, or (event == WS_NONE64) a new
 * event of `kind` whose ref is the row */
static inline void emit_request(synth *s, ws_events *ev, int64_t time, uint8_t kind, uint64_t id, uint64_t event)
{
    uint64_t q = ev->n_requests++;
    if (event == WS_NONE64)
        event = emit(s, ev, time, kind, (uint32_t)q);
    ev->req_event[q] = (uint32_t)event;
    ev->req_id[q] = id;
}

static void wake(synth *s, uint32_t r)
{
    rank_state *st = &s->st[r];
    if (st->wait_kind == WAIT_NOTHING)
        return;
    st->wait_kind = WAIT_NOTHING;
    s->queue[(s->q_head + s->q_count) % s->n] = r;
    s->q_count++;
}

/* p2p operation gi got its post time: wake its partner's rank if it
 * waits for exactly that */
static void notify_post(synth *s, uint64_t gi, int64_t time)
{
    s->post[gi] = time;
    const int64_t *op = op_row(s, gi);
    uint32_t q = s->comm[op[4]].members[op[1]];
    const rank_state *st = &s->st[q];
    if (st->wait_kind == WAIT_OP && st->wait_id == gi)
        wake(s, q);
}

static void wake_blocked_members(synth *s, uint64_t i)
{
    const xcomm *x = &s->comm[s->inst[i].comm];
    for (uint32_t k = 0; k < x->size; k++) {
        uint32_t q = x->members[k];
        if (s->st[q].wait_kind == WAIT_INSTANCE && s->st[q].wait_id == i)
            wake(s, q);
    }
}

static void arrive(synth *s, uint64_t i, uint32_t cr, int64_t time)
{
    instance *in = &s->inst[i];
    const xcomm *x = &s->comm[in->comm];
    s->slot_time[in->slot + cr] = time;
    in->arrived++;
    if (time > in->max_enter)
        in->max_enter = time;
    switch (sync_class(in->kind)) {
    case SYNC_ALL:
        if (in->arrived == x->size)
            wake_blocked_members(s, i);
        break;
    case SYNC_ONE2ALL:
        if (cr == in->root)
            wake_blocked_members(s, i);
        break;
    case SYNC_ALL2ONE:
        if (in->arrived == x->size) {
            uint32_t q = x->members[in->root];
            if (s->st[q].wait_kind == WAIT_INSTANCE && s->st[q].wait_id == i)
                wake(s, q);
        }
        break;
    case SYNC_SCAN:
        while (in->prefix < x->size && s->slot_time[in->slot + in->prefix] >= 0) {
            int64_t *slot = &s->slot_time[in->slot + in->prefix];
            in->prefix_max = max64(in->prefix_max, *slot);
            *slot = in->prefix_max; /* from now on: the prefix maximum */
            uint32_t q = x->members[in->prefix];
            if (s->st[q].wait_kind == WAIT_INSTANCE && s->st[q].wait_id == i)
                wake(s, q);
            in->prefix++;
        }
        break;
    }
}

/* Leave time of comm rank cr (entered at t) in instance i, or -1 if it
 * is not known yet. */
static int64_t collective_leave(const synth *s, uint64_t i, uint32_t cr, int64_t t)
{
    const instance *in = &s->inst[i];
    uint32_t size = s->comm[in->comm].size;
    switch (sync_class(in->kind)) {
    case SYNC_ONE2ALL:
        if (cr == in->root)
            return t + s->o;
        if (s->slot_time[in->slot + in->root] < 0)
            return -1;
        return max64(t, s->slot_time[in->slot + in->root] + s->L) + s->o;
    case SYNC_ALL2ONE:
        if (cr != in->root)
            return t + s->o;
        return in->arrived == size ? in->max_enter + s->L + s->o : -1;
    case SYNC_SCAN:
        return cr < in->prefix ? s->slot_time[in->slot + cr] + s->L + s->o : -1;
    default:
        return in->arrived == size ? in->max_enter + s->L + s->o : -1;
    }
}

/* bytes sent/received by comm rank cr of n in a collective of `size`
 * bytes per rank (the conventions are documented in synth.py) */
static void collective_bytes(int kind, uint32_t cr, uint32_t root, uint32_t n, uint64_t size, uint64_t *sent,
                             uint64_t *received)
{
    uint64_t all = size * n;
    switch (kind) {
    case WS_SYNTH_BCAST:
    case WS_SYNTH_SCATTER:
        *sent = cr == root ? all : 0;
        *received = size;
        break;
    case WS_SYNTH_REDUCE:
    case WS_SYNTH_GATHER:
        *sent = size;
        *received = cr == root ? all : 0;
        break;
    case WS_SYNTH_SCAN:
        *sent = size * (uint64_t)(n - cr);
        *received = size * (uint64_t)(cr + 1);
        break;
    case WS_SYNTH_BARRIER:
        *sent = *received = 0;
        break;
    default:
        *sent = *received = all;
        break;
    }
}

static int time_check(synth *s, uint32_t r, int64_t time)
{
    if (time < TICKS_MAX)
        return WS_OK;
    char what[300];
    describe(s, r, s->st[r].pc, what, sizeof what);
    return ARG_FAIL("%s: time exceeds the clock's range", what);
}

static int request_error(synth *s, uint32_t r, int64_t entry, const char *problem)
{
    char what[300];
    describe(s, r, s->st[r].pc, what, sizeof what);
    if (entry < 0) {
        uint64_t x = (uint64_t)(-(entry + 1));
        return MATCH_FAIL("%s: request %llu was started by rank %llu, not by this rank", what,
                          (unsigned long long)(x & 0xffffffffu), (unsigned long long)(x >> 32));
    }
    return MATCH_FAIL("%s: request %lld %s", what, (long long)entry, problem);
}

/* Nonzero (and r blocked on it) when operation `partner` has not posted yet. */
static int partner_not_posted(const synth *s, rank_state *st, uint64_t partner, int *blocked)
{
    if (s->post[partner] >= 0)
        return 0;
    st->wait_kind = WAIT_OP;
    st->wait_id = partner;
    *blocked = 1;
    return 1;
}

/* When the message of send operation `send` arrives at a receive posted
 * at `recv_post`: an eager send's data leaves at its post, a rendezvous
 * send's when both sides are there. */
static int64_t receive_arrival(const synth *s, uint64_t send, int64_t recv_post)
{
    const int64_t *sop = op_row(s, send);
    uint64_t size = (uint64_t)sop[3];
    int eager = sop[0] != WS_SYNTH_SSEND && size <= s->eager;
    return (eager ? s->post[send] : max64(s->post[send], recv_post)) + s->L + xfer(s, size);
}

/* Executes the current operation of rank r as far as possible.  Sets
 * *blocked when it needs a time that is not known yet. */
static int step(synth *s, uint32_t r, int *blocked)
{
    rank_state *st = &s->st[r];
    ws_events *ev = &s->t->locations[r].events;
    uint64_t n_user = n_user_ops(s, r);

    if (st->pc == 0 || st->pc == n_user + 1) { /* MPI_Init, MPI_Finalize */
        int init = st->pc == 0;
        uint64_t i = init ? s->comm[0].inst_base : s->comm[0].inst_base + s->comm[0].n_inst - 1;
        uint32_t region = s->mpi_region[init ? F_INIT : F_FINALIZE];
        if (st->phase == 0) {
            if (!init) {
                /* MPI requires every request to be completed before
                 * MPI_Finalize; an open one would leave a message unmatched */
                uint64_t base = s->req_base[r];
                for (uint64_t k = 0; k < s->req_base[r + 1] - base; k++)
                    if (s->req_state[base + k] != REQ_DONE) {
                        char what[300];
                        describe(s, r, s->req_op[base + k] - (uint64_t)s->p->rank_ptr[r] + 1, what, sizeof what);
                        return MATCH_FAIL("rank %u, MPI_Finalize: request %llu of %s was never completed by "
                                          "MPI_Wait/MPI_Waitall",
                                          (unsigned)r, (unsigned long long)(k + 1), what);
                    }
            }
            if (init) {
                emit(s, ev, st->t, WS_EV_PROGRAM_BEGIN, 0);
                emit(s, ev, st->t, WS_EV_ENTER, 0); /* main */
            }
            emit(s, ev, st->t, WS_EV_ENTER, region);
            st->t_enter = st->t;
            st->phase = 1;
            arrive(s, i, r, st->t);
        }
        int64_t leave = collective_leave(s, i, r, st->t_enter);
        if (leave < 0) {
            st->wait_kind = WAIT_INSTANCE;
            st->wait_id = i;
            *blocked = 1;
            return WS_OK;
        }
        int rc = time_check(s, r, leave);
        if (rc)
            return rc;
        emit(s, ev, leave, WS_EV_LEAVE, region);
        st->t = leave;
        st->phase = 0;
        if (init) {
            st->pc++;
        } else {
            emit(s, ev, leave, WS_EV_LEAVE, 0); /* main */
            emit(s, ev, leave, WS_EV_PROGRAM_END, 0);
            st->done = 1;
        }
        return WS_OK;
    }

    uint64_t gi = (uint64_t)s->p->rank_ptr[r] + st->pc - 1;
    const int64_t *op = op_row(s, gi);
    int kind = (int)op[0];
    int f = function_of(kind);
    uint32_t region = f >= 0 ? s->mpi_region[f] : WS_NONE32;
    int64_t leave = 0;
    int rc;

    switch (kind) {
    case WS_SYNTH_COMPUTE: {
        uint32_t u = s->user_region[op[1]];
        double d = s->p->durations[s->p->dur_ptr[r] + op[2]];
        leave = st->t + ticks(s, d);
        if ((rc = time_check(s, r, leave)))
            return rc;
        emit(s, ev, st->t, WS_EV_ENTER, u);
        emit(s, ev, leave, WS_EV_LEAVE, u);
        st->t = leave;
        break;
    }
    case WS_SYNTH_ENTER:
    case WS_SYNTH_LEAVE:
        emit(s, ev, st->t, kind == WS_SYNTH_ENTER ? WS_EV_ENTER : WS_EV_LEAVE, s->user_region[op[1]]);
        break;
    case WS_SYNTH_SEND:
    case WS_SYNTH_SSEND: {
        uint64_t size = (uint64_t)op[3];
        if (st->phase == 0) {
            emit(s, ev, st->t, WS_EV_ENTER, region);
            emit_message(s, ev, st->t, WS_EV_SEND, (uint32_t)op[1], s->comm[op[4]].trace_comm, (uint32_t)op[2], size);
            st->t_enter = st->t;
            notify_post(s, gi, st->t);
            if (kind == WS_SYNTH_SEND && size <= s->eager) {
                leave = st->t + s->o;
                break;
            }
            st->phase = 1;
        }
        uint64_t partner = s->link[gi];
        if (partner_not_posted(s, st, partner, blocked))
            return WS_OK;
        leave = max64(st->t_enter, s->post[partner]) + s->L + xfer(s, size) + s->o;
        break;
    }
    case WS_SYNTH_RECV: {
        if (st->phase == 0) {
            emit(s, ev, st->t, WS_EV_ENTER, region);
            st->t_enter = st->t;
            notify_post(s, gi, st->t);
            st->phase = 1;
        }
        uint64_t partner = s->link[gi];
        if (partner_not_posted(s, st, partner, blocked))
            return WS_OK;
        uint64_t size = (uint64_t)op_row(s, partner)[3];
        leave = max64(st->t_enter, receive_arrival(s, partner, st->t_enter)) + s->o;
        if ((rc = time_check(s, r, leave)))
            return rc;
        emit_message(s, ev, leave, WS_EV_RECV, (uint32_t)op[1], s->comm[op[4]].trace_comm, (uint32_t)op[2], size);
        break;
    }
    case WS_SYNTH_ISEND:
    case WS_SYNTH_IRECV: {
        uint64_t id = ++st->n_started;
        s->req_state[s->req_base[r] + id - 1] = REQ_PENDING;
        emit(s, ev, st->t, WS_EV_ENTER, region);
        if (kind == WS_SYNTH_ISEND) {
            emit_message(s, ev, st->t, WS_EV_ISEND, (uint32_t)op[1], s->comm[op[4]].trace_comm, (uint32_t)op[2],
                         (uint64_t)op[3]);
            emit_request(s, ev, st->t, WS_EV_ISEND, id, ev->n - 1);
        } else {
            emit_request(s, ev, st->t, WS_EV_IRECV_REQUEST, id, WS_NONE64);
        }
        notify_post(s, gi, st->t);
        leave = st->t + s->o;
        break;
    }
    case WS_SYNTH_WAIT:
    case WS_SYNTH_WAITALL: {
        const int64_t *list = s->p->requests + s->p->req_ptr[r] + op[1];
        uint64_t count = (uint64_t)op[2];
        uint64_t base = s->req_base[r];
        if (st->phase == 0) {
            for (uint64_t k = 0; k < count; k++) {
                int64_t id = list[k];
                if (id < 0)
                    return request_error(s, r, id, "");
                if (id == 0 || (uint64_t)id > st->n_started)
                    return request_error(s, r, id, "is unknown: no isend/irecv of this rank started it");
                uint8_t *state = &s->req_state[base + (uint64_t)id - 1];
                if (*state == REQ_DONE)
                    return request_error(s, r, id, "was already completed by an earlier wait");
                if (*state == REQ_IN_WAIT)
                    return request_error(s, r, id, "is listed twice");
                *state = REQ_IN_WAIT;
            }
            emit(s, ev, st->t, WS_EV_ENTER, region);
            st->t_enter = st->t;
            st->acc = st->t;
            st->cursor = 0;
            st->phase = 1;
        }
        for (; st->cursor < count; st->cursor++) {
            uint64_t q = s->req_op[base + (uint64_t)list[st->cursor] - 1];
            const int64_t *qop = op_row(s, q);
            uint64_t partner = s->link[q];
            int64_t done;
            if (qop[0] == WS_SYNTH_ISEND) {
                uint64_t size = (uint64_t)qop[3];
                if (size <= s->eager) {
                    done = s->post[q] + s->o;
                } else {
                    if (partner_not_posted(s, st, partner, blocked))
                        return WS_OK;
                    done = max64(s->post[q], s->post[partner]) + s->L + xfer(s, size);
                }
            } else {
                if (partner_not_posted(s, st, partner, blocked))
                    return WS_OK;
                done = receive_arrival(s, partner, s->post[q]);
            }
            st->acc = max64(st->acc, done);
        }
        leave = st->acc + s->o;
        if ((rc = time_check(s, r, leave)))
            return rc;
        for (uint64_t k = 0; k < count; k++) {
            uint64_t id = (uint64_t)list[k];
            uint64_t q = s->req_op[base + id - 1];
            const int64_t *qop = op_row(s, q);
            s->req_state[base + id - 1] = REQ_DONE;
            if (qop[0] == WS_SYNTH_ISEND) {
                emit_request(s, ev, leave, WS_EV_ISEND_COMPLETE, id, WS_NONE64);
            } else {
                const int64_t *sop = op_row(s, s->link[q]);
                emit_message(s, ev, leave, WS_EV_IRECV, (uint32_t)qop[1], s->comm[qop[4]].trace_comm,
                             (uint32_t)qop[2], (uint64_t)sop[3]);
                emit_request(s, ev, leave, WS_EV_IRECV, id, ev->n - 1);
            }
        }
        break;
    }
    default: { /* collectives */
        uint64_t i = s->link[gi];
        uint32_t c = (uint32_t)op[4];
        uint32_t cr = comm_rank(s, c, r);
        if (st->phase == 0) {
            emit(s, ev, st->t, WS_EV_ENTER, region);
            emit(s, ev, st->t, WS_EV_COLL_BEGIN, WS_NONE32);
            st->t_enter = st->t;
            st->phase = 1;
            arrive(s, i, cr, st->t);
        }
        leave = collective_leave(s, i, cr, st->t_enter);
        if (leave < 0) {
            st->wait_kind = WAIT_INSTANCE;
            st->wait_id = i;
            *blocked = 1;
            return WS_OK;
        }
        if ((rc = time_check(s, r, leave)))
            return rc;
        uint64_t row = ev->n_collectives++;
        uint32_t root = has_root(kind) ? (uint32_t)op[1] : WS_NONE32;
        ev->coll_event[row] = (uint32_t)emit(s, ev, leave, WS_EV_COLL_END, (uint32_t)row);
        ev->coll_comm[row] = s->comm[c].trace_comm;
        ev->coll_root[row] = root;
        ev->coll_op[row] = otf2_collective_op(kind);
        collective_bytes(kind, cr, root, s->comm[c].size, (uint64_t)op[3], &ev->coll_sent[row],
                         &ev->coll_received[row]);
        break;
    }
    }
    if (kind != WS_SYNTH_COMPUTE && kind != WS_SYNTH_ENTER && kind != WS_SYNTH_LEAVE) {
        if ((rc = time_check(s, r, leave)))
            return rc;
        emit(s, ev, leave, WS_EV_LEAVE, region);
        st->t = leave;
    }
    st->phase = 0;
    st->pc++;
    return WS_OK;
}

/* Explains a deadlock: which ranks wait for what. */
static int deadlock_error(synth *s)
{
    char msg[900];
    size_t used = 0;
    unsigned shown = 0, blocked = 0;
    for (uint32_t r = 0; r < s->n; r++) {
        const rank_state *st = &s->st[r];
        if (st->done)
            continue;
        blocked++;
        if (shown >= 3 || used >= sizeof msg - 1)
            continue;
        char what[300], cause[400];
        describe(s, r, st->pc, what, sizeof what);
        if (st->wait_kind == WAIT_OP) {
            char other[300];
            describe_op(s, st->wait_id, other, sizeof other);
            snprintf(cause, sizeof cause, "waits for %s to be reached", other);
        } else {
            const instance *in = &s->inst[st->wait_id];
            const xcomm *x = &s->comm[in->comm];
            uint32_t missing = WS_NONE32;
            for (uint32_t k = 0; k < x->size && missing == WS_NONE32; k++)
                if (s->slot_time[in->slot + k] < 0)
                    missing = x->members[k];
            if (missing != WS_NONE32)
                snprintf(cause, sizeof cause, "waits for rank %u to enter the collective on %s", (unsigned)missing,
                         x->name);
            else
                snprintf(cause, sizeof cause, "waits in a collective on %s", x->name);
        }
        int n = snprintf(msg + used, sizeof msg - used, "%s%s %s", shown ? "; " : "", what, cause);
        if (n > 0)
            used += (size_t)n < sizeof msg - used ? (size_t)n : sizeof msg - used - 1;
        shown++;
    }
    return MATCH_FAIL("deadlock: %u rank(s) can never proceed: %s%s", blocked, msg, blocked > shown ? "; ..." : "");
}

static int execute(synth *s)
{
    for (uint32_t r = 0; r < s->n; r++)
        s->queue[r] = r;
    s->q_head = 0;
    s->q_count = s->n;
    s->next_report = 1u << 20;
    uint32_t finished = 0;
    while (s->q_count) {
        uint32_t r = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->n;
        s->q_count--;
        rank_state *st = &s->st[r];
        while (!st->done) {
            int blocked = 0;
            int rc = step(s, r, &blocked);
            if (rc)
                return rc;
            if (s->produced >= s->next_report) {
                s->next_report = s->produced + (1u << 20);
                if (s->progress && s->progress->callback &&
                    s->progress->callback(s->progress->context, "synth", s->produced, s->total_events))
                    return ws_error_set(s->err, WS_ERR_INTERRUPTED, "trace generation interrupted");
            }
            if (blocked)
                break;
        }
        if (st->done)
            finished++;
    }
    if (finished < s->n)
        return deadlock_error(s);
    if (s->progress && s->progress->callback &&
        s->progress->callback(s->progress->context, "synth", s->produced, s->total_events))
        return ws_error_set(s->err, WS_ERR_INTERRUPTED, "trace generation interrupted");
    return WS_OK;
}

/* ---- pass 6: call paths --------------------------------------------------------- */

static int finish(synth *s)
{
    ws_trace *t = s->t;
    uint32_t *stack = ws_malloc_array(s->max_depth, sizeof *stack);
    if (!stack)
        return ws_error_nomem(s->err, "call stack");
    int64_t end = 0;
    for (uint32_t r = 0; r < s->n; r++) {
        ws_location *l = &t->locations[r];
        ws_events *ev = &l->events;
        if (ev->n != s->st[r].n_events) {
            free(stack);
            return ws_error_set(s->err, WS_ERR_INTERNAL, "rank %u: %llu events written, %llu expected", (unsigned)r,
                                (unsigned long long)ev->n, (unsigned long long)s->st[r].n_events);
        }
        uint32_t depth = 0;
        for (uint64_t e = 0; e < ev->n; e++) {
            if (ev->kind[e] == WS_EV_ENTER) {
                uint32_t parent = depth ? stack[depth - 1] : WS_NONE32;
                uint32_t cp = ws_callpath_child(&t->callpaths, parent, ev->ref[e]);
                if (cp == WS_NONE32 || depth >= s->max_depth) {
                    free(stack);
                    return ws_error_nomem(s->err, "call paths");
                }
                stack[depth++] = cp;
                ev->ref[e] = cp;
            } else if (ev->kind[e] == WS_EV_LEAVE) {
                ev->ref[e] = stack[--depth];
            }
        }
        l->loaded = 1;
        l->n_events_defined = ev->n;
        t->n_events += ev->n;
        if (s->st[r].t > end)
            end = s->st[r].t;
    }
    free(stack);
    t->clock.length = (uint64_t)end;
    return WS_OK;
}

/* ---- entry point ------------------------------------------------------------------ */

static void synth_free(synth *s)
{
    if (s->comm)
        for (uint32_t c = 0; c < s->n_xcomm; c++)
            free(s->comm[c].members);
    free(s->comm);
    ws_map64_free(&s->comm_rank);
    free(s->link);
    free(s->post);
    free(s->req_base);
    free(s->req_op);
    free(s->req_state);
    free(s->counts);
    free(s->inst);
    free(s->slot_time);
    free(s->st);
    free(s->queue);
    free(s->user_region);
}

int ws_synth_run(const ws_synth_program *program, const ws_synth_params *params, const ws_progress *progress,
                 ws_trace **out, ws_error *err)
{
    *out = NULL;
    const ws_synth_program *p = program;
    if (!p || !params)
        return ws_error_set(err, WS_ERR_ARGUMENT, "no synthetic program");
    if (p->n_ranks == 0 || p->n_ranks >= WS_NONE32 - 1)
        return ws_error_set(err, WS_ERR_ARGUMENT, "a program needs 1 to 2^32-2 ranks, not %u", (unsigned)p->n_ranks);
    if (params->resolution == 0 || params->resolution > ((uint64_t)1 << 53))
        return ws_error_set(err, WS_ERR_ARGUMENT, "invalid clock resolution %llu",
                            (unsigned long long)params->resolution);
    if (!(params->latency >= 0.0) || !(params->overhead >= 0.0) || !(params->bandwidth >= 0.0) ||
        !isfinite(params->latency) || !isfinite(params->overhead))
        return ws_error_set(err, WS_ERR_ARGUMENT, "latency, overhead and bandwidth must be non-negative numbers");

    synth s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.err = err;
    s.progress = progress;
    s.n = p->n_ranks;
    s.res = (double)params->resolution;
    s.inv = 1.0 / (double)params->resolution;
    s.bandwidth = isinf(params->bandwidth) ? 0.0 : params->bandwidth;
    s.eager = params->eager_limit;
    ws_map64_init(&s.comm_rank);
    int rc;
    if (params->latency * s.res >= (double)COST_MAX || params->overhead * s.res >= (double)COST_MAX) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "latency or overhead too large for the clock");
        goto fail;
    }
    s.L = ticks(&s, params->latency);
    s.o = ticks(&s, params->overhead);

    if ((rc = check_offsets(&s, p->rank_ptr, s.n, "operation")) || (rc = check_offsets(&s, p->dur_ptr, s.n, "duration")) ||
        (rc = check_offsets(&s, p->req_ptr, s.n, "request list")))
        goto fail;
    s.n_ops = (uint64_t)p->rank_ptr[s.n];
    if (s.n_ops && !p->ops) {
        rc = ws_error_set(err, WS_ERR_ARGUMENT, "synthetic program: missing operations");
        goto fail;
    }
    s.st = ws_calloc(s.n, sizeof *s.st);
    s.queue = ws_malloc_array(s.n, sizeof *s.queue);
    s.link = ws_malloc_array(s.n_ops ? s.n_ops : 1, sizeof *s.link);
    s.post = ws_malloc_array(s.n_ops ? s.n_ops : 1, sizeof *s.post);
    if (!s.st || !s.queue || !s.link || !s.post) {
        rc = ws_error_nomem(err, "program tables");
        goto fail;
    }
    for (uint64_t i = 0; i < s.n_ops; i++)
        s.post[i] = -1;

    if ((rc = setup_comms(&s)) || (rc = validate(&s)) || (rc = match_messages(&s)) || (rc = build_collectives(&s)) ||
        (rc = build_definitions(&s)) || (rc = execute(&s)) || (rc = finish(&s)))
        goto fail;
    synth_free(&s);
    *out = s.t;
    return WS_OK;
fail:
    ws_trace_free(s.t);
    synth_free(&s);
    return rc;
}
