/* The event reader's working state, shared by otf2_events.c (Enter,
 * Leave, MPI and program records) and otf2_threads.c (thread records). */
#ifndef WS_TRACE_OTF2_EVT_INT_H
#define WS_TRACE_OTF2_EVT_INT_H

#include "otf2_check.h"
#include "otf2_rows.h"

#include <otf2/otf2.h>

/* A direct-mapped memo of Enter lookups (parent call path, OTF2 region
 * id) -> call path in front of lookup_region and ws_callpath_child: an
 * Enter costs one probe instead of a region lookup plus a sibling scan or
 * a hash-map lookup.  Call paths are never removed and only defined
 * regions are memoized, so entries stay valid for the whole load. */
#define CP_MEMO_SIZE 1024u /* power of two */
/* never a call path index (ws_callpath_child stops at WS_NONE32 - 1) nor
 * WS_NONE32 (the parent of roots): marks empty entries */
#define CP_MEMO_EMPTY (WS_NONE32 - 1u)

typedef struct cp_memo_entry {
    uint32_t parent;     /* CP_MEMO_EMPTY: empty entry */
    OTF2_RegionRef region;
    uint32_t cp;
} cp_memo_entry;

/* Working memory of one ws_otf2_load_events call. */
typedef struct load_scratch {
    side_rows side;
    side_rows direct; /* the columns of the big location being read */
    uint32_t *stack;          /* call paths of the open regions */
    OTF2_RegionRef *stack_id; /* and their OTF2 region ids */
    size_t stack_cap;
    cp_memo_entry memo[CP_MEMO_SIZE];
    ws_otf2_check_buffer check; /* an event file's last chunk, checked */
    /* the program region of the last ProgramBegin name looked up */
    OTF2_StringRef program_name;
    OTF2_RegionRef program_region;
    int program_known;
    uint64_t event_chunk;       /* the archive's event chunk size; 0: unknown */
    /* thread teams (otf2_threads.c): the ThreadTeamBegin records of the
     * location being read, per team communicator, and of the last team
     * master looked up, (comm << 40 | k) -> its call path at the k-th */
    ws_map64 team_count;
    ws_map64 team_cp;
    uint32_t team_master;       /* whose call paths team_cp holds (WS_NONE32: none) */
} load_scratch;

typedef struct evt_ctx {
    const ws_trace *t;
    ws_callpaths *callpaths; /* the tree Enter events extend */
    ws_events *ev;
    load_scratch *s;
    side_rows *rows; /* where the side tables go: s->side or s->direct */
    uint64_t cap; /* capacity of ev->time, kind, ref */
    uint32_t depth;
    uint32_t loc;  /* the location being read */
    uint32_t base; /* the parent of the regions entered at depth 0: inside a thread team that another
                      thread forked, the call path at which its master forked it; else WS_NONE32 */
    int in_team;   /* inside such a team */
    uint32_t fork_requested; /* threads the last ThreadFork asked for (0: none or not said) */
    int program_open; /* the program region is the outermost open region */
    double inv_resolution;
    uint64_t offset;
    uint64_t last_ticks;
    uint64_t last_comm_id; /* OTF2 id of the last communicator looked up (UINT64_MAX: none) */
    uint32_t last_comm;    /* its index */
    int failed;
    ws_error *err;
} evt_ctx;

#define EVT_FAIL(c, code, ...)                                    \
    do {                                                          \
        ws_error_set((c)->err, code, __VA_ARGS__);                 \
        (c)->failed = 1;                                          \
        return OTF2_CALLBACK_INTERRUPT;                           \
    } while (0)

/* Appends the common columns of one event; returns its index or -1. */
static inline int64_t push_event(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint32_t ref)
{
    ws_events *ev = c->ev;
    if (time < c->last_ticks) {
        ws_error_set(c->err, WS_ERR_FORMAT, "event %llu: timestamp goes backwards (%llu after %llu)",
                     (unsigned long long)ev->n, (unsigned long long)time, (unsigned long long)c->last_ticks);
        c->failed = 1;
        return -1;
    }
    if (ev->n == c->cap) {
        if (ev->n >= UINT32_MAX) {
            ws_error_set(c->err, WS_ERR_FORMAT, "more than 2^32 events on one location are not supported");
            c->failed = 1;
            return -1;
        }
        uint64_t cap = c->cap ? c->cap * 2 : 1024;
        if (cap > UINT32_MAX)
            cap = UINT32_MAX;
        if (ws_events_reserve(ev, cap) != 0) {
            ws_error_nomem(c->err, "events");
            c->failed = 1;
            return -1;
        }
        c->cap = cap;
    }
    c->last_ticks = time;
    /* load everything before the first store: the uint8_t store may alias
     * anything and would make the compiler reload the other pointers */
    uint64_t i = ev->n;
    uint32_t *rf = ev->ref;
    uint8_t *kd = ev->kind;
    /* ticks since the clock's offset, in the compact form (trace.h) */
    if (ws_events_set_ticks(ev, i, time - c->offset) != 0) {
        ws_error_nomem(c->err, "event times");
        c->failed = 1;
        return -1;
    }
    ev->n = i + 1;
    rf[i] = ref;
    kd[i] = kind;
    return (int64_t)i;
}


/* Thread records (otf2_threads.c). */
void ws_otf2_thread_callbacks(OTF2_EvtReaderCallbacks *cbs);
/* Frees what the thread callbacks keep in the scratch. */
void ws_otf2_thread_scratch_free(load_scratch *s);
/* Resets, before a location is read, what they keep per location. */
void ws_otf2_thread_location_begin(load_scratch *s);

#endif
