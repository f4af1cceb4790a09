/* What a blocking collective records, from its arguments: the OTF2
 * operation, the root (a rank of the communicator, -1 when there is none),
 * the bytes sent and received as Score-P counts them, and the payload that
 * gives the profile's size class: the count of Bcast/Reduce/Allreduce/
 * Scan/Exscan, the block a rank sends in Gather, Allgather and Alltoall
 * (per partner) or receives in Scatter, the sum of a rank's counts in the
 * v-variants and Reduce_scatter; none for Barrier.
 *
 * One definition for the C wrappers (int and MPI-4 large counts) and the
 * Fortran wrappers, which convert their handles first and say themselves
 * whether a buffer is MPI_IN_PLACE (each binding has its own sentinel).
 * Arguments MPI declares insignificant (the receive type of a non-root
 * Gather, anything next to MPI_IN_PLACE) are never looked at. */
#include "pmpi.h"

#include <otf2/OTF2_Events.h>

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

static ws_coll_info info(uint8_t op, int root, uint64_t sent, uint64_t received, uint64_t payload)
{
    return (ws_coll_info){op, root, sent, received, payload, 1};
}

ws_coll_info ws_coll_barrier(void)
{
    return (ws_coll_info){OTF2_COLLECTIVE_OP_BARRIER, -1, 0, 0, 0, 0};
}

ws_coll_info ws_coll_bcast(long long count, MPI_Datatype type, int root, MPI_Comm comm)
{
    uint64_t b = ws_type_bytes(count, type);
    int is_root = comm_rank(comm) == root;
    return info(OTF2_COLLECTIVE_OP_BCAST, root, is_root ? b * (uint64_t)comm_size(comm) : 0, b, b);
}

ws_coll_info ws_coll_reduce(long long count, MPI_Datatype type, int root, MPI_Comm comm)
{
    uint64_t b = ws_type_bytes(count, type);
    int is_root = comm_rank(comm) == root;
    return info(OTF2_COLLECTIVE_OP_REDUCE, root, b, is_root ? b * (uint64_t)comm_size(comm) : 0, b);
}

ws_coll_info ws_coll_allreduce(int fn, long long count, MPI_Datatype type, MPI_Comm comm)
{
    uint64_t b = ws_type_bytes(count, type);
    if (fn == WF_ALLREDUCE) {
        uint64_t n = (uint64_t)comm_size(comm);
        return info(OTF2_COLLECTIVE_OP_ALLREDUCE, -1, b * n, b * n, b);
    }
    return info(fn == WF_SCAN ? OTF2_COLLECTIVE_OP_SCAN : OTF2_COLLECTIVE_OP_EXSCAN, -1, b, b, b);
}

ws_coll_info ws_coll_gather(int send_in_place, long long sendcount, MPI_Datatype sendtype, long long recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int is_root = comm_rank(comm) == root;
    uint64_t n = (uint64_t)comm_size(comm);
    uint64_t rb = is_root ? ws_type_bytes(recvcount, recvtype) : 0;
    uint64_t sb = send_in_place ? rb : ws_type_bytes(sendcount, sendtype);
    return info(OTF2_COLLECTIVE_OP_GATHER, root, sb, rb * n, sb);
}

ws_coll_info ws_coll_gatherv(int send_in_place, long long sendcount, MPI_Datatype sendtype, const int recvcounts[],
                             MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int me = comm_rank(comm), is_root = me == root;
    uint64_t rb = is_root ? sum_counts(recvcounts, comm_size(comm), recvtype) : 0;
    uint64_t sb = send_in_place ? ws_type_bytes(recvcounts[me], recvtype) : ws_type_bytes(sendcount, sendtype);
    return info(OTF2_COLLECTIVE_OP_GATHERV, root, sb, rb, sb);
}

ws_coll_info ws_coll_scatter(int recv_in_place, long long sendcount, MPI_Datatype sendtype, long long recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int is_root = comm_rank(comm) == root;
    uint64_t n = (uint64_t)comm_size(comm);
    uint64_t sb = is_root ? ws_type_bytes(sendcount, sendtype) : 0;
    uint64_t rb = recv_in_place ? sb : ws_type_bytes(recvcount, recvtype);
    return info(OTF2_COLLECTIVE_OP_SCATTER, root, sb * n, rb, rb);
}

ws_coll_info ws_coll_scatterv(int recv_in_place, const int sendcounts[], MPI_Datatype sendtype, long long recvcount,
                              MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int me = comm_rank(comm), is_root = me == root;
    uint64_t sb = is_root ? sum_counts(sendcounts, comm_size(comm), sendtype) : 0;
    uint64_t rb = recv_in_place ? ws_type_bytes(sendcounts[me], sendtype) : ws_type_bytes(recvcount, recvtype);
    return info(OTF2_COLLECTIVE_OP_SCATTERV, root, sb, rb, rb);
}

ws_coll_info ws_coll_allgather(int fn, int send_in_place, long long sendcount, MPI_Datatype sendtype,
                               long long recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    uint64_t n = (uint64_t)comm_size(comm);
    uint64_t rb = ws_type_bytes(recvcount, recvtype);
    uint64_t sb = send_in_place ? rb : ws_type_bytes(sendcount, sendtype);
    uint8_t op = fn == WF_ALLTOALL ? OTF2_COLLECTIVE_OP_ALLTOALL : OTF2_COLLECTIVE_OP_ALLGATHER;
    return info(op, -1, sb * n, rb * n, sb);
}

ws_coll_info ws_coll_allgatherv(int send_in_place, long long sendcount, MPI_Datatype sendtype,
                                const int recvcounts[], MPI_Datatype recvtype, MPI_Comm comm)
{
    int n = comm_size(comm), me = comm_rank(comm);
    uint64_t rb = sum_counts(recvcounts, n, recvtype);
    uint64_t sb = send_in_place ? ws_type_bytes(recvcounts[me], recvtype) : ws_type_bytes(sendcount, sendtype);
    return info(OTF2_COLLECTIVE_OP_ALLGATHERV, -1, sb * (uint64_t)n, rb, sb);
}

ws_coll_info ws_coll_alltoallv(int send_in_place, const int sendcounts[], MPI_Datatype sendtype,
                               const int recvcounts[], MPI_Datatype recvtype, MPI_Comm comm)
{
    int n = comm_size(comm);
    uint64_t rb = sum_counts(recvcounts, n, recvtype);
    uint64_t sb = send_in_place ? rb : sum_counts(sendcounts, n, sendtype);
    return info(OTF2_COLLECTIVE_OP_ALLTOALLV, -1, sb, rb, sb);
}

ws_coll_info ws_coll_reduce_scatter(const int recvcounts[], MPI_Datatype type, MPI_Comm comm)
{
    int n = comm_size(comm), me = comm_rank(comm);
    uint64_t sb = sum_counts(recvcounts, n, type);
    return info(OTF2_COLLECTIVE_OP_REDUCE_SCATTER, -1, sb, ws_type_bytes(recvcounts[me], type), sb);
}
