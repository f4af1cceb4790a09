/* Point-to-point wrappers and request completion.  Records follow
 * Score-P: MpiSend at the start of a send, MpiRecv at the end of a
 * receive (source and tag from the status, so MPI_ANY_SOURCE/ANY_TAG are
 * resolved), MpiIsend / MpiIrecvRequest when a request is started and
 * MpiIsendComplete / MpiIrecv when a completion call finishes it.  Peers
 * are ranks within the communicator.  MPI_STATUS(ES)_IGNORE are replaced
 * by the library's own statuses so that the source is always known. */
#include "pmpi.h"

#include <stdlib.h>
#include <string.h>

#include "../trace/trace.h"

#define PASS_THROUGH WS_PASS_THROUGH

/* ---- requests -------------------------------------------------------------- */

static uint64_t handle_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k;
}

static void track(MPI_Request r, uint64_t id, uint32_t comm, int is_recv)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (comm == UINT32_MAX || r == MPI_REQUEST_NULL)
        return;
    uint32_t slot = g->req_free;
    if (slot != UINT32_MAX) {
        g->req_free = g->req_pool[slot].next;
    } else {
        if (ws_grow((void **)&g->req_pool, &g->cap_req_pool, g->n_req_pool + 1, sizeof *g->req_pool) != 0)
            return;
        slot = (uint32_t)g->n_req_pool++;
    }
    g->req_pool[slot] = (ws_request){id, comm, UINT32_MAX, is_recv};
    uint64_t head;
    if (!ws_map64_get(&g->requests, handle_key(r), &head)) {
        ws_map64_put(&g->requests, handle_key(r), slot);
        return;
    }
    uint32_t k = (uint32_t)head;
    while (g->req_pool[k].next != UINT32_MAX)
        k = g->req_pool[k].next;
    g->req_pool[k].next = slot;
}

/* Takes the oldest record of handle r; returns 0 if there is none. */
static int untrack(MPI_Request r, ws_request *out)
{
    ws_pmpi *g = &ws_pmpi_g;
    uint64_t head;
    if (!ws_map64_get(&g->requests, handle_key(r), &head))
        return 0;
    uint32_t k = (uint32_t)head;
    *out = g->req_pool[k];
    if (out->next == UINT32_MAX)
        ws_map64_remove(&g->requests, handle_key(r));
    else
        ws_map64_put(&g->requests, handle_key(r), out->next);
    g->req_pool[k].next = g->req_free;
    g->req_free = k;
    return 1;
}

void ws_request_forget(MPI_Request r)
{
    ws_request dropped;
    if (r != MPI_REQUEST_NULL)
        untrack(r, &dropped);
}

void ws_requests_free_all(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    ws_map64_free(&g->requests);
    ws_map64_free(&g->messages);
    free(g->req_pool);
    g->req_pool = NULL;
    g->n_req_pool = g->cap_req_pool = 0;
    g->req_free = UINT32_MAX;
}

static uint64_t status_bytes(const MPI_Status *st)
{
    int n = 0;
    if (PMPI_Get_count(st, MPI_BYTE, &n) != MPI_SUCCESS || n == MPI_UNDEFINED || n < 0)
        return 0;
    return (uint64_t)n;
}

uint64_t ws_request_complete(uint64_t now, MPI_Request r, const MPI_Status *st)
{
    ws_request q;
    if (!untrack(r, &q))
        return 0;
    uint64_t id = q.id;
    if (!q.is_recv) {
        ws_emit(now, WS_EV_ISEND_COMPLETE, 0, 0, 0, 0, id, 0);
        return 0;
    }
    int cancelled = 0;
    PMPI_Test_cancelled(st, &cancelled);
    if (cancelled || st->MPI_SOURCE == MPI_PROC_NULL)
        return 0;
    uint64_t bytes = status_bytes(st);
    ws_emit(now, WS_EV_IRECV, (uint32_t)st->MPI_SOURCE, q.comm, (uint32_t)st->MPI_TAG, bytes, id, 0);
    ws_call_partner(q.comm, st->MPI_SOURCE);
    return bytes;
}

/* ---- blocking --------------------------------------------------------------- */

void ws_send_begin(int fn, uint64_t bytes, int dest, int tag, MPI_Comm comm)
{
    uint64_t t0 = ws_call_begin(fn);
    uint32_t c = ws_comm_id(comm);
    if (dest != MPI_PROC_NULL && c != UINT32_MAX) {
        ws_emit(t0, WS_EV_SEND, (uint32_t)dest, c, (uint32_t)tag, bytes, 0, 0);
        if (fn == WF_SSEND || fn == WF_SEND)
            ws_call_partner(c, dest); /* Late Receiver: the partner that receives */
    }
}

void ws_recv_end(int fn, int rc, MPI_Comm comm, const MPI_Status *st)
{
    ws_recv_end_id(fn, rc, ws_comm_id(comm), st);
}

void ws_recv_end_id(int fn, int rc, uint32_t c, const MPI_Status *st)
{
    uint64_t t1 = ws_now(), bytes = 0;
    if (rc == MPI_SUCCESS && st->MPI_SOURCE != MPI_PROC_NULL) {
        bytes = status_bytes(st);
        if (c != UINT32_MAX) {
            ws_emit(t1, WS_EV_RECV, (uint32_t)st->MPI_SOURCE, c, (uint32_t)st->MPI_TAG, bytes, 0, 0);
            ws_call_partner(c, st->MPI_SOURCE);
        }
    }
    ws_call_end(fn, t1, bytes, 1, 0);
}

static int blocking_send(int fn, int (*pmpi)(const void *, int, MPI_Datatype, int, int, MPI_Comm), const void *buf,
                         int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    uint64_t bytes = ws_type_bytes(count, type);
    ws_send_begin(fn, bytes, dest, tag, comm);
    int rc = pmpi(buf, count, type, dest, tag, comm);
    ws_call_end(fn, ws_now(), bytes, 1, 0);
    return rc;
}

#define SEND_WRAPPER(NAME, FN)                                                                        \
    WS_EXPORT int MPI_##NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag,        \
                             MPI_Comm comm)                                                           \
    {                                                                                                 \
        if (PASS_THROUGH)                                                                             \
            return PMPI_##NAME(buf, count, type, dest, tag, comm);                                    \
        return blocking_send(FN, PMPI_##NAME, buf, count, type, dest, tag, comm);                     \
    }

SEND_WRAPPER(Send, WF_SEND)
SEND_WRAPPER(Ssend, WF_SSEND)
SEND_WRAPPER(Bsend, WF_BSEND)
SEND_WRAPPER(Rsend, WF_RSEND)

WS_EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                       MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Recv(buf, count, type, source, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ws_call_begin(WF_RECV);
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, st);
    ws_recv_end(WF_RECV, rc, comm, st);
    return rc;
}

WS_EXPORT int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                           MPI_Comm comm, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t sent = ws_type_bytes(sendcount, sendtype);
    ws_send_begin(WF_SENDRECV, sent, dest, sendtag, comm);
    int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                           comm, st);
    ws_recv_end(WF_SENDRECV, rc, comm, st);
    return rc;
}

WS_EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Probe(source, tag, comm, status);
    ws_call_begin(WF_PROBE);
    int rc = PMPI_Probe(source, tag, comm, status);
    ws_call_end(WF_PROBE, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Iprobe(source, tag, comm, flag, status);
    ws_call_begin(WF_IPROBE);
    int rc = PMPI_Iprobe(source, tag, comm, flag, status);
    ws_call_end(WF_IPROBE, ws_now(), 0, 0, 0);
    return rc;
}

/* ---- non-blocking ----------------------------------------------------------- */

uint64_t ws_isend_begin(int fn, uint64_t bytes, int dest, int tag, MPI_Comm comm)
{
    ws_pmpi *g = &ws_pmpi_g;
    uint64_t t0 = ws_call_begin(fn);
    uint32_t c = ws_comm_id(comm);
    if (dest == MPI_PROC_NULL || c == UINT32_MAX)
        return 0;
    uint64_t id = ++g->next_request;
    ws_emit(t0, WS_EV_ISEND, (uint32_t)dest, c, (uint32_t)tag, bytes, id, 0);
    return id;
}

void ws_isend_end(int fn, int rc, MPI_Request *req, uint64_t id, MPI_Comm comm, uint64_t bytes)
{
    if (id && rc == MPI_SUCCESS)
        track(*req, id, ws_comm_id(comm), 0);
    ws_call_end(fn, ws_now(), bytes, 1, 0);
}

void ws_irecv_end(int fn, int rc, uint64_t t0, int source, MPI_Comm comm, MPI_Request *req)
{
    ws_irecv_end_id(fn, rc, t0, source == MPI_PROC_NULL ? UINT32_MAX : ws_comm_id(comm), req);
}

void ws_irecv_end_id(int fn, int rc, uint64_t t0, uint32_t c, MPI_Request *req)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (rc == MPI_SUCCESS && c != UINT32_MAX) {
        uint64_t id = ++g->next_request;
        ws_emit(t0, WS_EV_IRECV_REQUEST, 0, 0, 0, 0, id, 0);
        track(*req, id, c, 1);
    }
    ws_call_end(fn, ws_now(), 0, 0, 0);
}

static int start_send(int fn, int (*pmpi)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *),
                      const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                      MPI_Request *req)
{
    uint64_t bytes = ws_type_bytes(count, type);
    uint64_t id = ws_isend_begin(fn, bytes, dest, tag, comm);
    int rc = pmpi(buf, count, type, dest, tag, comm, req);
    ws_isend_end(fn, rc, req, id, comm, bytes);
    return rc;
}

WS_EXPORT int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                        MPI_Request *req)
{
    if (PASS_THROUGH)
        return PMPI_Isend(buf, count, type, dest, tag, comm, req);
    return start_send(WF_ISEND, PMPI_Isend, buf, count, type, dest, tag, comm, req);
}

WS_EXPORT int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request *req)
{
    if (PASS_THROUGH)
        return PMPI_Issend(buf, count, type, dest, tag, comm, req);
    return start_send(WF_ISSEND, PMPI_Issend, buf, count, type, dest, tag, comm, req);
}

WS_EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                        MPI_Request *req)
{
    if (PASS_THROUGH)
        return PMPI_Irecv(buf, count, type, source, tag, comm, req);
    uint64_t t0 = ws_call_begin(WF_IRECV);
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, req);
    ws_irecv_end(WF_IRECV, rc, t0, source, comm, req);
    return rc;
}

/* ---- completion --------------------------------------------------------------- */

WS_EXPORT int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Wait(req, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    MPI_Request old = *req;
    ws_call_begin(WF_WAIT);
    int rc = PMPI_Wait(req, st);
    uint64_t t1 = ws_now(), bytes = 0;
    int any = 0;
    if (rc == MPI_SUCCESS && old != MPI_REQUEST_NULL) {
        bytes = ws_request_complete(t1, old, st);
        any = bytes > 0;
    }
    ws_call_end(WF_WAIT, t1, bytes, any, 0);
    return rc;
}

WS_EXPORT int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Test(req, flag, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    MPI_Request old = *req;
    ws_call_begin(WF_TEST);
    int rc = PMPI_Test(req, flag, st);
    uint64_t t1 = ws_now(), bytes = 0;
    if (rc == MPI_SUCCESS && *flag && old != MPI_REQUEST_NULL)
        bytes = ws_request_complete(t1, old, st);
    ws_call_end(WF_TEST, t1, bytes, bytes > 0, 0);
    return rc;
}

/* Completion calls over arrays: the handles are saved before the call (MPI
 * overwrites them) and statuses supplied when the caller ignores them. */
typedef struct multi {
    MPI_Request small_old[64];
    MPI_Status small_st[64];
    MPI_Request *old;
    MPI_Status *st;
    int own_statuses;
} multi;

static int multi_begin(multi *m, int n, const MPI_Request *reqs, MPI_Status *statuses)
{
    m->old = n <= 64 ? m->small_old : malloc((size_t)n * sizeof *m->old);
    m->own_statuses = statuses == MPI_STATUSES_IGNORE;
    m->st = !m->own_statuses ? statuses : n <= 64 ? m->small_st : malloc((size_t)n * sizeof *m->st);
    if (!m->old || !m->st) {
        if (m->old != m->small_old)
            free(m->old);
        if (m->own_statuses && m->st != m->small_st)
            free(m->st);
        return -1;
    }
    if (n > 0)
        memcpy(m->old, reqs, (size_t)n * sizeof *reqs);
    return 0;
}

static void multi_end(multi *m)
{
    if (m->old != m->small_old)
        free(m->old);
    if (m->own_statuses && m->st != m->small_st)
        free(m->st);
}

WS_EXPORT int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    multi m;
    if (PASS_THROUGH || n < 0 || multi_begin(&m, n, reqs, statuses) != 0)
        return PMPI_Waitall(n, reqs, statuses);
    ws_call_begin(WF_WAITALL);
    int rc = PMPI_Waitall(n, reqs, m.st);
    uint64_t t1 = ws_now(), bytes = 0;
    if (rc == MPI_SUCCESS)
        for (int i = 0; i < n; i++)
            if (m.old[i] != MPI_REQUEST_NULL)
                bytes += ws_request_complete(t1, m.old[i], &m.st[i]);
    ws_call_end(WF_WAITALL, t1, bytes, bytes > 0, 0);
    multi_end(&m);
    return rc;
}

WS_EXPORT int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    multi m;
    if (PASS_THROUGH || n < 0 || multi_begin(&m, n, reqs, statuses) != 0)
        return PMPI_Testall(n, reqs, flag, statuses);
    ws_call_begin(WF_TESTALL);
    int rc = PMPI_Testall(n, reqs, flag, m.st);
    uint64_t t1 = ws_now(), bytes = 0;
    if (rc == MPI_SUCCESS && *flag)
        for (int i = 0; i < n; i++)
            if (m.old[i] != MPI_REQUEST_NULL)
                bytes += ws_request_complete(t1, m.old[i], &m.st[i]);
    ws_call_end(WF_TESTALL, t1, bytes, bytes > 0, 0);
    multi_end(&m);
    return rc;
}

static int any_call(int fn, int is_wait, int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    multi m;
    if (multi_begin(&m, n, reqs, MPI_STATUSES_IGNORE) != 0)
        return is_wait ? PMPI_Waitany(n, reqs, index, status) : PMPI_Testany(n, reqs, index, flag, status);
    ws_call_begin(fn);
    int rc = is_wait ? PMPI_Waitany(n, reqs, index, st) : PMPI_Testany(n, reqs, index, flag, st);
    uint64_t t1 = ws_now(), bytes = 0;
    if (rc == MPI_SUCCESS && (is_wait || *flag) && *index != MPI_UNDEFINED && *index >= 0 && *index < n)
        bytes = ws_request_complete(t1, m.old[*index], st);
    ws_call_end(fn, t1, bytes, bytes > 0, 0);
    multi_end(&m);
    return rc;
}

WS_EXPORT int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    if (PASS_THROUGH || n < 0)
        return PMPI_Waitany(n, reqs, index, status);
    return any_call(WF_WAITANY, 1, n, reqs, index, NULL, status);
}

WS_EXPORT int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    if (PASS_THROUGH || n < 0)
        return PMPI_Testany(n, reqs, index, flag, status);
    return any_call(WF_TESTANY, 0, n, reqs, index, flag, status);
}

static int some_call(int fn, int is_wait, int n, MPI_Request reqs[], int *outcount, int indices[],
                     MPI_Status statuses[])
{
    multi m;
    if (multi_begin(&m, n, reqs, statuses) != 0)
        return is_wait ? PMPI_Waitsome(n, reqs, outcount, indices, statuses)
                       : PMPI_Testsome(n, reqs, outcount, indices, statuses);
    ws_call_begin(fn);
    int rc = is_wait ? PMPI_Waitsome(n, reqs, outcount, indices, m.st)
                     : PMPI_Testsome(n, reqs, outcount, indices, m.st);
    uint64_t t1 = ws_now(), bytes = 0;
    if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        for (int k = 0; k < *outcount; k++)
            if (indices[k] >= 0 && indices[k] < n)
                bytes += ws_request_complete(t1, m.old[indices[k]], &m.st[k]);
    ws_call_end(fn, t1, bytes, bytes > 0, 0);
    multi_end(&m);
    return rc;
}

WS_EXPORT int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (PASS_THROUGH || n < 0)
        return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
    return some_call(WF_WAITSOME, 1, n, reqs, outcount, indices, statuses);
}

WS_EXPORT int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (PASS_THROUGH || n < 0)
        return PMPI_Testsome(n, reqs, outcount, indices, statuses);
    return some_call(WF_TESTSOME, 0, n, reqs, outcount, indices, statuses);
}
