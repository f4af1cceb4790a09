/* Analyses on the replay engine: wait states, delay costs, critical path.
 * This header: what they produce (ws_result and its records); the passes'
 * shared internals are in analysis_int.h.
 *
 * Passes (each a replay over all local locations):
 *   1 forward  wait states: Late Sender, collectives, time and counts
 *   2 backward Late Receiver at the sender, synchronization points
 *   3 forward  Late Receiver synchronization points at the receiver
 *   4 backward delay costs and critical path
 *   5 forward  direct/indirect classification at the waiting side
 * Wait-state analysis alone needs passes 1-2.
 */
#ifndef WS_ANALYSIS_ANALYSIS_H
#define WS_ANALYSIS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "../waitscope.h"
#include "metrics.h"

/* enum ws_delay_model and ws_analysis_options are public: waitscope.h. */

/* The part of `value`, spread evenly over [start, end], that lies in the
 * window: `value` itself when there is no window or the interval lies
 * inside it (so that a window over the whole run changes nothing). */
static inline double ws_window_part(const ws_analysis_options *o, double start, double end, double value)
{
    if (!o->has_window || (start >= o->window_start && end <= o->window_end))
        return value;
    double lo = start > o->window_start ? start : o->window_start;
    double hi = end < o->window_end ? end : o->window_end;
    if (!(hi > lo))
        return 0.0;
    /* an interval is its own length except for zero-length ones */
    return end > start ? value * ((hi - lo) / (end - start)) : 0.0;
}

/* Whether an instant (an event, the start of a wait state) counts in the
 * window: start <= t <= end (a window over the whole run counts every
 * event, also the zero-length calls at its very end). */
static inline int ws_window_has(const ws_analysis_options *o, double t)
{
    return !o->has_window || (t >= o->window_start && t <= o->window_end);
}

/* One delay calculation (seed 000 IV-B): who delayed whom at which
 * synchronization point and what it cost. */
typedef struct ws_delay_record {
    uint32_t delayer;      /* location charged */
    uint32_t waiter;       /* location that waited */
    uint32_t kind;         /* WS_WAIT_* class */
    uint32_t sync_event;   /* event index of the sync point at the delayer */
    double sync_time;      /* when the last party arrived */
    double wait;           /* waiting time (gamma short) */
    double longterm_in;    /* propagated cost carried by the wait state (gamma long) */
    double short_cost;     /* short-term cost charged to the delayer */
    double long_cost;      /* long-term cost charged to the delayer */
    double propagated;     /* cost passed on to the delayer's own wait states */
    uint64_t vector_offset;/* into the record vector arrays */
    uint32_t vector_length;
} ws_delay_record;

/* One piece of the critical path. */
typedef struct ws_path_segment {
    uint32_t location;
    uint32_t callpath;
    double start;
    double end;
} ws_path_segment;

/* Patterns of wait-state records: one per time metric that is charged
 * per instance (ws_wait_pattern_metric gives the metric). */
enum ws_wait_pattern {
    WS_WP_LATESENDER = 0,         /* mpi_latesender */
    WS_WP_LATERECEIVER = 1,       /* mpi_latereceiver */
    WS_WP_BARRIER = 2,            /* mpi_barrier_wait */
    WS_WP_BARRIER_COMPLETION = 3, /* mpi_barrier_completion */
    WS_WP_NXN = 4,                /* mpi_wait_nxn */
    WS_WP_NXN_COMPLETION = 5,     /* mpi_nxn_completion */
    WS_WP_LATEBROADCAST = 6,      /* mpi_latebroadcast */
    WS_WP_EARLYREDUCE = 7,        /* mpi_earlyreduce */
    WS_WP_EARLYSCAN = 8,          /* mpi_earlyscan */
    WS_WP_FINALIZE = 9,           /* mpi_finalize_wait */
    WS_WP_INIT_COMPLETION = 10,   /* mpi_init_completion */
    WS_WP_OMP_EBARRIER = 11,      /* omp_ebarrier_wait */
    WS_WP_OMP_IBARRIER = 12,      /* omp_ibarrier_wait */
    WS_WP_OMP_CRITICAL = 13,      /* omp_lock_contention_critical */
    WS_WP_OMP_LOCK_API = 14,      /* omp_lock_contention_api */
    WS_WP_COUNT = 15
};

/* The metric (enum ws_metric) of a wait-state pattern. */
int ws_wait_pattern_metric(int pattern);

/* Late Sender records: the instance is also in mpi_latesender_wo */
enum { WS_WO_NONE = 0, WS_WO_SAME = 1, WS_WO_DIFFERENT = 2 };

/* One wait-state instance (analysis option wait_records), made where its
 * waiting time is added to the cube: `wait` is exactly that value, at
 * (pattern's metric, callpath, location).  [start, end] is the waiting
 * interval; end - start == wait. */
typedef struct ws_wait_record {
    double start;
    double end;
    double wait;
    uint32_t location;   /* the waiting location */
    uint32_t callpath;   /* of the waiting call (the one charged) */
    uint32_t event;      /* on `location`: the message record, MpiIsendComplete,
                            MpiCollectiveEnd, or the Leave of MPI_Init/MPI_Finalize */
    uint32_t partner;    /* location waited for, or WS_NONE32 */
    uint8_t pattern;     /* enum ws_wait_pattern */
    uint8_t wrong_order; /* WS_WO_* (Late Sender only) */
    uint8_t pad[6];
} ws_wait_record;

/* Sorts wait records by location, event and pattern (a total order). */
void ws_wait_records_sort(ws_wait_record *records, size_t n);

/* wait-state classes (also the delay-cost classes); the classes with
 * delay costs come first, 1 .. WS_WAIT_OMPIDLE */
enum ws_wait_class {
    WS_WAIT_NONE = 0,
    WS_WAIT_LATESENDER = 1,
    WS_WAIT_LATERECEIVER = 2,
    WS_WAIT_BARRIER = 3,
    WS_WAIT_NXN = 4,
    WS_WAIT_12N = 5,
    WS_WAIT_N21 = 6,
    WS_WAIT_OMPBARRIER = 7, /* OpenMP barriers (explicit and implicit) */
    WS_WAIT_OMPIDLE = 8,    /* OpenMP worker threads idle while the master thread runs alone */
    WS_WAIT_SCAN = 9,
    WS_WAIT_FINALIZE = 10,
    WS_WAIT_OMPFORK = 11,   /* not waiting: a thread of a team that the master's fork starts */
    WS_WAIT_CLASS_COUNT = 12
};

/* The steps of an analysis (analyze.c), in the order they run; the result
 * keeps the seconds each took. */
enum ws_analysis_step {
    WS_STEP_MATCHING,    /* the synchronization structure: matching, sites */
    WS_STEP_WAIT_STATES, /* passes 1 and 2, the time profile */
    WS_STEP_SYNC_POINTS, /* pass 3 */
    WS_STEP_POINTS,      /* the delay analysis's synchronization points */
    WS_STEP_BACKWARD,    /* pass 4: delay costs and the critical path */
    WS_STEP_PATH_WALK,   /* the critical path walked in one place */
    WS_STEP_FORWARD,     /* pass 5: the indirect waiting back to the waiters */
    WS_STEP_PATH_PIECES, /* the critical path's pieces cut from the events */
    WS_STEP_DERIVED,     /* derived metrics: delay trees, critical-path indicators */
    WS_STEP_COUNT
};

/* The name of a step (Python's AnalysisResult.timings). */
const char *ws_analysis_step_name(int step);

typedef struct ws_result {
    uint32_t n_metrics;
    int metric[WS_M_COUNT];   /* cube metric k -> ws_metric_table index */
    int slot[WS_M_COUNT];     /* table index -> cube metric or -1 */
    uint32_t n_callpaths;
    uint32_t n_locations;
    double *cube;          /* [metric][callpath][location] */
    /* per row of the cube ([metric][callpath]): 1 once a cell of it may
     * have been written (ws_cube_add, ws_cube_mark); the others hold +0
     * everywhere, so the derived metrics skip them instead of reading
     * them (at 262,144 locations a row is 2 MB) */
    uint8_t *row_live;
    uint64_t *clock_violations; /* per location */
    int delay_model;

    /* critical path (only the part this process found in MPI mode) */
    ws_path_segment *path;
    uint64_t n_path, cap_path;
    double path_start, path_end;

    /* delay records (optional) */
    ws_delay_record *records;
    uint64_t n_records, cap_records;
    uint32_t *record_cp;    /* delay vector entries: call path */
    double *record_value;   /* delay vector entries: value */
    uint64_t n_entries, cap_entries;

    /* wait-state records (option wait_records), sorted by
     * ws_wait_records_sort once the analysis is done */
    int has_wait_records;
    ws_wait_record *wait_records;
    uint64_t n_wait_records;
    size_t cap_wait_records;

    /* per location partition used for the imbalance costs */
    int32_t *partition;
    /* waiting time whose cost could not be charged to any activity */
    double undistributed;
    /* wall-clock seconds of each step here (this process, or thread 0 of
     * a threaded analysis); NaN for a step that did not run */
    double step_seconds[WS_STEP_COUNT];
} ws_result;

static inline double *ws_cube_cell(ws_result *r, int metric, uint32_t callpath, uint32_t loc)
{
    return &r->cube[((size_t)r->slot[metric] * r->n_callpaths + callpath) * r->n_locations + loc];
}

/* Notes that row (metric, callpath) of the cube, whose metric is in it,
 * may hold values other than +0 (see row_live). */
static inline void ws_cube_mark(ws_result *r, int metric, uint32_t callpath)
{
    r->row_live[(size_t)r->slot[metric] * r->n_callpaths + callpath] = 1;
}

/* Whether row (metric, callpath) may hold values other than +0: a metric
 * not in the cube holds none. */
static inline int ws_cube_row_live(const ws_result *r, int metric, uint32_t callpath)
{
    return r->slot[metric] >= 0 && r->row_live[(size_t)r->slot[metric] * r->n_callpaths + callpath];
}

/* Adds v to (metric, callpath, location) if the metric is in the cube. */
static inline void ws_cube_add(ws_result *r, int metric, uint32_t callpath, uint32_t loc, double v)
{
    if (r->slot[metric] >= 0 && callpath < r->n_callpaths) {
        *ws_cube_cell(r, metric, callpath, loc) += v;
        ws_cube_mark(r, metric, callpath);
    }
}

#endif
