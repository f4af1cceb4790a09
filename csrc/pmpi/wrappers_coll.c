/* Blocking collective wrappers: Enter, MpiCollectiveBegin, the call,
 * MpiCollectiveEnd (operation, communicator, root as a rank within the
 * communicator, bytes sent and received as Score-P counts them), Leave.
 *
 * The profile's size class uses the payload of one rank: the count of
 * Bcast/Reduce/Allreduce/Scan/Exscan, the block a rank sends in Gather,
 * Allgather and Alltoall (per partner) or receives in Scatter, the sum of
 * a rank's counts in the v-variants and Reduce_scatter; none for Barrier.
 * Arguments MPI declares insignificant (the receive type of a non-root
 * Gather, anything next to MPI_IN_PLACE) are never looked at. */
#include "pmpi.h"

#include <otf2/OTF2_Events.h>

#include "../trace/trace.h"

#define PASS_THROUGH (!ws_pmpi_g.measuring || ws_pmpi_g.in_call)

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

static int comm_size(MPI_Comm comm)
{
    int n = 1;
    PMPI_Comm_size(comm, &n);
    return n;
}

static int comm_rank(MPI_Comm comm)
{
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

static uint64_t sum_counts(const int counts[], int n, MPI_Datatype type)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += (uint64_t)(counts[i] > 0 ? counts[i] : 0);
    return ws_type_bytes(1, type) * total;
}

WS_EXPORT int MPI_Barrier(MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Barrier(comm);
    ws_coll_begin(WF_BARRIER);
    int rc = PMPI_Barrier(comm);
    ws_coll_end(WF_BARRIER, comm, OTF2_COLLECTIVE_OP_BARRIER, -1, 0, 0, 0, 0);
    return rc;
}

WS_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Bcast(buf, count, type, root, comm);
    ws_coll_begin(WF_BCAST);
    uint64_t b = ws_type_bytes(count, type);
    int is_root = comm_rank(comm) == root;
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    ws_coll_end(WF_BCAST, comm, OTF2_COLLECTIVE_OP_BCAST, root, is_root ? b * (uint64_t)comm_size(comm) : 0, b, b, 1);
    return rc;
}

WS_EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                         MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
    ws_coll_begin(WF_REDUCE);
    uint64_t b = ws_type_bytes(count, type);
    int is_root = comm_rank(comm) == root;
    int rc = PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
    ws_coll_end(WF_REDUCE, comm, OTF2_COLLECTIVE_OP_REDUCE, root, b, is_root ? b * (uint64_t)comm_size(comm) : 0, b, 1);
    return rc;
}

WS_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                            MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    ws_coll_begin(WF_ALLREDUCE);
    uint64_t b = ws_type_bytes(count, type), n = (uint64_t)comm_size(comm);
    int rc = PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    ws_coll_end(WF_ALLREDUCE, comm, OTF2_COLLECTIVE_OP_ALLREDUCE, -1, b * n, b * n, b, 1);
    return rc;
}

WS_EXPORT int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Scan(sendbuf, recvbuf, count, type, op, comm);
    ws_coll_begin(WF_SCAN);
    uint64_t b = ws_type_bytes(count, type);
    int rc = PMPI_Scan(sendbuf, recvbuf, count, type, op, comm);
    ws_coll_end(WF_SCAN, comm, OTF2_COLLECTIVE_OP_SCAN, -1, b, b, b, 1);
    return rc;
}

WS_EXPORT int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                         MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Exscan(sendbuf, recvbuf, count, type, op, comm);
    ws_coll_begin(WF_EXSCAN);
    uint64_t b = ws_type_bytes(count, type);
    int rc = PMPI_Exscan(sendbuf, recvbuf, count, type, op, comm);
    ws_coll_end(WF_EXSCAN, comm, OTF2_COLLECTIVE_OP_EXSCAN, -1, b, b, b, 1);
    return rc;
}

WS_EXPORT int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_begin(WF_GATHER);
    int is_root = comm_rank(comm) == root;
    uint64_t n = (uint64_t)comm_size(comm);
    uint64_t rb = is_root ? ws_type_bytes(recvcount, recvtype) : 0;
    uint64_t sb = sendbuf == MPI_IN_PLACE ? rb : ws_type_bytes(sendcount, sendtype);
    int rc = PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_end(WF_GATHER, comm, OTF2_COLLECTIVE_OP_GATHER, root, sb, rb * n, sb, 1);
    return rc;
}

WS_EXPORT int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
    ws_coll_begin(WF_GATHERV);
    int me = comm_rank(comm), is_root = me == root;
    uint64_t rb = is_root ? sum_counts(recvcounts, comm_size(comm), recvtype) : 0;
    uint64_t sb = sendbuf == MPI_IN_PLACE ? ws_type_bytes(recvcounts[me], recvtype) : ws_type_bytes(sendcount, sendtype);
    int rc = PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
    ws_coll_end(WF_GATHERV, comm, OTF2_COLLECTIVE_OP_GATHERV, root, sb, rb, sb, 1);
    return rc;
}

WS_EXPORT int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_begin(WF_SCATTER);
    int is_root = comm_rank(comm) == root;
    uint64_t n = (uint64_t)comm_size(comm);
    uint64_t sb = is_root ? ws_type_bytes(sendcount, sendtype) : 0;
    uint64_t rb = recvbuf == MPI_IN_PLACE ? sb : ws_type_bytes(recvcount, recvtype);
    int rc = PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_end(WF_SCATTER, comm, OTF2_COLLECTIVE_OP_SCATTER, root, sb * n, rb, rb, 1);
    return rc;
}

WS_EXPORT int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_begin(WF_SCATTERV);
    int me = comm_rank(comm), is_root = me == root;
    uint64_t sb = is_root ? sum_counts(sendcounts, comm_size(comm), sendtype) : 0;
    uint64_t rb = recvbuf == MPI_IN_PLACE ? ws_type_bytes(sendcounts[me], sendtype) : ws_type_bytes(recvcount, recvtype);
    int rc = PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
    ws_coll_end(WF_SCATTERV, comm, OTF2_COLLECTIVE_OP_SCATTERV, root, sb, rb, rb, 1);
    return rc;
}

WS_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    ws_coll_begin(WF_ALLGATHER);
    uint64_t n = (uint64_t)comm_size(comm);
    uint64_t rb = ws_type_bytes(recvcount, recvtype);
    uint64_t sb = sendbuf == MPI_IN_PLACE ? rb : ws_type_bytes(sendcount, sendtype);
    int rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    ws_coll_end(WF_ALLGATHER, comm, OTF2_COLLECTIVE_OP_ALLGATHER, -1, sb * n, rb * n, sb, 1);
    return rc;
}

WS_EXPORT int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    ws_coll_begin(WF_ALLGATHERV);
    int n = comm_size(comm), me = comm_rank(comm);
    uint64_t rb = sum_counts(recvcounts, n, recvtype);
    uint64_t sb = sendbuf == MPI_IN_PLACE ? ws_type_bytes(recvcounts[me], recvtype) : ws_type_bytes(sendcount, sendtype);
    int rc = PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    ws_coll_end(WF_ALLGATHERV, comm, OTF2_COLLECTIVE_OP_ALLGATHERV, -1, sb * (uint64_t)n, rb, sb, 1);
    return rc;
}

WS_EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    ws_coll_begin(WF_ALLTOALL);
    uint64_t n = (uint64_t)comm_size(comm);
    uint64_t rb = ws_type_bytes(recvcount, recvtype);
    uint64_t sb = sendbuf == MPI_IN_PLACE ? rb : ws_type_bytes(sendcount, sendtype);
    int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    ws_coll_end(WF_ALLTOALL, comm, OTF2_COLLECTIVE_OP_ALLTOALL, -1, sb * n, rb * n, sb, 1);
    return rc;
}

WS_EXPORT int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    ws_coll_begin(WF_ALLTOALLV);
    int n = comm_size(comm);
    uint64_t rb = sum_counts(recvcounts, n, recvtype);
    uint64_t sb = sendbuf == MPI_IN_PLACE ? rb : sum_counts(sendcounts, n, sendtype);
    int rc = PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    ws_coll_end(WF_ALLTOALLV, comm, OTF2_COLLECTIVE_OP_ALLTOALLV, -1, sb, rb, sb, 1);
    return rc;
}

WS_EXPORT int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype type,
                                 MPI_Op op, MPI_Comm comm)
{
    if (PASS_THROUGH)
        return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
    ws_coll_begin(WF_REDUCE_SCATTER);
    int n = comm_size(comm), me = comm_rank(comm);
    uint64_t sb = sum_counts(recvcounts, n, type);
    uint64_t rb = ws_type_bytes(recvcounts[me], type);
    int rc = PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
    ws_coll_end(WF_REDUCE_SCATTER, comm, OTF2_COLLECTIVE_OP_REDUCE_SCATTER, -1, sb, rb, sb, 1);
    return rc;
}
