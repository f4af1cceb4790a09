/* The transport moves payloads between locations during a replay.
 *
 * Two implementations exist: in-process (all locations in one address
 * space, transport_local.c) and MPI (locations distributed over analysis
 * processes, transport_mpi.c).  The replay engine and the analyses see
 * only this interface, so every analysis runs unchanged on both.
 *
 * Point-to-point payloads are addressed by a message id (the sending
 * location and the row of the send in its message table, see
 * ws_message_id) and a channel (0: the direction of the replay, 1: the
 * reverse direction).  Exactly one payload per (id, channel) exists in a
 * replay.  Collective payloads are contributions of the members of one
 * collective instance; every member receives all contributions, ordered
 * by member index, so every process folds them in the same order.
 */
#ifndef WS_REPLAY_TRANSPORT_H
#define WS_REPLAY_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/error.h"
#include "../common/util.h"

static inline uint64_t ws_message_id(uint32_t location, uint32_t row)
{
    return ((uint64_t)location << 32) | row;
}
static inline uint32_t ws_message_location(uint64_t id)
{
    return (uint32_t)(id >> 32);
}
static inline uint32_t ws_message_row(uint64_t id)
{
    return (uint32_t)id;
}

/* All contributions to one collective instance. */
typedef struct ws_coll_view {
    uint32_t n_members;      /* members, every one of which contributed */
    const unsigned char *const *data; /* data[member] */
    const size_t *size;      /* size[member] */
    /* Scratch memory per instance and process that handlers may use to
     * cache a reduction computed by the first member that consumes. */
    void *cache;
    size_t cache_size;
    /* Set by the engine once the handler's coll_combine ran on this
     * instance (in this process). */
    int combined;
    /* Heap memory (malloc) a handler's coll_combine may attach to the
     * instance; the transport frees it with the instance. */
    void *shared;
} ws_coll_view;

typedef struct ws_transport ws_transport;
struct ws_progress;

enum ws_reduce_op { WS_SUM = 0, WS_MAX = 1, WS_MIN = 2 };

/* Called by a transport when data a location waits for has arrived. */
typedef void (*ws_wake_fn)(void *scheduler, uint32_t location);
/* what gather_apply does with the pieces on process 0 */
typedef int (*ws_gather_fn)(void *ctx, const void *const *pieces, const size_t *sizes, ws_error *err);

typedef struct ws_transport_ops {
    /* Delivers a payload to location `dst`.  Never blocks. */
    int (*post)(ws_transport *t, uint32_t dst, uint64_t id, int channel, const void *data, size_t size,
                ws_error *err);
    /* Takes the payload for (id, channel) addressed to `loc`: returns WS_OK
     * and sets data/size, or WS_BLOCKED (then `loc` is woken when it
     * arrives).  The data stays valid until release(). */
    int (*take)(ws_transport *t, uint32_t loc, uint64_t id, int channel, const void **data, size_t *size,
                ws_error *err);
    void (*release)(ws_transport *t, uint32_t loc, uint64_t id, int channel);

    /* Contributes to a collective instance of `n_members` members (every
     * one contributes); `member` is this location's index among them. */
    int (*coll_post)(ws_transport *t, uint64_t instance, uint32_t n_members, uint32_t expected_local,
                     uint32_t member, uint32_t loc, const void *data, size_t size, size_t cache_size,
                     ws_error *err);
    /* Returns WS_OK with the complete view, or WS_BLOCKED. */
    int (*coll_take)(ws_transport *t, uint64_t instance, uint32_t loc, ws_coll_view **view, ws_error *err);
    /* A member is done with the view; the last member frees it. */
    void (*coll_release)(ws_transport *t, uint64_t instance, uint32_t loc);

    /* Moves data between processes.  With `wait` set, blocks until some
     * location was woken or all processes are stuck; returns the number
     * of wake-ups (0: nothing can progress any more). */
    int (*progress)(ws_transport *t, int wait, int *woken, ws_error *err);

    /* Called by every process once its locations finished a replay:
     * delivers what is still buffered and returns when all processes are
     * done with the replay. */
    int (*finish)(ws_transport *t, ws_error *err);

    /* Collective over all processes: returns nonzero if any process
     * passes failed != 0; a process that did not fail gets the failing
     * process's message in err. */
    int (*agree)(ws_transport *t, int failed, ws_error *err);
    /* Tells the other processes that this one failed (err), so that they
     * stop waiting for it. */
    void (*fail)(ws_transport *t, const ws_error *err);

    /* Element-wise WS_SUM, WS_MAX or WS_MIN over all processes (for counts
     * and checks).  Values must stay below 2^63: some MPI libraries
     * compare unsigned 64-bit integers as signed ones. */
    int (*allreduce_u64)(ws_transport *t, uint64_t *values, size_t n, int op, ws_error *err);
    /* Element-wise WS_SUM, WS_MAX or WS_MIN of doubles over all processes,
     * result on all. */
    int (*allreduce_f64)(ws_transport *t, double *values, size_t n, int op, ws_error *err);

    /* Sends records to the process owning location dest[i]; returns the
     * records addressed to this process's locations (malloc'ed). */
    int (*exchange)(ws_transport *t, const void *records, size_t record_size, const uint32_t *dest, size_t n,
                    void **out, size_t *n_out, ws_error *err);

    /* Collective over all processes: concatenates every process's `size`
     * bytes in process order.  With `to_all` every process receives the
     * concatenation, else process 0 only.  A receiving process gets a
     * malloc'ed block in *out (which it frees) and, in sizes[p] (an array
     * of n_processes entries that the caller provides), the bytes that
     * process p contributed; elsewhere *out is NULL. */
    int (*gather)(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                  ws_error *err);
    /* Collective over all processes, like gather without to_all, but
     * process 0 does not keep the concatenation: it calls fn(ctx, pieces,
     * sizes, err) with every process's `size` bytes (pieces[p], sizes[p],
     * in process order; where the transport can, in place: no copy), and
     * the others return once it has.  Returns fn's status on process 0;
     * elsewhere only the transport's own (tell them with agree). */
    int (*gather_apply)(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx, ws_error *err);
    /* Element-wise WS_SUM, WS_MAX or WS_MIN of doubles over all processes,
     * result on process 0 (elsewhere `values` is left unspecified). */
    int (*reduce_f64)(ws_transport *t, double *values, size_t n, int op, ws_error *err);

    /* Optional (may be NULL): the number of message records of every
     * location of the trace, so that payloads can be kept in dense
     * arrays indexed by message instead of hash maps.  counts == NULL
     * drops the layout and its arrays: hash maps from then on (payloads
     * the arrays hold, e.g. another process's first ones of the next
     * replay, move to them). */
    int (*set_layout)(ws_transport *t, const uint64_t *counts, uint32_t n_locations, ws_error *err);

    void (*destroy)(ws_transport *t);
} ws_transport_ops;

struct ws_transport {
    const ws_transport_ops *ops;
    uint32_t n_locations;    /* locations of the whole trace */
    uint32_t process;        /* this process (0 in-process) */
    uint32_t n_processes;
    /* set by the engine before and during a replay */
    ws_wake_fn wake;
    void *scheduler;
    uint32_t unfinished; /* local locations that have not finished */
    /* set while a join produces (join.c): nobody waits for the posts
     * until the engine calls progress, so they may travel in large
     * batches */
    int bulk;
    /* set while the engine produces one location's contributions to
     * several consecutive sites at once (its lookahead): a transport may
     * hold them back to send them together; when the burst ends the
     * engine clears it and calls progress (wait 0), which sends them */
    int burst;
    /* asked (its `interrupted`) while the transport waits for other
     * processes; may be NULL */
    const struct ws_progress *progress;
};

/* The in-process transport: every location lives here
 * (ws_transport_local_new, ws_transport_free: waitscope.h). */

/* What a transport that distributes locations over processes needs to
 * know of the trace's communicators: a flat description that
 * ws_comm_layout_of fills from a trace, so that a transport built into
 * another module never reads the trace store's own structures. */
typedef struct ws_comm_ranks {
    uint32_t size;                  /* ranks; 0 for MPI_COMM_SELF-like communicators */
    const uint32_t *rank_location;  /* comm rank -> location or WS_NONE32 (borrowed from the trace) */
} ws_comm_ranks;

typedef struct ws_comm_layout {
    uint32_t n_locations;
    uint32_t n_comms;
    ws_comm_ranks *comms;           /* n_comms entries, owned by the layout */
} ws_comm_layout;

/* Collective: this process's status `rc` agreed with every process's
 * (ops->agree): rc itself if it failed here, else the failure another
 * process reported (its error in err), else WS_OK. */
static inline int ws_agree_status(ws_transport *t, int rc, ws_error *err)
{
    if (!t->ops->agree(t, rc != WS_OK, err))
        return WS_OK;
    return rc != WS_OK ? rc : (err->code ? err->code : WS_ERR_INTERNAL);
}

/* Appends `x` to the list (*list, *n) unless it is there: 0, or -1 when
 * out of memory (the list unchanged). */
static inline int ws_u32_add_unique(uint32_t **list, uint32_t *n, uint32_t x)
{
    for (uint32_t i = 0; i < *n; i++)
        if ((*list)[i] == x)
            return 0;
    uint32_t *p = (uint32_t *)ws_realloc(*list, ((size_t)*n + 1) * sizeof *p);
    if (!p)
        return -1;
    p[(*n)++] = x;
    *list = p;
    return 0;
}

/* For a transport that partitions the locations (owner[l]: the thread or
 * process of location l): the owners of each communicator's members
 * (per_comm[c], n_per_comm[c]: arrays of layout->n_comms entries, zeroed
 * by the caller) and of all locations (*all, *n_all), each without
 * repetition, in order of first appearance.  0, or -1 when out of memory
 * (what was built stays for the caller to free). */
static inline int ws_comm_owners(const ws_comm_layout *layout, const uint32_t *owner, uint32_t **per_comm,
                                 uint32_t *n_per_comm, uint32_t **all, uint32_t *n_all)
{
    for (uint32_t c = 0; c < layout->n_comms; c++) {
        const ws_comm_ranks *cm = &layout->comms[c];
        for (uint32_t r = 0; r < cm->size; r++) {
            uint32_t loc = cm->rank_location[r];
            if (loc != WS_NONE32 && loc < layout->n_locations &&
                ws_u32_add_unique(&per_comm[c], &n_per_comm[c], owner[loc]) != 0)
                return -1;
        }
    }
    for (uint32_t l = 0; l < layout->n_locations; l++)
        if (ws_u32_add_unique(all, n_all, owner[l]) != 0)
            return -1;
    return 0;
}

#endif
