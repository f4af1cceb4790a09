/* Matched probes and receives (MPI-3): MPI_Mprobe and MPI_Improbe hand out
 * a message handle, MPI_Mrecv and MPI_Imrecv receive that message.
 * mpi4py's lowercase comm.recv() receives this way (a pickled object of
 * unknown size), so without these wrappers its messages would be sent in
 * the trace and never received.
 *
 * Records follow Score-P: the probes are plain point-to-point regions
 * (their blocking is not a wait state in Scalasca's patterns: a program
 * that waits in MPI_Mprobe shows MPI point-to-point time there), MPI_Mrecv
 * records MpiRecv when it ends, MPI_Imrecv MpiIrecvRequest when it starts
 * and the completion call MpiIrecv, with source and tag from the status as
 * for MPI_Recv.  A message handle does not name its communicator, so the
 * probe that returned it notes it (ws_pmpi.messages); a message from
 * MPI_PROC_NULL (MPI_MESSAGE_NO_PROC) records nothing. */
#include "pmpi.h"

#include <string.h>

#define PASS_THROUGH WS_PASS_THROUGH

static uint64_t message_key(MPI_Message m)
{
    uint64_t k = 0;
    memcpy(&k, &m, sizeof m < sizeof k ? sizeof m : sizeof k);
    return k;
}

void ws_message_note(MPI_Message m, MPI_Comm comm)
{
    uint32_t c = ws_comm_id(comm);
    if (m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC && c != UINT32_MAX)
        ws_map64_put(&ws_pmpi_g.messages, message_key(m), c);
}

uint32_t ws_message_take(MPI_Message m)
{
    uint64_t c;
    if (m == MPI_MESSAGE_NULL || m == MPI_MESSAGE_NO_PROC || !ws_map64_get(&ws_pmpi_g.messages, message_key(m), &c))
        return UINT32_MAX;
    ws_map64_remove(&ws_pmpi_g.messages, message_key(m));
    return (uint32_t)c;
}

WS_EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Mprobe(source, tag, comm, message, status);
    ws_call_begin(WF_MPROBE);
    int rc = PMPI_Mprobe(source, tag, comm, message, status);
    if (rc == MPI_SUCCESS)
        ws_message_note(*message, comm);
    ws_call_end(WF_MPROBE, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Improbe(source, tag, comm, flag, message, status);
    ws_call_begin(WF_IMPROBE);
    int rc = PMPI_Improbe(source, tag, comm, flag, message, status);
    if (rc == MPI_SUCCESS && *flag)
        ws_message_note(*message, comm);
    ws_call_end(WF_IMPROBE, ws_now(), 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Mrecv(buf, count, type, message, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint32_t c = ws_message_take(*message);
    ws_call_begin(WF_MRECV);
    int rc = PMPI_Mrecv(buf, count, type, message, st);
    ws_recv_end_id(WF_MRECV, rc, c, st);
    return rc;
}

WS_EXPORT int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Request *req)
{
    if (PASS_THROUGH)
        return PMPI_Imrecv(buf, count, type, message, req);
    uint32_t c = ws_message_take(*message);
    uint64_t t0 = ws_call_begin(WF_IMRECV);
    int rc = PMPI_Imrecv(buf, count, type, message, req);
    ws_irecv_end_id(WF_IMRECV, rc, t0, c, req);
    return rc;
}

#if MPI_VERSION >= 4
/* the large-count variants (mpi4py 4 calls these where the MPI has them) */
WS_EXPORT int MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Mrecv_c(buf, count, type, message, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint32_t c = ws_message_take(*message);
    ws_call_begin(WF_MRECV);
    int rc = PMPI_Mrecv_c(buf, count, type, message, st);
    ws_recv_end_id(WF_MRECV, rc, c, st);
    return rc;
}

WS_EXPORT int MPI_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype type, MPI_Message *message, MPI_Request *req)
{
    if (PASS_THROUGH)
        return PMPI_Imrecv_c(buf, count, type, message, req);
    uint32_t c = ws_message_take(*message);
    uint64_t t0 = ws_call_begin(WF_IMRECV);
    int rc = PMPI_Imrecv_c(buf, count, type, message, req);
    ws_irecv_end_id(WF_IMRECV, rc, t0, c, req);
    return rc;
}
#endif
