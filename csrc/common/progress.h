/* Progress reports and interruption of long work: what a host passes to
 * loading, writing, synthesis, the replay and the analysis.  It depends on
 * nothing, so that the replay layer needs no part of the OTF2 reader. */
#ifndef WS_COMMON_PROGRESS_H
#define WS_COMMON_PROGRESS_H

#include <stdint.h>

typedef struct ws_progress {
    /* Called now and then during long work; a nonzero return stops the
     * work with WS_ERR_INTERRUPTED.  `done` and `total` count events. */
    int (*callback)(void *context, const char *stage, uint64_t done, uint64_t total);
    void *context;
    /* May be NULL.  Asked now and then while a process waits for others
     * (the parallel replay) without reporting: a nonzero return stops the
     * work with WS_ERR_INTERRUPTED (Ctrl-C). */
    int (*interrupted)(void *context);
} ws_progress;

#endif
