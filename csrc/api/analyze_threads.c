/* ws_analyze_threads (waitscope.h): the parallel mode inside one process.
 * Threads take the place of the parallel mode's processes: each analyzes
 * a contiguous block of locations (the parallel mode's block partition)
 * with its own engine, the threaded transport connects them, and the
 * result is gathered on thread 0 exactly as the parallel mode gathers it
 * on process 0.  The calling thread only supervises: it reports progress
 * and asks for interruption (so a host's callbacks run on the thread that
 * called), and stops every worker when asked to. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "../waitscope.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/analysis.h"
#include "../common/lock.h"
#include "../replay/parallel.h"
#include "../replay/transport_threads.h"
#include "../trace/trace.h"

typedef struct worker {
    struct shared *sh;
    uint32_t index;
    uint32_t *locations;
    uint32_t n_locations;
    ws_transport *tr;
    ws_progress progress;
    ws_result *result;
    ws_error err;
    int rc;
    /* last progress report (under sh->lock) */
    const char *stage;
    uint64_t done, total;
} worker;

typedef struct shared {
    const ws_trace *trace;
    const ws_analysis_options *options;
    ws_thread_hub *hub;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint32_t running;
    int stop;
} shared;

static int worker_report(void *context, const char *stage, uint64_t done, uint64_t total)
{
    worker *w = context;
    pthread_mutex_lock(&w->sh->lock);
    w->stage = stage;
    w->done = done;
    w->total = total;
    int stop = w->sh->stop;
    pthread_mutex_unlock(&w->sh->lock);
    return stop;
}

static int worker_interrupted(void *context)
{
    worker *w = context;
    pthread_mutex_lock(&w->sh->lock);
    int stop = w->sh->stop;
    pthread_mutex_unlock(&w->sh->lock);
    return stop;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    w->rc = ws_analyze(sh->trace, w->locations, w->n_locations, w->tr, sh->options, &w->progress, &w->result,
                       &w->err);
    if (w->rc == WS_OK)
        w->rc = ws_result_gather(w->result, w->tr, &w->err);
    if (w->rc != WS_OK)
        w->tr->ops->fail(w->tr, &w->err);
    pthread_mutex_lock(&sh->lock);
    sh->running--;
    pthread_cond_broadcast(&sh->cond);
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

/* The host's progress callback and interruption check, on the calling
 * thread, every 50 ms while the workers run and once when they ended: the
 * report sums the workers that are in the same stage as thread 0. */
static int supervise(shared *sh, worker *w, uint32_t n, const ws_progress *progress)
{
    int interrupted = 0, reported_end = 0;
    pthread_mutex_lock(&sh->lock);
    while (sh->running > 0 || (progress && !interrupted && !reported_end && w[0].stage)) {
        if (sh->running > 0)
            ws_lock_wait_ms(&sh->cond, &sh->lock, 50);
        /* once more when all ended: the last stage's final count */
        if (!progress || interrupted || (sh->running == 0 && (reported_end || !w[0].stage)))
            continue;
        reported_end = sh->running == 0;
        const char *stage = w[0].stage;
        uint64_t done = 0, total = 0;
        for (uint32_t i = 0; i < n && stage; i++)
            if (w[i].stage && strcmp(w[i].stage, stage) == 0) {
                done += w[i].done;
                total += w[i].total;
            }
        pthread_mutex_unlock(&sh->lock);
        int stop = 0;
        if (stage && progress->callback)
            stop = progress->callback(progress->context, stage, done, total);
        else if (progress->interrupted)
            stop = progress->interrupted(progress->context);
        pthread_mutex_lock(&sh->lock);
        if (stop) {
            interrupted = 1;
            sh->stop = 1;
            pthread_mutex_unlock(&sh->lock);
            ws_error e;
            ws_error_set(&e, WS_ERR_INTERRUPTED, "analysis interrupted");
            ws_thread_hub_abort(sh->hub, UINT32_MAX, &e);
            pthread_mutex_lock(&sh->lock);
        }
    }
    pthread_mutex_unlock(&sh->lock);
    return interrupted;
}

/* The error to report: the deadlock as the first thread with waiting
 * locations describes it (one engine over all locations reports its first
 * waiting location, which lies in that thread's block), else the failure
 * that came first. */
static void pick_error(shared *sh, worker *w, uint32_t n, int interrupted, ws_error *err)
{
    uint32_t pick = UINT32_MAX;
    if (interrupted) {
        ws_error_set(err, WS_ERR_INTERRUPTED, "analysis interrupted");
        return;
    }
    if (ws_thread_hub_stalled(sh->hub))
        for (uint32_t i = 0; i < n && pick == UINT32_MAX; i++)
            if (w[i].rc && ws_transport_thread_stalled_here(w[i].tr))
                pick = i;
    if (pick == UINT32_MAX) {
        uint32_t first = ws_thread_hub_first_failure(sh->hub);
        if (first < n && w[first].rc)
            pick = first;
    }
    for (uint32_t i = 0; i < n && pick == UINT32_MAX; i++)
        if (w[i].rc)
            pick = i;
    if (pick == UINT32_MAX)
        ws_error_set(err, WS_ERR_INTERNAL, "threaded analysis failed without an error");
    else
        ws_error_set(err, w[pick].rc, "%s", w[pick].err.message);
}

int ws_analyze_threads(const ws_trace *t, const ws_analysis_options *options, uint32_t n_threads,
                       const ws_progress *progress, ws_result **out, ws_error *err)
{
    ws_error scratch; /* the status is returned even when the caller passes no err */
    if (!err)
        err = &scratch;
    if (!out)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_analyze_threads: out is NULL");
    *out = NULL;
    if (!t || !options)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_analyze_threads: %s is NULL", t ? "options" : "trace");
    if (n_threads == 0)
        return ws_error_set(err, WS_ERR_ARGUMENT, "ws_analyze_threads: threads must be at least 1");
    uint32_t n_loc = t->n_locations;
    if (n_threads > n_loc)
        n_threads = n_loc ? n_loc : 1;
    /* (the threads of a process stay together: at most one part per process) */
    if (ws_trace_has_threads(t) && n_threads > t->n_location_groups)
        n_threads = t->n_location_groups;
    if (n_threads == 1)
        return ws_analyze_all(t, options, progress, out, err);
    for (uint32_t i = 0; i < n_loc; i++)
        if (!t->locations[i].loaded)
            return ws_error_set(err, WS_ERR_ARGUMENT,
                                "location %u is not loaded: the analysis needs the events of every location",
                                (unsigned)i);
    uint32_t *owner = ws_malloc_array(n_loc, sizeof *owner);
    uint32_t *locs = ws_malloc_array(n_loc, sizeof *locs);
    worker *w = ws_calloc(n_threads, sizeof *w);
    pthread_t *tid = ws_calloc(n_threads, sizeof *tid);
    ws_comm_layout layout;
    memset(&layout, 0, sizeof layout);
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.trace = t;
    sh.options = options;
    int rc = WS_OK, have_sync = 0;
    uint32_t started = 0;
    if (!owner || !locs || !w || !tid) {
        rc = ws_error_nomem(err, "the threaded analysis");
        goto done;
    }
    /* blocks as the parallel mode's block_owners (ws_block_owners): the
     * locations in order of their owners */
    ws_block_owners(t, n_threads, owner);
    {
        uint32_t k = 0;
        for (uint32_t p = 0; p < n_threads; p++)
            for (uint32_t l = 0; l < n_loc; l++)
                if (owner[l] == p)
                    locs[k++] = l;
    }
    if ((rc = ws_comm_layout_of(t, &layout, err)) ||
        (rc = ws_thread_hub_new(n_threads, &layout, owner, &sh.hub, err)))
        goto done;
    if ((rc = ws_lock_init(&sh.lock, &sh.cond, "ws_analyze_threads", err)))
        goto done;
    have_sync = 1;
    uint32_t first = 0;
    for (uint32_t i = 0; i < n_threads; i++) {
        worker *x = &w[i];
        x->sh = &sh;
        x->index = i;
        x->locations = locs + first;
        while (first < n_loc && owner[first] == i)
            first++;
        x->n_locations = (uint32_t)(locs + first - x->locations);
        x->progress.callback = worker_report;
        x->progress.interrupted = worker_interrupted;
        x->progress.context = x;
        ws_error_clear(&x->err);
        if ((rc = ws_transport_thread_new(sh.hub, i, &x->tr, err)))
            goto done;
    }
    sh.running = n_threads;
    for (; started < n_threads; started++)
        if (pthread_create(&tid[started], NULL, worker_main, &w[started]) != 0)
            break;
    if (started < n_threads) {
        ws_error e;
        ws_error_set(&e, WS_ERR_INTERNAL, "ws_analyze_threads: cannot start analysis thread %u", (unsigned)started);
        pthread_mutex_lock(&sh.lock);
        sh.running -= n_threads - started;
        sh.stop = 1;
        pthread_mutex_unlock(&sh.lock);
        ws_thread_hub_abort(sh.hub, UINT32_MAX, &e);
        for (uint32_t i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        started = 0;
        rc = ws_error_set(err, e.code, "%s", e.message);
        goto done;
    }
    int interrupted = supervise(&sh, w, n_threads, progress);
    for (uint32_t i = 0; i < n_threads; i++)
        pthread_join(tid[i], NULL);
    started = 0;
    int failed = interrupted;
    for (uint32_t i = 0; i < n_threads; i++)
        failed |= w[i].rc != WS_OK;
    if (failed) {
        pick_error(&sh, w, n_threads, interrupted, err);
        rc = err->code ? err->code : WS_ERR_INTERNAL;
        goto done;
    }
    *out = w[0].result;
    w[0].result = NULL;
done:
    if (w)
        for (uint32_t i = 0; i < n_threads; i++) {
            ws_result_free(w[i].result);
            ws_transport_free(w[i].tr);
        }
    if (have_sync)
        ws_lock_destroy(&sh.lock, &sh.cond);
    ws_thread_hub_free(sh.hub);
    ws_comm_layout_free(&layout);
    free(owner);
    free(locs);
    free(w);
    free(tid);
    return rc;
}
