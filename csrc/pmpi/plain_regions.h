/* The MPI calls the library does not model but records as plain MPI
 * regions (Enter/Leave only: no messages, no collective records), so that
 * they appear on the call paths with their time.  One line per call:
 *
 *   X(name without "MPI_", OTF2 region role suffix, (parameters), (arguments))
 *
 * The parameter lists are the MPI-3.1 C prototypes (const-correct), which
 * both MPICH 4.0's and Open MPI 4.1's mpi.h declare; a mismatch does not
 * compile.  The role follows Score-P: non-blocking collectives get the role
 * of their blocking counterpart, persistent and request-management calls
 * POINT2POINT, MPI-IO reads and writes FILE_IO and the other file calls
 * FILE_IO_METADATA (OTF2's roles for I/O), everything else FUNCTION.  MPI_Wtime/Wtick are deliberately
 * absent (called in hot loops; not MPI time).  The communicator-creating
 * calls that are modelled (their communicators carry messages) live in
 * wrappers_env.c, not here. */
#ifndef WS_PMPI_PLAIN_REGIONS_H
#define WS_PMPI_PLAIN_REGIONS_H

#define WS_PLAIN_REGIONS(X)                                                                                          \
    /* environment */                                                                                                \
    X(Initialized, FUNCTION, (int *flag), (flag))                                                                    \
    X(Finalized, FUNCTION, (int *flag), (flag))                                                                      \
    X(Get_processor_name, FUNCTION, (char *name, int *resultlen), (name, resultlen))                                 \
    X(Comm_set_errhandler, FUNCTION, (MPI_Comm comm, MPI_Errhandler errhandler), (comm, errhandler))                 \
    X(Buffer_attach, FUNCTION, (void *buffer, int size), (buffer, size))                                             \
    X(Buffer_detach, FUNCTION, (void *buffer_addr, int *size), (buffer_addr, size))                                  \
    X(Info_create, FUNCTION, (MPI_Info *info), (info))                                                               \
    X(Info_set, FUNCTION, (MPI_Info info, const char *key, const char *value), (info, key, value))                   \
    X(Info_free, FUNCTION, (MPI_Info *info), (info))                                                                 \
    X(Op_create, FUNCTION, (MPI_User_function *user_fn, int commute, MPI_Op *op), (user_fn, commute, op))            \
    X(Op_free, FUNCTION, (MPI_Op *op), (op))                                                                         \
    /* statuses */                                                                                                   \
    X(Get_count, FUNCTION, (const MPI_Status *status, MPI_Datatype datatype, int *count), (status, datatype, count)) \
    X(Get_elements, FUNCTION, (const MPI_Status *status, MPI_Datatype datatype, int *count),                         \
      (status, datatype, count))                                                                                     \
    /* datatypes */                                                                                                  \
    X(Type_contiguous, FUNCTION, (int count, MPI_Datatype oldtype, MPI_Datatype *newtype), (count, oldtype, newtype)) \
    X(Type_vector, FUNCTION,                                                                                         \
      (int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype),                         \
      (count, blocklength, stride, oldtype, newtype))                                                                \
    X(Type_create_hvector, FUNCTION,                                                                                 \
      (int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype),                    \
      (count, blocklength, stride, oldtype, newtype))                                                                \
    X(Type_indexed, FUNCTION,                                                                                        \
      (int count, const int blocklengths[], const int displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype), \
      (count, blocklengths, displacements, oldtype, newtype))                                                        \
    X(Type_create_indexed_block, FUNCTION,                                                                           \
      (int count, int blocklength, const int displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype),          \
      (count, blocklength, displacements, oldtype, newtype))                                                         \
    X(Type_create_struct, FUNCTION,                                                                                  \
      (int count, const int blocklengths[], const MPI_Aint displacements[], const MPI_Datatype types[],              \
       MPI_Datatype *newtype),                                                                                       \
      (count, blocklengths, displacements, types, newtype))                                                          \
    X(Type_create_subarray, FUNCTION,                                                                                \
      (int ndims, const int sizes[], const int subsizes[], const int starts[], int order, MPI_Datatype oldtype,      \
       MPI_Datatype *newtype),                                                                                       \
      (ndims, sizes, subsizes, starts, order, oldtype, newtype))                                                     \
    X(Type_create_resized, FUNCTION, (MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype),    \
      (oldtype, lb, extent, newtype))                                                                                \
    X(Type_dup, FUNCTION, (MPI_Datatype oldtype, MPI_Datatype *newtype), (oldtype, newtype))                         \
    X(Type_commit, FUNCTION, (MPI_Datatype *datatype), (datatype))                                                   \
    X(Type_free, FUNCTION, (MPI_Datatype *datatype), (datatype))                                                     \
    X(Type_get_extent, FUNCTION, (MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent), (datatype, lb, extent))    \
    X(Pack, FUNCTION,                                                                                                \
      (const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,              \
       MPI_Comm comm),                                                                                               \
      (inbuf, incount, datatype, outbuf, outsize, position, comm))                                                   \
    X(Unpack, FUNCTION,                                                                                              \
      (const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype,              \
       MPI_Comm comm),                                                                                               \
      (inbuf, insize, position, outbuf, outcount, datatype, comm))                                                   \
    X(Pack_size, FUNCTION, (int incount, MPI_Datatype datatype, MPI_Comm comm, int *size),                           \
      (incount, datatype, comm, size))                                                                               \
    /* groups and communicator queries */                                                                           \
    X(Comm_group, FUNCTION, (MPI_Comm comm, MPI_Group *group), (comm, group))                                        \
    X(Comm_compare, FUNCTION, (MPI_Comm comm1, MPI_Comm comm2, int *result), (comm1, comm2, result))                 \
    X(Comm_test_inter, FUNCTION, (MPI_Comm comm, int *flag), (comm, flag))                                           \
    X(Comm_set_name, FUNCTION, (MPI_Comm comm, const char *comm_name), (comm, comm_name))                            \
    X(Comm_get_name, FUNCTION, (MPI_Comm comm, char *comm_name, int *resultlen), (comm, comm_name, resultlen))       \
    X(Group_size, FUNCTION, (MPI_Group group, int *size), (group, size))                                             \
    X(Group_rank, FUNCTION, (MPI_Group group, int *rank), (group, rank))                                             \
    X(Group_incl, FUNCTION, (MPI_Group group, int n, const int ranks[], MPI_Group *newgroup),                        \
      (group, n, ranks, newgroup))                                                                                   \
    X(Group_excl, FUNCTION, (MPI_Group group, int n, const int ranks[], MPI_Group *newgroup),                        \
      (group, n, ranks, newgroup))                                                                                   \
    X(Group_union, FUNCTION, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup), (group1, group2, newgroup))   \
    X(Group_intersection, FUNCTION, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup),                       \
      (group1, group2, newgroup))                                                                                    \
    X(Group_difference, FUNCTION, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup),                         \
      (group1, group2, newgroup))                                                                                    \
    X(Group_translate_ranks, FUNCTION,                                                                               \
      (MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]),                                 \
      (group1, n, ranks1, group2, ranks2))                                                                           \
    X(Group_free, FUNCTION, (MPI_Group *group), (group))                                                             \
    /* ranks in communicators */                                                                                      \
    X(Comm_rank, FUNCTION, (MPI_Comm comm, int *rank), (comm, rank))                                                  \
    X(Comm_size, FUNCTION, (MPI_Comm comm, int *size), (comm, size))                                                  \
    /* topologies */                                                                                                 \
    X(Cart_shift, FUNCTION, (MPI_Comm comm, int direction, int disp, int *source, int *dest),                         \
      (comm, direction, disp, source, dest))                                                                          \
    X(Cart_coords, FUNCTION, (MPI_Comm comm, int rank, int maxdims, int coords[]), (comm, rank, maxdims, coords))     \
    X(Cart_rank, FUNCTION, (MPI_Comm comm, const int coords[], int *rank), (comm, coords, rank))                      \
    X(Dims_create, FUNCTION, (int nnodes, int ndims, int dims[]), (nnodes, ndims, dims))                             \
    X(Cart_get, FUNCTION, (MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]),                     \
      (comm, maxdims, dims, periods, coords))                                                                        \
    X(Cartdim_get, FUNCTION, (MPI_Comm comm, int *ndims), (comm, ndims))                                             \
    X(Topo_test, FUNCTION, (MPI_Comm comm, int *status), (comm, status))                                             \
    /* persistent requests and request management */                                                               \
    X(Send_init, POINT2POINT,                                                                                        \
      (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request),   \
      (buf, count, datatype, dest, tag, comm, request))                                                              \
    X(Ssend_init, POINT2POINT,                                                                                       \
      (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request),   \
      (buf, count, datatype, dest, tag, comm, request))                                                              \
    X(Recv_init, POINT2POINT,                                                                                        \
      (void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request),       \
      (buf, count, datatype, source, tag, comm, request))                                                            \
    X(Start, POINT2POINT, (MPI_Request *request), (request))                                                         \
    X(Startall, POINT2POINT, (int count, MPI_Request array_of_requests[]), (count, array_of_requests))               \
    X(Cancel, POINT2POINT, (MPI_Request *request), (request))                                                        \
    X(Test_cancelled, POINT2POINT, (const MPI_Status *status, int *flag), (status, flag))                            \
    X(Request_get_status, POINT2POINT, (MPI_Request request, int *flag, MPI_Status *status),                         \
      (request, flag, status))                                                                                       \
    /* non-blocking and unmodelled collectives */                                                                   \
    X(Ibarrier, BARRIER, (MPI_Comm comm, MPI_Request *request), (comm, request))                                     \
    X(Ibcast, COLL_ONE2ALL,                                                                                          \
      (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request),               \
      (buffer, count, datatype, root, comm, request))                                                                \
    X(Ireduce, COLL_ALL2ONE,                                                                                         \
      (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,     \
       MPI_Request *request),                                                                                        \
      (sendbuf, recvbuf, count, datatype, op, root, comm, request))                                                  \
    X(Iallreduce, COLL_ALL2ALL,                                                                                      \
      (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,               \
       MPI_Request *request),                                                                                        \
      (sendbuf, recvbuf, count, datatype, op, comm, request))                                                        \
    X(Igather, COLL_ALL2ONE,                                                                                         \
      (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,                      \
       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request),                                        \
      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request))                             \
    X(Iscatter, COLL_ONE2ALL,                                                                                        \
      (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,                      \
       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request),                                        \
      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request))                             \
    X(Iallgather, COLL_ALL2ALL,                                                                                      \
      (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,                      \
       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request),                                                  \
      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))                                   \
    X(Ialltoall, COLL_ALL2ALL,                                                                                       \
      (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,                      \
       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request),                                                  \
      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request))                                   \
    X(Iscan, COLL_OTHER,                                                                                             \
      (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,               \
       MPI_Request *request),                                                                                        \
      (sendbuf, recvbuf, count, datatype, op, comm, request))                                                        \
    X(Iexscan, COLL_OTHER,                                                                                           \
      (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,               \
       MPI_Request *request),                                                                                        \
      (sendbuf, recvbuf, count, datatype, op, comm, request))                                                        \
    X(Reduce_scatter_block, COLL_ALL2ALL,                                                                            \
      (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),          \
      (sendbuf, recvbuf, recvcount, datatype, op, comm))                                                             \
    /* MPI-IO */                                                                                                     \
    X(File_open, FILE_IO_METADATA, (MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh),            \
      (comm, filename, amode, info, fh))                                                                             \
    X(File_close, FILE_IO_METADATA, (MPI_File *fh), (fh))                                                                    \
    X(File_delete, FILE_IO_METADATA, (const char *filename, MPI_Info info), (filename, info))                                \
    X(File_set_view, FILE_IO_METADATA,                                                                                       \
      (MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep, MPI_Info info), \
      (fh, disp, etype, filetype, datarep, info))                                                                    \
    X(File_seek, FILE_IO_METADATA, (MPI_File fh, MPI_Offset offset, int whence), (fh, offset, whence))                       \
    X(File_get_size, FILE_IO_METADATA, (MPI_File fh, MPI_Offset *size), (fh, size))                                          \
    X(File_set_size, FILE_IO_METADATA, (MPI_File fh, MPI_Offset size), (fh, size))                                           \
    X(File_sync, FILE_IO_METADATA, (MPI_File fh), (fh))                                                                      \
    X(File_read, FILE_IO, (MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status),           \
      (fh, buf, count, datatype, status))                                                                            \
    X(File_read_all, FILE_IO, (MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status),       \
      (fh, buf, count, datatype, status))                                                                            \
    X(File_write, FILE_IO, (MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status),    \
      (fh, buf, count, datatype, status))                                                                            \
    X(File_write_all, FILE_IO,                                                                                      \
      (MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status),                          \
      (fh, buf, count, datatype, status))                                                                            \
    X(File_read_at, FILE_IO,                                                                                        \
      (MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Status *status),             \
      (fh, offset, buf, count, datatype, status))                                                                    \
    X(File_read_at_all, FILE_IO,                                                                                    \
      (MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype, MPI_Status *status),             \
      (fh, offset, buf, count, datatype, status))                                                                    \
    X(File_write_at, FILE_IO,                                                                                       \
      (MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status),       \
      (fh, offset, buf, count, datatype, status))                                                                    \
    X(File_write_at_all, FILE_IO,                                                                                   \
      (MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status),       \
      (fh, offset, buf, count, datatype, status))

#endif
