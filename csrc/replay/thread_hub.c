/* The hub of the threaded transport (thread_hub.h): what its threads
 * share, its creation, quiescence, the barrier of the collectives and the
 * abort that releases every waiting thread. */
#include "thread_hub.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/lock.h"
#include "../waitscope.h"
#include "spin.h"

static void release_idle(ws_thread_hub *h)
{
    memset(h->idle, 0, h->n);
    h->n_idle = 0;
}

/* Called with the lock held: every waiting thread must look again. */
void ws_hub_notify_all(ws_thread_hub *h)
{
    atomic_fetch_add_explicit(&h->notice, 1, memory_order_release);
    release_idle(h);
    for (uint32_t i = 0; i < h->n; i++)
        pthread_cond_signal(&h->box[i].wake);
    pthread_cond_broadcast(&h->cond);
}

/* Called without the lock: spins until thread `me` got a record or the
 * hub a notice (then 1), at most `budget` nanoseconds (then 0). */
int ws_hub_spin_for_news(ws_thread_hub *h, uint32_t me, uint64_t records, uint64_t notice, int64_t budget)
{
    int64_t start = 0;
    for (uint32_t round = 0;; round++) {
        if (atomic_load_explicit(&h->box[me].records, memory_order_acquire) != records ||
            atomic_load_explicit(&h->notice, memory_order_acquire) != notice)
            return 1;
        if ((round & 15u) == 0) {
            int64_t t = ws_monotonic_ns();
            if (round == 0)
                start = t;
            else if (t - start > budget || t < start)
                return 0;
        }
        ws_spin_pause();
    }
}

int ws_hub_aborted_error(ws_thread_hub *h, ws_error *err)
{
    /* called with the lock held */
    if (err)
        ws_error_set(err, h->abort_err.code ? h->abort_err.code : WS_ERR_INTERNAL, "%s", h->abort_err.message);
    return h->abort_err.code ? h->abort_err.code : WS_ERR_INTERNAL;
}

void ws_thread_hub_abort(ws_thread_hub *h, uint32_t index, const ws_error *err)
{
    pthread_mutex_lock(&h->lock);
    if (!h->aborted) {
        h->aborted = 1;
        h->first_failure = index;
        h->abort_err.code = err && err->code ? err->code : WS_ERR_INTERNAL;
        memcpy(h->abort_err.message, err ? err->message : "analysis thread failed", sizeof h->abort_err.message);
        h->abort_err.message[sizeof h->abort_err.message - 1] = '\0';
        ws_hub_notify_all(h);
    }
    pthread_mutex_unlock(&h->lock);
}

int ws_thread_hub_stalled(ws_thread_hub *h)
{
    return h->stalled;
}

uint32_t ws_thread_hub_first_failure(ws_thread_hub *h)
{
    return h->aborted ? h->first_failure : UINT32_MAX;
}

static int all_inboxes_empty(const ws_thread_hub *h)
{
    for (uint32_t i = 0; i < h->n; i++)
        if (h->inbox[i].size)
            return 0;
    return 1;
}

/* Called with the lock held by a thread about to wait: marks it idle and
 * returns 1 if that made the whole hub quiescent. */
int ws_hub_go_idle(ws_thread_hub *h, uint32_t me)
{
    if (!h->idle[me]) {
        h->idle[me] = 1;
        h->n_idle++;
    }
    return h->n_idle == h->n && all_inboxes_empty(h);
}

void ws_hub_wait_once(ws_thread_hub *h, uint32_t me)
{
    pthread_cond_wait(&h->box[me].wake, &h->lock);
    if (h->idle[me]) {
        h->idle[me] = 0;
        h->n_idle--;
    }
}

/* Every thread arrives before any leaves.  With `abortable` an abort
 * releases the waiters (error); without, the barrier is one every thread
 * is sure to reach (the second half of a collective). */
int ws_hub_barrier(ws_thread_hub *h, int abortable, ws_error *err)
{
    pthread_mutex_lock(&h->lock);
    if (abortable && h->aborted) {
        int rc = ws_hub_aborted_error(h, err);
        pthread_mutex_unlock(&h->lock);
        return rc;
    }
    uint64_t gen = h->barrier_gen;
    if (++h->arrived == h->n) {
        h->arrived = 0;
        h->barrier_gen++;
        pthread_cond_broadcast(&h->cond);
    } else {
        while (gen == h->barrier_gen && !(abortable && h->aborted))
            pthread_cond_wait(&h->cond, &h->lock);
    }
    int rc = WS_OK;
    if (gen == h->barrier_gen)
        rc = ws_hub_aborted_error(h, err);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

void ws_thread_hub_free(ws_thread_hub *h)
{
    if (!h)
        return;
    ws_lock_destroy(&h->lock, &h->cond);
    for (uint32_t i = 0; i < h->n_box_conds; i++)
        pthread_cond_destroy(&h->box[i].wake);
    free(h->box);
    if (h->inbox)
        for (uint32_t i = 0; i < h->n; i++)
            ws_buffer_free(&h->inbox[i]);
    free(h->inbox);
    free(h->idle);
    free(h->in_finish);
    free(h->dep);
    for (uint32_t c = 0; c < h->n_comms; c++)
        free(h->comm_threads ? h->comm_threads[c] : NULL);
    free(h->comm_threads);
    free(h->comm_n_threads);
    free(h->all_threads);
    free(h);
}

int ws_thread_hub_new(uint32_t n_threads, const ws_comm_layout *layout, const uint32_t *owner, ws_thread_hub **out,
                      ws_error *err)
{
    *out = NULL;
    if (n_threads == 0)
        return ws_error_set(err, WS_ERR_ARGUMENT, "threaded transport: no threads");
    ws_thread_hub *h = ws_calloc(1, sizeof *h);
    if (!h)
        return ws_error_nomem(err, "threaded transport");
    int rc = ws_lock_init(&h->lock, &h->cond, "threaded transport", err);
    if (rc) {
        free(h);
        return rc;
    }
    h->n = n_threads;
    h->n_locations = layout->n_locations;
    h->owner = owner;
    h->first_failure = UINT32_MAX;
    h->inbox = ws_calloc(n_threads, sizeof *h->inbox);
    h->idle = ws_calloc(n_threads, 1);
    h->in_finish = ws_calloc(n_threads, 1);
    h->dep = ws_calloc(n_threads, sizeof *h->dep);
    h->box = ws_calloc(n_threads, sizeof *h->box);
    atomic_init(&h->notice, 0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    h->spin = cores > 0 && n_threads <= (uint64_t)cores;
    h->n_comms = layout->n_comms;
    h->comm_threads = ws_calloc(layout->n_comms ? layout->n_comms : 1, sizeof *h->comm_threads);
    h->comm_n_threads = ws_calloc(layout->n_comms ? layout->n_comms : 1, sizeof *h->comm_n_threads);
    if (!h->inbox || !h->idle || !h->in_finish || !h->dep || !h->box || !h->comm_threads || !h->comm_n_threads)
        goto nomem;
    for (uint32_t i = 0; i < n_threads; i++) {
        atomic_init(&h->box[i].records, 0);
        atomic_init(&h->box[i].posted_at, 0);
        atomic_init(&h->box[i].waiting, 0);
        if (pthread_cond_init(&h->box[i].wake, NULL) != 0) {
            ws_thread_hub_free(h);
            return ws_error_set(err, WS_ERR_INTERNAL, "threaded transport: cannot create a condition variable");
        }
        h->n_box_conds = i + 1;
    }
    for (uint32_t i = 0; i < n_threads; i++)
        ws_buffer_init(&h->inbox[i]);
    if (ws_comm_owners(layout, owner, h->comm_threads, h->comm_n_threads, &h->all_threads, &h->n_all_threads) != 0)
        goto nomem;
    *out = h;
    return WS_OK;
nomem:
    ws_thread_hub_free(h);
    return ws_error_nomem(err, "threaded transport");
}
