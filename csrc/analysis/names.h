/* Readable names of the numbers the store keeps: event kinds (trace.h),
 * OTF2's region roles, paradigms, collective operations and location
 * types (numbered by OTF2's own headers), and the wait-state classes of
 * the analysis.  Declared once here; waitscope._core exports the tables
 * to Python.  Each table has `count` entries, some NULL where a number
 * is unused. */
#ifndef WS_ANALYSIS_NAMES_H
#define WS_ANALYSIS_NAMES_H

#include <stddef.h>

typedef struct ws_name_table {
    const char *name;               /* e.g. "event_kinds" */
    size_t count;
    const char *const *names;       /* names[value] or NULL */
} ws_name_table;

enum {
    WS_NAMES_EVENT_KINDS,
    WS_NAMES_OTF2_RECORDS,    /* otf2-print's record name of each event kind */
    WS_NAMES_REGION_ROLES,
    WS_NAMES_PARADIGMS,
    WS_NAMES_COLLECTIVE_OPS,
    WS_NAMES_LOCATION_TYPES,
    WS_NAMES_WAIT_CLASSES,
    WS_NAMES_COUNT
};

extern const ws_name_table ws_name_tables[WS_NAMES_COUNT];

/* (the event kinds that carry a message record: ws_is_message_kind,
 * replay/sync.h) */

#endif
