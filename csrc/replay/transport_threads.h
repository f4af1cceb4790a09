/* The threaded transport: the locations of one trace are distributed over
 * the threads of this process (each runs its own engine over its block),
 * payloads for another thread's locations go through shared in-memory
 * mailboxes.  Same semantics as the MPI transport (transport_mpi.c), with
 * threads in place of processes; ws_analyze_threads (waitscope.h) drives it. */
#ifndef WS_REPLAY_TRANSPORT_THREADS_H
#define WS_REPLAY_TRANSPORT_THREADS_H

#include "transport.h"

typedef struct ws_thread_hub ws_thread_hub;

/* The state the n_threads transports share.  `owner[l]` is the thread
 * replaying location l (the array must outlive the hub); `layout` is read
 * during the call only. */
int ws_thread_hub_new(uint32_t n_threads, const ws_comm_layout *layout, const uint32_t *owner, ws_thread_hub **out,
                      ws_error *err);
/* Frees the hub; its transports must be freed first. */
void ws_thread_hub_free(ws_thread_hub *h);
/* The transport of thread `index` (ws_transport_free). */
int ws_transport_thread_new(ws_thread_hub *h, uint32_t index, ws_transport **out, ws_error *err);
/* Stops every thread waiting in the hub with `err` (first failure wins). */
void ws_thread_hub_abort(ws_thread_hub *h, uint32_t index, const ws_error *err);
/* After the threads ended: whether a replay stalled on all threads, and
 * the thread whose failure came first (UINT32_MAX: none). */
int ws_thread_hub_stalled(ws_thread_hub *h);
uint32_t ws_thread_hub_first_failure(ws_thread_hub *h);
/* Whether transport `t` had locations waiting when the replay stalled. */
int ws_transport_thread_stalled_here(ws_transport *t);

#endif
