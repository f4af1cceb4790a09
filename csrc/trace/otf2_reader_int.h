/* What the parts of the OTF2 reader share: otf2_definitions.c
 * (anchor and global definitions, ws_otf2_open) and otf2_events.c (local
 * definitions and events, ws_otf2_load_events), otf2_bare.c (the bare
 * read of the benchmarks) and otf2_load_threads.c (the threaded load). */
#ifndef WS_TRACE_OTF2_READER_INT_H
#define WS_TRACE_OTF2_READER_INT_H

#include <stdint.h>

#include <otf2/otf2.h>

#include "../common/error.h"
#include "../waitscope.h" /* ws_progress */
#include "trace.h"

int ws_otf2_is_regular_file(const char *path);

/* Resolves a user path (anchor file or experiment directory) to the
 * anchor file path, which the caller frees. */
int ws_otf2_resolve_anchor(const char *path, char **anchor, ws_error *err);

/* Silences OTF2's error handler, resolves and checks the anchor and opens
 * an OTF2 reader on it (serial collective callbacks).  On success the
 * caller owns *anchor (free) and *reader (OTF2_Reader_Close). */
int ws_otf2_open_anchor(const char *path, char **anchor, OTF2_Reader **reader, ws_error *err);

/* "<dir>/<name>.otf2" -> "<dir>/<name>" (the caller frees), NULL when out
 * of memory. */
char *ws_otf2_archive_directory(const char *anchor);

/* "<dir>/<location>.<suffix>" (the caller frees), NULL when out of memory. */
char *ws_otf2_location_file(const char *directory, uint64_t location, const char *suffix);

/* Reads, with a reader of its own, the local definitions and events of the
 * given locations (dense indices, checked by the caller; loaded ones are
 * skipped) in their order.  Enter events extend `callpaths` (the trace's
 * tree, or a tree of one thread of a threaded load) and their refs are its
 * ids.  `progress` is called between batches and locations with *done
 * (records read, updated) and `total`.  *n_events: events stored by the
 * call (t->n_events is left to the caller).  On error *failed_at is the
 * position in `locations` of the failing location (n if none: the archive
 * could not be reopened or memory ran out before), whose partial events
 * are freed; the locations before it stay loaded. */
int ws_otf2_load_block(ws_trace *t, const uint32_t *locations, uint32_t n, ws_callpaths *callpaths,
                       const ws_progress *progress, uint64_t *done, uint64_t total, uint64_t *n_events,
                       uint32_t *failed_at, ws_error *err);

/* Puts `list` (location indices) in the order the loaders read it when
 * processes have several locations: by location group, then thread
 * number (stably), so that a team's master is read before its other
 * threads (otf2_threads.c); unchanged otherwise.  -1 when out of memory. */
int ws_otf2_process_order(const ws_trace *t, uint32_t *list, uint32_t n);

#endif
