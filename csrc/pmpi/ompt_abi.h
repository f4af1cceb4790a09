/* The part of the OpenMP tools interface (OMPT, OpenMP 5.0/5.1, section
 * "Tool Interface") that the tracer uses: the types and constants of the
 * binary interface, as the specification defines them, so that the
 * library builds without an OpenMP runtime's omp-tools.h. */
#ifndef WS_PMPI_OMPT_ABI_H
#define WS_PMPI_OMPT_ABI_H

#include <stdint.h>

typedef union ompt_data_t {
    uint64_t value;
    void *ptr;
} ompt_data_t;

typedef struct ompt_frame_t {
    ompt_data_t exit_frame, enter_frame;
    int exit_frame_flags, enter_frame_flags;
} ompt_frame_t;

typedef uint64_t ompt_wait_id_t;
typedef void (*ompt_interface_fn_t)(void);
typedef ompt_interface_fn_t (*ompt_function_lookup_t)(const char *name);
typedef int (*ompt_initialize_t)(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data);
typedef void (*ompt_finalize_t)(ompt_data_t *tool_data);

typedef struct ompt_start_tool_result_t {
    ompt_initialize_t initialize;
    ompt_finalize_t finalize;
    ompt_data_t tool_data;
} ompt_start_tool_result_t;

typedef void (*ompt_callback_t)(void);
/* returns an ompt_set_result_t: 0 error, 1 never, 2 impossible, 3
 * sometimes, 4 sometimes paired, 5 always */
typedef int (*ompt_set_callback_t)(int event, ompt_callback_t callback);
typedef ompt_data_t *(*ompt_get_thread_data_t)(void);

/* ompt_callbacks_t */
enum {
    WS_OMPT_THREAD_BEGIN = 1,
    WS_OMPT_THREAD_END = 2,
    WS_OMPT_PARALLEL_BEGIN = 3,
    WS_OMPT_PARALLEL_END = 4,
    WS_OMPT_TASK_CREATE = 5,
    WS_OMPT_TASK_SCHEDULE = 6,
    WS_OMPT_IMPLICIT_TASK = 7,
    WS_OMPT_MUTEX_RELEASED = 17,
    WS_OMPT_WORK = 20,
    WS_OMPT_MASKED = 21,
    WS_OMPT_SYNC_REGION = 23,
    WS_OMPT_MUTEX_ACQUIRE = 26,
    WS_OMPT_MUTEX_ACQUIRED = 27,
};

/* ompt_set_result_t */
enum { WS_OMPT_SET_SOMETIMES_PAIRED = 4, WS_OMPT_SET_ALWAYS = 5 };

/* ompt_thread_t */
enum { WS_OMPT_THREAD_INITIAL = 1, WS_OMPT_THREAD_WORKER = 2 };

/* ompt_scope_endpoint_t */
enum { WS_OMPT_SCOPE_BEGIN = 1, WS_OMPT_SCOPE_END = 2, WS_OMPT_SCOPE_BEGINEND = 3 };

/* ompt_sync_region_t */
enum {
    WS_OMPT_SYNC_BARRIER = 1, /* deprecated: implicit or explicit */
    WS_OMPT_SYNC_BARRIER_IMPLICIT = 2,
    WS_OMPT_SYNC_BARRIER_EXPLICIT = 3,
    WS_OMPT_SYNC_BARRIER_IMPLEMENTATION = 4,
    WS_OMPT_SYNC_TASKWAIT = 5,
    WS_OMPT_SYNC_TASKGROUP = 6,
    WS_OMPT_SYNC_REDUCTION = 7,
    WS_OMPT_SYNC_BARRIER_IMPLICIT_WORKSHARE = 8,
    WS_OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL = 9,
    WS_OMPT_SYNC_BARRIER_TEAMS = 10,
};

/* ompt_mutex_t */
enum {
    WS_OMPT_MUTEX_LOCK = 1,
    WS_OMPT_MUTEX_TEST_LOCK = 2,
    WS_OMPT_MUTEX_NEST_LOCK = 3,
    WS_OMPT_MUTEX_TEST_NEST_LOCK = 4,
    WS_OMPT_MUTEX_CRITICAL = 5,
    WS_OMPT_MUTEX_ATOMIC = 6,
    WS_OMPT_MUTEX_ORDERED = 7,
};

/* ompt_work_t */
enum {
    WS_OMPT_WORK_LOOP = 1,
    WS_OMPT_WORK_SECTIONS = 2,
    WS_OMPT_WORK_SINGLE_EXECUTOR = 3,
    WS_OMPT_WORK_SINGLE_OTHER = 4,
    WS_OMPT_WORK_WORKSHARE = 5,
};

/* ompt_task_flag_t */
enum { WS_OMPT_TASK_INITIAL = 0x1, WS_OMPT_TASK_IMPLICIT = 0x2 };

#endif
