/* The parts of the OTF2 writer (otf2_writer.c) that its event part
 * (otf2_write_events.c) shares. */
#ifndef WS_TRACE_OTF2_WRITE_INT_H
#define WS_TRACE_OTF2_WRITE_INT_H

#include <math.h>

#include <otf2/otf2.h>

#include "otf2_io.h"

typedef struct ws_otf2_writer {
    const ws_trace *t;
    ws_error *err;
    OTF2_Archive *archive;
    const char *anchor;
    uint64_t *string_id;   /* dense string index -> OTF2 string id */
    uint64_t *cart_dim_id; /* dense dimension index -> OTF2 id */
    uint64_t next_string;  /* first unused OTF2 string id */
    OTF2_StringRef program_name;
    uint32_t program_region_index; /* the store's program region (WS_NONE32: none) */
    /* a program region the store lacks, added as Score-P defines it */
    int extra_program;
    const char *program_stem;       /* its name: the archive's name */
    char *program_canonical;        /* "/synthetic/<name>" */
    OTF2_StringRef program_name_ref;
    OTF2_RegionRef program_region;
    const uint64_t *event_counts; /* per location, when its events are not in the store (parts) */
    /* ws_otf2_write_repeated: the events between each location's MPI_Init
     * and MPI_Finalize calls, [body[2 l], body[2 l + 1]), are written
     * `copies` times, `period` ticks apart (copies <= 1: once) */
    uint32_t copies;
    uint64_t period;
    uint64_t *body;
} ws_otf2_writer;
typedef ws_otf2_writer writer;

int ws_otf2w_fail(writer *w, OTF2_ErrorCode s, const char *what);
OTF2_StringRef ws_otf2w_str_ref(const writer *w, uint32_t index);

static inline OTF2_TimeStamp ticks_of(const ws_trace *t, double time)
{
    return t->clock.offset + (uint64_t)(int64_t)llround(time * (double)t->clock.resolution);
}


/* The OTF2 timestamp of event i of ev: its ticks in the compact form,
 * else recomputed from its seconds. */
static inline OTF2_TimeStamp event_ticks(const ws_trace *t, const ws_events *ev, uint64_t i)
{
    return ev->time ? ticks_of(t, ev->time[i]) : t->clock.offset + ws_ev_ticks(ev, i);
}

/* Writes the events [first, end) of `ev` (all of a location, or one chunk
 * of them) of the location `loc` with event writer `ew`, `shift` ticks
 * later than they are; progress as ws_otf2_write reports it. */
int ws_otf2w_events(writer *w, OTF2_EvtWriter *ew, const ws_location *loc, const ws_events *ev, uint64_t first,
                    uint64_t end, uint64_t shift, const ws_progress *progress, uint64_t *done_events, uint64_t total,
                    uint64_t *next_report);

/* For ws_otf2_write_repeated: finds every loaded location's body (the
 * events after its first MPI_Init or MPI_Init_thread call ends and before
 * its MPI_Finalize call begins) and the period, the longest body in
 * ticks; sets w->body (owned by the caller) and w->period. */
int ws_otf2w_repeat_plan(writer *w);

/* The number of events location `l` gets in the archive. */
uint64_t ws_otf2w_event_count(const writer *w, uint32_t l);

#endif
