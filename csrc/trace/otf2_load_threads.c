/* ws_otf2_load_events_threads (otf2_io.h): the events of many locations
 * read on several threads.
 *
 * An OTF2_Reader must not be shared between threads without locking
 * callbacks, so every thread opens its own reader over a contiguous block
 * of the locations (blocks balanced by the records the definitions
 * announce) and fills those locations' columns, which no other thread
 * touches.  The one structure the threads would share is the call-path
 * tree: each thread extends a copy of the trace's tree instead, and when
 * all have ended the copies are merged in block order, which is the order
 * one thread reads the locations in, so every call path gets the id one
 * thread would give it; the Enter and Leave events of a block whose ids
 * moved are renumbered.  The calling thread only supervises: it reports
 * progress and asks for interruption (so a host's callbacks run on the
 * thread that called), and stops the workers when asked to. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "otf2_io.h"
#include "otf2_reader_int.h"
#include "../common/lock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct load_shared load_shared;

typedef struct load_worker {
    load_shared *sh;
    uint32_t first;         /* position of its block in the list */
    uint32_t n;             /* locations in the block */
    ws_callpaths callpaths; /* the trace's tree at the start, extended by the block */
    ws_progress progress;
    uint64_t done;          /* records read so far (under sh->lock) */
    uint64_t n_events;      /* events stored by the block */
    int rc;
    ws_error err;
} load_worker;

struct load_shared {
    ws_trace *t;
    const uint32_t *list; /* the locations to read, each once, none loaded */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint32_t running;
    int stop;               /* interrupted by the host */
    uint32_t first_failure; /* smallest position in the list that failed (UINT32_MAX: none) */
};

/* ---- call-path trees ---------------------------------------------------- */

static void *copy_array(const void *src, size_t n, size_t size, int *failed)
{
    void *p = ws_malloc_array(n ? n : 1, size);
    if (!p)
        *failed = 1;
    else if (n)
        memcpy(p, src, n * size);
    return p;
}

/* *dst = a deep copy of *src (which ws_callpath_child can extend). */
static int callpaths_copy(ws_callpaths *dst, const ws_callpaths *src)
{
    int failed = 0;
    memset(dst, 0, sizeof *dst);
    ws_map64_init(&dst->index);
    size_t n = src->n;
    dst->parent = copy_array(src->parent, n, sizeof *dst->parent, &failed);
    dst->region = copy_array(src->region, n, sizeof *dst->region, &failed);
    dst->first_child = copy_array(src->first_child, n, sizeof *dst->first_child, &failed);
    dst->next_sibling = copy_array(src->next_sibling, n, sizeof *dst->next_sibling, &failed);
    dst->depth = copy_array(src->depth, n, sizeof *dst->depth, &failed);
    if (src->index.capacity) {
        dst->index.keys = copy_array(src->index.keys, src->index.capacity, sizeof *dst->index.keys, &failed);
        dst->index.values = copy_array(src->index.values, src->index.capacity, sizeof *dst->index.values, &failed);
        dst->index.capacity = src->index.capacity;
        dst->index.count = src->index.count;
    }
    dst->n = src->n;
    dst->capacity = n ? n : 1;
    if (failed) {
        ws_callpaths_free(dst);
        return -1;
    }
    return 0;
}

/* Adds the call paths that `local` (a copy of the trace's tree when its
 * block started, then extended) has beyond the first n0 to the trace's
 * tree, in their order, and renumbers the Enter and Leave events of the
 * block's locations if any id moved. */
static int merge_block(ws_trace *t, const load_worker *w, uint32_t n0, ws_error *err)
{
    const ws_callpaths *local = &w->callpaths;
    uint32_t extra = local->n - n0;
    if (extra == 0)
        return WS_OK;
    uint32_t *map = ws_malloc_array(local->n, sizeof *map);
    if (!map)
        return ws_error_nomem(err, "merging the call paths of the threads");
    int moved = 0;
    for (uint32_t k = 0; k < local->n; k++) {
        if (k < n0) {
            map[k] = k;
            continue;
        }
        uint32_t parent = local->parent[k];
        /* parents are created before their children */
        uint32_t id = ws_callpath_child(&t->callpaths, parent == WS_NONE32 ? WS_NONE32 : map[parent],
                                        local->region[k]);
        if (id == WS_NONE32) {
            free(map);
            return ws_error_nomem(err, "merging the call paths of the threads");
        }
        map[k] = id;
        moved |= id != k;
    }
    for (uint32_t i = 0; moved && i < w->n; i++) {
        ws_location *loc = &t->locations[w->sh->list[w->first + i]];
        if (!loc->loaded)
            continue;
        ws_events *e = &loc->events;
        for (uint64_t j = 0; j < e->n; j++)
            if (e->kind[j] == WS_EV_ENTER || e->kind[j] == WS_EV_LEAVE)
                e->ref[j] = map[e->ref[j]];
    }
    free(map);
    return WS_OK;
}

/* ---- workers ------------------------------------------------------------ */

/* A worker's progress: records the count and says whether to stop (the
 * host interrupted, or a location before the block failed: then what the
 * block reads would be dropped anyway). */
static int worker_report(void *context, const char *stage, uint64_t done, uint64_t total)
{
    (void)stage;
    (void)total;
    load_worker *w = context;
    pthread_mutex_lock(&w->sh->lock);
    w->done = done;
    int stop = w->sh->stop || w->sh->first_failure < w->first;
    pthread_mutex_unlock(&w->sh->lock);
    return stop;
}

static void *worker_main(void *arg)
{
    load_worker *w = arg;
    load_shared *sh = w->sh;
    uint64_t done = 0;
    uint32_t failed_at = w->n;
    w->rc = ws_otf2_load_block(sh->t, sh->list + w->first, w->n, &w->callpaths, &w->progress, &done, 0,
                               &w->n_events, &failed_at, &w->err);
    pthread_mutex_lock(&sh->lock);
    w->done = done;
    if (w->rc != WS_OK && w->rc != WS_ERR_INTERRUPTED) {
        /* the archive not reopened, or memory: before its first location */
        uint32_t pos = w->first + (failed_at < w->n ? failed_at : 0);
        if (pos < sh->first_failure)
            sh->first_failure = pos;
    }
    sh->running--;
    pthread_cond_broadcast(&sh->cond);
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

/* Calls the host's progress callback (or its interruption check) with the
 * records read so far; 1 if it asks to stop.  Called with sh->lock held,
 * which it releases during the call. */
static int report(load_shared *sh, load_worker *w, uint32_t n, uint64_t total, const ws_progress *progress)
{
    uint64_t done = 0;
    for (uint32_t i = 0; i < n; i++)
        done += w[i].done;
    pthread_mutex_unlock(&sh->lock);
    int stop = 0;
    if (progress->callback)
        stop = progress->callback(progress->context, "load", done, total);
    else if (progress->interrupted)
        stop = progress->interrupted(progress->context);
    pthread_mutex_lock(&sh->lock);
    if (stop)
        sh->stop = 1;
    return stop;
}

/* The host's progress reports on the calling thread: at the start, every
 * 50 ms while the workers run and, if all of them succeeded, once at the
 * end (the final count, as one thread reports it); returns 1 if the host
 * asked to stop (the workers then stop at their next batch or location). */
static int supervise(load_shared *sh, load_worker *w, uint32_t n, uint64_t total, const ws_progress *progress)
{
    int interrupted = 0;
    pthread_mutex_lock(&sh->lock);
    if (progress)
        interrupted = report(sh, w, n, total, progress);
    while (sh->running > 0) {
        ws_lock_wait_ms(&sh->cond, &sh->lock, 50);
        if (progress && !interrupted && sh->running > 0)
            interrupted = report(sh, w, n, total, progress);
    }
    if (progress && !interrupted && sh->first_failure == UINT32_MAX) {
        int all_ok = 1;
        for (uint32_t i = 0; i < n; i++)
            all_ok &= w[i].rc == WS_OK;
        if (all_ok)
            interrupted = report(sh, w, n, total, progress);
    }
    pthread_mutex_unlock(&sh->lock);
    return interrupted;
}

/* ---- the load ----------------------------------------------------------- */

/* The locations of `locations` (NULL: all) that are not loaded, each once,
 * in their first order; *count of them. */
static int pending_list(const ws_trace *t, const uint32_t *locations, uint32_t n, uint32_t **out, uint32_t *count,
                        ws_error *err)
{
    *out = NULL;
    *count = 0;
    if (!locations)
        n = t->n_locations;
    for (uint32_t i = 0; locations && i < n; i++)
        if (locations[i] >= t->n_locations)
            return ws_error_set(err, WS_ERR_ARGUMENT, "location index %u out of range (trace has %u)",
                                (unsigned)locations[i], (unsigned)t->n_locations);
    uint32_t *list = ws_malloc_array(n ? n : 1, sizeof *list);
    unsigned char *seen = ws_calloc(t->n_locations ? t->n_locations : 1, 1);
    if (!list || !seen) {
        free(list);
        free(seen);
        return ws_error_nomem(err, "location list");
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = locations ? locations[i] : i;
        if (!seen[l] && !t->locations[l].loaded)
            list[k++] = l;
        seen[l] = 1;
    }
    free(seen);
    if (ws_otf2_process_order(t, list, k) != 0) {
        free(list);
        return ws_error_nomem(err, "location list");
    }
    *out = list;
    *count = k;
    return WS_OK;
}

/* Contiguous blocks of `list` for n_threads threads, balanced by the
 * records the definitions announce plus a constant per location for its
 * files; every block has at least one location (count >= n_threads). */
static void partition(const ws_trace *t, const uint32_t *list, uint32_t count, uint32_t n_threads,
                      load_worker *w)
{
    const double per_file = 4096.0;
    double sum = 0.0;
    for (uint32_t i = 0; i < count; i++)
        sum += (double)t->locations[list[i]].n_events_defined + per_file;
    uint32_t pos = 0;
    double cum = 0.0;
    for (uint32_t b = 0; b < n_threads; b++) {
        w[b].first = pos;
        uint32_t last_possible = count - (n_threads - 1 - b); /* leaves one per later block */
        if (b == n_threads - 1) {
            pos = count;
        } else {
            double target = sum * (double)(b + 1) / (double)n_threads;
            do {
                cum += (double)t->locations[list[pos]].n_events_defined + per_file;
                pos++;
            } while (pos < last_possible &&
                     cum + 0.5 * ((double)t->locations[list[pos]].n_events_defined + per_file) <= target);
            /* a process's threads stay in one block (otf2_threads.c) */
            while (pos < count && pos > w[b].first &&
                   t->locations[list[pos]].group == t->locations[list[pos - 1]].group) {
                cum += (double)t->locations[list[pos]].n_events_defined + per_file;
                pos++;
            }
        }
        w[b].n = pos - w[b].first;
    }
}

/* Frees the events of every location of the blocks from `from` on. */
static void drop_blocks(ws_trace *t, load_shared *sh, load_worker *w, uint32_t from, uint32_t n_threads)
{
    for (uint32_t b = from; b < n_threads; b++)
        for (uint32_t i = 0; i < w[b].n; i++) {
            ws_location *loc = &t->locations[sh->list[w[b].first + i]];
            if (loc->loaded) {
                ws_events_free(&loc->events);
                loc->loaded = 0;
            }
        }
}

int ws_otf2_load_events_threads(ws_trace *t, const uint32_t *locations, uint32_t n, uint32_t n_threads,
                                const ws_progress *progress, ws_error *err)
{
    if (n_threads <= 1)
        return ws_otf2_load_events(t, locations, n, progress, err);
    ws_otf2_silence();
    uint32_t *list, count;
    int rc = pending_list(t, (locations && n) ? locations : NULL, n, &list, &count, err);
    if (rc)
        return rc;
    if (n_threads > count)
        n_threads = count;
    if (n_threads <= 1) {
        rc = ws_otf2_load_events(t, list, count, progress, err);
        free(list);
        return rc;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < count; i++)
        total += t->locations[list[i]].n_events_defined;

    load_worker *w = ws_calloc(n_threads, sizeof *w);
    pthread_t *tid = ws_calloc(n_threads, sizeof *tid);
    load_shared sh;
    memset(&sh, 0, sizeof sh);
    sh.t = t;
    sh.list = list;
    sh.first_failure = UINT32_MAX;
    uint32_t prepared = 0, started = 0;
    const uint32_t n0 = t->callpaths.n; /* call paths before this load */
    int have_sync = 0;
    if (!w || !tid) {
        rc = ws_error_nomem(err, "the threaded load");
        goto done;
    }
    partition(t, list, count, n_threads, w);
    for (; prepared < n_threads; prepared++) {
        load_worker *x = &w[prepared];
        x->sh = &sh;
        x->progress.callback = worker_report;
        x->progress.context = x;
        ws_error_clear(&x->err);
        if (callpaths_copy(&x->callpaths, &t->callpaths) != 0) {
            rc = ws_error_nomem(err, "the threaded load");
            goto done;
        }
    }
    if ((rc = ws_lock_init(&sh.lock, &sh.cond, "threaded load", err)))
        goto done;
    have_sync = 1;
    sh.running = n_threads;
    for (; started < n_threads; started++)
        if (pthread_create(&tid[started], NULL, worker_main, &w[started]) != 0)
            break;
    if (started < n_threads) {
        pthread_mutex_lock(&sh.lock);
        sh.running -= n_threads - started;
        sh.stop = 1;
        pthread_mutex_unlock(&sh.lock);
        for (uint32_t i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        drop_blocks(t, &sh, w, 0, n_threads);
        rc = ws_error_set(err, WS_ERR_INTERNAL, "threaded load: cannot start thread %u", (unsigned)started);
        goto done;
    }
    int interrupted = supervise(&sh, w, n_threads, total, progress);
    for (uint32_t i = 0; i < n_threads; i++)
        pthread_join(tid[i], NULL);

    /* the blocks to keep: all, or up to the first that failed (the blocks
     * before it never stop for it, so they are complete, and it keeps what
     * it read before its failing location, as one thread would) */
    uint32_t keep = n_threads, failed = UINT32_MAX;
    if (!interrupted)
        for (uint32_t b = 0; b < n_threads && failed == UINT32_MAX; b++)
            if (w[b].rc != WS_OK)
                failed = b;
    if (failed != UINT32_MAX)
        keep = failed + 1;
    drop_blocks(t, &sh, w, keep, n_threads);
    rc = WS_OK;
    for (uint32_t b = 0; b < keep; b++) {
        if ((rc = merge_block(t, &w[b], n0, err)) != WS_OK) {
            drop_blocks(t, &sh, w, b, keep);
            break;
        }
        t->n_events += w[b].n_events;
    }
    if (rc == WS_OK && interrupted)
        rc = ws_error_set(err, WS_ERR_INTERRUPTED, "loading interrupted");
    else if (rc == WS_OK && failed != UINT32_MAX)
        rc = ws_error_set(err, w[failed].rc, "%s", w[failed].err.message);

done:
    if (have_sync)
        ws_lock_destroy(&sh.lock, &sh.cond);
    for (uint32_t i = 0; w && i < prepared; i++)
        ws_callpaths_free(&w[i].callpaths);
    free(w);
    free(tid);
    free(list);
    return rc;
}
