/* Internal to the MPI transport: its state, which transport_mpi.c (the
 * replays' payloads and contributions, quiescence, aborts) and
 * transport_mpi_coll.c (the collectives over all processes: agreement,
 * reductions, gathers, the record exchange) share. */
#ifndef WS_REPLAY_TRANSPORT_MPI_INT_H
#define WS_REPLAY_TRANSPORT_MPI_INT_H

#include "transport_mpi.h"

#include <mpi.h>

#include "spin.h"

typedef struct pending_send {
    MPI_Request request;
    unsigned char *data;
    size_t capacity;
} pending_send;

/* send blocks kept for the next ones once their sends completed */
enum { SPARE_SENDS = 8 };

typedef struct mpi_transport {
    ws_transport base;
    ws_transport *local;
    MPI_Comm comm;       /* private duplicate for data and aborts */
    MPI_Comm round_comm; /* private duplicate for quiescence rounds */
    int rank, size;
    const uint32_t *owner; /* location -> process */
    /* processes owning members of each communicator of the trace */
    uint32_t n_comms;
    uint32_t **comm_procs;
    uint32_t *comm_n_procs;
    uint32_t *all_procs; /* processes owning at least one location */
    uint32_t n_all_procs;
    ws_buffer *out;      /* per destination process */
    pending_send *sends;
    size_t n_sends, cap_sends;
    ws_buffer spare[SPARE_SENDS]; /* empty, with their capacity */
    size_t n_spare;
    /* counters of the current epoch (replay) and the next one */
    uint64_t epoch;
    uint64_t sent[2], received[2];
    int progressed;
    /* quiescence rounds */
    MPI_Request round;
    int round_active;
    uint64_t round_values[4], round_result[4];
    uint64_t last_sent, last_received;
    int have_last;
    /* abort received from another process */
    int aborted;
    /* rounds of the waiting loops since the last look at Ctrl-C */
    unsigned idle_rounds;
    /* busy polls before yielding: whether (no more processes on this node
     * than cores) and for how long (ns, adaptive) */
    int spin;
    ws_spin_policy spin_policy;
    /* failures every process learnt at the same step: an agreement on a
     * failure, or a stalled replay (the same quiescence round everywhere) */
    int agreed_failure;
    int stalled;
    int stalled_here; /* locations of this process were waiting then */
    char abort_message[1024];
} mpi_transport;

static inline mpi_transport *self_of(ws_transport *t)
{
    return (mpi_transport *)t;
}

static inline int mpi_error(ws_error *err, int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return ws_error_set(err, WS_ERR_MPI, "%s failed: %s", what, text);
}

/* transport_mpi_coll.c */
int ws_mpi_agree(ws_transport *t, int failed, ws_error *err);
int ws_mpi_allreduce_u64(ws_transport *t, uint64_t *values, size_t n, int op, ws_error *err);
int ws_mpi_allreduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err);
int ws_mpi_exchange(ws_transport *t, const void *records, size_t record_size, const uint32_t *dest, size_t n,
                    void **out, size_t *n_out, ws_error *err);
int ws_mpi_gather(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                  ws_error *err);
int ws_mpi_gather_apply(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx, ws_error *err);
int ws_mpi_reduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err);

#endif
