/* The unification of a run that reached MPI_Finalize, by all its ranks
 * together (unify_mpi.c). */
#ifndef WS_PMPI_UNIFY_MPI_H
#define WS_PMPI_UNIFY_MPI_H

#include <mpi.h>

#include "../common/error.h"

/* Called by every rank of `comm` (MPI_COMM_WORLD's duplicate) with its own
 * closed per-rank files: writes DIR/traces.otf2, each rank its own
 * locations' events.  On success the rank's files are removed; on failure
 * (on any rank: all return an error) they are kept for the unification
 * after the run (ws_pmpi_unify). */
int ws_pmpi_unify_parallel(const char *dir, const char *defs_path, const char *evt_path, MPI_Comm comm,
                           ws_error *err);

#endif
