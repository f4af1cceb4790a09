/* Runs the replays of the requested analyses and assembles the result. */
#include "analysis_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"

const char *ws_analysis_step_name(int step)
{
    static const char *const names[WS_STEP_COUNT] = {
        [WS_STEP_MATCHING] = "matching",       [WS_STEP_WAIT_STATES] = "wait states",
        [WS_STEP_SYNC_POINTS] = "sync points", [WS_STEP_POINTS] = "delay points",
        [WS_STEP_BACKWARD] = "backward replay", [WS_STEP_PATH_WALK] = "path walk",
        [WS_STEP_FORWARD] = "delay forward",   [WS_STEP_PATH_PIECES] = "path pieces",
        [WS_STEP_DERIVED] = "derived metrics",
    };
    return step >= 0 && step < WS_STEP_COUNT ? names[step] : NULL;
}

/* Ends a step of the analysis: its seconds since *mark go to the result,
 * and *mark moves on to the next step's start. */
static void step_done(ws_result *r, int step, double *mark)
{
    double now = ws_monotonic_seconds();
    r->step_seconds[step] = now - *mark;
    *mark = now;
}

void ws_result_free(ws_result *r)
{
    if (!r)
        return;
    free(r->cube);
    free(r->row_live);
    free(r->clock_violations);
    free(r->path);
    free(r->records);
    free(r->record_cp);
    free(r->record_value);
    free(r->wait_records);
    free(r->partition);
    free(r);
}

static ws_result *result_new(const ws_trace *t, unsigned groups, ws_error *err)
{
    ws_result *r = ws_calloc(1, sizeof *r);
    if (!r) {
        ws_error_nomem(err, "result");
        return NULL;
    }
    for (int m = 0; m < WS_M_COUNT; m++) {
        r->slot[m] = -1;
        if (ws_metric_table[m].group & groups) {
            r->slot[m] = (int)r->n_metrics;
            r->metric[r->n_metrics++] = m;
        }
    }
    r->n_callpaths = t->callpaths.n;
    r->n_locations = t->n_locations;
    size_t cells = (size_t)r->n_metrics * (r->n_callpaths ? r->n_callpaths : 1);
    if (r->n_locations && cells > SIZE_MAX / sizeof(double) / r->n_locations) {
        ws_error_set(err, WS_ERR_NOMEM, "the result cube (%u metrics x %u call paths x %u locations) is too large",
                     (unsigned)r->n_metrics, (unsigned)r->n_callpaths, (unsigned)r->n_locations);
        free(r);
        return NULL;
    }
    r->cube = ws_calloc(cells * (r->n_locations ? r->n_locations : 1), sizeof *r->cube);
    r->row_live = ws_calloc(cells ? cells : 1, 1);
    r->clock_violations = ws_calloc(r->n_locations ? r->n_locations : 1, sizeof *r->clock_violations);
    r->path_start = 0.0;
    r->path_end = 0.0;
    for (int k = 0; k < WS_STEP_COUNT; k++)
        r->step_seconds[k] = NAN;
    if (!r->cube || !r->row_live || !r->clock_violations) {
        ws_error_nomem(err, "result cube");
        ws_result_free(r);
        return NULL;
    }
    return r;
}

static void free_analysis(ws_analysis *a)
{
    if (a->locs) {
        for (uint32_t i = 0; i < a->trace->n_locations; i++) {
            ws_loc_data *d = &a->locs[i];
            ws_waitstates_release(d);
            free(d->time);
            free(d->visits);
        }
        free(a->locs);
    }
    free(a->region_category);
}

/* `join`: the replay may run as a join when its handlers allow it (see
 * ws_replay_env.join); the first replay establishes that the trace's
 * communication is causally consistent and stays scheduled. */
static int replay(ws_analysis *a, const char *name, int backward, int join, ws_handler *handlers, size_t n,
                  const ws_progress *progress, ws_error *err)
{
    ws_replay_env env;
    memset(&env, 0, sizeof env);
    env.join = !join || a->options.replays == WS_REPLAYS_SCHEDULED ? 0
               : a->options.replays == WS_REPLAYS_JOINS                ? 2
                                                                        : 1;
    env.trace = a->trace;
    env.sync = a->sync;
    env.locations = a->local;
    env.n_locations = a->n_local;
    env.backward = backward;
    env.name = name;
    env.schedule_seed = a->options.schedule_seed;
    return ws_replay_run(&env, a->transport, handlers, n, progress, err);
}

static int analyze_all(const ws_trace *t, ws_omp *omp, const uint32_t *locations, uint32_t n, ws_transport *tr,
                       const ws_analysis_options *options, const ws_progress *progress, ws_result **out,
                       ws_error *err)
{
    *out = NULL;
    int rc;
    double mark = ws_monotonic_seconds();
    ws_sync *sync = NULL;
    if ((rc = ws_sync_build(omp ? &omp->view : t, locations, n, tr, &sync, err)))
        return rc;
    unsigned groups = WS_METRICS_WAITSTATES;
    if (options->delay_model != WS_DELAY_NONE)
        groups |= WS_METRICS_DELAY;
    if (options->critical_path)
        groups |= WS_METRICS_CRITICAL_PATH;
    if (ws_trace_has_openmp(t))
        groups |= WS_METRICS_OPENMP | (options->delay_model != WS_DELAY_NONE ? WS_METRICS_OPENMP_DELAY : 0u);
    ws_result *r = result_new(t, groups, err);
    if (!r) {
        ws_sync_free(sync);
        return err->code;
    }
    r->delay_model = options->delay_model;
    r->has_wait_records = options->wait_records != 0;
    ws_analysis a;
    memset(&a, 0, sizeof a);
    a.trace = omp ? &omp->view : t;
    a.store = t;
    a.omp = omp;
    a.sync = sync;
    a.transport = tr;
    a.result = r;
    a.local = locations;
    a.n_local = n;
    a.options = *options;
    a.locs = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *a.locs);
    if (!a.locs) {
        rc = ws_error_nomem(err, "analysis state");
        goto fail;
    }
    if ((rc = ws_waitstates_prepare(&a, err)))
        goto fail;
    if ((rc = ws_replay_share_layout(tr, t, locations, n, err)))
        goto fail;
    step_done(r, WS_STEP_MATCHING, &mark);
    ws_handler h;
    ws_waitstates_handlers(&a, 1, &h);
    if ((rc = replay(&a, "wait states 1/2", 0, 0, &h, 1, progress, err)))
        goto fail;
    /* The transport's mailboxes indexed by message (8 bytes per message)
     * serve the replay that exchanges on every message through it: pass 1.
     * Passes 2 and 3 take the payloads of messages between locations of
     * this thread or process from their producer (msg_pure), pass 4
     * exchanges only at the points, few notes at a time, and pass 5 takes
     * its payloads from the partners' points: hash maps serve the messages
     * they exchange through the transport (between threads, on the
     * 1024-rank stencil, 3 bytes per event less at the peak of pass 3 and
     * no slower). */
    if ((rc = ws_replay_drop_layout(tr, err)))
        goto fail;
    ws_waitstates_handlers(&a, 2, &h);
    if ((rc = replay(&a, "wait states 2/2", 1, 1, &h, 1, progress, err)))
        goto fail;
    if ((rc = ws_waitstates_finish(&a, err)))
        goto fail;
    /* every wait record is made in passes 1-2, in scheduling order */
    ws_wait_records_sort(r->wait_records, r->n_wait_records);
    if (r->n_wait_records && r->cap_wait_records > r->n_wait_records) {
        void *fit = ws_realloc(r->wait_records, r->n_wait_records * sizeof *r->wait_records);
        if (fit) { /* else the larger block stays */
            r->wait_records = fit;
            r->cap_wait_records = r->n_wait_records;
        }
    }
    step_done(r, WS_STEP_WAIT_STATES, &mark);
    if (options->delay_model != WS_DELAY_NONE || options->critical_path) {
        /* the receivers learn which Late Receivers count */
        ws_waitstates_handlers(&a, 3, &h);
        if ((rc = replay(&a, "sync points", 0, 1, &h, 1, progress, err)))
            goto fail;
        /* what only the wait-state passes need goes before the delay
         * analysis allocates its own */
        for (uint32_t i = 0; i < n; i++) {
            ws_loc_data *d = &a.locs[locations[i]];
            free(d->msg_bits);
            d->msg_bits = NULL;
        }
        step_done(r, WS_STEP_SYNC_POINTS, &mark);
        ws_causes *causes = NULL;
        if ((rc = ws_causes_prepare(&a, &causes, err)))
            goto fail;
        step_done(r, WS_STEP_POINTS, &mark);
        ws_causes_handlers(causes, 4, &h);
        /* one backward replay serves both analyses; its stage says which ran */
        const char *backward = options->delay_model == WS_DELAY_NONE ? "critical path (backward)"
                               : options->critical_path             ? "delay causes + critical path (backward)"
                                                                    : "delay causes (backward)";
        rc = replay(&a, backward, 1, 0, &h, 1, progress, err);
        step_done(r, WS_STEP_BACKWARD, &mark);
        int indirect = 0;
        if (rc == WS_OK)
            rc = ws_causes_path_walk(causes, err);
        if (options->critical_path)
            step_done(r, WS_STEP_PATH_WALK, &mark);
        if (rc == WS_OK && options->delay_model != WS_DELAY_NONE)
            rc = ws_causes_indirect_found(causes, &indirect, err);
        if (rc == WS_OK && indirect) {
            ws_causes_handlers(causes, 5, &h);
            rc = replay(&a, "delay (forward)", 0, 1, &h, 1, progress, err);
        }
        if (rc == WS_OK)
            rc = ws_causes_finish(causes, err);
        if (options->delay_model != WS_DELAY_NONE)
            step_done(r, WS_STEP_FORWARD, &mark);
        /* The replays are over: what only they read (the points and their
         * costs, the synchronization structure; the wait states' records
         * went when the points were built) goes before the path's pieces
         * are cut (from the moves and the events alone), so that the
         * pieces reuse its memory instead of adding to the peak (the 2-rank
         * barrier trace: 366 -> 348 MB above the store). */
        ws_causes_release_points(causes);
        ws_sync_free(sync);
        a.sync = sync = NULL;
        ws_return_free_pages();
        if (rc == WS_OK) {
            rc = ws_causes_path_pieces(causes, err);
            /* collective: the path pieces may have failed on one process
             * only (a failed replay is not: the others learn of it by the
             * transport's abort, which comes only once this one returns) */
            if (options->delay_model != WS_DELAY_NONE)
                rc = ws_agree_status(tr, rc, err);
        }
        if (options->critical_path)
            step_done(r, WS_STEP_PATH_PIECES, &mark);
        double path_first = ws_causes_path_first(causes);
        double *undistributed = ws_calloc(t->n_locations ? t->n_locations : 1, sizeof *undistributed);
        if (undistributed)
            ws_causes_undistributed(causes, undistributed);
        else if (rc == WS_OK)
            rc = ws_error_nomem(err, "analysis");
        ws_causes_free(causes);
        if (rc == WS_OK && options->delay_model != WS_DELAY_NONE) {
            ws_derive_delay(&a);
            rc = ws_ordered_sum(&a, undistributed, 1, &r->undistributed, err);
        }
        free(undistributed);
        if (rc)
            goto fail;
        if (options->critical_path && (rc = ws_derive_critical_path(&a, path_first, err)))
            goto fail;
        step_done(r, WS_STEP_DERIVED, &mark);
    }
    free_analysis(&a);
    ws_sync_free(sync);
    /* the analysis's memory goes back to the system, not only to the C
     * library (which would keep what lay between live blocks) */
    ws_return_free_pages();
    *out = r;
    return WS_OK;
fail:
    free_analysis(&a);
    ws_sync_free(sync);
    ws_result_free(r);
    ws_return_free_pages();
    return rc;
}

int ws_analyze(const ws_trace *t, const uint32_t *locations, uint32_t n, ws_transport *tr,
               const ws_analysis_options *options, const ws_progress *progress, ws_result **out, ws_error *err)
{
    ws_omp *omp = NULL;
    int rc = ws_omp_build(t, locations, n, &omp, err);
    /* (collective: the others go on to the matching only if all built theirs) */
    rc = ws_agree_status(tr, rc, err);
    if (rc == WS_OK)
        rc = analyze_all(t, omp, locations, n, tr, options, progress, out, err);
    ws_omp_free(omp);
    /* problems of the trace's content name the trace (and, where found,
     * the location's event file: ws_trace_error_at) */
    if (rc == WS_ERR_MATCH || rc == WS_ERR_FORMAT)
        ws_trace_error_in(t, err);
    return rc;
}
