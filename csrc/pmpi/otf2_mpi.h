/* OTF2's collective callbacks over PMPI (otf2_mpi.c). */
#ifndef WS_PMPI_OTF2_MPI_H
#define WS_PMPI_OTF2_MPI_H

#include <mpi.h>
#include <otf2/OTF2_Callbacks.h>

const OTF2_CollectiveCallbacks *ws_otf2_mpi_callbacks(void);
/* a context over `comm` (the caller keeps the communicator); NULL when out of memory */
OTF2_CollectiveContext *ws_otf2_mpi_context(MPI_Comm comm);
void ws_otf2_mpi_context_free(OTF2_CollectiveContext *c);

#endif
