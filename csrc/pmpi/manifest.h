/* DIR/MANIFEST.md of a traced run (manifest.c). */
#ifndef WS_PMPI_MANIFEST_H
#define WS_PMPI_MANIFEST_H

#include <stdint.h>

#include "../common/error.h"
#include "../trace/trace.h"
#include "rankfiles.h"

/* Writes DIR/MANIFEST.md from the archive's definitions `t`, the ranks'
 * definition files (rank 0's says the command, options, MPI and date), the
 * events written per location and `how` the archive was written. */
int ws_manifest_write(const char *dir, const ws_trace *t, const ws_rankfile *ranks, uint32_t n,
                      const uint64_t *events, const char *how, ws_error *err);

#endif
