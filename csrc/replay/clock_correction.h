/* Timestamp correction with the controlled logical clock.
 *
 * The clock condition: a receive cannot complete before its send started
 * (the Leave of the MPI call holding a receive record is not before the
 * Enter of the call holding the matching send record), and a collective
 * member cannot leave before the members whose data it needs entered
 * (barrier and N x N: all members; 1-to-N: a non-root needs the root;
 * N-to-1: the root needs all; scans: each member those up to itself).
 * MPI_Init and MPI_Finalize count as N x N operations over all ranks, as
 * the analysis treats them (Score-P synchronizes the processes in both).
 * The analysis counts the violations (AnalysisResult.clock_violations).
 *
 * The correction follows the controlled logical clock (R. Rabenseifner,
 * PDP 1997; extended to collectives by Becker, Rabenseifner, Wolf and
 * Linford, Parallel Computing 2009; cited by seed 000 section III-A):
 * - forward amortization: events are visited in an order that respects
 *   the constraints; an event that violates one is moved forward just far
 *   enough (a jump), and the events after it on its location carry the
 *   shift, which decays by (1 - gamma) per second of original time so that
 *   the location returns to its own clock;
 * - backward amortization: the events before a jump are moved forward by
 *   a linearly growing part of it over a window of jump / (1 - gamma)
 *   seconds, so that no local interval grows by more than a fraction
 *   (1 - gamma) / gamma, never past the clock condition of a send or a
 *   collective entry they hold.
 * Timestamps only move forward, the order of events on a location is
 * kept, and a trace without violations comes back unchanged (exactly).
 */
#ifndef WS_REPLAY_CLOCK_CORRECTION_H
#define WS_REPLAY_CLOCK_CORRECTION_H

#include "../trace/trace.h"

typedef struct ws_clc_options {
    double gamma;       /* controls the amortization, 0 < gamma < 1 (default 0.99) */
    double min_latency; /* a receive completes at least this long after its send started (default 0) */
} ws_clc_options;

typedef struct ws_clc_stats {
    uint64_t n_jumps;   /* events moved to restore the clock condition */
    uint64_t n_moved;   /* events whose timestamp changed */
    double max_shift;   /* largest change of a timestamp (seconds) */
} ws_clc_stats;

void ws_clc_options_default(ws_clc_options *o);

/* Computes corrected timestamps for every location of `t` (all must be
 * loaded).  times[loc] receives a newly allocated array of the
 * location's event count (free() each).  On failure nothing is
 * allocated and times[] is set to NULL. */
int ws_clock_correct_clc(const ws_trace *t, const ws_clc_options *o, double **times, ws_clc_stats *stats,
                         ws_error *err);

#endif
