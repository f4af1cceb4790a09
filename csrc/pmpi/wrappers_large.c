/* The MPI-4 large-count variants (MPI_Send_c, ...) that MPI-4 libraries
 * provide and mpi4py 4 calls.  They are recorded under the region of the
 * int-count function (MPI_Send_c as MPI_Send), so call paths and the
 * profile read the same whichever variant the program used.  Compiled only
 * against an MPI-4 library (MPICH 4; Open MPI 4 is MPI-3.1). */
#include "pmpi.h"

#if MPI_VERSION >= 4

#define PASS_THROUGH WS_PASS_THROUGH

#define SEND_C(NAME, FN)                                                                               \
    WS_EXPORT int MPI_##NAME##_c(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, \
                                 MPI_Comm comm)                                                        \
    {                                                                                                  \
        if (PASS_THROUGH)                                                                              \
            return PMPI_##NAME##_c(buf, count, type, dest, tag, comm);                                 \
        uint64_t bytes = ws_type_bytes(count, type);                                                   \
        ws_send_begin(FN, bytes, dest, tag, comm);                                                     \
        int rc = PMPI_##NAME##_c(buf, count, type, dest, tag, comm);                                   \
        ws_call_end(FN, ws_now(), bytes, 1, 0);                                                        \
        return rc;                                                                                     \
    }

SEND_C(Send, WF_SEND)
SEND_C(Ssend, WF_SSEND)
SEND_C(Bsend, WF_BSEND)
SEND_C(Rsend, WF_RSEND)

WS_EXPORT int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                         MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Recv_c(buf, count, type, source, tag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ws_call_begin(WF_RECV);
    int rc = PMPI_Recv_c(buf, count, type, source, tag, comm, st);
    ws_recv_end(WF_RECV, rc, comm, st);
    return rc;
}

WS_EXPORT int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int source, int recvtag,
                             MPI_Comm comm, MPI_Status *status)
{
    if (PASS_THROUGH)
        return PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                               recvtag, comm, status);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    ws_send_begin(WF_SENDRECV, ws_type_bytes(sendcount, sendtype), dest, sendtag, comm);
    int rc = PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, st);
    ws_recv_end(WF_SENDRECV, rc, comm, st);
    return rc;
}

#define ISEND_C(NAME, FN)                                                                                \
    WS_EXPORT int MPI_##NAME##_c(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag,   \
                                 MPI_Comm comm, MPI_Request *req)                                        \
    {                                                                                                    \
        if (PASS_THROUGH)                                                                                \
            return PMPI_##NAME##_c(buf, count, type, dest, tag, comm, req);                              \
        uint64_t bytes = ws_type_bytes(count, type);                                                     \
        uint64_t id = ws_isend_begin(FN, bytes, dest, tag, comm);                                        \
        int rc = PMPI_##NAME##_c(buf, count, type, dest, tag, comm, req);                                \
        ws_isend_end(FN, rc, req, id, comm, bytes);                                                      \
        return rc;                                                                                       \
    }

ISEND_C(Isend, WF_ISEND)
ISEND_C(Issend, WF_ISSEND)

WS_EXPORT int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                          MPI_Request *req)
{
    if (PASS_THROUGH)
        return PMPI_Irecv_c(buf, count, type, source, tag, comm, req);
    uint64_t t0 = ws_call_begin(WF_IRECV);
    int rc = PMPI_Irecv_c(buf, count, type, source, tag, comm, req);
    ws_irecv_end(WF_IRECV, rc, t0, source, comm, req);
    return rc;
}

WS_EXPORT int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Bcast_c(buf, count, type, root, comm);
    ws_coll_begin(WF_BCAST);
    ws_coll_info k = ws_coll_bcast(count, type, root, comm);
    int rc = PMPI_Bcast_c(buf, count, type, root, comm);
    ws_coll_finish(WF_BCAST, comm, &k);
    return rc;
}

WS_EXPORT int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                           int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Reduce_c(sendbuf, recvbuf, count, type, op, root, comm);
    ws_coll_begin(WF_REDUCE);
    ws_coll_info k = ws_coll_reduce(count, type, root, comm);
    int rc = PMPI_Reduce_c(sendbuf, recvbuf, count, type, op, root, comm);
    ws_coll_finish(WF_REDUCE, comm, &k);
    return rc;
}

#define ALLRED_C(NAME, FN)                                                                                  \
    WS_EXPORT int MPI_##NAME##_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,    \
                                 MPI_Op op, MPI_Comm comm)                                                  \
    {                                                                                                       \
        if (PASS_THROUGH)                                                                                   \
            return PMPI_##NAME##_c(sendbuf, recvbuf, count, type, op, comm);                                \
        ws_coll_begin(FN);                                                                                  \
        ws_coll_info k = ws_coll_allreduce(FN, count, type, comm);                                          \
        int rc = PMPI_##NAME##_c(sendbuf, recvbuf, count, type, op, comm);                                  \
        ws_coll_finish(FN, comm, &k);                                                                       \
        return rc;                                                                                          \
    }

ALLRED_C(Allreduce, WF_ALLREDUCE)
ALLRED_C(Scan, WF_SCAN)
ALLRED_C(Exscan, WF_EXSCAN)

WS_EXPORT int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_begin(WF_GATHER);
    ws_coll_info k = ws_coll_gather(sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype, root, comm);
    int rc = PMPI_Gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_finish(WF_GATHER, comm, &k);
    return rc;
}

WS_EXPORT int MPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                            MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_begin(WF_SCATTER);
    ws_coll_info k = ws_coll_scatter(recvbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype, root, comm);
    int rc = PMPI_Scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_finish(WF_SCATTER, comm, &k);
    return rc;
}

#define ALL2ALL_C(NAME, FN)                                                                                 \
    WS_EXPORT int MPI_##NAME##_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,          \
                                 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)  \
    {                                                                                                       \
        if (PASS_THROUGH)                                                                                   \
            return PMPI_##NAME##_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);       \
        ws_coll_begin(FN);                                                                                  \
        ws_coll_info k =                                                                                    \
            ws_coll_allgather(FN, sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype, comm); \
        int rc = PMPI_##NAME##_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);         \
        ws_coll_finish(FN, comm, &k);                                                                       \
        return rc;                                                                                          \
    }

ALL2ALL_C(Allgather, WF_ALLGATHER)
ALL2ALL_C(Alltoall, WF_ALLTOALL)

#else
/* an MPI-3 library has no large-count functions to wrap */
typedef int ws_no_large_count_functions;
#endif
