/* Synthetic MPI programs: executes a per-rank list of operations with MPI
 * blocking semantics and a simple cost model and builds a trace store
 * that looks like one Score-P writes (see pkg/waitscope/synth.py for the
 * timing model).
 *
 * The program is given as packed arrays: for every rank a contiguous run
 * of operation rows of WS_SYNTH_FIELDS int64 values
 *     (kind, a, b, size, comm)
 * whose meaning depends on the kind (below).  `comm` is 0 for
 * MPI_COMM_WORLD and i >= 1 for sub-communicator i - 1; peers and roots
 * are ranks within that communicator.
 */
#ifndef WS_TRACE_SYNTH_H
#define WS_TRACE_SYNTH_H

#include "otf2_io.h"

/* The program, its operations and the run parameters (ws_synth_program,
 * enum ws_synth_op, ws_synth_params) are public: waitscope.h. */

/* Executes the program and returns a complete trace store (definitions
 * resolved, all locations loaded).  An unexecutable program (unmatched
 * messages, inconsistent collectives, unknown requests, deadlock) fails
 * with WS_ERR_MATCH naming the rank and operation; malformed input with
 * WS_ERR_ARGUMENT. */
int ws_synth_run(const ws_synth_program *program, const ws_synth_params *params, const ws_progress *progress,
                 ws_trace **out, ws_error *err);

#endif
