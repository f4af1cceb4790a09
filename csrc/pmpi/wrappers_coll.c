/* Blocking collective wrappers: Enter, MpiCollectiveBegin, the call,
 * MpiCollectiveEnd (operation, communicator, root as a rank within the
 * communicator, bytes sent and received as Score-P counts them), Leave.
 * What each records comes from coll_bytes.c, shared with the large-count
 * and the Fortran wrappers. */
#include "pmpi.h"

#include "../trace/trace.h"

#define PASS_THROUGH WS_PASS_THROUGH

uint64_t ws_coll_begin(int fn)
{
    uint64_t t0 = ws_call_begin(fn);
    ws_emit(t0, WS_EV_COLL_BEGIN, 0, 0, 0, 0, 0, 0);
    return t0;
}

void ws_coll_end(int fn, MPI_Comm comm, uint8_t op, int root, uint64_t sent, uint64_t received,
                     uint64_t payload, int has_payload)
{
    uint64_t t1 = ws_now();
    uint32_t c = ws_comm_id(comm);
    int me = -1;
    if (root >= 0)
        PMPI_Comm_rank(comm, &me);
    if (c != UINT32_MAX)
        ws_emit(t1, WS_EV_COLL_END, root >= 0 ? (uint32_t)root : UINT32_MAX, c, 0, sent, received, op);
    ws_call_end(fn, t1, payload, has_payload, root >= 0 && me == root);
}

void ws_coll_finish(int fn, MPI_Comm comm, const ws_coll_info *k)
{
    ws_coll_end(fn, comm, k->op, k->root, k->sent, k->received, k->payload, k->has_payload);
}

/* Enter and MpiCollectiveBegin, what the call records, the call, the end */
#define COLLECTIVE(FN, INFO, CALL, COMM)                                                                    \
    do {                                                                                                    \
        ws_coll_begin(FN);                                                                                  \
        ws_coll_info k_ = INFO;                                                                             \
        int rc_ = CALL;                                                                                     \
        ws_coll_finish(FN, COMM, &k_);                                                                      \
        return rc_;                                                                                         \
    } while (0)

WS_EXPORT int MPI_Barrier(MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Barrier(comm);
    COLLECTIVE(WF_BARRIER, ws_coll_barrier(), PMPI_Barrier(comm), comm);
}

WS_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Bcast(buf, count, type, root, comm);
    COLLECTIVE(WF_BCAST, ws_coll_bcast(count, type, root, comm), PMPI_Bcast(buf, count, type, root, comm), comm);
}

WS_EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                         MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
    COLLECTIVE(WF_REDUCE, ws_coll_reduce(count, type, root, comm),
               PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm), comm);
}

#define ALLREDUCE_LIKE(NAME, FN)                                                                             \
    WS_EXPORT int MPI_##NAME(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,    \
                             MPI_Comm comm)                                                                  \
    {                                                                                                        \
        if (PASS_THROUGH)                                                                                    \
            return PMPI_##NAME(sendbuf, recvbuf, count, type, op, comm);                                     \
        COLLECTIVE(FN, ws_coll_allreduce(FN, count, type, comm),                                             \
                   PMPI_##NAME(sendbuf, recvbuf, count, type, op, comm), comm);                              \
    }

ALLREDUCE_LIKE(Allreduce, WF_ALLREDUCE)
ALLREDUCE_LIKE(Scan, WF_SCAN)
ALLREDUCE_LIKE(Exscan, WF_EXSCAN)

WS_EXPORT int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    COLLECTIVE(WF_GATHER,
               ws_coll_gather(sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype, root, comm),
               PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm), comm);
}

WS_EXPORT int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
    COLLECTIVE(WF_GATHERV,
               ws_coll_gatherv(sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcounts, recvtype, root, comm),
               PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm), comm);
}

WS_EXPORT int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    COLLECTIVE(WF_SCATTER,
               ws_coll_scatter(recvbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype, root, comm),
               PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm), comm);
}

WS_EXPORT int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
    COLLECTIVE(WF_SCATTERV,
               ws_coll_scatterv(recvbuf == MPI_IN_PLACE, sendcounts, sendtype, recvcount, recvtype, root, comm),
               PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm), comm);
}

#define ALLGATHER_LIKE(NAME, FN)                                                                             \
    WS_EXPORT int MPI_##NAME(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,       \
                             int recvcount, MPI_Datatype recvtype, MPI_Comm comm)                            \
    {                                                                                                        \
        if (PASS_THROUGH)                                                                                    \
            return PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);            \
        COLLECTIVE(FN,                                                                                       \
                   ws_coll_allgather(FN, sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcount, recvtype,  \
                                     comm),                                                                  \
                   PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm), comm);     \
    }

ALLGATHER_LIKE(Allgather, WF_ALLGATHER)
ALLGATHER_LIKE(Alltoall, WF_ALLTOALL)

WS_EXPORT int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    COLLECTIVE(WF_ALLGATHERV,
               ws_coll_allgatherv(sendbuf == MPI_IN_PLACE, sendcount, sendtype, recvcounts, recvtype, comm),
               PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm), comm);
}

WS_EXPORT int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    COLLECTIVE(WF_ALLTOALLV,
               ws_coll_alltoallv(sendbuf == MPI_IN_PLACE, sendcounts, sendtype, recvcounts, recvtype, comm),
               PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm),
               comm);
}

WS_EXPORT int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype type,
                                 MPI_Op op, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
    COLLECTIVE(WF_REDUCE_SCATTER, ws_coll_reduce_scatter(recvcounts, type, comm),
               PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm), comm);
}
