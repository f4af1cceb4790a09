/* Unification of the per-rank files of the interposition library into one
 * OTF2 archive (see rawtrace.h).  Free of MPI: it runs on rank 0 at
 * MPI_Finalize and, after a run that was cut short, from Python
 * (waitscope._core.pmpi_unify). */
#ifndef WS_PMPI_UNIFY_H
#define WS_PMPI_UNIFY_H

#include <stdint.h>

#include "../common/error.h"

/* Builds DIR/traces.otf2 from DIR/.waitscope/ and removes the per-rank
 * files.  Ranks that never reached MPI_Finalize (or left no files) are
 * cut short: their open regions are closed at their last event and the
 * archive names them (property WAITSCOPE::CUT_SHORT_RANKS).  If
 * `n_cut_short` is given it receives their number. */
int ws_pmpi_unify(const char *dir, uint32_t *n_cut_short, ws_error *err);

#endif
