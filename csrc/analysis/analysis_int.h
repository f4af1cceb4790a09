/* Internals of the analysis passes: the per-location data they share,
 * the analysis state, the hooks of each pass and the delay kernel.  Only
 * csrc/analysis/ includes this; hosts and bindings see the results
 * (analysis.h) and the public interface (waitscope.h). */
#ifndef WS_ANALYSIS_ANALYSIS_INT_H
#define WS_ANALYSIS_ANALYSIS_INT_H

#include "../replay/replay.h"
#include "analysis.h"
#include "delay_kernel.h"
#include "omp.h"

/* Leaves of the partner's calls, for the completion parts of the delay
 * analysis, kept (pass 3) only for the message rows that wait or are
 * waited for (a final Late Sender or Late Receiver): receive rows: the
 * call holding the send record and the call completing the send; send
 * rows: the call holding the receive record and, reproducing Scalasca
 * 2.6 only, the call that posted the receive. */
typedef struct ws_partner_leaves {
    uint32_t row;
    uint32_t pad;
    double leave;
    double second; /* receive rows: done_leave; send rows: post_leave */
} ws_partner_leaves;

/* ws_loc_data.msg_bits, per message row (only the wait-state passes) */
enum {
    WS_MD_LR_CANDIDATE = 1, /* the wait-state passes found a Late Receiver before the Waitall selection */
    WS_MD_EMPTY_SEND = 2    /* receive rows: the matched send carried no bytes */
};

/* What the wait-state passes found at a site (one record: the later
 * passes read several of its fields at once). */
typedef struct ws_site_wait {
    double wait;
    double sync_time;
    double completion; /* the time in the call after the operation completed (as the previous point of an
                          interval, its call counts only this) */
    uint32_t delayer;  /* location of the process that everybody waited for */
    uint8_t sync;      /* the site is a synchronization point (Scalasca 2.6's rules) */
    uint8_t kind;      /* ws_wait_class of the site's waiting */
    uint8_t anywait;   /* some member of the instance waited */
    uint8_t pad;
} ws_site_wait;

/* Per location data that the passes share. */
typedef struct ws_loc_data {
    /* per message row: what the wait-state passes learn (ws_md_ls and the
     * other accessors below) */
    double *wait;        /* the Late Sender (> 0) or, negated, the Late Receiver (< 0).  A row has
                            never both while each location's times never decrease, as the reader and
                            set_times ensure: a Late Sender needs the send to start after the receive
                            was posted, a Late Receiver the reverse.  Should a row have both, `lr`
                            takes every row's Late Receiver and `wait` keeps the Late Senders
                            (msg_waits.c), so that nothing depends on it. */
    double *lr;          /* NULL, or every row's Late Receiver (see wait) */
    double *partner_time; /* receive rows: enter of the matched send call (pass 1); send rows: when the
                             matching receive was posted (pass 2); freed at the end of pass 2, when the
                             rows that wait keep theirs in waiting_row/waiting_time */
    uint32_t *waiting_row; /* the receive rows with a Late Sender and the send rows with a Late
                              Receiver, ascending (the delay analysis's points, points.c) */
    double *waiting_time;  /* their partner_time */
    size_t n_waiting;
    uint8_t *msg_bits;   /* WS_MD_* */
    ws_partner_leaves *leaves; /* in the order learnt (ws_points_build sorts them by row) */
    size_t n_leaves, cap_leaves;
    ws_site_wait *site_waits; /* per site; freed once the delay analysis copied what it needs (cause_site) */
    /* accumulators per call path */
    double *time;
    double *visits;
    /* pass-1 bookkeeping of Waitall/Waitsome completions */
    uint32_t multi_call;
    uint32_t multi_row;
    double multi_max;
    uint32_t cur_callpath;
    double last_time;
} ws_loc_data;

/* The Late Sender and the Late Receiver of message row `row` (0: none). */
static inline double ws_md_ls(const ws_loc_data *d, uint64_t row)
{
    double w = d->wait[row];
    return w > 0.0 ? w : 0.0;
}
static inline double ws_md_lr(const ws_loc_data *d, uint64_t row)
{
    if (d->lr)
        return d->lr[row];
    double w = d->wait[row];
    return w < 0.0 ? -w : 0.0;
}
/* Whether message row `row` (m) waits itself: a send for a Late Receiver,
 * a receive for a Late Sender (the rows that keep their partner_time). */
static inline int ws_md_waits(const ws_loc_data *d, const ws_msg *m, uint64_t row)
{
    return (m->flags & WS_MSG_SEND) ? ws_md_lr(d, row) > 0.0 : ws_md_ls(d, row) > 0.0;
}
/* Sets them (v > 0, or 0: none); -1 when out of memory. */
int ws_md_set_ls(ws_loc_data *d, uint64_t n_rows, uint64_t row, double v);
int ws_md_set_lr(ws_loc_data *d, uint64_t n_rows, uint64_t row, double v);

typedef struct ws_analysis {
    const ws_trace *trace; /* what the analyses read: the store, or its OpenMP view (omp.h) */
    const ws_trace *store; /* the store itself */
    ws_omp *omp;           /* OpenMP thread teams of the local locations (NULL: none) */
    const ws_sync *sync;
    ws_transport *transport;
    ws_result *result;
    ws_loc_data *locs;   /* indexed by location */
    const uint32_t *local;
    uint32_t n_local;
    ws_analysis_options options;
    /* per region: category metric of its time (see waitstates.c) */
    int *region_category;
} ws_analysis;

/* ws_analyze (waitscope.h) runs the analyses on the given (local) locations. */

/* call path active right after event i (WS_NONE32 before the first; intervals.c) */
uint32_t ws_callpath_after(const ws_trace *t, const ws_events *e, int64_t i);

/* the OpenMP metrics that need no replay (omp_metrics.c), after the time profile */
int ws_omp_metrics(ws_analysis *a, ws_error *err);

/* wait states (waitstates.c, waitstates_p2p.c, waitstates_coll.c) */
int ws_waitstates_prepare(ws_analysis *a, ws_error *err);
void ws_waitstates_handlers(ws_analysis *a, int pass, ws_handler *h);
int ws_waitstates_finish(ws_analysis *a, ws_error *err);
/* frees what the wait-state passes annotated per message and per site of
 * a location (once the replays, or the delay analysis's points, took it
 * over); the per-call-path accumulators stay */
void ws_waitstates_release(ws_loc_data *d);

/* ws_delay_kernel: delay_kernel.h */

/* delay and critical path (causes.c): passes 4 and 5 */
typedef struct ws_causes ws_causes;
int ws_causes_prepare(ws_analysis *a, ws_causes **out, ws_error *err);
void ws_causes_handlers(ws_causes *c, int pass, ws_handler *h);
/* after pass 4: whether pass 5 has any indirect waiting to return, on any
 * process (collective over the transport) */
int ws_causes_indirect_found(ws_causes *c, int *found, ws_error *err);
int ws_causes_finish(ws_causes *c, ws_error *err);
/* after ws_causes_finish: frees what only the replays of passes 4 and 5
 * read (the points and their costs); the moves of the critical path stay
 * for ws_causes_path_pieces */
void ws_causes_release_points(ws_causes *c);
void ws_causes_free(ws_causes *c);
/* the pieces of the critical path, after pass 4 (path_pieces.c): from the
 * moves and the events alone */
int ws_causes_path_pieces(ws_causes *c, ws_error *err);
/* after pass 4 (collective): where the critical path moved, when it is
 * walked in one place (path_walk.c); nothing otherwise */
int ws_causes_path_walk(ws_causes *c, ws_error *err);
double ws_causes_path_first(const ws_causes *c);
/* fills per_location[loc] for the local locations */
void ws_causes_undistributed(const ws_causes *c, double *per_location);

/* derived.c */
void ws_derive_delay(ws_analysis *a);
int ws_derive_critical_path(ws_analysis *a, double path_first, ws_error *err);
/* Sums per-location rows ([n_locations x width], local rows filled, zero
 * elsewhere) in location order: the same on every process and with every
 * transport.  out[width] receives the sums; rows are reduced in place. */
int ws_ordered_sum(ws_analysis *a, double *rows, size_t width, double *out, ws_error *err);

#endif
