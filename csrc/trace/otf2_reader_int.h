/* What the two halves of the OTF2 reader share: otf2_definitions.c
 * (anchor and global definitions, ws_otf2_open) and otf2_events.c (local
 * definitions and events, ws_otf2_load_events, ws_otf2_bare_read). */
#ifndef WS_TRACE_OTF2_READER_INT_H
#define WS_TRACE_OTF2_READER_INT_H

#include "../common/error.h"

int ws_otf2_is_regular_file(const char *path);

/* Resolves a user path (anchor file or experiment directory) to the
 * anchor file path, which the caller frees. */
int ws_otf2_resolve_anchor(const char *path, char **anchor, ws_error *err);

/* "<dir>/<name>.otf2" -> "<dir>/<name>" (the caller frees), NULL when out
 * of memory. */
char *ws_otf2_archive_directory(const char *anchor);

#endif
