/* OTF2 archive -> trace store: the thread records (OpenMP and POSIX
 * threads: ThreadFork/Join, ThreadTeamBegin/End, locks, tasks,
 * ThreadCreate/Begin/Wait/End) of the location being read, into the
 * thread table (thr_*), and the call paths of the threads of a team.
 *
 * A thread of an OpenMP team that is not its master has no call stack of
 * its own before the team begins; Scalasca and Cube show what it does
 * below the call path at which the master forked the team (main/!$omp
 * parallel/...).  So the regions such a thread enters at depth 0 inside a
 * team get that call path as their parent: the team's k-th begin on the
 * thread is the k-th ThreadTeamBegin of the same team communicator on the
 * team's master (its member 0), whose call path there is the one of its
 * fork.  The master must have been read before (the loaders read the
 * locations of a process together, masters first).
 *
 * The writer (otf2_writer.c) writes the records back here. */
#include "otf2_evt_int.h"
#include "otf2_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ws_otf2_thread_scratch_free(load_scratch *s)
{
    ws_map64_free(&s->team_count);
    ws_map64_free(&s->team_cp);
}

void ws_otf2_thread_location_begin(load_scratch *s)
{
    ws_map64_free(&s->team_count);
    ws_map64_init(&s->team_count);
}

static OTF2_CallbackCode push_thread(evt_ctx *c, OTF2_TimeStamp time, uint8_t kind, uint32_t comm, uint8_t model,
                                     uint64_t a, uint64_t b)
{
    ws_events *ev = c->ev;
    side_rows *rows = c->rows;
    uint64_t i = ev->n_threads;
    if (i + 1 > rows->cap_thr && ws_rows_grow_threads(rows) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for thread records");
    int64_t e = push_event(c, time, kind, (uint32_t)i);
    if (e < 0)
        return OTF2_CALLBACK_INTERRUPT;
    rows->thr_event[i] = (uint32_t)e;
    rows->thr_comm[i] = comm;
    rows->thr_model[i] = model;
    rows->thr_a[i] = a;
    rows->thr_b[i] = b;
    ev->n_threads++;
    return OTF2_CALLBACK_SUCCESS;
}

static int thread_comm(evt_ctx *c, OTF2_CommRef comm, uint32_t *out)
{
    if (comm == OTF2_UNDEFINED_COMM) {
        *out = WS_NONE32;
        return 0;
    }
    uint64_t index;
    if (!ws_map64_get(&c->t->comm_ids, comm, &index)) {
        ws_error_set(c->err, WS_ERR_FORMAT, "event %llu refers to undefined thread team or contingent %u",
                     (unsigned long long)c->ev->n, (unsigned)comm);
        c->failed = 1;
        return -1;
    }
    *out = (uint32_t)index;
    return 0;
}

/* The call paths of master `m`'s ThreadTeamBegin records, (comm << 40 |
 * k) -> the call path open at its k-th (k from 1) of that comm, into the
 * scratch (kept while the next lookups are for the same master). */
static int index_master_teams(evt_ctx *c, uint32_t m)
{
    load_scratch *s = c->s;
    if (s->team_master == m)
        return 0;
    ws_map64_free(&s->team_cp);
    ws_map64_init(&s->team_cp);
    s->team_master = WS_NONE32;
    const ws_events *e = &c->t->locations[m].events;
    const ws_callpaths *cp = c->callpaths;
    ws_map64 seen;
    ws_map64_init(&seen);
    uint32_t cur = WS_NONE32;
    int rc = 0;
    for (uint64_t i = 0; i < e->n && rc == 0; i++) {
        uint8_t k = e->kind[i];
        if (k == WS_EV_ENTER)
            cur = e->ref[i];
        else if (k == WS_EV_LEAVE)
            cur = cp->parent[e->ref[i]];
        else if (k == WS_EV_THREAD_TEAM_BEGIN) {
            uint32_t comm = e->thr_comm[e->ref[i]];
            uint64_t n = 0;
            ws_map64_get(&seen, comm, &n);
            n++;
            if (ws_map64_put(&seen, comm, n) != 0 ||
                ws_map64_put(&s->team_cp, (uint64_t)comm << 40 | n, cur == WS_NONE32 ? UINT64_MAX : cur) != 0)
                rc = -1;
        }
    }
    ws_map64_free(&seen);
    if (rc == 0)
        s->team_master = m;
    return rc;
}

/* "thread team 3" (its OTF2 id; Score-P leaves team communicators unnamed) */
static const char *team_name(const ws_trace *t, const ws_comm *cm, char *buf, size_t size)
{
    const char *name = ws_trace_string(t, cm->name);
    if (name && *name)
        return name;
    snprintf(buf, size, "thread team %llu", (unsigned long long)cm->otf2_id);
    return buf;
}

static OTF2_CallbackCode on_team_begin(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                       OTF2_AttributeList *a, OTF2_CommRef team)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    const ws_trace *t = c->t;
    uint32_t comm;
    if (thread_comm(c, team, &comm))
        return OTF2_CALLBACK_INTERRUPT;
    if (comm == WS_NONE32)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: a thread team begins without its team communicator",
                 (unsigned long long)c->ev->n);
    const ws_comm *cm = &t->comms[comm];
    char buf[48];
    const char *tname = team_name(t, cm, buf, sizeof buf);
    if (c->in_team)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: %s begins inside another team of this thread",
                 (unsigned long long)c->ev->n, tname);
    uint32_t master = cm->size && cm->rank_location ? cm->rank_location[0] : WS_NONE32;
    if (master == WS_NONE32)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: %s has no members", (unsigned long long)c->ev->n, tname);
    if (master == c->loc && c->fork_requested && cm->size > c->fork_requested)
        EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: %s has %u threads but the fork before it asked for %u: the trace is "
                 "inconsistent", (unsigned long long)c->ev->n, tname, (unsigned)cm->size, (unsigned)c->fork_requested);
    uint64_t k = 0;
    ws_map64_get(&c->s->team_count, comm, &k);
    k++;
    if (ws_map64_put(&c->s->team_count, comm, k) != 0)
        EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for thread teams");
    if (master != c->loc) {
        if (c->depth != 0)
            EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: this thread joins %s inside a region of its own, which only the "
                     "team's master may", (unsigned long long)c->ev->n, tname);
        const ws_location *ml = &t->locations[master];
        if (!ml->loaded)
            EVT_FAIL(c, WS_ERR_FORMAT,
                     "event %llu: the master thread of its team (location %llu) is not loaded: a process's "
                     "threads are loaded together, masters first", (unsigned long long)c->ev->n,
                     (unsigned long long)ml->otf2_id);
        if (index_master_teams(c, master) != 0)
            EVT_FAIL(c, WS_ERR_NOMEM, "out of memory for thread teams");
        uint64_t cp;
        if (!ws_map64_get(&c->s->team_cp, (uint64_t)comm << 40 | k, &cp))
            EVT_FAIL(c, WS_ERR_FORMAT,
                     "event %llu: %s begins %llu times on this thread but fewer times on its master (location %llu): "
                     "the trace is inconsistent", (unsigned long long)c->ev->n, tname, (unsigned long long)k,
                     (unsigned long long)ml->otf2_id);
        /* (a master forking outside any region: the thread's regions stay roots) */
        c->base = cp == UINT64_MAX ? WS_NONE32 : (uint32_t)cp;
        c->in_team = 1;
    }
    return push_thread(c, time, WS_EV_THREAD_TEAM_BEGIN, comm, 0, 0, 0);
}

static OTF2_CallbackCode on_team_end(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                     OTF2_AttributeList *a, OTF2_CommRef team)
{
    (void)l;
    (void)pos;
    (void)a;
    evt_ctx *c = user;
    uint32_t comm;
    if (thread_comm(c, team, &comm))
        return OTF2_CALLBACK_INTERRUPT;
    if (c->in_team) {
        if (c->depth != 0)
            EVT_FAIL(c, WS_ERR_FORMAT, "event %llu: the thread team ends while %u region(s) are still open",
                     (unsigned long long)c->ev->n, (unsigned)c->depth);
        c->base = WS_NONE32;
        c->in_team = 0;
    }
    return push_thread(c, time, WS_EV_THREAD_TEAM_END, comm, 0, 0, 0);
}

static OTF2_CallbackCode on_fork(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                 OTF2_AttributeList *a, OTF2_Paradigm model, uint32_t requested)
{
    (void)l;
    (void)pos;
    (void)a;
    ((evt_ctx *)user)->fork_requested = requested;
    return push_thread(user, time, WS_EV_THREAD_FORK, WS_NONE32, (uint8_t)model, requested, 0);
}

static OTF2_CallbackCode on_join(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,
                                 OTF2_AttributeList *a, OTF2_Paradigm model)
{
    (void)l;
    (void)pos;
    (void)a;
    return push_thread(user, time, WS_EV_THREAD_JOIN, WS_NONE32, (uint8_t)model, 0, 0);
}

#define LOCK_CALLBACK(fn, kind)                                                                               \
    static OTF2_CallbackCode fn(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,            \
                                OTF2_AttributeList *a, OTF2_Paradigm model, uint32_t lock, uint32_t order)     \
    {                                                                                                         \
        (void)l;                                                                                              \
        (void)pos;                                                                                            \
        (void)a;                                                                                              \
        return push_thread(user, time, kind, WS_NONE32, (uint8_t)model, lock, order);                         \
    }
LOCK_CALLBACK(on_acquire_lock, WS_EV_THREAD_ACQUIRE_LOCK)
LOCK_CALLBACK(on_release_lock, WS_EV_THREAD_RELEASE_LOCK)
#undef LOCK_CALLBACK

#define TASK_CALLBACK(fn, kind)                                                                               \
    static OTF2_CallbackCode fn(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,            \
                                OTF2_AttributeList *a, OTF2_CommRef team, uint32_t creator, uint32_t generation) \
    {                                                                                                         \
        (void)l;                                                                                              \
        (void)pos;                                                                                            \
        (void)a;                                                                                              \
        evt_ctx *c = user;                                                                                    \
        uint32_t comm;                                                                                        \
        if (thread_comm(c, team, &comm))                                                                      \
            return OTF2_CALLBACK_INTERRUPT;                                                                   \
        return push_thread(c, time, kind, comm, 0, creator, generation);                                      \
    }
TASK_CALLBACK(on_task_create, WS_EV_THREAD_TASK_CREATE)
TASK_CALLBACK(on_task_switch, WS_EV_THREAD_TASK_SWITCH)
TASK_CALLBACK(on_task_complete, WS_EV_THREAD_TASK_COMPLETE)
#undef TASK_CALLBACK

#define CONTINGENT_CALLBACK(fn, kind)                                                                         \
    static OTF2_CallbackCode fn(OTF2_LocationRef l, OTF2_TimeStamp time, uint64_t pos, void *user,            \
                                OTF2_AttributeList *a, OTF2_CommRef contingent, uint64_t sequence)             \
    {                                                                                                         \
        (void)l;                                                                                              \
        (void)pos;                                                                                            \
        (void)a;                                                                                              \
        evt_ctx *c = user;                                                                                    \
        uint32_t comm;                                                                                        \
        if (thread_comm(c, contingent, &comm))                                                                \
            return OTF2_CALLBACK_INTERRUPT;                                                                   \
        return push_thread(c, time, kind, comm, 0, 0, sequence);                                              \
    }
CONTINGENT_CALLBACK(on_thread_create, WS_EV_THREAD_CREATE)
CONTINGENT_CALLBACK(on_thread_begin, WS_EV_THREAD_BEGIN)
CONTINGENT_CALLBACK(on_thread_wait, WS_EV_THREAD_WAIT)
CONTINGENT_CALLBACK(on_thread_end, WS_EV_THREAD_END)
#undef CONTINGENT_CALLBACK

void ws_otf2_thread_callbacks(OTF2_EvtReaderCallbacks *cbs)
{
    OTF2_EvtReaderCallbacks_SetThreadForkCallback(cbs, on_fork);
    OTF2_EvtReaderCallbacks_SetThreadJoinCallback(cbs, on_join);
    OTF2_EvtReaderCallbacks_SetThreadTeamBeginCallback(cbs, on_team_begin);
    OTF2_EvtReaderCallbacks_SetThreadTeamEndCallback(cbs, on_team_end);
    OTF2_EvtReaderCallbacks_SetThreadAcquireLockCallback(cbs, on_acquire_lock);
    OTF2_EvtReaderCallbacks_SetThreadReleaseLockCallback(cbs, on_release_lock);
    OTF2_EvtReaderCallbacks_SetThreadTaskCreateCallback(cbs, on_task_create);
    OTF2_EvtReaderCallbacks_SetThreadTaskSwitchCallback(cbs, on_task_switch);
    OTF2_EvtReaderCallbacks_SetThreadTaskCompleteCallback(cbs, on_task_complete);
    OTF2_EvtReaderCallbacks_SetThreadCreateCallback(cbs, on_thread_create);
    OTF2_EvtReaderCallbacks_SetThreadBeginCallback(cbs, on_thread_begin);
    OTF2_EvtReaderCallbacks_SetThreadWaitCallback(cbs, on_thread_wait);
    OTF2_EvtReaderCallbacks_SetThreadEndCallback(cbs, on_thread_end);
}

/* ---- writing ---------------------------------------------------------------- */

OTF2_ErrorCode ws_otf2_write_thread_record(OTF2_EvtWriter *ew, OTF2_TimeStamp ts, const ws_trace *t,
                                          const ws_events *ev, uint8_t kind, uint32_t ref)
{
    uint32_t cm = ev->thr_comm[ref];
    OTF2_CommRef comm = cm == WS_NONE32 ? OTF2_UNDEFINED_COMM : (OTF2_CommRef)t->comms[cm].otf2_id;
    OTF2_Paradigm model = (OTF2_Paradigm)ev->thr_model[ref];
    uint64_t a = ev->thr_a[ref], b = ev->thr_b[ref];
    switch (kind) {
    case WS_EV_THREAD_FORK:
        return OTF2_EvtWriter_ThreadFork(ew, NULL, ts, model, (uint32_t)a);
    case WS_EV_THREAD_JOIN:
        return OTF2_EvtWriter_ThreadJoin(ew, NULL, ts, model);
    case WS_EV_THREAD_TEAM_BEGIN:
        return OTF2_EvtWriter_ThreadTeamBegin(ew, NULL, ts, comm);
    case WS_EV_THREAD_TEAM_END:
        return OTF2_EvtWriter_ThreadTeamEnd(ew, NULL, ts, comm);
    case WS_EV_THREAD_ACQUIRE_LOCK:
        return OTF2_EvtWriter_ThreadAcquireLock(ew, NULL, ts, model, (uint32_t)a, (uint32_t)b);
    case WS_EV_THREAD_RELEASE_LOCK:
        return OTF2_EvtWriter_ThreadReleaseLock(ew, NULL, ts, model, (uint32_t)a, (uint32_t)b);
    case WS_EV_THREAD_TASK_CREATE:
        return OTF2_EvtWriter_ThreadTaskCreate(ew, NULL, ts, comm, (uint32_t)a, (uint32_t)b);
    case WS_EV_THREAD_TASK_SWITCH:
        return OTF2_EvtWriter_ThreadTaskSwitch(ew, NULL, ts, comm, (uint32_t)a, (uint32_t)b);
    case WS_EV_THREAD_TASK_COMPLETE:
        return OTF2_EvtWriter_ThreadTaskComplete(ew, NULL, ts, comm, (uint32_t)a, (uint32_t)b);
    case WS_EV_THREAD_CREATE:
        return OTF2_EvtWriter_ThreadCreate(ew, NULL, ts, comm, b);
    case WS_EV_THREAD_BEGIN:
        return OTF2_EvtWriter_ThreadBegin(ew, NULL, ts, comm, b);
    case WS_EV_THREAD_WAIT:
        return OTF2_EvtWriter_ThreadWait(ew, NULL, ts, comm, b);
    default:
        return OTF2_EvtWriter_ThreadEnd(ew, NULL, ts, comm, b);
    }
}
