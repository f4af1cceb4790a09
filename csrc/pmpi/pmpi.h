/* The interposition library: process-wide state and the interfaces of its
 * parts (one concept per file):
 *
 *   functions.c     the MPI functions the library knows (names, OTF2 roles)
 *   wrappers_env.c  MPI_Init/Finalize/Abort, communicators, topologies
 *   wrappers_p2p.c  point to point and request completion
 *   wrappers_mprobe.c matched probes and receives (MPI_Mprobe, MPI_Mrecv, ...)
 *   wrappers_coll.c blocking collectives
 *   coll_bytes.c    what a collective records (operation, root, bytes)
 *   wrappers_large.c the MPI-4 large-count (_c) variants
 *   fortran.c       the Fortran bindings: the MPI's own binding, handles,
 *                   statuses and sentinels (fortran.h)
 *   fortran_env.c, fortran_p2p.c, fortran_coll.c, fortran_plain.c, fortran_mprobe.c
 *                   the Fortran wrappers (mpif.h, use mpi, use mpi_f08)
 *   plain_regions.c the calls recorded as plain MPI regions (plain_regions.h)
 *   symtab.c        function names from ELF symbol tables, source lines
 *   dwarf.c         the Fortran main program's name from .debug_info
 *   dwarf_line.c    source lines of code addresses from .debug_line (dwarf_line.h)
 *   callpath.c      user call paths: stack frames or -finstrument-functions
 *   stackwalk.c     the call stack at an MPI call, with a cache of the last walk
 *   pyframes.c      Python frames on the call path (mpi4py)
 *   sampling.c      timer samples of the call stack between MPI calls
 *   tracer.c        per-rank event and definition files that survive a crash
 *   ompt.c          OpenMP threads through the OpenMP tools interface (OMPT)
 *   ompt_names.c    the names of the OpenMP constructs recorded (ompt.c)
 *   unseen.c        the note of a process that never saw an MPI call
 *   profiler.c      the wait-state profile of seed 003 (003_2d6b9c36e94631c5.txt)
 *   calibrate.c     the profile's no-wait baselines, measured at MPI_Finalize
 *   rankfiles.c     parses the per-rank definition files
 *   unify.c         builds the OTF2 archive from the per-rank files
 *
 * PMPI interposition makes process-wide state unavoidable: it is all in
 * the one struct `ws_pmpi_g`.  The library records the MPI calls of one
 * thread per process, the one that initialised MPI: a call from another
 * thread passes through unrecorded and marks the run, and at MPI_Finalize
 * no trace or profile is written for a run so marked on any rank (a
 * measurement without some of the messages would be wrong).
 */
#ifndef WS_PMPI_PMPI_H
#define WS_PMPI_PMPI_H

#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../common/util.h"
#include "dwarf_line.h"
#include "ompt_abi.h"
#include "plain_regions.h"
#include "rawtrace.h"

#define WS_EXPORT __attribute__((visibility("default")))

/* ---- MPI functions ----------------------------------------------------- */
enum ws_fn {
    WF_INIT, WF_INIT_THREAD, WF_FINALIZE, WF_ABORT,
    WF_COMM_DUP, WF_COMM_SPLIT, WF_COMM_CREATE, WF_COMM_FREE, WF_CART_CREATE,
    WF_COMM_SPLIT_TYPE, WF_CART_SUB, WF_COMM_CREATE_GROUP,
    WF_INTERCOMM_CREATE, WF_INTERCOMM_MERGE,
    WF_SEND, WF_SSEND, WF_BSEND, WF_RSEND, WF_RECV, WF_SENDRECV, WF_ISEND, WF_ISSEND, WF_IRECV,
    WF_PROBE, WF_IPROBE, WF_WAIT, WF_WAITALL, WF_WAITANY, WF_WAITSOME, WF_TEST, WF_TESTALL,
    WF_TESTANY, WF_TESTSOME,
    WF_BARRIER, WF_BCAST, WF_REDUCE, WF_ALLREDUCE, WF_GATHER, WF_GATHERV, WF_SCATTER, WF_SCATTERV,
    WF_ALLGATHER, WF_ALLGATHERV, WF_ALLTOALL, WF_ALLTOALLV, WF_REDUCE_SCATTER, WF_SCAN, WF_EXSCAN,
    WF_Request_free, WF_MPROBE, WF_IMPROBE, WF_MRECV, WF_IMRECV,
#define WS_PLAIN_ENUM(NAME, ROLE, PARAMS, ARGS) WF_##NAME,
    WS_PLAIN_REGIONS(WS_PLAIN_ENUM)
#undef WS_PLAIN_ENUM
    WF_COUNT
};
const char *ws_fn_name(int fn);
int ws_fn_role(int fn);          /* OTF2_RegionRole */
int ws_fn_is_collective(int fn);

/* local region ids: MPI functions first, then the program, then user code;
 * the OpenMP constructs (ompt.c) from WS_REGION_FIRST_OMP on */
#define WS_REGION_PROGRAM ((uint32_t)WF_COUNT)
#define WS_REGION_FIRST_USER ((uint32_t)WF_COUNT + 1)
#define WS_REGION_FIRST_OMP WS_RAW_FIRST_OMP_REGION
/* What ws_callpath_region_of returns for a function a compiler outlined
 * from an OpenMP construct (main._omp_fn.0, .omp_outlined.): no frame of
 * the call path, but where the code of a parallel region begins. */
#define WS_REGION_OUTLINED 0xffffffffu

/* ---- tracer ------------------------------------------------------------ */
typedef struct ws_tracer {
    int on;
    char *dir;          /* DIR/.waitscope */
    int evt_fd, def_fd; /* -1 until MPI_Init names them */
    char evt_path[4096], def_path[4096];
    ws_raw_event *buf;  /* before MPI_Init: heap block; then: mapped window of the file */
    size_t n, cap;
    int mapped;
    uint64_t window;    /* index of the mapped window */
    size_t window_records; /* its size (WAITSCOPE_BUFFER) */
    uint64_t written;   /* records in the windows before the mapped one */
    int failed;         /* an I/O error stopped tracing */
    ws_buffer pending;  /* definition lines before the files are open */
    pthread_mutex_t def_lock; /* definition lines come from every OpenMP thread (ompt.c) */
    struct sigaction previous[8]; /* handlers of the fatal signals before ours */
} ws_tracer;

int ws_tracer_setup(ws_tracer *t, const char *trace_dir);          /* at load time */
/* The records of a window of the event file for a size such as "16M",
 * "64MiB", "1G" or "1048576" (bytes; WAITSCOPE_BUFFER): whole pages, at
 * least 20 KiB; the default (1.25 MiB) for NULL or a size it cannot read. */
size_t ws_tracer_window_records(const char *text);
int ws_tracer_open(ws_tracer *t, int rank, int size, const char *host, uint64_t start);
/* mkdir -p; 0 or -1 */
int ws_mkdir_p(const char *dir);
/* Removes the per-rank files and the anchor of an earlier run in trace_dir. */
void ws_tracer_remove_stale(const ws_tracer *t, const char *trace_dir);
void ws_tracer_event(ws_tracer *t, const ws_raw_event *e);
/* An OpenMP thread's own event file (ompt.c): events go to a growing heap
 * block until ws_tracer_open_events names the file (after MPI_Init). */
int ws_tracer_setup_thread(ws_tracer *t);
int ws_tracer_open_events(ws_tracer *t, const char *path);
void ws_tracer_def(ws_tracer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t ws_tracer_count(const ws_tracer *t);
void ws_tracer_close(ws_tracer *t);
void ws_tracer_install_crash_handlers(void);
/* At exit, a process that never saw MPI_Init leaves a note (unseen.c). */
void ws_unseen_watch(void);
/* The note of a run refused because `ranks` ranks called MPI from more
 * than one thread (rank 0 at MPI_Finalize). */
void ws_unseen_threads(int ranks, int level);

/* ---- call paths -------------------------------------------------------- */
typedef struct ws_frames {
    uint32_t n;
    uint32_t region[128];
} ws_frames;

/* The frames of the last walk of the call stack (stackwalk.c), innermost first */
#define WS_STACK_MAX 256
typedef struct ws_stack_cache {
    int n;
    uintptr_t ip[WS_STACK_MAX];  /* return addresses */
    uintptr_t cfa[WS_STACK_MAX]; /* canonical frame addresses, increasing */
    uint32_t region[WS_STACK_MAX]; /* user region of each, 0 if none */
    uint64_t hits, misses;
} ws_stack_cache;

/* Python frames (pyframes.c) */
typedef struct ws_python_rt {
    int state;                 /* 0: not looked up, 1: CPython's API found, -1: not */
    const struct py_api *api;  /* its functions */
    ws_map64 code_region;      /* code object -> region id (1 << 32: left out) */
} ws_python_rt;

typedef struct ws_callpaths_rt {
    int instrument;            /* frames come from -finstrument-functions hooks */
    int no_hooks;              /* WAITSCOPE_CALLPATH=stack: the hooks are ignored */
    int python;                /* the executable is a Python interpreter */
    ws_python_rt py;           /* its frames */
    ws_frames current;         /* user frames now entered in the trace */
    uint32_t overflow;         /* instrumented frames deeper than `current` holds */
    uint32_t main_region;      /* region id of the entry (main, a Fortran program), 0 until seen */
    uint64_t t_seen;           /* when `current` was last seen on the stack (stack mode), 0: never */
    ws_map64 addr_region;      /* code address -> region id + 1 (0: not user code) */
    uint32_t n_regions;        /* user regions defined */
    char **region_names;       /* by (id - WS_REGION_FIRST_USER) */
    size_t cap_regions;
    /* interned call paths (frames + MPI function) for the profile */
    uint32_t n_paths;
    size_t cap_paths;
    uint32_t **path_regions;   /* path -> [n, regions..., fn] */
    ws_map64 path_index;       /* hash -> path + 1, linear probing on collision */
    ws_stack_cache stack;      /* stack mode: the last walk of the stack */
    /* the thread is the master of an OpenMP team (ompt.c): its frames are
     * those it had at the fork, then those inside the outlined function */
    int omp_team;
    ws_frames omp_base;
    uint64_t n_moves;          /* times the trace's frames were brought up to date */
} ws_callpaths_rt;

void ws_callpath_init(ws_callpaths_rt *c);
/* Brings the user frames up to date at an MPI call (stack mode: from the
 * call stack; instrument mode: nothing to do), emitting Leave/Enter events
 * at time `now`; returns the interned call path of MPI function `fn`. */
uint32_t ws_callpath_at_call(ws_callpaths_rt *c, int fn, uint64_t now);
/* The MPI call that ws_callpath_at_call named ended at t1: its frames
 * were on the stack until then. */
void ws_callpath_after_call(ws_callpaths_rt *c, uint64_t t1);
/* Leaves all user frames (at MPI_Finalize). */
void ws_callpath_leave_all(ws_callpaths_rt *c, uint64_t now);
/* Brings the user frames up to date at an OpenMP event of the thread
 * that initialised MPI (as ws_callpath_at_call, without an MPI call). */
void ws_callpath_sync(ws_callpaths_rt *c, uint64_t now);
/* That thread's OpenMP team begins (its frames so far stay below the
 * parallel region) and ends (the frames entered inside are left). */
void ws_callpath_team_begin(ws_callpaths_rt *c);
void ws_callpath_team_end(ws_callpaths_rt *c, uint64_t now);
const char *ws_callpath_region_name(const ws_callpaths_rt *c, uint32_t region);
/* The user region of this name, defined at its first use; 0 on failure. */
uint32_t ws_callpath_region_named(ws_callpaths_rt *c, const char *name);
/* Region of the user function containing `addr`, 0 if none (cached). */
uint32_t ws_callpath_region_of(ws_callpaths_rt *c, const void *addr);
/* The user regions of the current call stack, innermost first (0: not
 * user code), from the cache of the last walk where it still holds
 * (stackwalk.c); their number. */
int ws_stack_regions(ws_callpaths_rt *c, const uint32_t **regions);
/* "main/solver/MPI_Recv" of an interned call path; returns malloc'ed text */
char *ws_callpath_text(const ws_callpaths_rt *c, uint32_t path);

/* The Python frames of the calling thread, outermost first, as regions
 * (at most `max`); their number, -1 when the process runs no CPython
 * (its API is not found), -2 when the interpreter is not running. */
int ws_python_frames(ws_callpaths_rt *c, uint32_t *out, int max);
/* "MPI.Comm.allreduce" of a Cython wrapper's symbol
 * (__pyx_pw_6mpi4py_3MPI_4Comm_143allreduce, __pyx_getprop_...): 0, or -1
 * when the symbol is no Cython wrapper. */
int ws_python_cython_name(const char *symbol, char *out, size_t size);

/* ---- samples of the call stack between MPI calls (sampling.c) ------------ */
#define WS_SAMPLE_DEPTH 64
typedef struct ws_sample {
    uint64_t t_first, t_last; /* when these callers were first and last seen in a row */
    uint32_t n;               /* addr[0]: where the thread was; then return addresses, innermost first */
    void *addr[WS_SAMPLE_DEPTH];
} ws_sample;

typedef struct ws_sampler {
    volatile int on;
    timer_t timer;
    ws_sample *buf;
    volatile size_t n;
    uint64_t dropped, interval_ns;
    struct sigaction previous;
} ws_sampler;

/* At MPI_Init in stack mode when tracing (WAITSCOPE_SAMPLING ms, default 5). */
void ws_sampling_start(void);
void ws_sampling_stop(void);
/* The samples taken since the last ws_sampling_clear, in time order. */
size_t ws_sampling_take(const ws_sample **samples);
void ws_sampling_clear(void);

/* ---- OpenMP through OMPT (ompt.c) --------------------------------------- */
typedef struct ws_omp_thread ws_omp_thread;
/* the constructs recorded, each a region (Score-P's names and roles) */
enum ws_omp_kind {
    WS_OMP_PARALLEL, WS_OMP_IBARRIER, WS_OMP_BARRIER, WS_OMP_CRITICAL, WS_OMP_CRITICAL_SBLOCK, WS_OMP_LOOP,
    WS_OMP_SECTIONS, WS_OMP_SINGLE, WS_OMP_MASTER, WS_OMP_WORKSHARE,
    WS_OMP_SET_LOCK, WS_OMP_UNSET_LOCK, WS_OMP_TEST_LOCK, WS_OMP_SET_NEST_LOCK, WS_OMP_UNSET_NEST_LOCK,
    WS_OMP_TEST_NEST_LOCK,
    WS_OMP_KIND_COUNT
};
typedef struct ws_omp_construct {
    uint8_t kind;     /* ompt.c's construct kinds */
    const void *code; /* the return address the runtime reported, NULL if none */
} ws_omp_construct;

typedef struct ws_omp_rt {
    int state;                      /* 0: no tool started, 1: recording, -1: declined */
    char runtime[160];              /* the runtime's version string */
    ompt_start_tool_result_t result;
    ompt_get_thread_data_t get_thread_data;
    /* the lock of everything below; zero-initialised state is a valid
     * mutex (the runtime may start the tool before the library's
     * constructor has run) */
    pthread_mutex_t lock;
    ws_omp_thread *threads;         /* every thread seen, newest first */
    uint32_t n_workers;
    uint64_t n_parallel;            /* parallel regions begun */
    ws_map64 construct_ids;         /* (kind, code) -> index + 1 */
    ws_omp_construct *constructs;
    size_t n_constructs, cap_constructs;
    ws_map64 lock_ids;              /* wait id -> lock id + 1 */
    uint64_t *lock_order;           /* acquisitions of each lock so far */
    size_t n_locks, cap_locks;
    int files_open;                 /* the process's trace files exist (after MPI_Init) */
} ws_omp_rt;

/* At MPI_Finalize, before the trace files are closed: the teams still
 * open are closed, the threads' event files written and the constructs
 * named; `now` ends what the thread that initialised MPI has open. */
void ws_omp_finalize(uint64_t now);
/* The threads' event files of a measurement that is void (removed). */
void ws_omp_discard(void);
/* The process's trace files are open (MPI_Init): threads may open theirs. */
void ws_omp_files_open(void);
/* The definition lines naming the constructs ("ompregion ..."), at MPI_Finalize (ompt_names.c). */
void ws_omp_name_constructs(ws_omp_rt *o);
const char *ws_omp_construct_prefix(int kind);
int ws_omp_construct_role(int kind);

/* ---- symbol names ------------------------------------------------------ */
/* Name of the function containing `addr` and whether it is user code (the
 * executable or a shared object outside the system library directories)
 * and the program's entry (C `main`, a Fortran main program).  Returns 0
 * when found; *start is the function's start address. */
int ws_symbol_lookup(const void *addr, char *name, size_t size, uintptr_t *start, int *user, int *entry);
int ws_symbol_executable_is_python(void);
/* The source file (base name) and line of code address `addr` (a
   return address is looked up as addr - 1 by the caller), from the
   .debug_line of its object or the object's separate debugging
   information; 0 when found, -1 without line information.  Called only
   from the thread that initialised MPI: no locking. */
int ws_symbol_source(const void *addr, char *file, size_t size, unsigned *line);

/* The sections of an ELF file's DWARF (dwarf.c); NULL where absent. */
typedef struct ws_dwarf_sections {
    const unsigned char *info, *abbrev, *str, *line_str;
    size_t info_size, abbrev_size, str_size, line_str_size;
} ws_dwarf_sections;
/* The name of the Fortran main program (`program sweep3d`): 0 when found. */
int ws_dwarf_main_program(const ws_dwarf_sections *s, char *out, size_t size);
/* ws_dwarf_line, the source line of an address from .debug_line: dwarf_line.h */

/* ---- profiler ---------------------------------------------------------- */
typedef struct ws_prof_entry {
    uint32_t path;   /* interned call path; UINT32_MAX marks an empty slot */
    int16_t fn;
    int8_t size_class;
    int8_t root;
    uint64_t count;
    double sum, min;
} ws_prof_entry;

/* A category of point-to-point calls to calibrate (calibrate.c): an MPI
 * function and size class, with the partners the rank had in it */
#define WS_CAL_PARTNERS 4
typedef struct ws_cal_need {
    int16_t fn;
    int8_t size_class;
    uint8_t n_partners;
    int partner[WS_CAL_PARTNERS]; /* ranks in MPI_COMM_WORLD */
    double bytes;                 /* summed over the calls */
    uint64_t count;
    /* the no-wait durations measured at MPI_Finalize */
    uint32_t n_samples;
    double min, median, max;
} ws_cal_need;

typedef struct ws_profiler {
    int on;
    char *dir;
    ws_prof_entry *slots;
    size_t cap, n;
    ws_cal_need *needs;
    size_t n_needs, cap_needs;
} ws_profiler;

int ws_profiler_setup(ws_profiler *p, const char *dir);
void ws_profiler_record(ws_profiler *p, uint32_t path, int fn, uint64_t bytes, int has_bytes, int root, double seconds);
/* Collective over MPI_COMM_WORLD (PMPI): rank 0 writes DIR/profile.json. */
void ws_profiler_finalize(ws_profiler *p, const ws_callpaths_rt *c, int rank, int size, double exec_time,
                          double mpi_time, const char *command);
/* The calibration (calibrate.c), collective over `comm` (a duplicate of
 * MPI_COMM_WORLD): the no-wait durations of the rank's point-to-point
 * categories, measured with the partners it had, into p->needs. */
void ws_calibrate(ws_profiler *p, MPI_Comm comm, int rank, int size);
/* The partners of the call in progress (ws_pmpi.call_partner) join the
 * calibration category of (fn, bytes) (profiler.c). */
void ws_profiler_partners(ws_profiler *p, int fn, uint64_t bytes, const int *partners, int n);

/* ---- Fortran bindings (fortran.c) --------------------------------------- */
typedef struct ws_fortran_rt {
    void (*real[2][WF_COUNT])(void); /* the MPI's own binding: [0] mpif.h/use mpi, [1] use mpi_f08 */
    int sentinels_known;             /* in_place below was looked up */
    const void *const *in_place_var; /* MPICH: where its mpif.h binding keeps MPI_IN_PLACE's address */
    const void *in_place;            /* Open MPI: MPI_IN_PLACE of both bindings */
} ws_fortran_rt;

/* ---- communicators and requests (wrappers_env.c / wrappers_p2p.c) ----- */
typedef struct ws_comm_entry {
    MPI_Comm comm;
    uint32_t id;
    int *world; /* rank in MPI_COMM_WORLD of each rank, NULL until asked */
    int size;
} ws_comm_entry;


typedef struct ws_request {
    uint64_t id;    /* request id in the trace */
    uint32_t comm;  /* local communicator id */
    uint32_t next;  /* next record with the same handle / next free; UINT32_MAX ends */
    int is_recv;
} ws_request;

/* ---- the process-wide state ------------------------------------------- */
typedef struct ws_pmpi {
    int loaded;        /* constructor ran */
    /* WAITSCOPE_DEBUG_CLOCK: this process's clock made to disagree with
     * the others' (offset and drift), to check that the trace undoes it */
    int skewed;
    uint64_t skew_base;
    int64_t skew_ns;
    double skew_rate;
    int measuring;     /* between MPI_Init and MPI_Finalize, tracing or profiling */
    int in_call;       /* inside a wrapper: nested MPI calls pass through */
    const void *hint_ra; /* the exported wrapper's return address and CFA (WS_HINT), NULL: none */
    uintptr_t hint_cfa;
    pthread_t owner;   /* the thread that initialised MPI: the one recorded */
    int other_thread;  /* another thread called MPI: the measurement is void */
    int thread_level;  /* what MPI_Init_thread provided (MPI_THREAD_SINGLE after MPI_Init) */
    int done;          /* MPI_Finalize returned or the rank is dying */
    int rank, size;
    uint64_t t_start, t_init, t_finalize;
    uint64_t mpi_ns;
    char *command;
    ws_tracer tracer;
    ws_callpaths_rt cp;
    ws_sampler sampler;
    struct ws_symbols *symbols; /* symtab.c: ELF symbol tables read so far */
    ws_profiler prof;
    ws_fortran_rt fortran;
    ws_omp_rt omp;
    pthread_t main_thread;     /* the thread that loaded the library */
    MPI_Comm private_comm;     /* duplicate of MPI_COMM_WORLD for the library's own messages */
    /* communicators */
    ws_comm_entry *comms;
    size_t n_comms, cap_comms;
    uint32_t next_comm_id, comm_serial;
    /* requests */
    /* requests: handle -> first of a chain of records (an MPI may hand out
     * one handle for several requests that completed at once, e.g. MPICH's
     * eager sends); chains complete in order */
    ws_map64 requests;
    struct ws_request *req_pool;
    size_t n_req_pool, cap_req_pool;
    uint32_t req_free; /* head of the free list, UINT32_MAX if none */
    uint64_t next_request;
    ws_map64 messages; /* matched-probe message handle -> local communicator id */
    /* the MPI call in progress */
    int call_fn;
    uint32_t call_path;
    uint64_t call_t0;
    int call_partner[WS_CAL_PARTNERS]; /* its partners (world ranks), for the calibration */
    int n_call_partners;
} ws_pmpi;

extern ws_pmpi ws_pmpi_g;

/* Whether the calling thread is not the one that initialised MPI (then
 * the run is marked: ws_pmpi.other_thread). */
static inline int ws_other_thread(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (pthread_equal(pthread_self(), g->owner))
        return 0;
    __atomic_store_n(&g->other_thread, 1, __ATOMIC_RELAXED);
    return 1;
}

/* Notes, in an exported wrapper, where the program called it from: the
 * return address and the wrapper's own CFA (stackwalk.c's fast path). */
#if defined(__GNUC__) && defined(__x86_64__)
#define WS_HINT() (ws_pmpi_g.hint_ra = __builtin_return_address(0), ws_pmpi_g.hint_cfa = (uintptr_t)__builtin_dwarf_cfa())
#else
#define WS_HINT() ((void)0)
#endif

/* A wrapper only passes the call on: not measuring, inside another
 * wrapper, or another thread's call (WS_PASS_THROUGH: and otherwise notes
 * its caller; used at the top of the exported wrapper). */
#define WS_PASS_THROUGH_NO_HINT (!ws_pmpi_g.measuring || ws_other_thread() || ws_pmpi_g.in_call)
#define WS_PASS_THROUGH (WS_PASS_THROUGH_NO_HINT || (WS_HINT(), 0))

uint64_t ws_now(void);

/* Wrapper helpers (wrappers_env.c) */
uint64_t ws_call_begin(int fn);                    /* returns the enter time */
void ws_call_end(int fn, uint64_t t1, uint64_t bytes, int has_bytes, int root);
void ws_emit(uint64_t time, uint8_t kind, uint32_t a, uint32_t comm, uint32_t tag, uint64_t bytes, uint64_t req,
             uint8_t op);
uint32_t ws_comm_id(MPI_Comm comm);
/* Notes rank `peer` of the communicator with local id `comm` as a partner
 * of the call in progress (profiling only). */
void ws_call_partner(uint32_t comm, int peer);
uint64_t ws_type_bytes(long long count, MPI_Datatype type);

/* Shared by the int and the MPI-4 large-count (_c) wrappers */
void ws_send_begin(int fn, uint64_t bytes, int dest, int tag, MPI_Comm comm);
void ws_recv_end(int fn, int rc, MPI_Comm comm, const MPI_Status *st);
/* the same with the communicator's local id (UINT32_MAX: unknown) */
void ws_recv_end_id(int fn, int rc, uint32_t comm, const MPI_Status *st);
uint64_t ws_isend_begin(int fn, uint64_t bytes, int dest, int tag, MPI_Comm comm);
void ws_isend_end(int fn, int rc, MPI_Request *req, uint64_t id, MPI_Comm comm, uint64_t bytes);
void ws_irecv_end(int fn, int rc, uint64_t t0, int source, MPI_Comm comm, MPI_Request *req);
/* a receive request started on the communicator with local id `comm` */
void ws_irecv_end_id(int fn, int rc, uint64_t t0, uint32_t comm, MPI_Request *req);
uint64_t ws_coll_begin(int fn);
/* root < 0: the operation has no root */
void ws_coll_end(int fn, MPI_Comm comm, uint8_t op, int root, uint64_t sent, uint64_t received, uint64_t payload,
                 int has_payload);

/* What a collective records (coll_bytes.c): operation, root (-1: none),
 * bytes sent and received, the payload of the profile's size class. */
typedef struct ws_coll_info {
    uint8_t op;
    int root;
    uint64_t sent, received, payload;
    int has_payload;
} ws_coll_info;
ws_coll_info ws_coll_barrier(void);
ws_coll_info ws_coll_bcast(long long count, MPI_Datatype type, int root, MPI_Comm comm);
ws_coll_info ws_coll_reduce(long long count, MPI_Datatype type, int root, MPI_Comm comm);
/* fn: WF_ALLREDUCE, WF_SCAN or WF_EXSCAN */
ws_coll_info ws_coll_allreduce(int fn, long long count, MPI_Datatype type, MPI_Comm comm);
ws_coll_info ws_coll_gather(int send_in_place, long long sendcount, MPI_Datatype sendtype, long long recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm);
ws_coll_info ws_coll_gatherv(int send_in_place, long long sendcount, MPI_Datatype sendtype, const int recvcounts[],
                             MPI_Datatype recvtype, int root, MPI_Comm comm);
ws_coll_info ws_coll_scatter(int recv_in_place, long long sendcount, MPI_Datatype sendtype, long long recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm);
ws_coll_info ws_coll_scatterv(int recv_in_place, const int sendcounts[], MPI_Datatype sendtype, long long recvcount,
                              MPI_Datatype recvtype, int root, MPI_Comm comm);
/* fn: WF_ALLGATHER or WF_ALLTOALL */
ws_coll_info ws_coll_allgather(int fn, int send_in_place, long long sendcount, MPI_Datatype sendtype,
                               long long recvcount, MPI_Datatype recvtype, MPI_Comm comm);
ws_coll_info ws_coll_allgatherv(int send_in_place, long long sendcount, MPI_Datatype sendtype,
                                const int recvcounts[], MPI_Datatype recvtype, MPI_Comm comm);
ws_coll_info ws_coll_alltoallv(int send_in_place, const int sendcounts[], MPI_Datatype sendtype,
                               const int recvcounts[], MPI_Datatype recvtype, MPI_Comm comm);
ws_coll_info ws_coll_reduce_scatter(const int recvcounts[], MPI_Datatype type, MPI_Comm comm);
/* ws_coll_end with what `k` says */
void ws_coll_finish(int fn, MPI_Comm comm, const ws_coll_info *k);

/* Matched probes (wrappers_mprobe.c): the probe that matched message `m`
 * on `comm` notes it; a matched receive takes its communicator's local id
 * (UINT32_MAX: unknown) and forgets the handle. */
void ws_message_note(MPI_Message m, MPI_Comm comm);
uint32_t ws_message_take(MPI_Message m);

/* Request table (wrappers_p2p.c) */
void ws_requests_free_all(void);
/* Drops the oldest tracked record of handle r (MPI_Request_free). */
void ws_request_forget(MPI_Request r);
/* Records the completion of request `r` (its handle before the completion
 * call) with status `st` at time `now`; returns the bytes it received. */
uint64_t ws_request_complete(uint64_t now, MPI_Request r, const MPI_Status *st);

/* Process life (wrappers_env.c), shared with the Fortran wrappers */
/* After the MPI's own initialisation succeeded (enter time t0). */
void ws_after_init(int fn, uint64_t t0);
/* Everything MPI_Finalize records and writes, up to PMPI_Finalize. */
void ws_finalize_measurement(void);
/* Records MPI_Abort (before the MPI's own). */
void ws_abort_record(int code);
/* A communicator just made from `parent` (collective over it); `cart`:
 * made by MPI_Cart_create/Cart_sub, with its Cartesian topology. */
void ws_comm_register(MPI_Comm comm, MPI_Comm parent, int cart);
void ws_comm_forget(MPI_Comm comm);

#endif
