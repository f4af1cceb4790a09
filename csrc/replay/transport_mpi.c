/* MPI transport: the trace's locations are distributed over the
 * processes of an MPI communicator; payloads for locations of other
 * processes travel as MPI messages.
 *
 * - Local storage and wake-ups are those of the in-process transport,
 *   embedded here.
 * - Point-to-point payloads for remote locations are appended as records
 *   to a buffer per destination process and sent in batches (when a
 *   buffer holds FLUSH_BYTES or the local scheduler runs out of work).
 * - A contribution to a collective instance is sent as a record to every
 *   other process owning members of the instance; every process folds
 *   the complete set of contributions in member order, so all processes
 *   see the same data in the same order.
 * - Quiescence (all processes finished the replay, or a deadlock) is
 *   detected with rounds of MPI_Iallreduce over message counters: two
 *   consecutive rounds with equal, balanced counts and no progress
 *   (Mattern's four-counter method).  Records carry the replay epoch so
 *   that early messages of the next replay are counted there.
 * - A process that waits first polls MPI without pause for a few
 *   microseconds (how long: spin.h), and only then yields the core between polls (sched_yield)
 *   and begins quiescence rounds: a chain of tiny collectives (800 k
 *   barriers, each instance across both processes) waits ~1-2 us per
 *   instance, and one sched_yield plus one MPI_Iallreduce per wait cost
 *   more than that.  With more processes on the node than cores nobody
 *   spins: processes sharing cores then get on with their work.
 * - An error on one process is broadcast as an abort message; the others
 *   stop waiting and report it.  Failures that every process learns at
 *   the same step (an agreement, or a stalled replay seen by the same
 *   quiescence round everywhere) send no abort messages: nobody would
 *   receive them.
 */
#include "transport_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/util.h"
#include "../waitscope.h" /* ws_progress */
#include "records.h"
#include "spin.h"

enum { TAG_DATA = 7001, TAG_ABORT = 7002 };
/* Small batches: a process that waits for data gets it while the sender
 * goes on with its other locations.  With large batches (256 KiB) a
 * sender kept everything until all its own locations were blocked, and
 * the processes of a wavefront took turns instead of working at the same
 * time (1024-rank stencil, 2 processes: 45 % of the time waiting, slower
 * than 1 process; with 1 KiB about 10 %). */
enum { FLUSH_BYTES = 1 << 10 };
/* While a join produces (base.bulk) nobody waits for the records before
 * the engine asks for progress: they travel in large batches. */
enum { BULK_FLUSH_BYTES = 1 << 20 };

static size_t flush_bytes(const ws_transport *t)
{
    return t->bulk ? BULK_FLUSH_BYTES : FLUSH_BYTES;
}

typedef struct pending_send {
    MPI_Request request;
    unsigned char *data;
} pending_send;

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

static mpi_transport *self_of(ws_transport *t)
{
    return (mpi_transport *)t;
}

static void sync_wake(mpi_transport *m)
{
    m->local->wake = m->base.wake;
    m->local->scheduler = m->base.scheduler;
    m->local->bulk = m->base.bulk; /* a join's payloads for local locations go to the bulk arena */
}

static int mpi_error(ws_error *err, int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return ws_error_set(err, WS_ERR_MPI, "%s failed: %s", what, text);
}

/* ---- outgoing records --------------------------------------------------- */

static int flush_to(mpi_transport *m, int proc, ws_error *err)
{
    ws_buffer *b = &m->out[proc];
    if (b->size == 0)
        return WS_OK;
    if (ws_grow((void **)&m->sends, &m->cap_sends, m->n_sends + 1, sizeof *m->sends) != 0)
        return ws_error_nomem(err, "MPI send queue");
    pending_send *p = &m->sends[m->n_sends];
    p->data = b->data;
    int rc = MPI_Isend(p->data, (int)b->size, MPI_BYTE, proc, TAG_DATA, m->comm, &p->request);
    if (rc != MPI_SUCCESS)
        return mpi_error(err, rc, "MPI_Isend");
    m->n_sends++;
    m->sent[0]++;
    ws_buffer_init(b); /* the data now belongs to the pending send */
    return WS_OK;
}

static int flush_all(mpi_transport *m, ws_error *err)
{
    for (int p = 0; p < m->size; p++) {
        int rc = flush_to(m, p, err);
        if (rc)
            return rc;
    }
    /* retire completed sends */
    size_t k = 0;
    for (size_t i = 0; i < m->n_sends; i++) {
        int done = 0;
        MPI_Test(&m->sends[i].request, &done, MPI_STATUS_IGNORE);
        if (done)
            free(m->sends[i].data);
        else
            m->sends[k++] = m->sends[i];
    }
    m->n_sends = k;
    return WS_OK;
}

/* a record (records.h) for process `proc`, sent once enough have gathered */
static int put_record(mpi_transport *m, int proc, uint8_t type, const unsigned char *head, size_t head_size,
                      const void *data, size_t size, ws_error *err)
{
    ws_buffer *b = &m->out[proc];
    if (ws_buffer_append(b, &type, 1) || ws_buffer_append(b, &m->epoch, 8) || ws_buffer_append(b, head, head_size) ||
        ws_buffer_append(b, data, size))
        return ws_error_nomem(err, "MPI send buffer");
    if (b->size >= flush_bytes(&m->base))
        return flush_to(m, proc, err);
    return WS_OK;
}

static int put_p2p(mpi_transport *m, int proc, uint32_t dst, uint64_t id, int channel, const void *data, size_t size,
                   ws_error *err)
{
    unsigned char head[WS_RECORD_P2P_HEAD];
    ws_record_p2p_head(head, dst, channel, id, size);
    return put_record(m, proc, WS_RECORD_P2P, head, sizeof head, data, size, err);
}

static int put_coll(mpi_transport *m, int proc, uint64_t key, uint32_t n_members, uint32_t member,
                    uint64_t cache_size, const void *data, size_t size, ws_error *err)
{
    unsigned char head[WS_RECORD_COLL_HEAD];
    ws_record_coll_head(head, key, n_members, member, (size_t)cache_size, size);
    return put_record(m, proc, WS_RECORD_COLL, head, sizeof head, data, size, err);
}

/* ---- incoming records --------------------------------------------------- */

static int unpack(mpi_transport *m, const unsigned char *data, size_t size, uint64_t *epoch_of_message,
                  ws_error *err)
{
    const unsigned char *p = data, *end = data + size;
    sync_wake(m);
    *epoch_of_message = m->epoch;
    while (p < end) {
        uint8_t type;
        uint64_t epoch;
        if (ws_record_read(&p, end, &type, 1) || ws_record_read(&p, end, &epoch, 8))
            return ws_error_set(err, WS_ERR_MPI, "malformed record from another analysis process");
        *epoch_of_message = epoch;
        int rc = ws_record_store(m->local, type, &p, end, WS_ERR_MPI, "from another analysis process", err);
        if (rc)
            return rc;
    }
    return WS_OK;
}

/* Receives everything that has arrived; counts wake-ups through the
 * scheduler's wake callback (progressed is set). */
static int receive_all(mpi_transport *m, ws_error *err)
{
    for (;;) {
        int flag = 0;
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, TAG_ABORT, m->comm, &flag, &st);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, rc, "MPI_Iprobe");
        if (flag) {
            int count = 0;
            MPI_Get_count(&st, MPI_CHAR, &count);
            char text[1024];
            if (count > (int)sizeof text - 1)
                count = (int)sizeof text - 1;
            char *buf = ws_malloc((size_t)count + 1);
            MPI_Recv(buf ? buf : text, buf ? count : 0, MPI_CHAR, st.MPI_SOURCE, TAG_ABORT, m->comm,
                     MPI_STATUS_IGNORE);
            if (buf) {
                memcpy(text, buf, (size_t)count);
                text[count] = '\0';
                free(buf);
            } else {
                text[0] = '\0';
            }
            m->aborted = 1;
            snprintf(m->abort_message, sizeof m->abort_message, "%s", text);
            return ws_error_set(err, WS_ERR_MPI, "%s", text);
        }
        rc = MPI_Iprobe(MPI_ANY_SOURCE, TAG_DATA, m->comm, &flag, &st);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, rc, "MPI_Iprobe");
        if (!flag)
            return WS_OK;
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        unsigned char *buf = ws_malloc(count ? (size_t)count : 1);
        if (!buf)
            return ws_error_nomem(err, "MPI receive buffer");
        rc = MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, TAG_DATA, m->comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            free(buf);
            return mpi_error(err, rc, "MPI_Recv");
        }
        uint64_t epoch = m->epoch;
        rc = unpack(m, buf, (size_t)count, &epoch, err);
        free(buf);
        if (rc)
            return rc;
        m->received[epoch > m->epoch ? 1 : 0]++;
        m->progressed = 1;
    }
}

/* ---- the transport operations ----------------------------------------------- */

static int t_post(ws_transport *t, uint32_t dst, uint64_t id, int channel, const void *data, size_t size,
                  ws_error *err)
{
    mpi_transport *m = self_of(t);
    if (dst >= t->n_locations)
        return ws_error_set(err, WS_ERR_INTERNAL, "payload for unknown location %u", (unsigned)dst);
    int proc = (int)m->owner[dst];
    if (proc == m->rank) {
        sync_wake(m);
        return m->local->ops->post(m->local, dst, id, channel, data, size, err);
    }
    return put_p2p(m, proc, dst, id, channel, data, size, err);
}

static int t_take(ws_transport *t, uint32_t loc, uint64_t id, int channel, const void **data, size_t *size,
                  ws_error *err)
{
    mpi_transport *m = self_of(t);
    sync_wake(m);
    return m->local->ops->take(m->local, loc, id, channel, data, size, err);
}

static void t_release(ws_transport *t, uint32_t loc, uint64_t id, int channel)
{
    mpi_transport *m = self_of(t);
    m->local->ops->release(m->local, loc, id, channel);
}

static void procs_of_instance(mpi_transport *m, uint64_t key, const uint32_t **procs, uint32_t *n)
{
    uint32_t comm = (uint32_t)((key >> 40) & 0x7FFFF);
    if (comm < m->n_comms) {
        *procs = m->comm_procs[comm];
        *n = m->comm_n_procs[comm];
    } else {
        *procs = m->all_procs;
        *n = m->n_all_procs;
    }
}

static int t_coll_post(ws_transport *t, uint64_t key, uint32_t n_members, uint32_t expected_local, uint32_t member,
                       uint32_t loc, const void *data, size_t size, size_t cache_size, ws_error *err)
{
    (void)expected_local;
    mpi_transport *m = self_of(t);
    sync_wake(m);
    int rc = m->local->ops->coll_post(m->local, key, n_members, expected_local, member, loc, data, size, cache_size,
                                      err);
    if (rc)
        return rc;
    const uint32_t *procs;
    uint32_t n;
    procs_of_instance(m, key, &procs, &n);
    for (uint32_t i = 0; i < n; i++) {
        if ((int)procs[i] == m->rank)
            continue;
        if ((rc = put_coll(m, (int)procs[i], key, n_members, member, cache_size, data, size, err)))
            return rc;
    }
    return WS_OK;
}

static int t_coll_take(ws_transport *t, uint64_t key, uint32_t loc, ws_coll_view **view, ws_error *err)
{
    mpi_transport *m = self_of(t);
    sync_wake(m);
    return m->local->ops->coll_take(m->local, key, loc, view, err);
}

static void t_coll_release(ws_transport *t, uint64_t key, uint32_t loc)
{
    mpi_transport *m = self_of(t);
    m->local->ops->coll_release(m->local, key, loc);
}

/* One step of the quiescence protocol.  Returns 1 when the round shows
 * global quiescence (then *all_done tells whether every location of
 * every process finished), 0 otherwise. */
static int quiescence_round(mpi_transport *m, int *all_done, ws_error *err)
{
    if (!m->round_active) {
        m->round_values[0] = m->sent[0];
        m->round_values[1] = m->received[0];
        m->round_values[2] = (uint64_t)m->progressed;
        m->round_values[3] = m->base.unfinished;
        m->progressed = 0;
        int rc = MPI_Iallreduce(m->round_values, m->round_result, 4, MPI_UINT64_T, MPI_SUM, m->round_comm,
                                &m->round);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, rc, "MPI_Iallreduce");
        m->round_active = 1;
        return 0;
    }
    int done = 0;
    MPI_Test(&m->round, &done, MPI_STATUS_IGNORE);
    if (!done)
        return 0;
    m->round_active = 0;
    uint64_t sent = m->round_result[0], received = m->round_result[1];
    int quiet = sent == received && m->round_result[2] == 0 && m->have_last && m->last_sent == sent &&
                m->last_received == received;
    m->have_last = 1;
    m->last_sent = sent;
    m->last_received = received;
    if (!quiet)
        return 0;
    *all_done = m->round_result[3] == 0;
    if (!*all_done)
        m->stalled = 1; /* every process fails in this round */
    return 1;
}

static void next_epoch(mpi_transport *m)
{
    m->epoch++;
    m->sent[0] = m->sent[1];
    m->received[0] = m->received[1];
    m->sent[1] = m->received[1] = 0;
    m->have_last = 0;
    m->progressed = 0;
}

/* While waiting for other processes: every 256th round asks whether the
 * user interrupted (Ctrl-C reaches every process; one blocked here would
 * otherwise never see it). */
static int waiting_interrupted(mpi_transport *m, ws_error *err)
{
    const ws_progress *p = m->base.progress;
    if (!p || !p->interrupted || (++m->idle_rounds & 255u) != 0)
        return WS_OK;
    if (p->interrupted(p->context))
        return ws_error_set(err, WS_ERR_INTERRUPTED, "replay interrupted");
    return WS_OK;
}

static int t_progress(ws_transport *t, int wait, int *woken, ws_error *err)
{
    mpi_transport *m = self_of(t);
    *woken = 0;
    sync_wake(m);
    int spinning = wait && m->spin;
    int64_t start = spinning ? ws_spin_now_ns() : 0;
    for (;;) {
        int rc = flush_all(m, err);
        if (rc)
            return rc;
        int before = m->progressed;
        m->progressed = 0;
        if ((rc = receive_all(m, err)))
            return rc;
        int got = m->progressed;
        m->progressed = before || got;
        if (got) {
            if (wait && m->spin)
                ws_spin_after_wait(&m->spin_policy, ws_spin_now_ns() - start);
            *woken = 1;
            return WS_OK;
        }
        if (!wait)
            return WS_OK;
        if (spinning) {
            int64_t now = ws_spin_now_ns();
            if (now >= start && now - start <= m->spin_policy.budget)
                continue;
            spinning = 0;
        }
        int all_done = 0;
        rc = quiescence_round(m, &all_done, err);
        if (rc < 0 || (rc > 0 && err->code && !all_done))
            return err->code;
        if (rc == 1) {
            /* quiet while locations here still wait: nobody can progress */
            m->stalled_here = 1;
            return WS_OK;
        }
        if ((rc = waiting_interrupted(m, err)))
            return rc;
        sched_yield(); /* 4 processes on 2 cores: 2.7-4 s instead of 10 s (1024-rank stencil) */
    }
}

static int t_finish(ws_transport *t, ws_error *err)
{
    mpi_transport *m = self_of(t);
    sync_wake(m);
    for (;;) {
        int rc = flush_all(m, err);
        if (rc)
            return rc;
        if ((rc = receive_all(m, err)))
            return rc;
        int all_done = 0;
        int q = quiescence_round(m, &all_done, err);
        if (q < 0)
            return err->code;
        if (q == 1) {
            if (!all_done)
                return ws_error_set(err, WS_ERR_MATCH,
                                    "the replay cannot continue on another analysis process: the trace's "
                                    "communication is inconsistent");
            next_epoch(m);
            return WS_OK;
        }
        if ((rc = waiting_interrupted(m, err)))
            return rc;
        sched_yield();
    }
}

static int t_agree(ws_transport *t, int failed, ws_error *err)
{
    mpi_transport *m = self_of(t);
    int flag = failed ? 1 : 0, any = 0;
    MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, m->comm);
    if (!any)
        return 0;
    m->agreed_failure = 1;
    /* the lowest failing process tells its message */
    int mine = failed ? m->rank : m->size, first = 0;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, m->comm);
    char text[sizeof err->message];
    memset(text, 0, sizeof text);
    if (m->rank == first)
        snprintf(text, sizeof text, "%s", err->message);
    MPI_Bcast(text, (int)sizeof text, MPI_CHAR, first, m->comm);
    if (!failed)
        ws_error_set(err, WS_ERR_MATCH, "%s", text);
    return 1;
}

static void t_fail(ws_transport *t, const ws_error *err)
{
    mpi_transport *m = self_of(t);
    if (m->aborted || m->agreed_failure || m->stalled)
        return; /* the others already know */
    char text[sizeof err->message];
    snprintf(text, sizeof text, "%s", err->message);
    int n = (int)strlen(text) + 1;
    for (int p = 0; p < m->size; p++)
        if (p != m->rank)
            MPI_Send(text, n, MPI_CHAR, p, TAG_ABORT, m->comm);
    m->aborted = 1;
}

void ws_transport_mpi_fail(ws_transport *t, ws_error *err)
{
    mpi_transport *m = self_of(t);
    if (!m->stalled) {
        t_fail(t, err);
        return;
    }
    /* Every process failed in the same quiescence round: those whose
     * locations wait describe the deadlock, the others only know that
     * the replay stopped elsewhere.  All report the description of the
     * lowest process with waiting locations, which is the one the
     * embedded mode gives (the first waiting location). */
    int mine = m->stalled_here ? m->rank : m->size, first = m->size;
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, m->comm) != MPI_SUCCESS || first == m->size)
        return;
    char text[sizeof err->message];
    memset(text, 0, sizeof text);
    if (m->rank == first)
        snprintf(text, sizeof text, "%s", err->message);
    if (MPI_Bcast(text, (int)sizeof text, MPI_CHAR, first, m->comm) != MPI_SUCCESS)
        return;
    if (m->rank != first)
        ws_error_set(err, WS_ERR_MATCH, "%s", text);
}

static MPI_Op op_of(int op)
{
    return op == WS_MAX ? MPI_MAX : op == WS_MIN ? MPI_MIN : MPI_SUM;
}

static int t_allreduce_u64(ws_transport *t, uint64_t *values, size_t n, int op, ws_error *err)
{
    mpi_transport *m = self_of(t);
    if (n == 0)
        return WS_OK;
    int rc = MPI_Allreduce(MPI_IN_PLACE, values, (int)n, MPI_UINT64_T, op_of(op), m->comm);
    return rc == MPI_SUCCESS ? WS_OK : mpi_error(err, rc, "MPI_Allreduce");
}

static int t_allreduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err)
{
    mpi_transport *m = self_of(t);
    if (n == 0)
        return WS_OK;
    int rc = MPI_Allreduce(MPI_IN_PLACE, values, (int)n, MPI_DOUBLE, op_of(op), m->comm);
    return rc == MPI_SUCCESS ? WS_OK : mpi_error(err, rc, "MPI_Allreduce");
}

static int t_exchange(ws_transport *t, const void *records, size_t record_size, const uint32_t *dest, size_t n,
                      void **out, size_t *n_out, ws_error *err)
{
    mpi_transport *m = self_of(t);
    int P = m->size;
    int *send_counts = ws_calloc((size_t)P, sizeof *send_counts), *recv_counts = ws_calloc((size_t)P, sizeof *recv_counts);
    int *send_displs = ws_calloc((size_t)P, sizeof *send_displs), *recv_displs = ws_calloc((size_t)P, sizeof *recv_displs);
    unsigned char *sorted = ws_malloc_array(n ? n : 1, record_size);
    size_t *fill = ws_calloc((size_t)P, sizeof *fill);
    int rc = WS_OK;
    if (!send_counts || !recv_counts || !send_displs || !recv_displs || !sorted || !fill) {
        rc = ws_error_nomem(err, "record exchange");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        send_counts[m->owner[dest[i]]] += (int)record_size;
    for (int p = 1; p < P; p++)
        send_displs[p] = send_displs[p - 1] + send_counts[p - 1];
    for (size_t i = 0; i < n; i++) {
        int p = (int)m->owner[dest[i]];
        memcpy(sorted + send_displs[p] + fill[p], (const unsigned char *)records + i * record_size, record_size);
        fill[p] += record_size;
    }
    int mr = MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, m->comm);
    if (mr != MPI_SUCCESS) {
        rc = mpi_error(err, mr, "MPI_Alltoall");
        goto done;
    }
    size_t total = 0;
    for (int p = 0; p < P; p++) {
        recv_displs[p] = (int)total;
        total += (size_t)recv_counts[p];
    }
    *out = ws_malloc(total ? total : 1);
    if (!*out) {
        rc = ws_error_nomem(err, "record exchange");
        goto done;
    }
    mr = MPI_Alltoallv(sorted, send_counts, send_displs, MPI_BYTE, *out, recv_counts, recv_displs, MPI_BYTE, m->comm);
    if (mr != MPI_SUCCESS) {
        free(*out);
        *out = NULL;
        rc = mpi_error(err, mr, "MPI_Alltoallv");
        goto done;
    }
    *n_out = total / record_size;
done:
    free(send_counts);
    free(recv_counts);
    free(send_displs);
    free(recv_displs);
    free(sorted);
    free(fill);
    return rc;
}

static int t_set_layout(ws_transport *t, const uint64_t *counts, uint32_t n_locations, ws_error *err)
{
    mpi_transport *m = self_of(t);
    return m->local->ops->set_layout(m->local, counts, n_locations, err);
}

static void t_destroy(ws_transport *t)
{
    mpi_transport *m = self_of(t);
    if (!m)
        return;
    for (size_t i = 0; i < m->n_sends; i++) {
        if (!m->aborted)
            MPI_Wait(&m->sends[i].request, MPI_STATUS_IGNORE);
        else
            MPI_Request_free(&m->sends[i].request);
        free(m->sends[i].data);
    }
    free(m->sends);
    if (m->out)
        for (int p = 0; p < m->size; p++)
            ws_buffer_free(&m->out[p]);
    free(m->out);
    for (uint32_t c = 0; c < m->n_comms; c++)
        free(m->comm_procs ? m->comm_procs[c] : NULL);
    free(m->comm_procs);
    free(m->comm_n_procs);
    free(m->all_procs);
    if (m->local)
        m->local->ops->destroy(m->local);
    /* a communicator with a pending round cannot be freed cleanly */
    if (!m->round_active && m->round_comm != MPI_COMM_NULL)
        MPI_Comm_free(&m->round_comm);
    if (!m->aborted && m->comm != MPI_COMM_NULL)
        MPI_Comm_free(&m->comm);
    free(m);
}

static int t_gather(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                    ws_error *err);
static int t_reduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err);
static int t_gather_apply(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx, ws_error *err);

static const ws_transport_ops mpi_ops = {
    .post = t_post,
    .take = t_take,
    .release = t_release,
    .coll_post = t_coll_post,
    .coll_take = t_coll_take,
    .coll_release = t_coll_release,
    .progress = t_progress,
    .finish = t_finish,
    .agree = t_agree,
    .fail = t_fail,
    .allreduce_u64 = t_allreduce_u64,
    .allreduce_f64 = t_allreduce_f64,
    .exchange = t_exchange,
    .gather = t_gather,
    .gather_apply = t_gather_apply,
    .reduce_f64 = t_reduce_f64,
    .set_layout = t_set_layout,
    .destroy = t_destroy,
};

int ws_transport_mpi_new(MPI_Comm comm, const ws_comm_layout *t, const uint32_t *owner, ws_transport **out,
                         ws_error *err)
{
    *out = NULL;
    mpi_transport *m = ws_calloc(1, sizeof *m);
    if (!m)
        return ws_error_nomem(err, "MPI transport");
    m->base.ops = &mpi_ops;
    m->base.n_locations = t->n_locations;
    m->comm = MPI_COMM_NULL;
    m->round_comm = MPI_COMM_NULL;
    m->owner = owner;
    int rc = MPI_Comm_dup(comm, &m->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_dup(comm, &m->round_comm);
    if (rc != MPI_SUCCESS) {
        t_destroy(&m->base);
        return mpi_error(err, rc, "MPI_Comm_dup");
    }
    MPI_Comm_rank(m->comm, &m->rank);
    MPI_Comm_size(m->comm, &m->size);
    /* busy polls only where every process of this node has a core */
    MPI_Comm node;
    if (MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        int on_node = 0;
        MPI_Comm_size(node, &on_node);
        MPI_Comm_free(&node);
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        m->spin = cores > 0 && on_node <= cores;
    }
    ws_spin_init(&m->spin_policy);
    m->base.process = (uint32_t)m->rank;
    m->base.n_processes = (uint32_t)m->size;
    m->local = ws_transport_local_new(t->n_locations);
    m->out = ws_calloc((size_t)m->size, sizeof *m->out);
    m->n_comms = t->n_comms;
    m->comm_procs = ws_calloc(t->n_comms ? t->n_comms : 1, sizeof *m->comm_procs);
    m->comm_n_procs = ws_calloc(t->n_comms ? t->n_comms : 1, sizeof *m->comm_n_procs);
    if (!m->local || !m->out || !m->comm_procs || !m->comm_n_procs) {
        t_destroy(&m->base);
        return ws_error_nomem(err, "MPI transport");
    }
    for (int p = 0; p < m->size; p++)
        ws_buffer_init(&m->out[p]);
    if (ws_comm_owners(t, owner, m->comm_procs, m->comm_n_procs, &m->all_procs, &m->n_all_procs) != 0) {
        t_destroy(&m->base);
        return ws_error_nomem(err, "MPI transport");
    }
    *out = &m->base;
    return WS_OK;
}

static int t_gather(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                    ws_error *err)
{
    mpi_transport *m = self_of(t);
    *out = NULL;
    int receiver = to_all || m->rank == 0;
    int *counts = receiver ? ws_calloc((size_t)m->size, sizeof *counts) : NULL;
    int *displs = receiver ? ws_calloc((size_t)m->size, sizeof *displs) : NULL;
    int failed = size > INT_MAX || (receiver && (!counts || !displs));
    if (failed)
        ws_error_set(err, size > INT_MAX ? WS_ERR_ARGUMENT : WS_ERR_NOMEM, "gathering %zu bytes of results failed%s",
                     size, size > INT_MAX ? ": more than one MPI message holds" : ": out of memory");
    /* every process learns of a failure anywhere, so none waits in the
     * collectives below for one that gave up */
    if (t_agree(t, failed, err))
        goto fail;
    int bytes = (int)size;
    int rc = to_all ? MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, m->comm)
                    : MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, m->comm);
    if (rc != MPI_SUCCESS) {
        mpi_error(err, rc, to_all ? "MPI_Allgather" : "MPI_Gather");
        goto fail;
    }
    if (receiver) {
        size_t total = 0;
        for (int p = 0; p < m->size; p++) {
            displs[p] = (int)total;
            total += (size_t)counts[p];
            sizes[p] = (size_t)counts[p];
        }
        failed = total > INT_MAX || !(*out = ws_malloc(total ? total : 1));
        if (failed)
            ws_error_set(err, WS_ERR_NOMEM, "gathering %zu bytes of results failed: %s", total,
                         total > INT_MAX ? "more than one MPI message holds" : "out of memory");
    }
    if (t_agree(t, failed, err))
        goto fail;
    rc = to_all ? MPI_Allgatherv(data, bytes, MPI_BYTE, *out, counts, displs, MPI_BYTE, m->comm)
                : MPI_Gatherv(data, bytes, MPI_BYTE, *out, counts, displs, MPI_BYTE, 0, m->comm);
    if (rc != MPI_SUCCESS) {
        mpi_error(err, rc, to_all ? "MPI_Allgatherv" : "MPI_Gatherv");
        goto fail;
    }
    free(counts);
    free(displs);
    return WS_OK;
fail:
    free(*out);
    *out = NULL;
    free(counts);
    free(displs);
    return err->code ? err->code : WS_ERR_INTERNAL;
}

/* Between processes the pieces travel: gathered on rank 0, then read
 * there. */
static int t_gather_apply(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx, ws_error *err)
{
    mpi_transport *m = self_of(t);
    size_t *sizes = ws_calloc((size_t)m->size, sizeof *sizes);
    const void **pieces = ws_calloc((size_t)m->size, sizeof *pieces);
    void *all = NULL;
    int failed = !sizes || !pieces;
    if (failed)
        ws_error_nomem(err, "gathered data");
    int rc = t_agree(t, failed, err);
    if (rc == WS_OK)
        rc = t_gather(t, data, size, 0, &all, sizes, err);
    if (rc == WS_OK && m->rank == 0) {
        size_t off = 0;
        for (int p = 0; p < m->size; p++) {
            pieces[p] = (const unsigned char *)all + off;
            off += sizes[p];
        }
        rc = fn(ctx, pieces, sizes, err);
    }
    free(all);
    free(sizes);
    free(pieces);
    return rc ? (err->code ? err->code : rc) : WS_OK;
}

static int t_reduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err)
{
    mpi_transport *m = self_of(t);
    const size_t chunk = (size_t)1 << 24;
    for (size_t off = 0; off < n; off += chunk) {
        int k = (int)(n - off < chunk ? n - off : chunk);
        int rc = m->rank == 0 ? MPI_Reduce(MPI_IN_PLACE, values + off, k, MPI_DOUBLE, op_of(op), 0, m->comm)
                              : MPI_Reduce(values + off, NULL, k, MPI_DOUBLE, op_of(op), 0, m->comm);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, rc, "MPI_Reduce");
    }
    return WS_OK;
}
