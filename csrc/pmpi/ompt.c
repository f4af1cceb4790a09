/* OpenMP threads through the OpenMP tools interface (OMPT, OpenMP 5.0).
 *
 * An OpenMP runtime with OMPT (LLVM's libomp; GCC-compiled programs run
 * on it through its libgomp compatibility) looks up `ompt_start_tool` in
 * the process when it initialises; the library's answers it when a trace
 * is written and registers callbacks that record what Score-P records for
 * OpenMP, so that the trace analyses like Score-P's:
 *
 *   fork/join   ThreadFork (requested threads) ... ThreadJoin on the
 *               thread that encountered the parallel construct;
 *   teams       per thread of the team ThreadTeamBegin, Enter of the
 *               parallel region ("!$omp parallel @file:line"), ...,
 *               Leave, ThreadTeamEnd;
 *   barriers    Enter/Leave of "!$omp barrier" (explicit) or "!$omp
 *               implicit barrier" (every other barrier, also the
 *               runtime's own: through the libgomp interface a GCC
 *               program's explicit barriers look like those);
 *   critical    Enter "!$omp critical", ThreadAcquireLock, Enter "!$omp
 *               critical sblock" ... Leave, ThreadReleaseLock, Leave;
 *   locks       omp_set_lock/omp_unset_lock (and the nest and test
 *               variants) as wrapper regions around ThreadAcquireLock /
 *               ThreadReleaseLock, with Score-P's acquisition order;
 *   worksharing "!$omp for", "!$omp sections", "!$omp single", "!$omp
 *               workshare", "!$omp master" where the runtime reports them.
 *
 * The thread that initialised MPI (the initial thread) records into the
 * process's event file, with its call path brought up to date at each
 * construct it begins (callpath.c); every other thread into its own file,
 * p<pid>.t<k>.evt next to it, named in the process's definitions
 * ("thread k") once MPI_Init has created the directory's files (events
 * before that wait in memory).  Those threads record the constructs only,
 * not the functions they call.  Each parallel region is numbered in the
 * process; a thread's ThreadTeamBegin carries the number, its index in
 * the team and the team's size, from which the unification (unify.c)
 * makes Score-P's team communicators.
 *
 * LLVM's runtime reports the end of the implicit barrier at a parallel
 * region's end to the threads other than the master only when they are
 * woken for the next region: they would seem to wait there through all
 * the serial code in between.  So the master notes when the team was
 * released (the end of its last barrier in the region) and the others
 * leave the barrier, the region and the team then, or when their report
 * comes if it comes earlier.
 *
 * Nested parallel regions are recorded at the outermost level only; the
 * constructs of inner levels are left out.  Tasks are not recorded.
 *
 * Process-wide state is in ws_pmpi_g.omp; each thread's in the
 * ws_omp_thread the runtime keeps for it (ompt_get_thread_data). */
#define _GNU_SOURCE
#include "pmpi.h"

#include <dlfcn.h>
#include <otf2/OTF2_Definitions.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../trace/trace.h"

#define OMP_DEPTH 64
#define OMP_HELD 16

typedef struct ws_omp_team {
    uint64_t number;    /* of the parallel region in the process */
    const void *code;   /* the parallel construct's return address */
    uint64_t t_release; /* the end of the master's last barrier in the region */
    int released;       /* the master has left the team (atomic) */
    int refs;           /* the fork, and each member still in it (atomic) */
} ws_omp_team;

struct ws_omp_thread {
    int master;            /* records into the process's event file */
    uint32_t number;       /* the others: 1, 2, ... as they started */
    ws_tracer tr;          /* the others: their own event file */
    pthread_mutex_t lock;  /* tr, against MPI_Finalize closing it */
    int closed;
    int level;             /* implicit tasks open (parallel regions it is in) */
    ws_omp_team *team;     /* of the outermost one, NULL if not recorded */
    uint32_t stack[OMP_DEPTH]; /* regions entered in it */
    const void *code[OMP_DEPTH]; /* and where (the critical sections') */
    int depth;
    uint64_t last;         /* time of its last event */
    uint64_t moves;        /* the master: its call path's moves when it was last brought up to date */
    /* the locks it holds with their acquisition numbers: the runtime
     * reports a release after the next holder may have acquired */
    struct {
        uint32_t id;
        uint64_t order;
    } held[OMP_HELD];
    int n_held;
    ws_omp_thread *next;
};

static ws_omp_rt *rt(void)
{
    return &ws_pmpi_g.omp;
}

/* ---- events ---------------------------------------------------------------- */

static int recording(void)
{
    ws_pmpi *g = &ws_pmpi_g;
    return rt()->state == 1 && g->tracer.on && !g->done;
}

static void thread_file(ws_omp_thread *th)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (th->tr.evt_fd >= 0 || th->tr.failed || !__atomic_load_n(&rt()->files_open, __ATOMIC_ACQUIRE))
        return;
    char path[4200];
    size_t n = strlen(g->tracer.def_path);
    if (n < 5)
        return;
    snprintf(path, sizeof path, "%.*s.t%u.evt", (int)(n - 5), g->tracer.def_path, (unsigned)th->number);
    if (ws_tracer_open_events(&th->tr, path) == 0)
        ws_tracer_def(&g->tracer, "thread\t%u\n", (unsigned)th->number);
}

/* An event of thread `th`, never before its previous one. */
static void emit_locked(ws_omp_thread *th, uint64_t time, uint8_t kind, uint32_t a, uint32_t tag, uint64_t bytes,
                        uint64_t req)
{
    if (time < th->last)
        time = th->last;
    th->last = time;
    ws_raw_event e = {time, kind, 0, 0, a, 0, tag, bytes, req};
    if (th->master) {
        ws_tracer *t = &ws_pmpi_g.tracer;
        if (t->on)
            ws_tracer_event(t, &e);
        return;
    }
    if (th->closed)
        return;
    thread_file(th);
    ws_tracer_event(&th->tr, &e);
}

static void emit(ws_omp_thread *th, uint64_t time, uint8_t kind, uint32_t a, uint32_t tag, uint64_t bytes,
                 uint64_t req)
{
    if (th->master) {
        emit_locked(th, time, kind, a, tag, bytes, req);
        return;
    }
    pthread_mutex_lock(&th->lock);
    emit_locked(th, time, kind, a, tag, bytes, req);
    pthread_mutex_unlock(&th->lock);
}

/* ---- constructs and locks ------------------------------------------------- */

/* The region of construct `kind` at `code`; 0 when out of memory. */
static uint32_t construct(int kind, const void *code)
{
    ws_omp_rt *o = rt();
    uint64_t key = (uint64_t)kind << 56 ^ ((uint64_t)(uintptr_t)code & ((1ull << 56) - 1)), v;
    uint32_t region = 0;
    pthread_mutex_lock(&o->lock);
    if (ws_map64_get(&o->construct_ids, key, &v)) {
        region = WS_REGION_FIRST_OMP + (uint32_t)(v - 1);
    } else if (ws_grow((void **)&o->constructs, &o->cap_constructs, o->n_constructs + 1, sizeof *o->constructs) ==
                   0 &&
               ws_map64_put(&o->construct_ids, key, o->n_constructs + 1) == 0) {
        size_t i = o->n_constructs++;
        o->constructs[i] = (ws_omp_construct){(uint8_t)kind, code};
        region = WS_REGION_FIRST_OMP + (uint32_t)i;
        /* named for now by the address; at MPI_Finalize by its source line (ompt_names.c) */
        if (code)
            ws_tracer_def(&ws_pmpi_g.tracer, "ompregion\t%zu\t%d\t%s @%p\n", i, ws_omp_construct_role(kind),
                          ws_omp_construct_prefix(kind), code);
        else
            ws_tracer_def(&ws_pmpi_g.tracer, "ompregion\t%zu\t%d\t%s\n", i, ws_omp_construct_role(kind),
                          ws_omp_construct_prefix(kind));
    }
    pthread_mutex_unlock(&o->lock);
    return region;
}

/* The lock id of a runtime's wait id and, with `acquire`, a new
 * acquisition (its number in *order); else the latest one's. */
static uint32_t lock_of(ompt_wait_id_t wait_id, int acquire, uint64_t *order)
{
    ws_omp_rt *o = rt();
    uint64_t key = wait_id == UINT64_MAX ? UINT64_MAX - 1 : wait_id, v;
    uint32_t id = UINT32_MAX;
    pthread_mutex_lock(&o->lock);
    if (ws_map64_get(&o->lock_ids, key, &v)) {
        id = (uint32_t)(v - 1);
    } else if (ws_grow((void **)&o->lock_order, &o->cap_locks, o->n_locks + 1, sizeof *o->lock_order) == 0 &&
               ws_map64_put(&o->lock_ids, key, o->n_locks + 1) == 0) {
        id = (uint32_t)o->n_locks++;
        o->lock_order[id] = 0;
    }
    if (id != UINT32_MAX) {
        if (acquire)
            o->lock_order[id]++;
        *order = o->lock_order[id];
    }
    pthread_mutex_unlock(&o->lock);
    return id;
}

/* The thread acquired lock `id` (order), released it (its order: *order). */
static void hold(ws_omp_thread *th, uint32_t id, uint64_t order)
{
    if (th->n_held < OMP_HELD) {
        th->held[th->n_held].id = id;
        th->held[th->n_held++].order = order;
    }
}

static void unhold(ws_omp_thread *th, uint32_t id, uint64_t *order)
{
    for (int i = th->n_held; i-- > 0;)
        if (th->held[i].id == id) {
            *order = th->held[i].order;
            th->held[i] = th->held[--th->n_held];
            return;
        }
}

/* ---- threads --------------------------------------------------------------- */

static ws_omp_thread *new_thread(int master)
{
    ws_omp_rt *o = rt();
    ws_omp_thread *th = calloc(1, sizeof *th);
    if (!th)
        return NULL;
    th->master = master;
    if (!master) {
        pthread_mutex_init(&th->lock, NULL);
        if (ws_tracer_setup_thread(&th->tr) != 0) {
            free(th);
            return NULL;
        }
    }
    pthread_mutex_lock(&o->lock);
    if (!master)
        th->number = ++o->n_workers;
    th->next = o->threads;
    o->threads = th;
    pthread_mutex_unlock(&o->lock);
    return th;
}

static int is_main_thread(void)
{
    return (pid_t)syscall(SYS_gettid) == getpid();
}

/* The calling thread's state, made at its first event if the runtime did
 * not report the thread's begin. */
static ws_omp_thread *self(void)
{
    ws_omp_rt *o = rt();
    ompt_data_t *d = o->get_thread_data ? o->get_thread_data() : NULL;
    if (!d)
        return NULL;
    if (!d->ptr)
        d->ptr = new_thread(is_main_thread());
    return d->ptr;
}

static void push(ws_omp_thread *th, uint32_t region, uint64_t now, const void *code)
{
    if (th->depth == OMP_DEPTH || !region)
        return;
    th->code[th->depth] = code;
    th->stack[th->depth++] = region;
    emit(th, now, WS_EV_ENTER, region, 0, 0, 0);
}

/* The master's call path is brought up to date where a construct begins
 * or ends: the functions it entered inside a construct are left before it. */
static void sync_master(ws_omp_thread *th, uint64_t now)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (th->master && g->loaded && !g->done) {
        ws_callpath_sync(&g->cp, now);
        th->moves = g->cp.n_moves;
    }
}

/* Where a construct ends the call stack is the one where it began: its
 * frames in the trace changed only if an MPI call or a sample moved them
 * since (no stack walk otherwise). */
static void sync_master_end(ws_omp_thread *th, uint64_t now)
{
    ws_pmpi *g = &ws_pmpi_g;
    if (th->master && (g->cp.n_moves != th->moves || g->sampler.n > 0))
        sync_master(th, now);
}

/* Leaves `region` if it is the innermost open one (what was entered
 * before the recording began is not). */
static void pop_now(ws_omp_thread *th, uint32_t region, uint64_t now)
{
    if (!region || th->depth == 0 || th->stack[th->depth - 1] != region)
        return;
    th->depth--;
    emit(th, now, WS_EV_LEAVE, region, 0, 0, 0);
}

/* The same after the master's call path was brought up to date. */
static void pop(ws_omp_thread *th, uint32_t region, uint64_t now)
{
    if (region && th->depth > 0 && th->stack[th->depth - 1] == region)
        sync_master_end(th, now);
    pop_now(th, region, now);
}

static void team_unref(ws_omp_team *team)
{
    if (__atomic_sub_fetch(&team->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(team);
}

/* When a thread other than the master leaves its team's last barrier: when
 * the master was released, if that was before the report. */
static uint64_t released_at(const ws_omp_thread *th, uint64_t now)
{
    const ws_omp_team *team = th->team;
    if (th->master || !team || !__atomic_load_n(&team->released, __ATOMIC_ACQUIRE))
        return now;
    uint64_t t = team->t_release < now ? team->t_release : now;
    return t > th->last ? t : th->last;
}

/* The thread leaves its team at `t` (the caller holds th->lock for the
 * threads that have one). */
static void team_end_locked(ws_omp_thread *th, uint64_t t)
{
    ws_omp_team *team = th->team;
    while (th->depth > 0)
        emit_locked(th, t, WS_EV_LEAVE, th->stack[--th->depth], 0, 0, 0);
    emit_locked(th, t, WS_EV_THREAD_TEAM_END, 0, 0, 0, team->number);
    if (th->master) {
        if (!team->t_release)
            team->t_release = t;
        __atomic_store_n(&team->released, 1, __ATOMIC_RELEASE);
    }
    th->team = NULL;
    team_unref(team);
}

static void team_end(ws_omp_thread *th, uint64_t now)
{
    if (!th->team)
        return;
    if (th->master) {
        ws_pmpi *g = &ws_pmpi_g;
        if (g->loaded && !g->done)
            ws_callpath_team_end(&g->cp, now);
        team_end_locked(th, now);
        return;
    }
    pthread_mutex_lock(&th->lock);
    team_end_locked(th, released_at(th, now));
    pthread_mutex_unlock(&th->lock);
}

/* ---- callbacks ------------------------------------------------------------- */

static void on_thread_begin(int type, ompt_data_t *data)
{
    if (data && !data->ptr)
        data->ptr = new_thread(type == WS_OMPT_THREAD_INITIAL || (type != WS_OMPT_THREAD_WORKER && is_main_thread()));
}

static void on_thread_end(ompt_data_t *data)
{
    ws_omp_thread *th = data ? data->ptr : NULL;
    if (th && th->team)
        team_end(th, ws_now());
}

static void on_parallel_begin(ompt_data_t *task, const ompt_frame_t *frame, ompt_data_t *parallel,
                              unsigned requested, int flags, const void *code)
{
    (void)task;
    (void)frame;
    (void)flags;
    if (!parallel)
        return;
    parallel->ptr = NULL;
    ws_omp_thread *th = self();
    if (!th || th->level > 0 || !recording())
        return;
    ws_omp_team *team = calloc(1, sizeof *team);
    if (!team)
        return;
    team->number = __atomic_fetch_add(&rt()->n_parallel, 1, __ATOMIC_RELAXED);
    team->code = code;
    team->refs = 1;
    parallel->ptr = team;
    uint64_t now = ws_now();
    sync_master(th, now);
    emit(th, now, WS_EV_THREAD_FORK, requested, 0, 0, 0);
}

static void on_parallel_end(ompt_data_t *parallel, ompt_data_t *task, int flags, const void *code)
{
    (void)task;
    (void)flags;
    (void)code;
    ws_omp_team *team = parallel ? parallel->ptr : NULL;
    if (!team)
        return;
    parallel->ptr = NULL;
    ws_omp_thread *th = self();
    if (th && recording())
        emit(th, ws_now(), WS_EV_THREAD_JOIN, 0, 0, 0, 0);
    team_unref(team);
}

static void on_implicit_task(int endpoint, ompt_data_t *parallel, ompt_data_t *task, unsigned size,
                             unsigned index, int flags)
{
    (void)task;
    if (flags & WS_OMPT_TASK_INITIAL)
        return;
    ws_omp_thread *th = self();
    if (!th)
        return;
    if (endpoint == WS_OMPT_SCOPE_END) {
        if (th->level > 0 && --th->level == 0)
            team_end(th, ws_now());
        return;
    }
    if (th->level++ > 0)
        return;
    ws_omp_team *team = parallel ? parallel->ptr : NULL;
    if (!team || !recording())
        return;
    __atomic_add_fetch(&team->refs, 1, __ATOMIC_ACQ_REL);
    th->team = team;
    th->depth = 0;
    uint64_t now = ws_now();
    emit(th, now, WS_EV_THREAD_TEAM_BEGIN, 0, index, size, team->number);
    push(th, construct(WS_OMP_PARALLEL, team->code), now, NULL);
    if (th->master && ws_pmpi_g.loaded)
        ws_callpath_team_begin(&ws_pmpi_g.cp);
}

static int barrier_kind(int kind)
{
    switch (kind) {
    case WS_OMPT_SYNC_BARRIER_EXPLICIT:
        return WS_OMP_BARRIER;
    case WS_OMPT_SYNC_BARRIER:
    case WS_OMPT_SYNC_BARRIER_IMPLICIT:
    case WS_OMPT_SYNC_BARRIER_IMPLEMENTATION:
    case WS_OMPT_SYNC_BARRIER_IMPLICIT_WORKSHARE:
    case WS_OMPT_SYNC_BARRIER_IMPLICIT_PARALLEL:
    case WS_OMPT_SYNC_BARRIER_TEAMS:
        return WS_OMP_IBARRIER;
    default:
        return -1; /* taskwait, taskgroup, reduction */
    }
}

/* The thread is in a recorded team, at its outermost level. */
static ws_omp_thread *in_team(void)
{
    ws_omp_thread *th = self();
    return th && th->team && th->level == 1 && recording() ? th : NULL;
}

static void on_sync_region(int kind, int endpoint, ompt_data_t *parallel, ompt_data_t *task, const void *code)
{
    (void)parallel;
    (void)task;
    int k = barrier_kind(kind);
    ws_omp_thread *th = k < 0 ? NULL : in_team();
    if (!th)
        return;
    /* the threads other than the master learn nothing of where the
     * region's last barrier is: it is the parallel construct's */
    uint32_t region = construct(k, code ? code : th->team->code);
    uint64_t now = ws_now();
    if (endpoint == WS_OMPT_SCOPE_BEGIN) {
        sync_master(th, now);
        push(th, region, now, NULL);
    } else if (endpoint == WS_OMPT_SCOPE_END) {
        uint64_t t = released_at(th, now);
        pop(th, region, t);
        if (th->master)
            th->team->t_release = t;
    }
}

static int lock_kind(int mutex, int release)
{
    switch (mutex) {
    case WS_OMPT_MUTEX_LOCK:
        return release ? WS_OMP_UNSET_LOCK : WS_OMP_SET_LOCK;
    case WS_OMPT_MUTEX_TEST_LOCK:
        return release ? WS_OMP_UNSET_LOCK : WS_OMP_TEST_LOCK;
    case WS_OMPT_MUTEX_NEST_LOCK:
        return release ? WS_OMP_UNSET_NEST_LOCK : WS_OMP_SET_NEST_LOCK;
    case WS_OMPT_MUTEX_TEST_NEST_LOCK:
        return release ? WS_OMP_UNSET_NEST_LOCK : WS_OMP_TEST_NEST_LOCK;
    default:
        return -1;
    }
}

/* A thread records locks at the outermost level of a team or outside any. */
static ws_omp_thread *lock_thread(void)
{
    ws_omp_thread *th = self();
    return th && th->level <= 1 && (th->level == 0 || th->team) && recording() ? th : NULL;
}

static void on_mutex_acquire(int kind, unsigned hint, unsigned impl, ompt_wait_id_t wait_id, const void *code)
{
    (void)hint;
    (void)impl;
    (void)wait_id;
    if (kind != WS_OMPT_MUTEX_CRITICAL && kind != WS_OMPT_MUTEX_LOCK && kind != WS_OMPT_MUTEX_NEST_LOCK)
        return; /* atomic, ordered: no lock; the test variants: recorded when they succeed */
    ws_omp_thread *th = lock_thread();
    if (!th)
        return;
    uint64_t now = ws_now();
    sync_master(th, now);
    if (kind == WS_OMPT_MUTEX_CRITICAL)
        push(th, construct(WS_OMP_CRITICAL, code), now, code);
    else
        push(th, construct(lock_kind(kind, 0), NULL), now, NULL);
}

static void on_mutex_acquired(int kind, ompt_wait_id_t wait_id, const void *code)
{
    int lk = lock_kind(kind, 0);
    if (kind != WS_OMPT_MUTEX_CRITICAL && lk < 0)
        return;
    ws_omp_thread *th = lock_thread();
    if (!th)
        return;
    uint64_t order = 0, now = ws_now();
    uint32_t id = lock_of(wait_id, 1, &order);
    if (id == UINT32_MAX)
        return;
    hold(th, id, order);
    if (kind == WS_OMPT_MUTEX_CRITICAL) {
        const void *begin = th->depth ? th->code[th->depth - 1] : NULL;
        (void)code;
        if (!begin || th->stack[th->depth - 1] != construct(WS_OMP_CRITICAL, begin))
            return; /* entered before the recording began */
        emit(th, now, WS_EV_THREAD_ACQUIRE_LOCK, id, 0, order, 0);
        push(th, construct(WS_OMP_CRITICAL_SBLOCK, begin), now, begin);
        return;
    }
    uint32_t region = construct(lk, NULL);
    if (kind == WS_OMPT_MUTEX_TEST_LOCK || kind == WS_OMPT_MUTEX_TEST_NEST_LOCK) {
        sync_master(th, now);
        push(th, region, now, NULL);
    }
    emit(th, now, WS_EV_THREAD_ACQUIRE_LOCK, id, 0, order, 0);
    pop_now(th, region, now);
}

static void on_mutex_released(int kind, ompt_wait_id_t wait_id, const void *code)
{
    int lk = lock_kind(kind, 1);
    if (kind != WS_OMPT_MUTEX_CRITICAL && lk < 0)
        return;
    ws_omp_thread *th = lock_thread();
    if (!th)
        return;
    uint64_t order = 0, now = ws_now();
    uint32_t id = lock_of(wait_id, 0, &order);
    if (id == UINT32_MAX)
        return;
    unhold(th, id, &order);
    if (kind == WS_OMPT_MUTEX_CRITICAL) {
        /* the runtime reports the end of the critical section where it
         * ends: its regions are those of where it began */
        (void)code;
        if (th->depth < 2)
            return;
        const void *begin = th->code[th->depth - 1];
        uint32_t sblock = construct(WS_OMP_CRITICAL_SBLOCK, begin);
        if (!begin || th->stack[th->depth - 1] != sblock)
            return;
        pop(th, sblock, now);
        emit(th, now, WS_EV_THREAD_RELEASE_LOCK, id, 0, order, 0);
        pop_now(th, construct(WS_OMP_CRITICAL, begin), now);
        return;
    }
    uint32_t region = construct(lk, NULL);
    sync_master(th, now);
    push(th, region, now, NULL);
    emit(th, now, WS_EV_THREAD_RELEASE_LOCK, id, 0, order, 0);
    pop_now(th, region, now);
}

static void on_work(int type, int endpoint, ompt_data_t *parallel, ompt_data_t *task, uint64_t count,
                    const void *code)
{
    (void)parallel;
    (void)task;
    (void)count;
    int k = type == WS_OMPT_WORK_LOOP                                                         ? WS_OMP_LOOP
            : type == WS_OMPT_WORK_SECTIONS                                                   ? WS_OMP_SECTIONS
            : type == WS_OMPT_WORK_SINGLE_EXECUTOR || type == WS_OMPT_WORK_SINGLE_OTHER ? WS_OMP_SINGLE
            : type == WS_OMPT_WORK_WORKSHARE                                                  ? WS_OMP_WORKSHARE
                                                                                              : -1;
    ws_omp_thread *th = k < 0 ? NULL : in_team();
    if (!th)
        return;
    uint32_t region = construct(k, code);
    uint64_t now = ws_now();
    if (endpoint == WS_OMPT_SCOPE_BEGIN) {
        sync_master(th, now);
        push(th, region, now, NULL);
    } else if (endpoint == WS_OMPT_SCOPE_END) {
        pop(th, region, now);
    }
}

static void on_masked(int endpoint, ompt_data_t *parallel, ompt_data_t *task, const void *code)
{
    (void)parallel;
    (void)task;
    ws_omp_thread *th = in_team();
    if (!th)
        return;
    uint32_t region = construct(WS_OMP_MASTER, code);
    uint64_t now = ws_now();
    if (endpoint == WS_OMPT_SCOPE_BEGIN) {
        sync_master(th, now);
        push(th, region, now, NULL);
    } else if (endpoint == WS_OMPT_SCOPE_END) {
        pop(th, region, now);
    }
}

/* ---- the tool ------------------------------------------------------------- */

static int tool_initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *tool_data)
{
    (void)device;
    (void)tool_data;
    ws_omp_rt *o = rt();
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    o->get_thread_data = (ompt_get_thread_data_t)lookup("ompt_get_thread_data");
    if (!set || !o->get_thread_data) {
        o->state = -1;
        return 0;
    }
    static const struct {
        int event;
        ompt_callback_t fn;
    } callbacks[] = {
        {WS_OMPT_THREAD_BEGIN, (ompt_callback_t)on_thread_begin},
        {WS_OMPT_THREAD_END, (ompt_callback_t)on_thread_end},
        {WS_OMPT_PARALLEL_BEGIN, (ompt_callback_t)on_parallel_begin},
        {WS_OMPT_PARALLEL_END, (ompt_callback_t)on_parallel_end},
        {WS_OMPT_IMPLICIT_TASK, (ompt_callback_t)on_implicit_task},
        {WS_OMPT_SYNC_REGION, (ompt_callback_t)on_sync_region},
        {WS_OMPT_MUTEX_ACQUIRE, (ompt_callback_t)on_mutex_acquire},
        {WS_OMPT_MUTEX_ACQUIRED, (ompt_callback_t)on_mutex_acquired},
        {WS_OMPT_MUTEX_RELEASED, (ompt_callback_t)on_mutex_released},
        {WS_OMPT_WORK, (ompt_callback_t)on_work},
        {WS_OMPT_MASKED, (ompt_callback_t)on_masked},
    };
    int essential = 0;
    for (size_t i = 0; i < sizeof callbacks / sizeof callbacks[0]; i++) {
        int r = set(callbacks[i].event, callbacks[i].fn);
        if (i < 5 && (r == WS_OMPT_SET_ALWAYS || r == WS_OMPT_SET_SOMETIMES_PAIRED))
            essential++;
    }
    /* without the thread, parallel and implicit-task callbacks there are no teams */
    o->state = essential == 5 ? 1 : -1;
    return o->state == 1;
}

static void tool_finalize(ompt_data_t *tool_data)
{
    (void)tool_data;
}

/* Called by the OpenMP runtime when it initialises. */
WS_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version);

ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version, const char *runtime_version)
{
    (void)omp_version;
    ws_omp_rt *o = rt();
    const char *dir = getenv("WAITSCOPE_TRACE_DIR"), *mode = getenv("WAITSCOPE_OPENMP");
    if (!dir || !*dir || (mode && strcmp(mode, "off") == 0)) {
        o->state = -1;
        return NULL;
    }
    snprintf(o->runtime, sizeof o->runtime, "%s", runtime_version ? runtime_version : "unknown");
    o->result.initialize = tool_initialize;
    o->result.finalize = tool_finalize;
    return &o->result;
}

/* ---- the end of the measurement ------------------------------------------------ */

void ws_omp_files_open(void)
{
    __atomic_store_n(&rt()->files_open, 1, __ATOMIC_RELEASE);
}

/* The OpenMP runtime in the process without a tool started: the trace
 * says OpenMP was not recorded (WAITSCOPE_OPENMP=off: on purpose). */
static void note_unrecorded(void)
{
    void *fn = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    Dl_info info;
    if (!fn)
        return;
    const char *mode = getenv("WAITSCOPE_OPENMP");
    const char *lib = dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "the OpenMP runtime";
    const char *base = strrchr(lib, '/');
    if (mode && strcmp(mode, "off") == 0)
        ws_tracer_def(&ws_pmpi_g.tracer, "openmp-off\t%s\n", base ? base + 1 : lib);
    else
        ws_tracer_def(&ws_pmpi_g.tracer, "openmp-none\t%s\n", base ? base + 1 : lib);
}

void ws_omp_finalize(uint64_t now)
{
    ws_omp_rt *o = rt();
    ws_pmpi *g = &ws_pmpi_g;
    if (o->state != 1) {
        if (g->tracer.on)
            note_unrecorded();
        return;
    }
    /* the master first: MPI_Finalize inside a parallel region ends it */
    pthread_mutex_lock(&o->lock);
    ws_omp_thread *threads = o->threads;
    pthread_mutex_unlock(&o->lock);
    for (ws_omp_thread *th = threads; th; th = th->next)
        if (th->master && th->team) {
            ws_callpath_team_end(&g->cp, now);
            team_end_locked(th, now);
        }
    for (ws_omp_thread *th = threads; th; th = th->next) {
        if (th->master)
            continue;
        pthread_mutex_lock(&th->lock);
        if (th->team)
            team_end_locked(th, released_at(th, now));
        if (th->tr.n || th->tr.written)
            thread_file(th);
        ws_tracer_close(&th->tr);
        th->closed = 1;
        pthread_mutex_unlock(&th->lock);
    }
    ws_tracer_def(&g->tracer, "openmp\t%s\n", o->runtime);
}

void ws_omp_discard(void)
{
    ws_omp_rt *o = rt();
    pthread_mutex_lock(&o->lock);
    for (ws_omp_thread *th = o->threads; th; th = th->next)
        if (!th->master && th->tr.evt_path[0])
            unlink(th->tr.evt_path);
    pthread_mutex_unlock(&o->lock);
}
