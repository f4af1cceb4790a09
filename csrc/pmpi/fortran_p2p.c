/* Fortran point to point and request completion (see fortran.h): each
 * records what its C twin in wrappers_p2p.c records.  Requests are
 * tracked by their C handle (MPI_Request_f2c), taken before a completion
 * call frees them; indices returned by MPI_Waitany/Waitsome/... are
 * 1-based in Fortran (see index_base for an exception). */
#include "fortran.h"

#include <stdlib.h>

typedef void (*f_send)(void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_start)(void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_sendrecv)(void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, void *, ws_fint *, ws_fint *,
                           ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
/* by their number of INTEGER arguments */
typedef void (*f_2)(ws_fint *, ws_fint *);
typedef void (*f_3)(ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_4)(ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_5)(ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_6)(ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);

/* The status argument to give the MPI: the program's, or `own` where it
 * passed MPI_STATUS_IGNORE. */
static ws_fint *status_arg(int f08, ws_fint *status, ws_fint *own)
{
    return ws_f_status_ignored(f08, status) ? own : status;
}

/* ---- blocking ------------------------------------------------------------------- */

static void send_body(int fn, int f08, ws_fproc real, void *buf, ws_fint *count, ws_fint *type, ws_fint *dest,
                      ws_fint *tag, ws_fint *comm, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_send)real)(buf, count, type, dest, tag, comm, ierr);
        return;
    }
    uint64_t bytes = ws_type_bytes(*count, MPI_Type_f2c(*type));
    ws_send_begin(fn, bytes, *dest, *tag, MPI_Comm_f2c(*comm));
    ((f_send)real)(buf, count, type, dest, tag, comm, ierr);
    ws_call_end(fn, ws_now(), bytes, 1, 0);
}

#define SEND_PARAMS                                                                                            \
    (void *buf, ws_fint *count, ws_fint *type, ws_fint *dest, ws_fint *tag, ws_fint *comm, ws_fint *ierr)
#define SEND_ARGS (buf, count, type, dest, tag, comm, ierr)
WS_F_ENTRIES(send, SEND, ts, send_body, WF_SEND, SEND_PARAMS, SEND_ARGS)
WS_F_ENTRIES(ssend, SSEND, ts, send_body, WF_SSEND, SEND_PARAMS, SEND_ARGS)
WS_F_ENTRIES(bsend, BSEND, ts, send_body, WF_BSEND, SEND_PARAMS, SEND_ARGS)
WS_F_ENTRIES(rsend, RSEND, ts, send_body, WF_RSEND, SEND_PARAMS, SEND_ARGS)

static void recv_body(int fn, int f08, ws_fproc real, void *buf, ws_fint *count, ws_fint *type, ws_fint *source,
                      ws_fint *tag, ws_fint *comm, ws_fint *status, ws_fint *ierr)
{
    if (WS_F_PASS_THROUGH) {
        ((f_start)real)(buf, count, type, source, tag, comm, status, ierr);
        return;
    }
    ws_fint own[WS_F_STATUS_INTS];
    ws_fint *st = status_arg(f08, status, own);
    ws_call_begin(fn);
    ((f_start)real)(buf, count, type, source, tag, comm, st, ierr);
    MPI_Status c;
    int rc = ws_f_rc(ierr);
    if (rc == MPI_SUCCESS)
        ws_f_status_to_c(f08, st, &c);
    ws_recv_end(fn, rc, MPI_Comm_f2c(*comm), &c);
}
WS_F_ENTRIES(recv, RECV, ts, recv_body, WF_RECV,
             (void *buf, ws_fint *count, ws_fint *type, ws_fint *source, ws_fint *tag, ws_fint *comm,
              ws_fint *status, ws_fint *ierr),
             (buf, count, type, source, tag, comm, status, ierr))

static void sendrecv_body(int fn, int f08, ws_fproc real, void *sendbuf, ws_fint *sendcount, ws_fint *sendtype,
                          ws_fint *dest, ws_fint *sendtag, void *recvbuf, ws_fint *recvcount, ws_fint *recvtype,
                          ws_fint *source, ws_fint *recvtag, ws_fint *comm, ws_fint *status, ws_fint *ierr)
{
    if (WS_F_PASS_THROUGH) {
        ((f_sendrecv)real)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                           comm, status, ierr);
        return;
    }
    ws_fint own[WS_F_STATUS_INTS];
    ws_fint *st = status_arg(f08, status, own);
    MPI_Comm c = MPI_Comm_f2c(*comm);
    ws_send_begin(fn, ws_type_bytes(*sendcount, MPI_Type_f2c(*sendtype)), *dest, *sendtag, c);
    ((f_sendrecv)real)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                       comm, st, ierr);
    MPI_Status cs;
    int rc = ws_f_rc(ierr);
    if (rc == MPI_SUCCESS)
        ws_f_status_to_c(f08, st, &cs);
    ws_recv_end(fn, rc, c, &cs);
}
WS_F_ENTRIES(sendrecv, SENDRECV, ts, sendrecv_body, WF_SENDRECV,
             (void *sendbuf, ws_fint *sendcount, ws_fint *sendtype, ws_fint *dest, ws_fint *sendtag, void *recvbuf,
              ws_fint *recvcount, ws_fint *recvtype, ws_fint *source, ws_fint *recvtag, ws_fint *comm,
              ws_fint *status, ws_fint *ierr),
             (sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
              status, ierr))

static void probe_body(int fn, int f08, ws_fproc real, ws_fint *source, ws_fint *tag, ws_fint *comm,
                       ws_fint *status, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_5)real)(source, tag, comm, status, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_5)real)(source, tag, comm, status, ierr);
    ws_call_end(fn, ws_now(), 0, 0, 0);
}
WS_F_ENTRIES(probe, PROBE, , probe_body, WF_PROBE,
             (ws_fint * source, ws_fint *tag, ws_fint *comm, ws_fint *status, ws_fint *ierr),
             (source, tag, comm, status, ierr))

static void iprobe_body(int fn, int f08, ws_fproc real, ws_fint *source, ws_fint *tag, ws_fint *comm,
                        ws_fint *flag, ws_fint *status, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_6)real)(source, tag, comm, flag, status, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_6)real)(source, tag, comm, flag, status, ierr);
    ws_call_end(fn, ws_now(), 0, 0, 0);
}
WS_F_ENTRIES(iprobe, IPROBE, , iprobe_body, WF_IPROBE,
             (ws_fint * source, ws_fint *tag, ws_fint *comm, ws_fint *flag, ws_fint *status, ws_fint *ierr),
             (source, tag, comm, flag, status, ierr))

/* ---- non-blocking ------------------------------------------------------------------ */

static void isend_body(int fn, int f08, ws_fproc real, void *buf, ws_fint *count, ws_fint *type, ws_fint *dest,
                       ws_fint *tag, ws_fint *comm, ws_fint *req, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_start)real)(buf, count, type, dest, tag, comm, req, ierr);
        return;
    }
    MPI_Comm c = MPI_Comm_f2c(*comm);
    uint64_t bytes = ws_type_bytes(*count, MPI_Type_f2c(*type));
    uint64_t id = ws_isend_begin(fn, bytes, *dest, *tag, c);
    ((f_start)real)(buf, count, type, dest, tag, comm, req, ierr);
    int rc = ws_f_rc(ierr);
    MPI_Request creq = rc == MPI_SUCCESS ? MPI_Request_f2c(*req) : MPI_REQUEST_NULL;
    ws_isend_end(fn, rc, &creq, id, c, bytes);
}

static void irecv_body(int fn, int f08, ws_fproc real, void *buf, ws_fint *count, ws_fint *type, ws_fint *source,
                       ws_fint *tag, ws_fint *comm, ws_fint *req, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_start)real)(buf, count, type, source, tag, comm, req, ierr);
        return;
    }
    uint64_t t0 = ws_call_begin(fn);
    ((f_start)real)(buf, count, type, source, tag, comm, req, ierr);
    int rc = ws_f_rc(ierr);
    MPI_Request creq = rc == MPI_SUCCESS ? MPI_Request_f2c(*req) : MPI_REQUEST_NULL;
    ws_irecv_end(fn, rc, t0, *source, MPI_Comm_f2c(*comm), &creq);
}

#define START_PARAMS                                                                                           \
    (void *buf, ws_fint *count, ws_fint *type, ws_fint *peer, ws_fint *tag, ws_fint *comm, ws_fint *req,       \
     ws_fint *ierr)
#define START_ARGS (buf, count, type, peer, tag, comm, req, ierr)
WS_F_ENTRIES(isend, ISEND, ts, isend_body, WF_ISEND, START_PARAMS, START_ARGS)
WS_F_ENTRIES(issend, ISSEND, ts, isend_body, WF_ISSEND, START_PARAMS, START_ARGS)
WS_F_ENTRIES(irecv, IRECV, ts, irecv_body, WF_IRECV, START_PARAMS, START_ARGS)

/* ---- completion --------------------------------------------------------------------- */

static void wait_body(int fn, int f08, ws_fproc real, ws_fint *req, ws_fint *status, ws_fint *ierr)
{
    if (WS_F_PASS_THROUGH) {
        ((f_3)real)(req, status, ierr);
        return;
    }
    ws_fint own[WS_F_STATUS_INTS];
    ws_fint *st = status_arg(f08, status, own);
    MPI_Request old = MPI_Request_f2c(*req);
    ws_call_begin(fn);
    ((f_3)real)(req, st, ierr);
    uint64_t t1 = ws_now(), bytes = 0;
    if (ws_f_rc(ierr) == MPI_SUCCESS && old != MPI_REQUEST_NULL) {
        MPI_Status c;
        ws_f_status_to_c(f08, st, &c);
        bytes = ws_request_complete(t1, old, &c);
    }
    ws_call_end(fn, t1, bytes, bytes > 0, 0);
}
WS_F_ENTRIES(wait, WAIT, , wait_body, WF_WAIT, (ws_fint * req, ws_fint *status, ws_fint *ierr),
             (req, status, ierr))

static void test_body(int fn, int f08, ws_fproc real, ws_fint *req, ws_fint *flag, ws_fint *status, ws_fint *ierr)
{
    if (WS_F_PASS_THROUGH) {
        ((f_4)real)(req, flag, status, ierr);
        return;
    }
    ws_fint own[WS_F_STATUS_INTS];
    ws_fint *st = status_arg(f08, status, own);
    MPI_Request old = MPI_Request_f2c(*req);
    ws_call_begin(fn);
    ((f_4)real)(req, flag, st, ierr);
    uint64_t t1 = ws_now(), bytes = 0;
    if (ws_f_rc(ierr) == MPI_SUCCESS && *flag && old != MPI_REQUEST_NULL) { /* flag: a LOGICAL, true is nonzero */
        MPI_Status c;
        ws_f_status_to_c(f08, st, &c);
        bytes = ws_request_complete(t1, old, &c);
    }
    ws_call_end(fn, t1, bytes, bytes > 0, 0);
}
WS_F_ENTRIES(test, TEST, , test_body, WF_TEST, (ws_fint * req, ws_fint *flag, ws_fint *status, ws_fint *ierr),
             (req, flag, status, ierr))

/* Completion calls over arrays: the C handles are taken before the call
 * and statuses supplied when the program ignores them. */
typedef struct multi {
    MPI_Request small_old[64];
    ws_fint small_st[64 * WS_F_STATUS_INTS];
    MPI_Request *old;
    ws_fint *st;
    int own_statuses;
} multi;

/* statuses NULL: the call has no status array */
static int multi_begin(multi *m, int f08, int n, const ws_fint *reqs, ws_fint *statuses)
{
    m->old = n <= 64 ? m->small_old : malloc((size_t)n * sizeof *m->old);
    m->own_statuses = statuses && ws_f_statuses_ignored(f08, statuses);
    m->st = !m->own_statuses ? statuses
            : n <= 64        ? m->small_st
                             : malloc((size_t)n * WS_F_STATUS_INTS * sizeof *m->st);
    if (!m->old || (m->own_statuses && !m->st)) {
        if (m->old && m->old != m->small_old)
            free(m->old);
        if (m->own_statuses && m->st && m->st != m->small_st)
            free(m->st);
        return -1;
    }
    for (int i = 0; i < n; i++)
        m->old[i] = MPI_Request_f2c(reqs[i]);
    return 0;
}

static void multi_end(multi *m)
{
    if (m->old != m->small_old)
        free(m->old);
    if (m->own_statuses && m->st != m->small_st)
        free(m->st);
}

/* Whether request i of the call completed in it: the MPI set its handle
 * to MPI_REQUEST_NULL. */
static int freed(const multi *m, const ws_fint *reqs, int n, int i)
{
    return i >= 0 && i < n && m->old[i] != MPI_REQUEST_NULL && MPI_Request_f2c(reqs[i]) == MPI_REQUEST_NULL;
}

/* The base of the indices a completion call returned: 1 in Fortran, but
 * MPICH 4.0's mpi_f08 binding of MPI_Waitany/Testany/Waitsome/Testsome
 * passes on the C library's 0-based ones.  The indices are taken as
 * 1-based unless only the 0-based reading names requests the call freed. */
static int index_base(const multi *m, const ws_fint *reqs, int n, const ws_fint *indices, int count)
{
    int one = 1, zero = 1;
    for (int k = 0; k < count; k++) {
        one &= freed(m, reqs, n, indices[k] - 1);
        zero &= freed(m, reqs, n, indices[k]);
    }
    return !one && zero ? 0 : 1;
}

/* completes request i of the call with the status at `k` of the array */
static uint64_t complete_at(int f08, uint64_t t1, const multi *m, int i, int k)
{
    if (m->old[i] == MPI_REQUEST_NULL)
        return 0;
    MPI_Status c;
    ws_f_status_to_c(f08, m->st + (size_t)k * WS_F_STATUS_INTS, &c);
    return ws_request_complete(t1, m->old[i], &c);
}

/* MPI_Waitall (flag NULL) and MPI_Testall */
static void all_call(int fn, int f08, ws_fproc real, ws_fint *count, ws_fint *reqs, ws_fint *flag,
                     ws_fint *statuses, ws_fint *ierr)
{
    multi m;
    int n = *count;
    if (WS_F_PASS_THROUGH || n < 0 || multi_begin(&m, f08, n, reqs, statuses) != 0) {
        if (flag)
            ((f_5)real)(count, reqs, flag, statuses, ierr);
        else
            ((f_4)real)(count, reqs, statuses, ierr);
        return;
    }
    ws_call_begin(fn);
    if (flag)
        ((f_5)real)(count, reqs, flag, m.st, ierr);
    else
        ((f_4)real)(count, reqs, m.st, ierr);
    uint64_t t1 = ws_now(), bytes = 0;
    if (ws_f_rc(ierr) == MPI_SUCCESS && (!flag || *flag))
        for (int i = 0; i < n; i++)
            bytes += complete_at(f08, t1, &m, i, i);
    ws_call_end(fn, t1, bytes, bytes > 0, 0);
    multi_end(&m);
}

static void waitall_body(int fn, int f08, ws_fproc real, ws_fint *count, ws_fint *reqs, ws_fint *statuses,
                         ws_fint *ierr)
{
    all_call(fn, f08, real, count, reqs, NULL, statuses, ierr);
}
WS_F_ENTRIES(waitall, WAITALL, , waitall_body, WF_WAITALL,
             (ws_fint * count, ws_fint *reqs, ws_fint *statuses, ws_fint *ierr), (count, reqs, statuses, ierr))
WS_F_ENTRIES(testall, TESTALL, , all_call, WF_TESTALL,
             (ws_fint * count, ws_fint *reqs, ws_fint *flag, ws_fint *statuses, ws_fint *ierr),
             (count, reqs, flag, statuses, ierr))

/* MPI_Waitany (flag NULL) and MPI_Testany */
static void any_call(int fn, int f08, ws_fproc real, ws_fint *count, ws_fint *reqs, ws_fint *index, ws_fint *flag,
                     ws_fint *status, ws_fint *ierr)
{
    multi m;
    int n = *count;
    if (WS_F_PASS_THROUGH || n < 0 || multi_begin(&m, f08, n, reqs, NULL) != 0) {
        if (flag)
            ((f_6)real)(count, reqs, index, flag, status, ierr);
        else
            ((f_5)real)(count, reqs, index, status, ierr);
        return;
    }
    ws_fint own[WS_F_STATUS_INTS];
    ws_fint *st = status_arg(f08, status, own);
    ws_call_begin(fn);
    if (flag)
        ((f_6)real)(count, reqs, index, flag, st, ierr);
    else
        ((f_5)real)(count, reqs, index, st, ierr);
    uint64_t t1 = ws_now(), bytes = 0;
    /* MPI_UNDEFINED when there was nothing to complete */
    int i = *index == MPI_UNDEFINED ? -1 : *index - index_base(&m, reqs, n, index, 1);
    if (ws_f_rc(ierr) == MPI_SUCCESS && (!flag || *flag) && i >= 0 && i < n && m.old[i] != MPI_REQUEST_NULL) {
        MPI_Status c;
        ws_f_status_to_c(f08, st, &c);
        bytes = ws_request_complete(t1, m.old[i], &c);
    }
    ws_call_end(fn, t1, bytes, bytes > 0, 0);
    multi_end(&m);
}

static void waitany_body(int fn, int f08, ws_fproc real, ws_fint *count, ws_fint *reqs, ws_fint *index,
                         ws_fint *status, ws_fint *ierr)
{
    any_call(fn, f08, real, count, reqs, index, NULL, status, ierr);
}
WS_F_ENTRIES(waitany, WAITANY, , waitany_body, WF_WAITANY,
             (ws_fint * count, ws_fint *reqs, ws_fint *index, ws_fint *status, ws_fint *ierr),
             (count, reqs, index, status, ierr))
WS_F_ENTRIES(testany, TESTANY, , any_call, WF_TESTANY,
             (ws_fint * count, ws_fint *reqs, ws_fint *index, ws_fint *flag, ws_fint *status, ws_fint *ierr),
             (count, reqs, index, flag, status, ierr))

/* MPI_Waitsome and MPI_Testsome */
static void some_call(int fn, int f08, ws_fproc real, ws_fint *count, ws_fint *reqs, ws_fint *outcount,
                      ws_fint *indices, ws_fint *statuses, ws_fint *ierr)
{
    multi m;
    int n = *count;
    if (WS_F_PASS_THROUGH || n < 0 || multi_begin(&m, f08, n, reqs, statuses) != 0) {
        ((f_6)real)(count, reqs, outcount, indices, statuses, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_6)real)(count, reqs, outcount, indices, m.st, ierr);
    uint64_t t1 = ws_now(), bytes = 0;
    if (ws_f_rc(ierr) == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount >= 0) {
        int base = index_base(&m, reqs, n, indices, *outcount);
        for (int k = 0; k < *outcount; k++)
            if (indices[k] - base >= 0 && indices[k] - base < n)
                bytes += complete_at(f08, t1, &m, indices[k] - base, k);
    }
    ws_call_end(fn, t1, bytes, bytes > 0, 0);
    multi_end(&m);
}
#define SOME_PARAMS                                                                                            \
    (ws_fint * count, ws_fint *reqs, ws_fint *outcount, ws_fint *indices, ws_fint *statuses, ws_fint *ierr)
#define SOME_ARGS (count, reqs, outcount, indices, statuses, ierr)
WS_F_ENTRIES(waitsome, WAITSOME, , some_call, WF_WAITSOME, SOME_PARAMS, SOME_ARGS)
WS_F_ENTRIES(testsome, TESTSOME, , some_call, WF_TESTSOME, SOME_PARAMS, SOME_ARGS)

static void request_free_body(int fn, int f08, ws_fproc real, ws_fint *req, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_2)real)(req, ierr);
        return;
    }
    ws_call_begin(fn);
    ws_request_forget(MPI_Request_f2c(*req));
    ((f_2)real)(req, ierr);
    ws_call_end(fn, ws_now(), 0, 0, 0);
}
WS_F_ENTRIES(request_free, REQUEST_FREE, , request_free_body, WF_Request_free, (ws_fint * req, ws_fint *ierr),
             (req, ierr))
