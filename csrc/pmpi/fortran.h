/* The Fortran bindings of MPI (mpif.h, `use mpi`, `use mpi_f08`).
 *
 * Neither MPI's Fortran binding reliably calls the C MPI_ functions the
 * library wraps: Open MPI's mpif.h binding calls PMPI_Send, both MPIs'
 * mpi_f08 bindings call PMPI_ or internal functions.  So the library
 * defines the Fortran symbols itself, every spelling gfortran and the MPIs
 * use (mpi_send_, mpi_send, mpi_send__, MPI_SEND: one function; and the
 * mpi_f08 symbol, MPICH's mpi_send_f08ts_ or Open MPI's mpi_send_f08_),
 * records what the C wrapper of the same function records, and calls the
 * MPI's own Fortran binding (the next definition of the same symbol,
 * dlsym(RTLD_NEXT)).  The buffers, MPI_BOTTOM, MPI_IN_PLACE, LOGICAL and
 * CHARACTER arguments are therefore handled by the MPI itself, exactly as
 * without the library; the wrapper only reads the scalar arguments it
 * records, converting handles with MPI_*_f2c and statuses with
 * MPI_Status_f2c.  A status or status array the program ignores
 * (MPI_STATUS(ES)_IGNORE, special addresses in each binding) is replaced
 * by the wrapper's own, so that the source and tag of a receive are
 * known.  While the MPI's binding runs, `in_call` is set: where it calls
 * a C MPI_ function (MPICH's mpif.h binding does), that call passes
 * through, so nothing is recorded twice.
 *
 * Binding 0 is mpif.h / `use mpi`, binding 1 `use mpi_f08`; the wrapper
 * bodies take it as `f08`.  Handles are INTEGERs in both (TYPE(MPI_Comm)
 * is one INTEGER), every argument is passed by reference, CHARACTER
 * lengths come last. */
#ifndef WS_PMPI_FORTRAN_H
#define WS_PMPI_FORTRAN_H

#include "pmpi.h"

typedef MPI_Fint ws_fint;
typedef void (*ws_fproc)(void);

/* INTEGERs of a Fortran status (mpif.h) and of TYPE(MPI_Status): in both
 * MPIs the same bytes as the C status */
#define WS_F_STATUS_INTS ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

#define WS_F_PASS_THROUGH WS_PASS_THROUGH_NO_HINT

/* The MPI's own binding of function `fn` (WF_*): for binding 0 `name` is
 * "mpi_send" and the spellings mpi_send_, mpi_send, mpi_send__, MPI_SEND
 * are tried; for binding 1 it is the mpi_f08 symbol.  Looked up once. */
ws_fproc ws_f_real(int f08, int fn, const char *name);

/* Whether a status argument is MPI_STATUS_IGNORE (or an array argument
 * MPI_STATUSES_IGNORE) of the binding, a buffer MPI_IN_PLACE. */
int ws_f_status_ignored(int f08, const void *status);
int ws_f_statuses_ignored(int f08, const void *statuses);
int ws_f_in_place(int f08, const void *buf);
/* A Fortran status of the binding as a C status. */
void ws_f_status_to_c(int f08, const ws_fint *status, MPI_Status *c);

/* The MPI's error code: ierror is optional in mpi_f08 (NULL when absent) */
static inline int ws_f_rc(const ws_fint *ierr)
{
    return ierr ? (int)*ierr : MPI_SUCCESS;
}

/* ---- the symbols of one function ---------------------------------------------- */

#define WS_F_STRIP(...) __VA_ARGS__
#define WS_F_STR_(x) #x
#define WS_F_STR(x) WS_F_STR_(x)
/* MPICH names an mpi_f08 procedure with a choice buffer mpi_send_f08ts_
 * (TS 29113 descriptors), Open MPI mpi_send_f08_ */
#ifdef OPEN_MPI
#define WS_F08_SUFFIX(ts)
#else
#define WS_F08_SUFFIX(ts) ts
#endif
#define WS_F08_SYM_(lower, sfx) mpi_##lower##_f08##sfx##_
#define WS_F08_SYM(lower, sfx) WS_F08_SYM_(lower, sfx)

/* Defines mpi_<lower>_ with its aliases mpi_<lower>, mpi_<lower>__ and
 * MPI_<UPPER>, and the mpi_f08 symbol (suffix `ts` where MPICH uses it),
 * each calling BODY(FN, f08, real, ARGS...). */
#define WS_F_ENTRIES(lower, UPPER, ts, BODY, FN, PARAMS, ARGS)                                                    \
    WS_EXPORT void mpi_##lower##_ PARAMS;                                                                        \
    void mpi_##lower##_ PARAMS                                                                                   \
    {                                                                                                            \
        if (!WS_PASS_THROUGH_NO_HINT)                                                                            \
            WS_HINT();                                                                                           \
        BODY(FN, 0, ws_f_real(0, FN, "mpi_" #lower), WS_F_STRIP ARGS);                                           \
    }                                                                                                            \
    WS_EXPORT void mpi_##lower PARAMS __attribute__((alias("mpi_" #lower "_")));                                 \
    WS_EXPORT void mpi_##lower##__ PARAMS __attribute__((alias("mpi_" #lower "_")));                             \
    WS_EXPORT void MPI_##UPPER PARAMS __attribute__((alias("mpi_" #lower "_")));                                 \
    WS_EXPORT void WS_F08_SYM(lower, WS_F08_SUFFIX(ts)) PARAMS;                                                  \
    void WS_F08_SYM(lower, WS_F08_SUFFIX(ts)) PARAMS                                                             \
    {                                                                                                            \
        if (!WS_PASS_THROUGH_NO_HINT)                                                                            \
            WS_HINT();                                                                                           \
        BODY(FN, 1, ws_f_real(1, FN, WS_F_STR(WS_F08_SYM(lower, WS_F08_SUFFIX(ts)))), WS_F_STRIP ARGS);          \
    }

#endif
