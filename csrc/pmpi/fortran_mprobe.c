/* Fortran matched probes and receives (see fortran.h): each records what
 * its C twin in wrappers_mprobe.c records.  Open MPI's mpif.h binding and
 * both MPIs' mpi_f08 bindings do not call the C MPI_Mprobe, MPI_Mrecv, ...,
 * so without these a Fortran program's matched receives would be missing
 * and its messages sent but never received in the trace. */
#include "fortran.h"

typedef void (*f_mrecv)(void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_6)(ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_7)(ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);

static void mprobe_body(int fn, int f08, ws_fproc real, ws_fint *source, ws_fint *tag, ws_fint *comm,
                        ws_fint *message, ws_fint *status, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_6)real)(source, tag, comm, message, status, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_6)real)(source, tag, comm, message, status, ierr);
    if (ws_f_rc(ierr) == MPI_SUCCESS)
        ws_message_note(MPI_Message_f2c(*message), MPI_Comm_f2c(*comm));
    ws_call_end(fn, ws_now(), 0, 0, 0);
}
WS_F_ENTRIES(mprobe, MPROBE, , mprobe_body, WF_MPROBE,
             (ws_fint * source, ws_fint *tag, ws_fint *comm, ws_fint *message, ws_fint *status, ws_fint *ierr),
             (source, tag, comm, message, status, ierr))

static void improbe_body(int fn, int f08, ws_fproc real, ws_fint *source, ws_fint *tag, ws_fint *comm,
                         ws_fint *flag, ws_fint *message, ws_fint *status, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_7)real)(source, tag, comm, flag, message, status, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_7)real)(source, tag, comm, flag, message, status, ierr);
    if (ws_f_rc(ierr) == MPI_SUCCESS && *flag)
        ws_message_note(MPI_Message_f2c(*message), MPI_Comm_f2c(*comm));
    ws_call_end(fn, ws_now(), 0, 0, 0);
}
WS_F_ENTRIES(improbe, IMPROBE, , improbe_body, WF_IMPROBE,
             (ws_fint * source, ws_fint *tag, ws_fint *comm, ws_fint *flag, ws_fint *message, ws_fint *status,
              ws_fint *ierr),
             (source, tag, comm, flag, message, status, ierr))

static void mrecv_body(int fn, int f08, ws_fproc real, void *buf, ws_fint *count, ws_fint *type, ws_fint *message,
                       ws_fint *status, ws_fint *ierr)
{
    if (WS_F_PASS_THROUGH) {
        ((f_mrecv)real)(buf, count, type, message, status, ierr);
        return;
    }
    ws_fint own[WS_F_STATUS_INTS];
    ws_fint *st = ws_f_status_ignored(f08, status) ? own : status;
    uint32_t comm = ws_message_take(MPI_Message_f2c(*message));
    ws_call_begin(fn);
    ((f_mrecv)real)(buf, count, type, message, st, ierr);
    MPI_Status c;
    int rc = ws_f_rc(ierr);
    if (rc == MPI_SUCCESS)
        ws_f_status_to_c(f08, st, &c);
    ws_recv_end_id(fn, rc, comm, &c);
}
WS_F_ENTRIES(mrecv, MRECV, ts, mrecv_body, WF_MRECV,
             (void *buf, ws_fint *count, ws_fint *type, ws_fint *message, ws_fint *status, ws_fint *ierr),
             (buf, count, type, message, status, ierr))

static void imrecv_body(int fn, int f08, ws_fproc real, void *buf, ws_fint *count, ws_fint *type, ws_fint *message,
                        ws_fint *req, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_mrecv)real)(buf, count, type, message, req, ierr);
        return;
    }
    uint32_t comm = ws_message_take(MPI_Message_f2c(*message));
    uint64_t t0 = ws_call_begin(fn);
    ((f_mrecv)real)(buf, count, type, message, req, ierr);
    int rc = ws_f_rc(ierr);
    MPI_Request creq = rc == MPI_SUCCESS ? MPI_Request_f2c(*req) : MPI_REQUEST_NULL;
    ws_irecv_end_id(fn, rc, t0, comm, &creq);
}
WS_F_ENTRIES(imrecv, IMRECV, ts, imrecv_body, WF_IMRECV,
             (void *buf, ws_fint *count, ws_fint *type, ws_fint *message, ws_fint *req, ws_fint *ierr),
             (buf, count, type, message, req, ierr))
