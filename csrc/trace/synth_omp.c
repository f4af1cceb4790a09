/* Synthetic programs: OpenMP parallel regions (see synth.c and the timing
 * model in pkg/waitscope/synth.py).
 *
 * A parallel region waits for nothing outside its process: when its rank
 * reaches it (pass 5), the whole team runs at once.  Each thread runs
 * until it needs the others: at an explicit barrier, at the implicit
 * barrier of the region's end, or at the entry of a critical section or
 * omp_set_lock.  Then the pending entry with the earliest time (ties: the
 * lower thread number) acquires its lock, at its entry or at the lock's
 * last release, whichever is later; with none pending, every thread is at
 * the same barrier, which all leave at the latest arrival plus the
 * region's barrier overhead.  The events are those Score-P records (the
 * master's ThreadFork and ThreadJoin, each thread's ThreadTeamBegin and
 * ThreadTeamEnd around its Enter and Leave of the parallel region, the
 * lock records inside the critical construct and the lock calls).
 *
 * Lock ids are numbered per process in the order of first acquisition,
 * as Score-P numbers its locks; acquisition orders count from 1 per lock
 * over the whole run. */
#include "synth_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TH_RUN, TH_BARRIER, TH_LOCK, TH_END };

/* the bit of a critical section's key among a rank's lock keys */
#define CRITICAL_KEY ((uint64_t)1 << 31)

static inline const int64_t *team_row(const synth *s, uint64_t j)
{
    return s->p->teams + (size_t)j * WS_SYNTH_FIELDS;
}

static inline const int64_t *thread_op(const synth *s, uint64_t row)
{
    return s->p->thread_ops + (size_t)row * WS_SYNTH_FIELDS;
}

/* ---- pass 1 --------------------------------------------------------------- */

int synth_setup_teams(synth *s)
{
    const ws_synth_program *p = s->p;
    uint32_t nt = p->n_teams;
    size_t n_loc = (size_t)s->n * s->T;
    s->team_rank = ws_malloc_array(nt ? nt : 1, sizeof *s->team_rank);
    s->team_base = ws_malloc_array((size_t)nt + 1, sizeof *s->team_base);
    s->team_comm = ws_malloc_array(n_loc, sizeof *s->team_comm);
    s->omp_used = ws_calloc(p->n_parallel_names ? p->n_parallel_names : 1, 1);
    if (!s->team_rank || !s->team_base || !s->team_comm || !s->omp_used)
        return ws_error_nomem(s->err, "parallel regions");
    for (size_t l = 0; l < n_loc; l++)
        s->team_comm[l] = WS_NONE32;
    if (nt && (!p->teams || !p->thread_ptr))
        return ARG_FAIL("synthetic program: missing parallel regions");
    if (p->n_parallel_names && !p->parallel_names)
        return ARG_FAIL("synthetic program: missing names of parallel regions");
    uint64_t total = 0;
    for (uint32_t j = 0; j < nt; j++) {
        const int64_t *row = team_row(s, j);
        if (row[1] < 0 || (uint64_t)row[1] >= p->n_parallel_names)
            return ARG_FAIL("parallel region %u: unknown name %lld", (unsigned)j, (long long)row[1]);
        if (row[0] < 1 || row[0] > (int64_t)s->T)
            return ARG_FAIL("parallel region %u ('%s'): a team of %lld threads, but processes have %u", (unsigned)j,
                            parallel_name(s, row[1]), (long long)row[0], (unsigned)s->T);
        s->team_rank[j] = WS_NONE32;
        s->team_base[j] = total;
        total += (uint64_t)row[0];
    }
    s->team_base[nt] = total;
    if (nt) {
        int rc = synth_check_offsets(s, p->thread_ptr, total, "thread operation");
        if (rc)
            return rc;
        if (p->thread_ptr[total] > 0 && !p->thread_ops)
            return ARG_FAIL("synthetic program: missing thread operations");
    }
    return WS_OK;
}

void synth_describe_thread_op(const synth *s, uint64_t j, uint32_t thread, uint64_t row, char *buf, size_t size)
{
    const int64_t *op = thread_op(s, row);
    uint64_t first = (uint64_t)s->p->thread_ptr[s->team_base[j] + thread];
    int n = snprintf(buf, size, "thread %u, operation %llu (", (unsigned)thread, (unsigned long long)(row - first));
    if (n < 0 || (size_t)n >= size)
        return;
    char *b = buf + n;
    size_t room = size - (size_t)n;
    switch ((int)op[0]) {
    case WS_SYNTH_COMPUTE:
        snprintf(b, room, "compute in '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_ENTER:
        snprintf(b, room, "enter region '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_LEAVE:
        snprintf(b, room, "leave region '%s')", region_name(s, op[1]));
        break;
    case WS_SYNTH_OMP_BARRIER:
        snprintf(b, room, "barrier)");
        break;
    case WS_SYNTH_OMP_CRITICAL:
        snprintf(b, room, "critical section %lld)", (long long)op[1]);
        break;
    case WS_SYNTH_OMP_LOCK:
        snprintf(b, room, "lock %lld)", (long long)op[1]);
        break;
    default:
        snprintf(b, room, "kind %lld)", (long long)op[0]);
        break;
    }
}

/* Is duration index d of rank r (n_dur of them) a valid duration? */
static int duration_ok(const synth *s, uint32_t r, int64_t d, int64_t n_dur)
{
    if (d < 0 || d >= n_dur)
        return 0;
    double v = s->p->durations[s->p->dur_ptr[r] + d];
    return v >= 0.0 && v * s->res < (double)TICKS_MAX;
}

int synth_validate_team(synth *s, uint32_t r, uint64_t pc, int64_t j, uint32_t depth)
{
    const ws_synth_program *p = s->p;
    char what[300], detail[300];
    synth_describe(s, r, pc, what, sizeof what);
    if (j < 0 || (uint64_t)j >= p->n_teams)
        return ARG_FAIL("%s: unknown parallel region %lld", what, (long long)j);
    if (s->team_rank[j] != WS_NONE32)
        return ARG_FAIL("%s: the parallel region is executed twice (also by rank %u)", what,
                        (unsigned)s->team_rank[j]);
    s->team_rank[j] = r;
    const int64_t *row = team_row(s, (uint64_t)j);
    uint32_t size = (uint32_t)row[0];
    int64_t n_dur = p->dur_ptr[r + 1] - p->dur_ptr[r];
    if (row[2] < 0 || row[2] > n_dur - (int64_t)size)
        return ARG_FAIL("%s: fork delays [%lld, %lld) out of range", what, (long long)row[2],
                        (long long)(row[2] + size));
    for (uint32_t i = 0; i < size; i++)
        if (!duration_ok(s, r, row[2] + i, n_dur))
            return ARG_FAIL("%s: invalid fork delay of thread %u", what, (unsigned)i);
    if (!duration_ok(s, r, row[3], n_dur) || !duration_ok(s, r, row[4], n_dur))
        return ARG_FAIL("%s: invalid join delay or barrier overhead", what);
    s->team_comm[loc_of(s, r, size - 1)] = 0; /* used; defined in pass 4 */
    s->omp_used[row[1]] |= 1u << OMP_R_PARALLEL | 1u << OMP_R_IBARRIER;
    /* the master's ThreadFork, ThreadJoin; every thread's ThreadTeamBegin,
     * Enter of the region, Enter and Leave of the implicit barrier, Leave
     * of the region, ThreadTeamEnd */
    s->loc_events[loc_of(s, r, 0)] += 2;
    s->loc_threads[loc_of(s, r, 0)] += 2;
    uint32_t *stack = NULL;
    size_t cap = 0;
    uint64_t barriers0 = 0;
    uint32_t deepest = 1; /* the implicit barrier */
    int rc = WS_OK;
    for (uint32_t i = 0; i < size && rc == WS_OK; i++) {
        uint32_t loc = loc_of(s, r, i);
        uint64_t n_ev = 6, n_thr = 2, barriers = 0;
        uint32_t d = 0;
        uint64_t first = (uint64_t)p->thread_ptr[s->team_base[j] + i], end = (uint64_t)p->thread_ptr[s->team_base[j] + i + 1];
        for (uint64_t k = first; k < end && rc == WS_OK; k++) {
            const int64_t *op = thread_op(s, k);
            int kind = (int)op[0];
            uint32_t here = d; /* regions this operation opens below the open ones */
            const char *problem = NULL;
            switch (kind) {
            case WS_SYNTH_COMPUTE:
                if (op[1] < 0 || (uint64_t)op[1] >= p->n_regions)
                    problem = "unknown region";
                else if (!duration_ok(s, r, op[2], n_dur))
                    problem = "invalid duration";
                n_ev += 2;
                here += 1;
                break;
            case WS_SYNTH_ENTER:
                if (op[1] < 0 || (uint64_t)op[1] >= p->n_regions) {
                    problem = "unknown region";
                    break;
                }
                if (ws_grow((void **)&stack, &cap, (size_t)d + 1, sizeof *stack) != 0) {
                    rc = ws_error_nomem(s->err, "region stack");
                    break;
                }
                stack[d++] = (uint32_t)op[1];
                here = d;
                n_ev += 1;
                break;
            case WS_SYNTH_LEAVE:
                if (d == 0 || stack[d - 1] != (uint32_t)op[1])
                    problem = "the region is not the innermost open region of the thread";
                else
                    d--;
                n_ev += 1;
                break;
            case WS_SYNTH_OMP_BARRIER:
                n_ev += 2;
                barriers++;
                here += 1;
                s->omp_used[row[1]] |= 1u << OMP_R_BARRIER;
                break;
            case WS_SYNTH_OMP_CRITICAL:
            case WS_SYNTH_OMP_LOCK:
                if (op[1] < 0 || (uint64_t)op[1] >= CRITICAL_KEY)
                    problem = kind == WS_SYNTH_OMP_LOCK ? "a lock id must be in [0, 2^31)"
                                                        : "a critical section must be in [0, 2^31)";
                else if (!duration_ok(s, r, op[2], n_dur))
                    problem = "invalid duration";
                else if (op[3] != -1 && (op[3] < 0 || (uint64_t)op[3] >= p->n_regions))
                    problem = "unknown region";
                /* critical: Enter, acquire, Enter sblock, Leave sblock,
                 * release, Leave; lock: Enter, acquire, Leave of
                 * omp_set_lock, Enter, release, Leave of omp_unset_lock */
                n_ev += 6 + (op[3] != -1 ? 2 : 0);
                n_thr += 2;
                here += (kind == WS_SYNTH_OMP_CRITICAL ? 2 : 1) + (op[3] != -1 ? 1 : 0);
                if (kind == WS_SYNTH_OMP_CRITICAL)
                    s->omp_used[row[1]] |= 1u << OMP_R_CRITICAL | 1u << OMP_R_SBLOCK;
                else
                    s->any_lock = 1;
                break;
            default:
                problem = "this operation cannot be executed by a thread of a parallel region (MPI calls stay "
                          "on the master thread, outside parallel regions)";
                break;
            }
            if (problem && rc == WS_OK) {
                synth_describe_thread_op(s, (uint64_t)j, i, k, detail, sizeof detail);
                rc = ARG_FAIL("%s, %s: %s", what, detail, problem);
            }
            if (here > deepest)
                deepest = here;
        }
        if (rc != WS_OK)
            break;
        if (d)
            rc = ARG_FAIL("%s, thread %u: region '%s' is entered but never left", what, (unsigned)i,
                          region_name(s, stack[d - 1]));
        else if (i == 0)
            barriers0 = barriers;
        else if (barriers != barriers0)
            rc = ARG_FAIL("%s: thread %u reaches %llu explicit barrier(s), thread 0 %llu: every thread of a team "
                          "reaches every barrier",
                          what, (unsigned)i, (unsigned long long)barriers, (unsigned long long)barriers0);
        s->loc_events[loc] += n_ev;
        s->loc_threads[loc] += n_thr;
    }
    free(stack);
    /* the program, main, the master's open regions, the parallel region,
     * the thread's (pass 1 adds 4 for the program, main and MPI calls) */
    if (depth + 1 + deepest > s->max_depth)
        s->max_depth = depth + 1 + deepest;
    return rc;
}

/* ---- pass 5 --------------------------------------------------------------- */

static inline void emit_thread(synth *s, ws_events *ev, int64_t time, uint8_t kind, uint32_t comm, uint8_t model,
                               uint64_t a, uint64_t b)
{
    uint64_t k = ev->n_threads++;
    ev->thr_event[k] = (uint32_t)emit(s, ev, time, kind, (uint32_t)k);
    ev->thr_comm[k] = comm;
    ev->thr_model[k] = model;
    ev->thr_a[k] = a;
    ev->thr_b[k] = b;
}

static int team_time_check(synth *s, uint32_t r, uint64_t j, int64_t time)
{
    if (time < TICKS_MAX)
        return WS_OK;
    return ARG_FAIL("rank %u, parallel region '%s': time exceeds the clock's range", (unsigned)r,
                    parallel_name(s, team_row(s, j)[1]));
}

static inline ws_events *thread_events(synth *s, uint32_t r, uint32_t i)
{
    return &s->t->locations[loc_of(s, r, i)].events;
}

/* Runs thread i until it needs the other threads. */
static int run_thread(synth *s, uint32_t r, uint64_t j, uint32_t i)
{
    omp_thread *th = &s->th[i];
    ws_events *ev = thread_events(s, r, i);
    const double *dur = s->p->durations + s->p->dur_ptr[r];
    const uint32_t *reg = s->omp_region + (size_t)team_row(s, j)[1] * OMP_R_COUNT;
    int rc;
    for (; th->pc < th->end; th->pc++) {
        const int64_t *op = thread_op(s, th->pc);
        switch ((int)op[0]) {
        case WS_SYNTH_COMPUTE: {
            int64_t leave = th->t + ticks(s, dur[op[2]]);
            if ((rc = team_time_check(s, r, j, leave)))
                return rc;
            emit(s, ev, th->t, WS_EV_ENTER, s->user_region[op[1]]);
            emit(s, ev, leave, WS_EV_LEAVE, s->user_region[op[1]]);
            th->t = leave;
            break;
        }
        case WS_SYNTH_ENTER:
        case WS_SYNTH_LEAVE:
            emit(s, ev, th->t, op[0] == WS_SYNTH_ENTER ? WS_EV_ENTER : WS_EV_LEAVE, s->user_region[op[1]]);
            break;
        case WS_SYNTH_OMP_BARRIER:
            emit(s, ev, th->t, WS_EV_ENTER, reg[OMP_R_BARRIER]);
            th->state = TH_BARRIER;
            return WS_OK;
        default: /* critical section or lock: the entry */
            emit(s, ev, th->t, WS_EV_ENTER, op[0] == WS_SYNTH_OMP_CRITICAL ? reg[OMP_R_CRITICAL] : s->set_lock_region);
            th->state = TH_LOCK;
            return WS_OK;
        }
    }
    emit(s, ev, th->t, WS_EV_ENTER, reg[OMP_R_IBARRIER]);
    th->state = TH_END;
    return WS_OK;
}

/* The lock (or critical section) of operation `op` of rank r. */
static omp_lock *find_lock(synth *s, uint32_t r, const int64_t *op)
{
    uint64_t key = (uint64_t)op[1] | (op[0] == WS_SYNTH_OMP_CRITICAL ? CRITICAL_KEY : 0);
    key |= (uint64_t)r << 32;
    uint64_t at;
    if (ws_map64_get(&s->lock_index, key, &at))
        return &s->locks[at];
    if (ws_grow((void **)&s->locks, &s->cap_locks, s->n_locks + 1, sizeof *s->locks) != 0 ||
        ws_map64_put(&s->lock_index, key, s->n_locks) != 0)
        return NULL;
    omp_lock *lk = &s->locks[s->n_locks++];
    lk->release = 0;
    lk->id = s->st[r].n_locks++;
    lk->order = 0;
    return lk;
}

/* Thread i, at the entry of a critical section or omp_set_lock, acquires
 * the lock, holds it for the operation's duration and releases it. */
static int acquire(synth *s, uint32_t r, uint64_t j, uint32_t i)
{
    omp_thread *th = &s->th[i];
    ws_events *ev = thread_events(s, r, i);
    const int64_t *op = thread_op(s, th->pc);
    const uint32_t *reg = s->omp_region + (size_t)team_row(s, j)[1] * OMP_R_COUNT;
    omp_lock *lk = find_lock(s, r, op);
    if (!lk)
        return ws_error_nomem(s->err, "OpenMP locks");
    int64_t at = max64(th->t, lk->release);
    int64_t end = at + ticks(s, s->p->durations[s->p->dur_ptr[r] + op[2]]);
    int rc = team_time_check(s, r, j, end);
    if (rc)
        return rc;
    uint32_t order = ++lk->order;
    int critical = op[0] == WS_SYNTH_OMP_CRITICAL;
    emit_thread(s, ev, at, WS_EV_THREAD_ACQUIRE_LOCK, WS_NONE32, OTF2_PARADIGM_OPENMP, lk->id, order);
    emit(s, ev, at, critical ? WS_EV_ENTER : WS_EV_LEAVE, critical ? reg[OMP_R_SBLOCK] : s->set_lock_region);
    if (op[3] != -1) {
        emit(s, ev, at, WS_EV_ENTER, s->user_region[op[3]]);
        emit(s, ev, end, WS_EV_LEAVE, s->user_region[op[3]]);
    }
    if (critical) {
        emit(s, ev, end, WS_EV_LEAVE, reg[OMP_R_SBLOCK]);
        emit_thread(s, ev, end, WS_EV_THREAD_RELEASE_LOCK, WS_NONE32, OTF2_PARADIGM_OPENMP, lk->id, order);
        emit(s, ev, end, WS_EV_LEAVE, reg[OMP_R_CRITICAL]);
    } else {
        emit(s, ev, end, WS_EV_ENTER, s->unset_lock_region);
        emit_thread(s, ev, end, WS_EV_THREAD_RELEASE_LOCK, WS_NONE32, OTF2_PARADIGM_OPENMP, lk->id, order);
        emit(s, ev, end, WS_EV_LEAVE, s->unset_lock_region);
    }
    lk->release = end;
    th->t = end;
    th->pc++;
    th->state = TH_RUN;
    return WS_OK;
}

int synth_run_team(synth *s, uint32_t r, uint64_t j, int64_t t, int64_t *join)
{
    const ws_synth_program *p = s->p;
    const int64_t *row = team_row(s, j);
    uint32_t size = (uint32_t)row[0];
    const double *dur = p->durations + p->dur_ptr[r];
    const uint32_t *reg = s->omp_region + (size_t)row[1] * OMP_R_COUNT;
    uint32_t team = s->team_comm[loc_of(s, r, size - 1)];
    int64_t overhead = ticks(s, dur[row[4]]);
    int rc;

    emit_thread(s, thread_events(s, r, 0), t, WS_EV_THREAD_FORK, WS_NONE32, OTF2_PARADIGM_OPENMP, size, 0);
    for (uint32_t i = 0; i < size; i++) {
        omp_thread *th = &s->th[i];
        th->t = t + ticks(s, dur[row[2] + i]);
        if ((rc = team_time_check(s, r, j, th->t)))
            return rc;
        th->pc = (uint64_t)p->thread_ptr[s->team_base[j] + i];
        th->end = (uint64_t)p->thread_ptr[s->team_base[j] + i + 1];
        th->state = TH_RUN;
        ws_events *ev = thread_events(s, r, i);
        emit_thread(s, ev, th->t, WS_EV_THREAD_TEAM_BEGIN, team, 0, 0, 0);
        emit(s, ev, th->t, WS_EV_ENTER, reg[OMP_R_PARALLEL]);
    }
    for (;;) {
        for (uint32_t i = 0; i < size; i++)
            if (s->th[i].state == TH_RUN && (rc = run_thread(s, r, j, i)))
                return rc;
        /* the earliest entry of a critical section or omp_set_lock goes first */
        uint32_t next = WS_NONE32;
        for (uint32_t i = 0; i < size; i++)
            if (s->th[i].state == TH_LOCK && (next == WS_NONE32 || s->th[i].t < s->th[next].t))
                next = i;
        if (next != WS_NONE32) {
            if ((rc = acquire(s, r, j, next)))
                return rc;
            continue;
        }
        /* every thread at the same barrier (pass 1 checked their counts) */
        int64_t latest = 0;
        for (uint32_t i = 0; i < size; i++)
            latest = max64(latest, s->th[i].t);
        int64_t leave = latest + overhead;
        if ((rc = team_time_check(s, r, j, leave)))
            return rc;
        if (s->th[0].state == TH_END)
            break;
        for (uint32_t i = 0; i < size; i++) {
            omp_thread *th = &s->th[i];
            emit(s, thread_events(s, r, i), leave, WS_EV_LEAVE, reg[OMP_R_BARRIER]);
            th->t = leave;
            th->pc++;
            th->state = TH_RUN;
        }
    }
    /* the implicit barrier; every thread ends the team when it leaves it */
    int64_t end = 0;
    for (uint32_t i = 0; i < size; i++)
        end = max64(end, s->th[i].t);
    end += overhead;
    for (uint32_t i = 0; i < size; i++) {
        ws_events *ev = thread_events(s, r, i);
        emit(s, ev, end, WS_EV_LEAVE, reg[OMP_R_IBARRIER]);
        emit(s, ev, end, WS_EV_LEAVE, reg[OMP_R_PARALLEL]);
        emit_thread(s, ev, end, WS_EV_THREAD_TEAM_END, team, 0, 0, 0);
    }
    *join = end + ticks(s, dur[row[3]]);
    if ((rc = team_time_check(s, r, j, *join)))
        return rc;
    emit_thread(s, thread_events(s, r, 0), *join, WS_EV_THREAD_JOIN, WS_NONE32, OTF2_PARADIGM_OPENMP, 0, 0);
    return WS_OK;
}
