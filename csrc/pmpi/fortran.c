/* The Fortran bindings' support (see fortran.h): finding the MPI's own
 * binding of a function, recognising each binding's special addresses
 * (MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE, MPI_IN_PLACE) and converting
 * statuses.
 *
 * The special addresses, as both MPIs define them for gfortran:
 *   MPICH   mpif.h/use mpi: MPI_F_STATUS(ES)_IGNORE, set when the Fortran
 *           MPI_Init runs; MPI_IN_PLACE's address is kept in the variable
 *           MPIR_F_MPI_IN_PLACE of libmpichfort.  mpi_f08:
 *           MPI_F08_STATUS(ES)_IGNORE; a choice buffer is passed as an
 *           array descriptor whose first word is the address, which is
 *           &MPIR_F08_MPI_IN_PLACE for MPI_IN_PLACE.
 *   Open MPI both bindings: MPI_F_STATUS(ES)_IGNORE (the common blocks
 *           mpi_fortran_status(es)_ignore_) and mpi_fortran_in_place_. */
#define _GNU_SOURCE
#include "fortran.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *next_symbol(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

ws_fproc ws_f_real(int f08, int fn, const char *name)
{
    ws_fortran_rt *f = &ws_pmpi_g.fortran;
    if (f->real[f08][fn])
        return f->real[f08][fn];
    void *p = NULL;
    char spelling[128];
    if (f08) {
        p = next_symbol(name);
    } else {
        for (int k = 0; k < 4 && !p; k++) {
            if (k == 0)
                snprintf(spelling, sizeof spelling, "%s_", name);
            else if (k == 1)
                snprintf(spelling, sizeof spelling, "%s", name);
            else if (k == 2)
                snprintf(spelling, sizeof spelling, "%s__", name);
            else
                for (size_t i = 0; i < sizeof spelling; i++)
                    if ((spelling[i] = (char)toupper((unsigned char)name[i])) == '\0')
                        break;
            p = next_symbol(spelling);
        }
    }
    if (!p) {
        /* the program called a Fortran MPI symbol its MPI does not define:
         * it could not have run without the library either */
        fprintf(stderr, "waitscope: the MPI library has no Fortran function %s%s\n", name, f08 ? "" : "_");
        abort();
    }
    ws_fproc real;
    memcpy(&real, &p, sizeof real);
    f->real[f08][fn] = real;
    return real;
}

static void find_sentinels(ws_fortran_rt *f)
{
    if (f->sentinels_known)
        return;
#ifdef OPEN_MPI
    f->in_place = dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
#else
    f->in_place_var = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_IN_PLACE");
#endif
    f->sentinels_known = 1;
}

int ws_f_status_ignored(int f08, const void *status)
{
#if defined(MPICH) && MPI_VERSION >= 4
    if (f08)
        return status == (const void *)MPI_F08_STATUS_IGNORE;
#endif
    (void)f08;
    return status == (const void *)MPI_F_STATUS_IGNORE;
}

int ws_f_statuses_ignored(int f08, const void *statuses)
{
#if defined(MPICH) && MPI_VERSION >= 4
    if (f08)
        return statuses == (const void *)MPI_F08_STATUSES_IGNORE;
#endif
    (void)f08;
    return statuses == (const void *)MPI_F_STATUSES_IGNORE;
}

int ws_f_in_place(int f08, const void *buf)
{
    ws_fortran_rt *f = &ws_pmpi_g.fortran;
    find_sentinels(f);
    if (!buf)
        return 0;
#ifdef OPEN_MPI
    (void)f08;
    return f->in_place && buf == f->in_place;
#else
    if (f08)
        return *(const void *const *)buf == (const void *)&MPIR_F08_MPI_IN_PLACE;
    return f->in_place_var && *f->in_place_var && buf == *f->in_place_var;
#endif
}

/* TYPE(MPI_Status) holds the INTEGERs of an mpif.h status in the same
 * order (MPICH's mpi.h says its MPI_F08_status must match mpif.h; Open
 * MPI's has the C status's fields), so one conversion serves both */
#if defined(MPICH) && MPI_VERSION >= 4
_Static_assert(sizeof(MPI_F08_status) == WS_F_STATUS_INTS * sizeof(MPI_Fint), "MPICH's mpi_f08 status");
#endif
#ifdef MPI_F_STATUS_SIZE
_Static_assert(MPI_F_STATUS_SIZE == WS_F_STATUS_INTS, "the size of a Fortran status");
#endif

void ws_f_status_to_c(int f08, const ws_fint *status, MPI_Status *c)
{
    (void)f08;
    PMPI_Status_f2c(status, c);
}
