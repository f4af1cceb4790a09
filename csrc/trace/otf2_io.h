/* Reading and writing OTF2 archives. */
#ifndef WS_TRACE_OTF2_IO_H
#define WS_TRACE_OTF2_IO_H

#include "../waitscope.h" /* ws_progress */
#include "trace.h"

#include <otf2/OTF2_Callbacks.h>
#include <otf2/OTF2_EvtWriter.h>

/* Installs, on the first call in the process, an OTF2 error handler that
 * only returns the code (libotf2 would print to stderr; the kernel reports
 * through ws_error).  Later calls do nothing, so a host that installs its
 * own handler afterwards keeps it.  Every entry point that calls libotf2
 * calls this first. */
void ws_otf2_silence(void);

/* Opens an archive (anchor file or experiment directory) and reads its
 * anchor and global definitions.  No event is read yet. */
int ws_otf2_open(const char *path, ws_trace **out, ws_error *err);

/* Reads the local definitions and events of the given locations (dense
 * indices; NULL and n == 0 means all).  Only those locations' files are
 * opened.  On error the trace keeps no partial events of the failing
 * location. */
int ws_otf2_load_events(ws_trace *t, const uint32_t *locations, uint32_t n,
                        const ws_progress *progress, ws_error *err);

/* The same with up to n_threads threads (otf2_load_threads.c), each with
 * its own OTF2 reader over a contiguous block of the locations (balanced
 * by their records).  The store is the one ws_otf2_load_events builds:
 * call paths are merged in location order, so every column is equal.  On
 * error the first failing location in the list's order is reported, as
 * one thread would, and the locations after it are left unloaded; the
 * progress callback runs on the calling thread only.  n_threads <= 1 is
 * ws_otf2_load_events. */
int ws_otf2_load_events_threads(ws_trace *t, const uint32_t *locations, uint32_t n, uint32_t n_threads,
                                const ws_progress *progress, ws_error *err);

/* Counts the event records of every location with callbacks that do
 * nothing (the cost of decoding alone, for benchmarks): location by
 * location, or with `global` through OTF2's global event reader (which
 * merges all locations by timestamp). */
int ws_otf2_bare_read(const char *path, int global, uint64_t *n_records, ws_error *err);

/* Writes the trace (all loaded locations) as an OTF2 archive with the
 * given anchor path ("dir/traces.otf2" or "dir": then "dir/traces.otf2").
 * Ticks are recomputed from the seconds with the trace's clock. */
int ws_otf2_write(const ws_trace *t, const char *path, const ws_progress *progress, ws_error *err);

/* The same with the events between each location's MPI_Init and
 * MPI_Finalize calls written `copies` times one after the other, each
 * copy a period later (the longest such span of any location): a trace
 * of the same program running its main loop `copies` times as long,
 * for benchmarks of large traces.  Needs every loaded location to call
 * MPI_Init (or MPI_Init_thread) and later MPI_Finalize, and every
 * message and request to complete between the two. */
int ws_otf2_write_repeated(const ws_trace *t, const char *path, uint32_t copies, const ws_progress *progress,
                           ws_error *err);

/* Part of an archive that several processes write together (each its own
 * locations' events and local definitions, the root the anchor and the
 * global definitions), as Score-P's ranks do.  Every process passes the
 * same definitions (the same store without events). */
typedef struct ws_otf2_part {
    const OTF2_CollectiveCallbacks *callbacks; /* OTF2's collective operations over the processes */
    void *callback_data;
    OTF2_CollectiveContext *comm;
    int root;                  /* this process writes the anchor and the global definitions */
    const uint32_t *locations; /* dense indices of the locations this process writes */
    uint32_t n_locations;
    void *context;
    /* the next chunk of events of location `index` in *chunk, NULL after its last */
    int (*next)(void *context, uint32_t index, const ws_events **chunk, ws_error *err);
    /* collective: the worst code of all processes (WS_OK when all are) */
    int (*agree)(void *context, int rc);
    /* collective, after the events: counts[] (per location, this
     * process's own filled in) becomes complete on the root, with the
     * store's clock length; returns the worst code as agree does */
    int (*complete)(void *context, ws_trace *t, uint64_t *counts, int rc);
} ws_otf2_part;

/* Writes this process's part of the archive at `path` (see ws_otf2_part);
 * called by every process, collectively.  t->locations are not read for
 * events. */
int ws_otf2_write_part(ws_trace *t, const char *path, const ws_otf2_part *part, ws_error *err);

/* The writer's part for thread records (otf2_threads.c): writes event
 * `kind` of thread-table row `ref` of ev (checked by the caller). */
OTF2_ErrorCode ws_otf2_write_thread_record(OTF2_EvtWriter *ew, OTF2_TimeStamp ts, const ws_trace *t,
                                          const ws_events *ev, uint8_t kind, uint32_t ref);

#endif
