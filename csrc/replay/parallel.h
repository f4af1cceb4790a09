/* The parallel mode's steps that are not replays: what processes that
 * each loaded some locations of one trace must agree on, done with the
 * collectives of the transport interface, so that every host (not only
 * the Python binding) gets the parallel mode.  Results: analysis.h
 * (ws_result_gather). */
#ifndef WS_REPLAY_PARALLEL_H
#define WS_REPLAY_PARALLEL_H

#include "../trace/trace.h"
#include "transport.h"

/* Fills `out` with the trace's communicators as a transport needs them
 * (ws_comm_layout); out->comms is allocated (ws_comm_layout_free), the
 * rank lists are borrowed from the trace. */
int ws_comm_layout_of(const ws_trace *t, ws_comm_layout *out, ws_error *err);
void ws_comm_layout_free(ws_comm_layout *layout);

/* ws_unify_callpaths (waitscope.h): every process gets the call-path tree
 * that one process loading all locations would build. */

#endif
