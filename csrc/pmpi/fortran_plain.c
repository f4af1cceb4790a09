/* Fortran wrappers of the calls recorded as plain MPI regions (the list
 * and its rationale are in plain_regions.h): Enter, the MPI's own
 * Fortran binding, Leave.  Nothing of their arguments is recorded, so one
 * forwarding body serves them all: it takes as many pointer-sized
 * arguments as the longest of these calls has (mpif.h passes everything
 * by reference, CHARACTER lengths come last as integers; mpi_f08 the
 * same, an absent optional argument as a null pointer) and passes them
 * on unchanged.  On x86-64 and AArch64 integer and pointer arguments
 * travel in registers and then in stack slots the caller owns, so the
 * callee reads at most the caller's own frame for the arguments it did
 * not pass, and the MPI's binding reads only the ones it has.  MPI_Wtime
 * and MPI_Wtick return a value and are not wrapped (as in C).
 *
 * The table: (C name without MPI_, lowercase, uppercase, `ts` where
 * MPICH's mpi_f08 symbol ends in _f08ts_); a misspelt C name does not
 * compile, and tests/test_pmpi_fortran.py checks the symbols against the
 * MPIs' Fortran libraries. */
#include "fortran.h"

#if defined(__x86_64__) || defined(__aarch64__)

#define WS_FORTRAN_PLAIN(X) \
    X(Initialized, initialized, INITIALIZED, ) \
    X(Finalized, finalized, FINALIZED, ) \
    X(Get_processor_name, get_processor_name, GET_PROCESSOR_NAME, ) \
    X(Comm_set_errhandler, comm_set_errhandler, COMM_SET_ERRHANDLER, ) \
    X(Buffer_attach, buffer_attach, BUFFER_ATTACH, ts) \
    X(Buffer_detach, buffer_detach, BUFFER_DETACH, ) \
    X(Info_create, info_create, INFO_CREATE, ) \
    X(Info_set, info_set, INFO_SET, ) \
    X(Info_free, info_free, INFO_FREE, ) \
    X(Op_create, op_create, OP_CREATE, ) \
    X(Op_free, op_free, OP_FREE, ) \
    X(Get_count, get_count, GET_COUNT, ) \
    X(Get_elements, get_elements, GET_ELEMENTS, ) \
    X(Type_contiguous, type_contiguous, TYPE_CONTIGUOUS, ) \
    X(Type_vector, type_vector, TYPE_VECTOR, ) \
    X(Type_create_hvector, type_create_hvector, TYPE_CREATE_HVECTOR, ) \
    X(Type_indexed, type_indexed, TYPE_INDEXED, ) \
    X(Type_create_indexed_block, type_create_indexed_block, TYPE_CREATE_INDEXED_BLOCK, ) \
    X(Type_create_struct, type_create_struct, TYPE_CREATE_STRUCT, ) \
    X(Type_create_subarray, type_create_subarray, TYPE_CREATE_SUBARRAY, ) \
    X(Type_create_resized, type_create_resized, TYPE_CREATE_RESIZED, ) \
    X(Type_dup, type_dup, TYPE_DUP, ) \
    X(Type_commit, type_commit, TYPE_COMMIT, ) \
    X(Type_free, type_free, TYPE_FREE, ) \
    X(Type_get_extent, type_get_extent, TYPE_GET_EXTENT, ) \
    X(Pack, pack, PACK, ts) \
    X(Unpack, unpack, UNPACK, ts) \
    X(Pack_size, pack_size, PACK_SIZE, ) \
    X(Comm_group, comm_group, COMM_GROUP, ) \
    X(Comm_compare, comm_compare, COMM_COMPARE, ) \
    X(Comm_test_inter, comm_test_inter, COMM_TEST_INTER, ) \
    X(Comm_set_name, comm_set_name, COMM_SET_NAME, ) \
    X(Comm_get_name, comm_get_name, COMM_GET_NAME, ) \
    X(Group_size, group_size, GROUP_SIZE, ) \
    X(Group_rank, group_rank, GROUP_RANK, ) \
    X(Group_incl, group_incl, GROUP_INCL, ) \
    X(Group_excl, group_excl, GROUP_EXCL, ) \
    X(Group_union, group_union, GROUP_UNION, ) \
    X(Group_intersection, group_intersection, GROUP_INTERSECTION, ) \
    X(Group_difference, group_difference, GROUP_DIFFERENCE, ) \
    X(Group_translate_ranks, group_translate_ranks, GROUP_TRANSLATE_RANKS, ) \
    X(Group_free, group_free, GROUP_FREE, ) \
    X(Comm_rank, comm_rank, COMM_RANK, ) \
    X(Comm_size, comm_size, COMM_SIZE, ) \
    X(Cart_shift, cart_shift, CART_SHIFT, ) \
    X(Cart_coords, cart_coords, CART_COORDS, ) \
    X(Cart_rank, cart_rank, CART_RANK, ) \
    X(Dims_create, dims_create, DIMS_CREATE, ) \
    X(Cart_get, cart_get, CART_GET, ) \
    X(Cartdim_get, cartdim_get, CARTDIM_GET, ) \
    X(Topo_test, topo_test, TOPO_TEST, ) \
    X(Send_init, send_init, SEND_INIT, ts) \
    X(Ssend_init, ssend_init, SSEND_INIT, ts) \
    X(Recv_init, recv_init, RECV_INIT, ts) \
    X(Start, start, START, ) \
    X(Startall, startall, STARTALL, ) \
    X(Cancel, cancel, CANCEL, ) \
    X(Test_cancelled, test_cancelled, TEST_CANCELLED, ) \
    X(Request_get_status, request_get_status, REQUEST_GET_STATUS, ) \
    X(Ibarrier, ibarrier, IBARRIER, ) \
    X(Ibcast, ibcast, IBCAST, ts) \
    X(Ireduce, ireduce, IREDUCE, ts) \
    X(Iallreduce, iallreduce, IALLREDUCE, ts) \
    X(Igather, igather, IGATHER, ts) \
    X(Iscatter, iscatter, ISCATTER, ts) \
    X(Iallgather, iallgather, IALLGATHER, ts) \
    X(Ialltoall, ialltoall, IALLTOALL, ts) \
    X(Iscan, iscan, ISCAN, ts) \
    X(Iexscan, iexscan, IEXSCAN, ts) \
    X(Reduce_scatter_block, reduce_scatter_block, REDUCE_SCATTER_BLOCK, ts) \
    X(File_open, file_open, FILE_OPEN, ) \
    X(File_close, file_close, FILE_CLOSE, ) \
    X(File_delete, file_delete, FILE_DELETE, ) \
    X(File_set_view, file_set_view, FILE_SET_VIEW, ) \
    X(File_seek, file_seek, FILE_SEEK, ) \
    X(File_get_size, file_get_size, FILE_GET_SIZE, ) \
    X(File_set_size, file_set_size, FILE_SET_SIZE, ) \
    X(File_sync, file_sync, FILE_SYNC, ) \
    X(File_read, file_read, FILE_READ, ts) \
    X(File_read_all, file_read_all, FILE_READ_ALL, ts) \
    X(File_write, file_write, FILE_WRITE, ts) \
    X(File_write_all, file_write_all, FILE_WRITE_ALL, ts) \
    X(File_read_at, file_read_at, FILE_READ_AT, ts) \
    X(File_read_at_all, file_read_at_all, FILE_READ_AT_ALL, ts) \
    X(File_write_at, file_write_at, FILE_WRITE_AT, ts) \
    X(File_write_at_all, file_write_at_all, FILE_WRITE_AT_ALL, ts)

#define WS_F12_PARAMS                                                                                           \
    (void *a0, void *a1, void *a2, void *a3, void *a4, void *a5, void *a6, void *a7, void *a8, void *a9, void *a10, \
     void *a11)
#define WS_F12_ARGS (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11)
typedef void (*f_12)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *);

static void plain_body(int fn, int f08, ws_fproc real, void *a0, void *a1, void *a2, void *a3, void *a4, void *a5,
                       void *a6, void *a7, void *a8, void *a9, void *a10, void *a11)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_12)real)(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
        return;
    }
    ws_call_begin(fn);
    ((f_12)real)(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
    ws_call_end(fn, ws_now(), 0, 0, 0);
}

#define WS_F_PLAIN_ENTRIES(NAME, lower, UPPER, ts) \
    WS_F_ENTRIES(lower, UPPER, ts, plain_body, WF_##NAME, WS_F12_PARAMS, WS_F12_ARGS)

WS_FORTRAN_PLAIN(WS_F_PLAIN_ENTRIES)

#else
/* another architecture: the plain regions are not wrapped in Fortran */
typedef int ws_no_fortran_plain_regions;
#endif
