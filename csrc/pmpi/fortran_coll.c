/* Fortran blocking collectives (see fortran.h): what each records comes
 * from coll_bytes.c, as for the C wrappers, after converting the handles;
 * MPI_IN_PLACE is each binding's own sentinel. */
#include "fortran.h"

#define T(x) MPI_Type_f2c(*(x))
#define C(x) MPI_Comm_f2c(*(x))

/* Enter and MpiCollectiveBegin, what the call records, the MPI's own
 * binding, the end */
#define F_COLLECTIVE(FN, INFO, COMM, CALL)                                                                       \
    do {                                                                                                         \
        if (WS_F_PASS_THROUGH) {                                                                                 \
            CALL;                                                                                                \
            return;                                                                                              \
        }                                                                                                        \
        ws_coll_begin(FN);                                                                                       \
        ws_coll_info k_ = INFO;                                                                                  \
        CALL;                                                                                                    \
        ws_coll_finish(FN, C(COMM), &k_);                                                                        \
    } while (0)

typedef void (*f_barrier)(ws_fint *, ws_fint *);
typedef void (*f_bcast)(void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_reduce)(void *, void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_allreduce)(void *, void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_gather)(void *, ws_fint *, ws_fint *, void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *,
                         ws_fint *);
typedef void (*f_gatherv)(void *, ws_fint *, ws_fint *, void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *,
                          ws_fint *, ws_fint *);
typedef void (*f_scatterv)(void *, ws_fint *, ws_fint *, ws_fint *, void *, ws_fint *, ws_fint *, ws_fint *,
                           ws_fint *, ws_fint *);
typedef void (*f_allgather)(void *, ws_fint *, ws_fint *, void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_allgatherv)(void *, ws_fint *, ws_fint *, void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *,
                             ws_fint *);
typedef void (*f_alltoallv)(void *, ws_fint *, ws_fint *, ws_fint *, void *, ws_fint *, ws_fint *, ws_fint *,
                            ws_fint *, ws_fint *);
typedef void (*f_reduce_scatter)(void *, void *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);

static void barrier_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *ierr)
{
    (void)f08;
    F_COLLECTIVE(fn, ws_coll_barrier(), comm, ((f_barrier)real)(comm, ierr));
}
WS_F_ENTRIES(barrier, BARRIER, , barrier_body, WF_BARRIER, (ws_fint * comm, ws_fint * ierr), (comm, ierr))

static void bcast_body(int fn, int f08, ws_fproc real, void *buf, ws_fint *count, ws_fint *type, ws_fint *root,
                       ws_fint *comm, ws_fint *ierr)
{
    (void)f08;
    F_COLLECTIVE(fn, ws_coll_bcast(*count, T(type), *root, C(comm)), comm,
                 ((f_bcast)real)(buf, count, type, root, comm, ierr));
}
WS_F_ENTRIES(bcast, BCAST, ts, bcast_body, WF_BCAST,
             (void *buf, ws_fint *count, ws_fint *type, ws_fint *root, ws_fint *comm, ws_fint *ierr),
             (buf, count, type, root, comm, ierr))

static void reduce_body(int fn, int f08, ws_fproc real, void *sendbuf, void *recvbuf, ws_fint *count, ws_fint *type,
                        ws_fint *op, ws_fint *root, ws_fint *comm, ws_fint *ierr)
{
    (void)f08;
    F_COLLECTIVE(fn, ws_coll_reduce(*count, T(type), *root, C(comm)), comm,
                 ((f_reduce)real)(sendbuf, recvbuf, count, type, op, root, comm, ierr));
}
WS_F_ENTRIES(reduce, REDUCE, ts, reduce_body, WF_REDUCE,
             (void *sendbuf, void *recvbuf, ws_fint *count, ws_fint *type, ws_fint *op, ws_fint *root,
              ws_fint *comm, ws_fint *ierr),
             (sendbuf, recvbuf, count, type, op, root, comm, ierr))

static void allreduce_body(int fn, int f08, ws_fproc real, void *sendbuf, void *recvbuf, ws_fint *count,
                           ws_fint *type, ws_fint *op, ws_fint *comm, ws_fint *ierr)
{
    (void)f08;
    F_COLLECTIVE(fn, ws_coll_allreduce(fn, *count, T(type), C(comm)), comm,
                 ((f_allreduce)real)(sendbuf, recvbuf, count, type, op, comm, ierr));
}
#define ALLREDUCE_PARAMS                                                                                         \
    (void *sendbuf, void *recvbuf, ws_fint *count, ws_fint *type, ws_fint *op, ws_fint *comm, ws_fint *ierr)
#define ALLREDUCE_ARGS (sendbuf, recvbuf, count, type, op, comm, ierr)
WS_F_ENTRIES(allreduce, ALLREDUCE, ts, allreduce_body, WF_ALLREDUCE, ALLREDUCE_PARAMS, ALLREDUCE_ARGS)
WS_F_ENTRIES(scan, SCAN, ts, allreduce_body, WF_SCAN, ALLREDUCE_PARAMS, ALLREDUCE_ARGS)
WS_F_ENTRIES(exscan, EXSCAN, ts, allreduce_body, WF_EXSCAN, ALLREDUCE_PARAMS, ALLREDUCE_ARGS)

static void gather_body(int fn, int f08, ws_fproc real, void *sendbuf, ws_fint *sendcount, ws_fint *sendtype,
                        void *recvbuf, ws_fint *recvcount, ws_fint *recvtype, ws_fint *root, ws_fint *comm,
                        ws_fint *ierr)
{
    F_COLLECTIVE(fn,
                 fn == WF_GATHER ? ws_coll_gather(ws_f_in_place(f08, sendbuf), *sendcount, T(sendtype), *recvcount,
                                                  T(recvtype), *root, C(comm))
                                 : ws_coll_scatter(ws_f_in_place(f08, recvbuf), *sendcount, T(sendtype), *recvcount,
                                                   T(recvtype), *root, C(comm)),
                 comm, ((f_gather)real)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr));
}
#define GATHER_PARAMS                                                                                            \
    (void *sendbuf, ws_fint *sendcount, ws_fint *sendtype, void *recvbuf, ws_fint *recvcount, ws_fint *recvtype,  \
     ws_fint *root, ws_fint *comm, ws_fint *ierr)
#define GATHER_ARGS (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr)
WS_F_ENTRIES(gather, GATHER, ts, gather_body, WF_GATHER, GATHER_PARAMS, GATHER_ARGS)
WS_F_ENTRIES(scatter, SCATTER, ts, gather_body, WF_SCATTER, GATHER_PARAMS, GATHER_ARGS)

static void gatherv_body(int fn, int f08, ws_fproc real, void *sendbuf, ws_fint *sendcount, ws_fint *sendtype,
                         void *recvbuf, ws_fint *recvcounts, ws_fint *displs, ws_fint *recvtype, ws_fint *root,
                         ws_fint *comm, ws_fint *ierr)
{
    F_COLLECTIVE(fn,
                 ws_coll_gatherv(ws_f_in_place(f08, sendbuf), *sendcount, T(sendtype), recvcounts, T(recvtype), *root,
                                 C(comm)),
                 comm,
                 ((f_gatherv)real)(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
                                   ierr));
}
WS_F_ENTRIES(gatherv, GATHERV, ts, gatherv_body, WF_GATHERV,
             (void *sendbuf, ws_fint *sendcount, ws_fint *sendtype, void *recvbuf, ws_fint *recvcounts,
              ws_fint *displs, ws_fint *recvtype, ws_fint *root, ws_fint *comm, ws_fint *ierr),
             (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, ierr))

static void scatterv_body(int fn, int f08, ws_fproc real, void *sendbuf, ws_fint *sendcounts, ws_fint *displs,
                          ws_fint *sendtype, void *recvbuf, ws_fint *recvcount, ws_fint *recvtype, ws_fint *root,
                          ws_fint *comm, ws_fint *ierr)
{
    F_COLLECTIVE(fn,
                 ws_coll_scatterv(ws_f_in_place(f08, recvbuf), sendcounts, T(sendtype), *recvcount, T(recvtype),
                                  *root, C(comm)),
                 comm,
                 ((f_scatterv)real)(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                                   ierr));
}
WS_F_ENTRIES(scatterv, SCATTERV, ts, scatterv_body, WF_SCATTERV,
             (void *sendbuf, ws_fint *sendcounts, ws_fint *displs, ws_fint *sendtype, void *recvbuf,
              ws_fint *recvcount, ws_fint *recvtype, ws_fint *root, ws_fint *comm, ws_fint *ierr),
             (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, ierr))

static void allgather_body(int fn, int f08, ws_fproc real, void *sendbuf, ws_fint *sendcount, ws_fint *sendtype,
                           void *recvbuf, ws_fint *recvcount, ws_fint *recvtype, ws_fint *comm, ws_fint *ierr)
{
    F_COLLECTIVE(fn,
                 ws_coll_allgather(fn, ws_f_in_place(f08, sendbuf), *sendcount, T(sendtype), *recvcount, T(recvtype),
                                   C(comm)),
                 comm, ((f_allgather)real)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr));
}
#define ALLGATHER_PARAMS                                                                                         \
    (void *sendbuf, ws_fint *sendcount, ws_fint *sendtype, void *recvbuf, ws_fint *recvcount, ws_fint *recvtype,  \
     ws_fint *comm, ws_fint *ierr)
#define ALLGATHER_ARGS (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr)
WS_F_ENTRIES(allgather, ALLGATHER, ts, allgather_body, WF_ALLGATHER, ALLGATHER_PARAMS, ALLGATHER_ARGS)
WS_F_ENTRIES(alltoall, ALLTOALL, ts, allgather_body, WF_ALLTOALL, ALLGATHER_PARAMS, ALLGATHER_ARGS)

static void allgatherv_body(int fn, int f08, ws_fproc real, void *sendbuf, ws_fint *sendcount, ws_fint *sendtype,
                            void *recvbuf, ws_fint *recvcounts, ws_fint *displs, ws_fint *recvtype, ws_fint *comm,
                            ws_fint *ierr)
{
    F_COLLECTIVE(fn,
                 ws_coll_allgatherv(ws_f_in_place(f08, sendbuf), *sendcount, T(sendtype), recvcounts, T(recvtype),
                                    C(comm)),
                 comm,
                 ((f_allgatherv)real)(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                      ierr));
}
WS_F_ENTRIES(allgatherv, ALLGATHERV, ts, allgatherv_body, WF_ALLGATHERV,
             (void *sendbuf, ws_fint *sendcount, ws_fint *sendtype, void *recvbuf, ws_fint *recvcounts,
              ws_fint *displs, ws_fint *recvtype, ws_fint *comm, ws_fint *ierr),
             (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierr))

static void alltoallv_body(int fn, int f08, ws_fproc real, void *sendbuf, ws_fint *sendcounts, ws_fint *sdispls,
                           ws_fint *sendtype, void *recvbuf, ws_fint *recvcounts, ws_fint *rdispls, ws_fint *recvtype,
                           ws_fint *comm, ws_fint *ierr)
{
    F_COLLECTIVE(fn,
                 ws_coll_alltoallv(ws_f_in_place(f08, sendbuf), sendcounts, T(sendtype), recvcounts, T(recvtype),
                                   C(comm)),
                 comm,
                 ((f_alltoallv)real)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                     comm, ierr));
}
WS_F_ENTRIES(alltoallv, ALLTOALLV, ts, alltoallv_body, WF_ALLTOALLV,
             (void *sendbuf, ws_fint *sendcounts, ws_fint *sdispls, ws_fint *sendtype, void *recvbuf,
              ws_fint *recvcounts, ws_fint *rdispls, ws_fint *recvtype, ws_fint *comm, ws_fint *ierr),
             (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, ierr))

static void reduce_scatter_body(int fn, int f08, ws_fproc real, void *sendbuf, void *recvbuf, ws_fint *recvcounts,
                                ws_fint *type, ws_fint *op, ws_fint *comm, ws_fint *ierr)
{
    (void)f08;
    F_COLLECTIVE(fn, ws_coll_reduce_scatter(recvcounts, T(type), C(comm)), comm,
                 ((f_reduce_scatter)real)(sendbuf, recvbuf, recvcounts, type, op, comm, ierr));
}
WS_F_ENTRIES(reduce_scatter, REDUCE_SCATTER, ts, reduce_scatter_body, WF_REDUCE_SCATTER,
             (void *sendbuf, void *recvbuf, ws_fint *recvcounts, ws_fint *type, ws_fint *op, ws_fint *comm,
              ws_fint *ierr),
             (sendbuf, recvbuf, recvcounts, type, op, comm, ierr))
