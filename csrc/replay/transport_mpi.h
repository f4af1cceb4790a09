/* The MPI transport (built only when an MPI compiler is available). */
#ifndef WS_REPLAY_TRANSPORT_MPI_H
#define WS_REPLAY_TRANSPORT_MPI_H

#include <mpi.h>

#include "transport.h"

/* `owner[l]` is the rank in `comm` of the process that replays location
 * l; the array must outlive the transport.  `layout` (the trace's
 * communicators, ws_comm_layout_of) is read during the call only. */
int ws_transport_mpi_new(MPI_Comm comm, const ws_comm_layout *layout, const uint32_t *owner, ws_transport **out,
                         ws_error *err);

/* Called by every process whose analysis failed (in place of ops->fail):
 * tells the other processes unless they learnt about the failure at the
 * same step, and when the replay stalled on all processes at once, gives
 * every process the same message (collective in that case). */
void ws_transport_mpi_fail(ws_transport *t, ws_error *err);

#endif
