/* The MPI transport (built only when an MPI compiler is available). */
#ifndef WS_REPLAY_TRANSPORT_MPI_H
#define WS_REPLAY_TRANSPORT_MPI_H

#include <mpi.h>

#include "../trace/trace.h"
#include "transport.h"

/* `owner[l]` is the rank in `comm` of the process that replays location
 * l; the array must outlive the transport. */
int ws_transport_mpi_new(MPI_Comm comm, const ws_trace *t, const uint32_t *owner, ws_transport **out,
                         ws_error *err);

#endif
