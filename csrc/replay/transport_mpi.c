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
#include "transport_mpi_int.h"

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
/* While the engine produces a location's contributions ahead (base.burst)
 * nobody waits for them before the burst ends (the engine then asks for
 * progress, which sends them): a burst goes in one message, not one per
 * kilobyte (800,000 two-member barriers, 2 processes: 256 contributions
 * of ~80 bytes per burst). */
enum { BURST_FLUSH_BYTES = 1 << 16 };

static size_t flush_bytes(const ws_transport *t)
{
    return t->bulk ? BULK_FLUSH_BYTES : t->burst ? BURST_FLUSH_BYTES : FLUSH_BYTES;
}

static void sync_wake(mpi_transport *m)
{
    m->local->wake = m->base.wake;
    m->local->scheduler = m->base.scheduler;
    m->local->bulk = m->base.bulk; /* a join's payloads for local locations go to the bulk arena */
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
    p->capacity = b->capacity;
    int rc = MPI_Isend(p->data, (int)b->size, MPI_BYTE, proc, TAG_DATA, m->comm, &p->request);
    if (rc != MPI_SUCCESS)
        return mpi_error(err, rc, "MPI_Isend");
    m->n_sends++;
    m->sent[0]++;
    /* the data now belong to the pending send; the next records go to a
     * block of a completed one, which has the room such a batch needed
     * (a burst's 64 KiB grown by doubling cost 9 copies) */
    if (m->n_spare)
        *b = m->spare[--m->n_spare];
    else
        ws_buffer_init(b);
    return WS_OK;
}

/* A completed send's block: kept for the next batch, or freed. */
static void retire_send(mpi_transport *m, const pending_send *p)
{
    if (m->n_spare < SPARE_SENDS) {
        ws_buffer *b = &m->spare[m->n_spare++];
        b->data = p->data;
        b->size = 0;
        b->capacity = p->capacity;
    } else {
        free(p->data);
    }
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
            retire_send(m, &m->sends[i]);
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
    unsigned char *r = head_size + size <= SIZE_MAX - 9 ? ws_buffer_extend(b, 9 + head_size + size) : NULL;
    if (!r)
        return ws_error_nomem(err, "MPI send buffer");
    r[0] = type;
    memcpy(r + 1, &m->epoch, 8);
    memcpy(r + 9, head, head_size);
    if (size)
        memcpy(r + 9 + head_size, data, size);
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
    int64_t start = spinning ? ws_monotonic_ns() : 0;
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
                ws_spin_after_wait(&m->spin_policy, ws_monotonic_ns() - start);
            *woken = 1;
            return WS_OK;
        }
        if (!wait)
            return WS_OK;
        if (spinning) {
            int64_t now = ws_monotonic_ns();
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
    for (size_t i = 0; i < m->n_spare; i++)
        ws_buffer_free(&m->spare[i]);
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


static const ws_transport_ops mpi_ops = {
    .post = t_post,
    .take = t_take,
    .release = t_release,
    .coll_post = t_coll_post,
    .coll_take = t_coll_take,
    .coll_release = t_coll_release,
    .progress = t_progress,
    .finish = t_finish,
    .agree = ws_mpi_agree,
    .fail = t_fail,
    .allreduce_u64 = ws_mpi_allreduce_u64,
    .allreduce_f64 = ws_mpi_allreduce_f64,
    .exchange = ws_mpi_exchange,
    .gather = ws_mpi_gather,
    .gather_apply = ws_mpi_gather_apply,
    .reduce_f64 = ws_mpi_reduce_f64,
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
