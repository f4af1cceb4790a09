/* Threaded transport (see transport_threads.h; the state the threads
 * share, the hub, is in thread_hub.c).
 *
 * - Every thread keeps its locations' payloads in an in-process transport
 *   of its own (transport_local.c), touched by that thread only.
 * - A payload or collective contribution for another thread's locations
 *   is appended as a record to this thread's outbox for that thread (no
 *   lock).  The outbox moves to the other thread's inbox (under the hub's
 *   lock, one append for all its records) when that thread waits for work,
 *   when it holds OUTBOX_BYTES, and before this thread waits or finishes;
 *   so a thread never goes idle with records of its own undelivered.  The
 *   owner moves its inbox into its own storage when its engine runs out
 *   of work (progress) or while it waits in finish.  On the 2-rank
 *   barrier trace, batching made the two threads' analysis 1.9 -> 1.5 s.
 * - Quiescence is exact: a thread goes idle only with an empty inbox and
 *   under the lock, so "every thread idle and every inbox empty" means
 *   nothing can move any more.  If all threads are then in finish, the
 *   replay is done (the generation advances); otherwise it stalled.
 * - Collectives (agree, allreduce, gather, reduce, exchange) deposit a
 *   pointer per thread, meet at a barrier, read each other's data in
 *   thread order, and meet again before anybody returns.
 * - An error on one thread (or Ctrl-C seen by the supervising caller)
 *   aborts the hub: every wait returns the error, nothing hangs.
 * - Hand-off: a thread that runs out of work first spins for a few
 *   microseconds (a pause instruction per round; how long: spin.h) on its
 *   inbox's record counter and the hub's notice counter, both atomics,
 *   before it sleeps on a condition variable of its own.  A backward replay over a chain of
 *   tiny collectives (800 k barriers of 2 members) hands off at every
 *   instance; sleeping and waking there cost ~8 us each time, spinning
 *   ~0.2 us.  A sender signals only a thread that sleeps (idle), never
 *   one that spins.  With more threads than cores nobody spins (the
 *   partner may be the thread that waits for this core).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "thread_hub.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/lock.h"
#include "../common/util.h"
#include "../waitscope.h"
#include "records.h"
#include "spin.h"

typedef struct thread_transport {
    ws_transport base;
    ws_transport *local;
    ws_thread_hub *h;
    uint32_t index;
    int stalled_here;
    ws_spin_policy spin;
    int64_t wait_start; /* when the current wait began (ns) */
    ws_buffer drained; /* records taken from the inbox, reused */
    /* records for other threads not yet in their inboxes, per thread:
     * delivered in one locked append when the destination waits, when
     * OUTBOX_BYTES gathered, and before this thread waits or finishes
     * (t_progress, t_finish; a replay always ends in finish before any
     * collective operation) */
    ws_buffer *outbox;
    size_t n_pending; /* threads with a nonempty outbox */
} thread_transport;

enum { OUTBOX_BYTES = 16384 };

static thread_transport *self_of(ws_transport *t)
{
    return (thread_transport *)t;
}

static void sync_wake(thread_transport *m)
{
    m->local->wake = m->base.wake;
    m->local->scheduler = m->base.scheduler;
}


/* ---- records ---------------------------------------------------------------- */

/* Moves this thread's outbox for thread `to` into `to`'s inbox and wakes
 * it (one locked append for every record gathered). */
static int deliver(thread_transport *m, uint32_t to, ws_error *err)
{
    ws_thread_hub *h = m->h;
    ws_buffer *out = &m->outbox[to];
    if (!out->size)
        return WS_OK;
    pthread_mutex_lock(&h->lock);
    if (h->aborted) {
        int rc = ws_hub_aborted_error(h, err);
        pthread_mutex_unlock(&h->lock);
        return rc;
    }
    ws_buffer *b = &h->inbox[to];
    int bad;
    if (!b->size) {
        /* hand the whole block over (the outbox goes on with the
         * inbox's empty one) */
        ws_buffer tmp = *b;
        *b = *out;
        *out = tmp;
        bad = 0;
    } else {
        bad = ws_buffer_append(b, out->data, out->size);
    }
    if (!bad && h->idle[to]) /* asleep */
        pthread_cond_signal(&h->box[to].wake);
    pthread_mutex_unlock(&h->lock);
    if (bad)
        return ws_error_nomem(err, "threaded transport mailbox");
    out->size = 0;
    m->n_pending--;
    /* a spinning thread sees this; counted after the unlock, so that it
     * finds the lock free when it comes for the record */
    atomic_store_explicit(&h->box[to].posted_at, ws_monotonic_ns(), memory_order_relaxed);
    atomic_fetch_add_explicit(&h->box[to].records, 1, memory_order_release);
    return WS_OK;
}

/* Delivers every outbox (before this thread waits or meets the others). */
static int deliver_all(thread_transport *m, ws_error *err)
{
    for (uint32_t to = 0; m->n_pending && to < m->h->n; to++) {
        int rc = deliver(m, to, err);
        if (rc)
            return rc;
    }
    return WS_OK;
}

/* Appends a record for thread `to` to its outbox; delivers it at once
 * when `to` waits or the outbox is full. */
static int send_record(thread_transport *m, uint32_t to, const void *head, size_t head_size, const void *data,
                       size_t size, ws_error *err)
{
    ws_buffer *out = &m->outbox[to];
    size_t before = out->size;
    if (ws_buffer_append(out, head, head_size) || (size && ws_buffer_append(out, data, size))) {
        out->size = before;
        return ws_error_nomem(err, "threaded transport mailbox");
    }
    if (!before)
        m->n_pending++;
    /* a waiting thread gets a record at once, unless more follow in the
     * same burst (they go together when it ends: t_progress) */
    if (out->size >= OUTBOX_BYTES ||
        (!m->base.burst && atomic_load_explicit(&m->h->box[to].waiting, memory_order_acquire)))
        return deliver(m, to, err);
    return WS_OK;
}

static int unpack(thread_transport *m, const unsigned char *data, size_t size, ws_error *err)
{
    const unsigned char *p = data, *end = data + size;
    while (p < end) {
        uint8_t type;
        int rc = ws_record_read(&p, end, &type, 1)
                     ? ws_error_set(err, WS_ERR_INTERNAL, "malformed record between analysis threads")
                     : ws_record_store(m->local, type, &p, end, WS_ERR_INTERNAL, "between analysis threads", err);
        if (rc)
            return rc;
    }
    return WS_OK;
}

/* Called with the lock held and a nonempty inbox: takes the records,
 * unlocks, moves them into local storage. */
static int drain_locked(thread_transport *m, ws_error *err)
{
    ws_thread_hub *h = m->h;
    ws_buffer mine = h->inbox[m->index];
    h->inbox[m->index] = m->drained;
    h->inbox[m->index].size = 0;
    pthread_mutex_unlock(&h->lock);
    int rc = unpack(m, mine.data, mine.size, err);
    m->drained = mine;
    return rc;
}

/* ---- operations ---------------------------------------------------------------- */

static int t_post(ws_transport *t, uint32_t dst, uint64_t id, int channel, const void *data, size_t size,
                  ws_error *err)
{
    thread_transport *m = self_of(t);
    if (dst >= t->n_locations)
        return ws_error_set(err, WS_ERR_INTERNAL, "payload for unknown location %u", (unsigned)dst);
    uint32_t to = m->h->owner[dst];
    if (to == m->index) {
        sync_wake(m);
        return m->local->ops->post(m->local, dst, id, channel, data, size, err);
    }
    unsigned char head[1 + WS_RECORD_P2P_HEAD];
    head[0] = WS_RECORD_P2P;
    ws_record_p2p_head(head + 1, dst, channel, id, size);
    return send_record(m, to, head, sizeof head, data, size, err);
}

static int t_take(ws_transport *t, uint32_t loc, uint64_t id, int channel, const void **data, size_t *size,
                  ws_error *err)
{
    thread_transport *m = self_of(t);
    sync_wake(m);
    return m->local->ops->take(m->local, loc, id, channel, data, size, err);
}

static void t_release(ws_transport *t, uint32_t loc, uint64_t id, int channel)
{
    thread_transport *m = self_of(t);
    m->local->ops->release(m->local, loc, id, channel);
}

static int t_coll_post(ws_transport *t, uint64_t key, uint32_t n_members, uint32_t expected_local, uint32_t member,
                       uint32_t loc, const void *data, size_t size, size_t cache_size, ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    sync_wake(m);
    int rc = m->local->ops->coll_post(m->local, key, n_members, expected_local, member, loc, data, size, cache_size,
                                      err);
    if (rc)
        return rc;
    uint32_t comm = (uint32_t)((key >> 40) & 0x7FFFF);
    const uint32_t *threads = comm < h->n_comms ? h->comm_threads[comm] : h->all_threads;
    uint32_t n = comm < h->n_comms ? h->comm_n_threads[comm] : h->n_all_threads;
    unsigned char head[1 + WS_RECORD_COLL_HEAD];
    head[0] = WS_RECORD_COLL;
    ws_record_coll_head(head + 1, key, n_members, member, cache_size, size);
    for (uint32_t i = 0; i < n; i++) {
        if (threads[i] == m->index)
            continue;
        if ((rc = send_record(m, threads[i], head, sizeof head, data, size, err)))
            return rc;
    }
    return WS_OK;
}

static int t_coll_take(ws_transport *t, uint64_t key, uint32_t loc, ws_coll_view **view, ws_error *err)
{
    thread_transport *m = self_of(t);
    sync_wake(m);
    return m->local->ops->coll_take(m->local, key, loc, view, err);
}

static void t_coll_release(ws_transport *t, uint64_t key, uint32_t loc)
{
    thread_transport *m = self_of(t);
    m->local->ops->coll_release(m->local, key, loc);
}

static void declare_stall(ws_thread_hub *h)
{
    h->stalled = 1;
    ws_hub_notify_all(h);
}

/* Called with the lock held by a thread about to sleep: drops the lock,
 * spins a while for news, takes the lock again.  Returns 1 if it spun (the
 * caller then looks at its state again before sleeping). */
static int spin_unlocked(thread_transport *m)
{
    ws_thread_hub *h = m->h;
    uint32_t me = m->index;
    if (!h->spin)
        return 0;
    uint64_t records = atomic_load_explicit(&h->box[me].records, memory_order_relaxed);
    uint64_t notice = atomic_load_explicit(&h->notice, memory_order_relaxed);
    pthread_mutex_unlock(&h->lock);
    m->wait_start = ws_monotonic_ns();
    ws_hub_spin_for_news(h, me, records, notice, m->spin.budget);
    pthread_mutex_lock(&h->lock);
    return 1;
}

/* After a wait that began with a spin (spin.h).  The wait lasted until
 * the record came, not until this thread woke up. */
static void adapt_spin(thread_transport *m)
{
    int64_t waited = atomic_load_explicit(&m->h->box[m->index].posted_at, memory_order_relaxed) - m->wait_start;
    ws_spin_after_wait(&m->spin, waited);
}

static int progress_locked(thread_transport *m, int wait, int *woken, ws_error *err);

static int t_progress(ws_transport *t, int wait, int *woken, ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    *woken = 0;
    sync_wake(m);
    int rc = deliver_all(m, err);
    if (rc)
        return rc;
    if (wait)
        atomic_store_explicit(&h->box[m->index].waiting, 1, memory_order_release);
    rc = progress_locked(m, wait, woken, err);
    if (wait)
        atomic_store_explicit(&h->box[m->index].waiting, 0, memory_order_release);
    return rc;
}

static int progress_locked(thread_transport *m, int wait, int *woken, ws_error *err)
{
    ws_thread_hub *h = m->h;
    pthread_mutex_lock(&h->lock);
    int spun = 0;
    for (;;) {
        /* a stall first: the threads that report it fail (abort) while
         * others still wake up to it, and these must describe it too */
        if (h->stalled) {
            m->stalled_here = 1;
            pthread_mutex_unlock(&h->lock);
            return WS_OK;
        }
        if (h->aborted) {
            int rc = ws_hub_aborted_error(h, err);
            pthread_mutex_unlock(&h->lock);
            return rc;
        }
        if (h->inbox[m->index].size) {
            if (spun)
                adapt_spin(m);
            *woken = 1;
            return drain_locked(m, err);
        }
        if (!wait) {
            pthread_mutex_unlock(&h->lock);
            return WS_OK;
        }
        if (!spun && (spun = spin_unlocked(m)))
            continue;
        if (ws_hub_go_idle(h, m->index)) {
            /* quiet while locations here still wait: nobody can progress */
            declare_stall(h);
            continue;
        }
        ws_hub_wait_once(h, m->index);
    }
}

static int t_finish(ws_transport *t, ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    int rc_out = deliver_all(m, err);
    if (rc_out)
        return rc_out;
    /* this thread's locations are done: payloads still arriving are
     * stored (and dropped by the local finish), nobody is woken */
    m->local->wake = NULL;
    m->local->scheduler = NULL;
    pthread_mutex_lock(&h->lock);
    uint64_t gen = h->generation;
    h->in_finish[m->index] = 1;
    for (;;) {
        if (h->generation != gen)
            break;
        if (h->aborted) {
            h->in_finish[m->index] = 0;
            int rc = ws_hub_aborted_error(h, err);
            pthread_mutex_unlock(&h->lock);
            return rc;
        }
        if (h->stalled) {
            h->in_finish[m->index] = 0;
            pthread_mutex_unlock(&h->lock);
            return ws_error_set(err, WS_ERR_MATCH,
                                "the replay cannot continue on another analysis thread: the trace's "
                                "communication is inconsistent");
        }
        if (h->inbox[m->index].size) {
            int rc = drain_locked(m, err);
            if (rc)
                return rc;
            pthread_mutex_lock(&h->lock);
            continue;
        }
        if (ws_hub_go_idle(h, m->index)) {
            uint32_t finishing = 0;
            for (uint32_t i = 0; i < h->n; i++)
                finishing += h->in_finish[i];
            if (finishing == h->n) {
                h->generation++;
                memset(h->in_finish, 0, h->n);
                ws_hub_notify_all(h);
                break;
            }
            declare_stall(h);
            continue;
        }
        ws_hub_wait_once(h, m->index);
    }
    pthread_mutex_unlock(&h->lock);
    return m->local->ops->finish(m->local, err);
}

/* ---- collectives ------------------------------------------------------------------- */

/* Deposits this thread's data (`size` bytes, or records) and meets the
 * others: then every deposit may be read until the closing barrier. */
static int deposit_and_meet(thread_transport *m, const void *data, size_t size, ws_error *err)
{
    m->h->dep[m->index].data = data;
    m->h->dep[m->index].size = size;
    return ws_hub_barrier(m->h, 1, err);
}

static int t_agree(ws_transport *t, int failed, ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    h->dep[m->index].flag = failed != 0;
    h->dep[m->index].err = err;
    int rc = ws_hub_barrier(h, 1, err);
    if (rc)
        return 1;
    uint32_t first = UINT32_MAX;
    for (uint32_t i = 0; i < h->n && first == UINT32_MAX; i++)
        if (h->dep[i].flag)
            first = i;
    ws_error copy;
    ws_error_clear(&copy);
    if (first != UINT32_MAX && first != m->index && h->dep[first].err)
        copy = *h->dep[first].err;
    ws_hub_barrier(h, 0, NULL);
    if (first == UINT32_MAX)
        return 0;
    /* the failing thread's code too (out of memory stays out of memory) */
    if (!failed && err)
        ws_error_set(err, copy.code ? copy.code : WS_ERR_MATCH, "%s", copy.message);
    return 1;
}

static void t_fail(ws_transport *t, const ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub_abort(m->h, m->index, err);
}

static double fold_f64(double a, double b, int op)
{
    return op == WS_MAX ? (b > a ? b : a) : op == WS_MIN ? (b < a ? b : a) : a + b;
}

static uint64_t fold_u64(uint64_t a, uint64_t b, int op)
{
    return op == WS_MAX ? (b > a ? b : a) : op == WS_MIN ? (b < a ? b : a) : a + b;
}

/* Thread 0 folds every thread's values into its own, in thread order;
 * with `to_all` the others then copy the result. */
static int reduce(ws_transport *t, void *values, size_t n, int op, int is_f64, int to_all, ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    int rc = deposit_and_meet(m, values, n, err);
    if (rc)
        return rc;
    if (m->index == 0)
        for (uint32_t p = 1; p < h->n; p++) {
            if (is_f64) {
                double *v = values;
                const double *o = h->dep[p].data;
                for (size_t i = 0; i < n; i++)
                    v[i] = fold_f64(v[i], o[i], op);
            } else {
                uint64_t *v = values;
                const uint64_t *o = h->dep[p].data;
                for (size_t i = 0; i < n; i++)
                    v[i] = fold_u64(v[i], o[i], op);
            }
        }
    ws_hub_barrier(h, 0, NULL);
    if (!to_all)
        return WS_OK;
    if (m->index != 0 && n)
        memcpy(values, h->dep[0].data, n * (is_f64 ? sizeof(double) : sizeof(uint64_t)));
    ws_hub_barrier(h, 0, NULL);
    return WS_OK;
}

static int t_allreduce_u64(ws_transport *t, uint64_t *values, size_t n, int op, ws_error *err)
{
    return reduce(t, values, n, op, 0, 1, err);
}

static int t_allreduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err)
{
    return reduce(t, values, n, op, 1, 1, err);
}

static int t_reduce_f64(ws_transport *t, double *values, size_t n, int op, ws_error *err)
{
    return reduce(t, values, n, op, 1, 0, err);
}

static int t_gather(ws_transport *t, const void *data, size_t size, int to_all, void **out, size_t *sizes,
                    ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    *out = NULL;
    int rc = deposit_and_meet(m, data, size, err);
    if (rc)
        return rc;
    if (to_all || m->index == 0) {
        size_t total = 0;
        for (uint32_t p = 0; p < h->n; p++)
            total += h->dep[p].size;
        unsigned char *buf = ws_malloc(total ? total : 1);
        if (!buf) {
            rc = ws_error_nomem(err, "gathered data");
        } else {
            size_t off = 0;
            for (uint32_t p = 0; p < h->n; p++) {
                if (h->dep[p].size)
                    memcpy(buf + off, h->dep[p].data, h->dep[p].size);
                sizes[p] = h->dep[p].size;
                off += h->dep[p].size;
            }
            *out = buf;
        }
    }
    ws_hub_barrier(h, 0, NULL);
    if (rc)
        ws_thread_hub_abort(h, m->index, err);
    return rc;
}

/* Thread 0 reads every thread's deposit in place; the others wait in the
 * second barrier until it is done, which keeps their data alive. */
static int t_gather_apply(ws_transport *t, const void *data, size_t size, ws_gather_fn fn, void *ctx, ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    int rc = deposit_and_meet(m, data, size, err);
    if (rc)
        return rc;
    if (m->index == 0) {
        const void **pieces = ws_malloc_array(h->n, sizeof *pieces);
        size_t *sizes = ws_malloc_array(h->n, sizeof *sizes);
        if (!pieces || !sizes) {
            rc = ws_error_nomem(err, "gathered data");
        } else {
            for (uint32_t p = 0; p < h->n; p++) {
                pieces[p] = h->dep[p].data;
                sizes[p] = h->dep[p].size;
            }
            rc = fn(ctx, pieces, sizes, err);
        }
        free(pieces);
        free(sizes);
    }
    ws_hub_barrier(h, 0, NULL);
    return rc;
}

static int t_exchange(ws_transport *t, const void *records, size_t record_size, const uint32_t *dest, size_t n,
                      void **out, size_t *n_out, ws_error *err)
{
    thread_transport *m = self_of(t);
    ws_thread_hub *h = m->h;
    *out = NULL;
    *n_out = 0;
    h->dep[m->index].dest = dest;
    int rc = deposit_and_meet(m, records, n, err);
    if (rc)
        return rc;
    size_t count = 0;
    for (uint32_t p = 0; p < h->n; p++)
        for (size_t i = 0; i < h->dep[p].size; i++)
            count += h->owner[h->dep[p].dest[i]] == m->index;
    unsigned char *buf = ws_malloc_array(count ? count : 1, record_size);
    if (!buf) {
        rc = ws_error_nomem(err, "record exchange");
    } else {
        size_t k = 0;
        for (uint32_t p = 0; p < h->n; p++)
            for (size_t i = 0; i < h->dep[p].size; i++)
                if (h->owner[h->dep[p].dest[i]] == m->index)
                    memcpy(buf + record_size * k++, (const unsigned char *)h->dep[p].data + i * record_size,
                           record_size);
        *out = buf;
        *n_out = count;
    }
    ws_hub_barrier(h, 0, NULL);
    if (rc)
        ws_thread_hub_abort(h, m->index, err);
    return rc;
}

static int t_set_layout(ws_transport *t, const uint64_t *counts, uint32_t n_locations, ws_error *err)
{
    thread_transport *m = self_of(t);
    return m->local->ops->set_layout(m->local, counts, n_locations, err);
}

static void t_destroy(ws_transport *t)
{
    thread_transport *m = self_of(t);
    if (!m)
        return;
    if (m->local)
        m->local->ops->destroy(m->local);
    ws_buffer_free(&m->drained);
    if (m->outbox)
        for (uint32_t i = 0; i < m->h->n; i++)
            ws_buffer_free(&m->outbox[i]);
    free(m->outbox);
    free(m);
}

static const ws_transport_ops thread_ops = {
    .post = t_post,
    .take = t_take,
    .release = t_release,
    .coll_post = t_coll_post,
    .coll_take = t_coll_take,
    .coll_release = t_coll_release,
    .progress = t_progress,
    .finish = t_finish,
    .agree = t_agree,
    .fail = t_fail,
    .allreduce_u64 = t_allreduce_u64,
    .allreduce_f64 = t_allreduce_f64,
    .exchange = t_exchange,
    .gather = t_gather,
    .gather_apply = t_gather_apply,
    .reduce_f64 = t_reduce_f64,
    .set_layout = t_set_layout,
    .destroy = t_destroy,
};

int ws_transport_thread_new(ws_thread_hub *h, uint32_t index, ws_transport **out, ws_error *err)
{
    *out = NULL;
    if (!h || index >= h->n)
        return ws_error_set(err, WS_ERR_ARGUMENT, "threaded transport: no thread %u", (unsigned)index);
    thread_transport *m = ws_calloc(1, sizeof *m);
    if (!m)
        return ws_error_nomem(err, "threaded transport");
    m->base.ops = &thread_ops;
    m->base.n_locations = h->n_locations;
    m->local = ws_transport_local_new(h->n_locations);
    if (!m->local) {
        free(m);
        return ws_error_nomem(err, "threaded transport");
    }
    m->h = h;
    m->index = index;
    m->outbox = ws_calloc(h->n, sizeof *m->outbox);
    if (!m->outbox) {
        m->local->ops->destroy(m->local);
        free(m);
        return ws_error_nomem(err, "threaded transport");
    }
    for (uint32_t i = 0; i < h->n; i++)
        ws_buffer_init(&m->outbox[i]);
    ws_spin_init(&m->spin);
    ws_buffer_init(&m->drained);
    m->base.process = index;
    m->base.n_processes = h->n;
    *out = &m->base;
    return WS_OK;
}

int ws_transport_thread_stalled_here(ws_transport *t)
{
    return t ? self_of(t)->stalled_here : 0;
}
