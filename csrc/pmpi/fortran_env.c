/* Fortran MPI_Init/Init_thread/Finalize/Abort and the calls that make or
 * free communicators (see fortran.h): each records what its C twin in
 * wrappers_env.c records. */
#include "fortran.h"

typedef void (*f_ierr)(ws_fint *);
typedef void (*f_1)(ws_fint *, ws_fint *);
typedef void (*f_init_thread)(ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_2)(ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_3)(ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_4)(ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_5)(ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);
typedef void (*f_6)(ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *, ws_fint *);

/* ---- process life ------------------------------------------------------------ */

/* The MPI's own initialisation runs with in_call set, so that the C
 * MPI_Init a binding may call passes through; then the measurement starts
 * as after a C MPI_Init. */
static void init_body(int fn, int f08, ws_fproc real, ws_fint *required, ws_fint *provided, ws_fint *ierr)
{
    (void)f08;
    ws_pmpi *g = &ws_pmpi_g;
    uint64_t t0 = ws_now();
    int nested = g->in_call;
    g->in_call = 1;
    if (fn == WF_INIT)
        ((f_ierr)real)(ierr);
    else
        ((f_init_thread)real)(required, provided, ierr);
    g->in_call = nested;
    if (!nested && ws_f_rc(ierr) == MPI_SUCCESS) {
        if (provided)
            g->thread_level = *provided;
        ws_after_init(fn, t0);
    }
}

static void init_only_body(int fn, int f08, ws_fproc real, ws_fint *ierr)
{
    init_body(fn, f08, real, NULL, NULL, ierr);
}
WS_F_ENTRIES(init, INIT, , init_only_body, WF_INIT, (ws_fint * ierr), (ierr))
WS_F_ENTRIES(init_thread, INIT_THREAD, , init_body, WF_INIT_THREAD,
             (ws_fint * required, ws_fint * provided, ws_fint * ierr), (required, provided, ierr))

static void finalize_body(int fn, int f08, ws_fproc real, ws_fint *ierr)
{
    (void)fn;
    (void)f08;
    ws_pmpi *g = &ws_pmpi_g;
    if (g->measuring && !g->done && !g->in_call)
        ws_finalize_measurement();
    ((f_ierr)real)(ierr);
}
WS_F_ENTRIES(finalize, FINALIZE, , finalize_body, WF_FINALIZE, (ws_fint * ierr), (ierr))

static void abort_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *code, ws_fint *ierr)
{
    (void)fn;
    (void)f08;
    ws_abort_record(*code);
    ((f_2)real)(comm, code, ierr);
}
WS_F_ENTRIES(abort, ABORT, , abort_body, WF_ABORT, (ws_fint * comm, ws_fint * code, ws_fint * ierr),
             (comm, code, ierr))

/* ---- communicators ------------------------------------------------------------- */

/* Registers the communicator a call made (*newcomm, from *comm) as the C
 * wrapper does; `cart`: with its Cartesian topology. */
static void made(int fn, int rc, const ws_fint *comm, const ws_fint *newcomm, int cart)
{
    if (rc == MPI_SUCCESS && fn != WF_INTERCOMM_CREATE)
        ws_comm_register(MPI_Comm_f2c(*newcomm), MPI_Comm_f2c(*comm), cart);
    ws_call_end(fn, ws_now(), 0, 0, 0);
}

static void comm_dup_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *newcomm, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_2)real)(comm, newcomm, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_2)real)(comm, newcomm, ierr);
    made(fn, ws_f_rc(ierr), comm, newcomm, 0);
}
WS_F_ENTRIES(comm_dup, COMM_DUP, , comm_dup_body, WF_COMM_DUP, (ws_fint * comm, ws_fint * newcomm, ws_fint * ierr),
             (comm, newcomm, ierr))

/* comm, a, newcomm: MPI_Comm_create (a: group), MPI_Intercomm_merge (a: high) */
static void comm_a_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *a, ws_fint *newcomm, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_3)real)(comm, a, newcomm, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_3)real)(comm, a, newcomm, ierr);
    made(fn, ws_f_rc(ierr), comm, newcomm, 0);
}
WS_F_ENTRIES(comm_create, COMM_CREATE, , comm_a_body, WF_COMM_CREATE,
             (ws_fint * comm, ws_fint * group, ws_fint * newcomm, ws_fint * ierr), (comm, group, newcomm, ierr))
WS_F_ENTRIES(intercomm_merge, INTERCOMM_MERGE, , comm_a_body, WF_INTERCOMM_MERGE,
             (ws_fint * comm, ws_fint * high, ws_fint * newcomm, ws_fint * ierr), (comm, high, newcomm, ierr))

/* comm, a, b, newcomm: MPI_Comm_split (color, key), MPI_Comm_create_group (group, tag) */
static void comm_ab_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *a, ws_fint *b, ws_fint *newcomm,
                         ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_4)real)(comm, a, b, newcomm, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_4)real)(comm, a, b, newcomm, ierr);
    made(fn, ws_f_rc(ierr), comm, newcomm, 0);
}
WS_F_ENTRIES(comm_split, COMM_SPLIT, , comm_ab_body, WF_COMM_SPLIT,
             (ws_fint * comm, ws_fint * color, ws_fint * key, ws_fint * newcomm, ws_fint * ierr),
             (comm, color, key, newcomm, ierr))
WS_F_ENTRIES(comm_create_group, COMM_CREATE_GROUP, , comm_ab_body, WF_COMM_CREATE_GROUP,
             (ws_fint * comm, ws_fint * group, ws_fint * tag, ws_fint * newcomm, ws_fint * ierr),
             (comm, group, tag, newcomm, ierr))

static void comm_split_type_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *type, ws_fint *key,
                                 ws_fint *info, ws_fint *newcomm, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_5)real)(comm, type, key, info, newcomm, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_5)real)(comm, type, key, info, newcomm, ierr);
    made(fn, ws_f_rc(ierr), comm, newcomm, 0);
}
WS_F_ENTRIES(comm_split_type, COMM_SPLIT_TYPE, , comm_split_type_body, WF_COMM_SPLIT_TYPE,
             (ws_fint * comm, ws_fint * type, ws_fint * key, ws_fint * info, ws_fint * newcomm, ws_fint * ierr),
             (comm, type, key, info, newcomm, ierr))

/* dims and periods (LOGICAL) are read by the MPI; the topology is then
 * asked from the new communicator */
static void cart_create_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *ndims, ws_fint *dims,
                             ws_fint *periods, ws_fint *reorder, ws_fint *newcomm, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_6)real)(comm, ndims, dims, periods, reorder, newcomm, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_6)real)(comm, ndims, dims, periods, reorder, newcomm, ierr);
    made(fn, ws_f_rc(ierr), comm, newcomm, 1);
}
WS_F_ENTRIES(cart_create, CART_CREATE, , cart_create_body, WF_CART_CREATE,
             (ws_fint * comm, ws_fint * ndims, ws_fint * dims, ws_fint * periods, ws_fint * reorder,
              ws_fint * newcomm, ws_fint * ierr),
             (comm, ndims, dims, periods, reorder, newcomm, ierr))

static void cart_sub_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *remain, ws_fint *newcomm,
                          ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_3)real)(comm, remain, newcomm, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_3)real)(comm, remain, newcomm, ierr);
    made(fn, ws_f_rc(ierr), comm, newcomm, 1);
}
WS_F_ENTRIES(cart_sub, CART_SUB, , cart_sub_body, WF_CART_SUB,
             (ws_fint * comm, ws_fint * remain, ws_fint * newcomm, ws_fint * ierr), (comm, remain, newcomm, ierr))

/* an inter-communicator is not modelled: a plain region */
static void intercomm_create_body(int fn, int f08, ws_fproc real, ws_fint *local, ws_fint *local_leader,
                                  ws_fint *peer, ws_fint *remote_leader, ws_fint *tag, ws_fint *newcomm,
                                  ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_6)real)(local, local_leader, peer, remote_leader, tag, newcomm, ierr);
        return;
    }
    ws_call_begin(fn);
    ((f_6)real)(local, local_leader, peer, remote_leader, tag, newcomm, ierr);
    made(fn, ws_f_rc(ierr), local, newcomm, 0);
}
WS_F_ENTRIES(intercomm_create, INTERCOMM_CREATE, , intercomm_create_body, WF_INTERCOMM_CREATE,
             (ws_fint * local, ws_fint * local_leader, ws_fint * peer, ws_fint * remote_leader, ws_fint * tag,
              ws_fint * newcomm, ws_fint * ierr),
             (local, local_leader, peer, remote_leader, tag, newcomm, ierr))

static void comm_free_body(int fn, int f08, ws_fproc real, ws_fint *comm, ws_fint *ierr)
{
    (void)f08;
    if (WS_F_PASS_THROUGH) {
        ((f_1)real)(comm, ierr);
        return;
    }
    ws_call_begin(fn);
    ws_comm_forget(MPI_Comm_f2c(*comm));
    ((f_1)real)(comm, ierr);
    ws_call_end(fn, ws_now(), 0, 0, 0);
}
WS_F_ENTRIES(comm_free, COMM_FREE, , comm_free_body, WF_COMM_FREE, (ws_fint * comm, ws_fint * ierr), (comm, ierr))
